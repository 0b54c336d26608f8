//! What BBR v1 and BBRv3 share, as both kernel modules compute it: the fixed-point units,
//! the modes, the pacing rate (`sk_pacing_rate` from bandwidth × gain with the pacing
//! margin), the BDP and the in-flight estimate at the next departure, the ACK-aggregation
//! allowance (`extra_acked`), the min-RTT sample filter and the PROBE_RTT hold.
//!
//! Each version keeps a `Common` and adds its own model around it (v1: the max-bandwidth
//! filter over 10 rounds, gain cycling, the long-term policer estimator; v3: the bw/inflight
//! bounds and the PROBE_BW state machine). The functions here are used by both, never
//! re-derived, so a fix to one is a fix to both.
use crate::cc::{CaState, ParamSpec, Params, Window, GSO_LEGACY_MAX_SIZE, INFINITE_SSTHRESH};
use crate::engine::rng::SimRng;
use crate::scenario::ConfigError;
use crate::tcp::linux::rate::RateSample;

/// Bandwidth unit: packets per µs scaled by 2^24 (≈ 715 bit/s per unit at 1500 B).
pub const BW_SCALE: u32 = 24;
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gain unit: gains are fractions of 256.
pub const BBR_SCALE: u32 = 8;
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;
/// Minimum cwnd target (packets): two 2-packet delayed-ACK exchanges in flight.
pub const CWND_MIN_TARGET: u32 = 4;
/// STARTUP: bandwidth must grow by 5/4 per round ...
pub const FULL_BW_THRESH: u64 = (BBR_UNIT * 5 / 4) as u64;
/// ... or the pipe is full after this many rounds.
pub const FULL_BW_CNT: u32 = 3;
/// Window of the extra_acked filter, in rounds.
pub const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// Reset the ACK-aggregation epoch beyond this many packets.
const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// The aggregation allowance is at most this much time at the estimated bandwidth.
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// Linux `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (65536 − 1 − 320 on x86-64).
pub const GSO_BYTES_MAX: u64 = GSO_LEGACY_MAX_SIZE - 1 - 320;

/// BBR modes (Linux `enum bbr_mode`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Ramp up quickly to fill the pipe.
    Startup,
    /// Drain the queue built in STARTUP.
    Drain,
    /// Probe for bandwidth around the estimate (v1: gain cycling; v3: DOWN/CRUISE/REFILL/UP).
    ProbeBw,
    /// Cut inflight to re-measure min_rtt.
    ProbeRtt,
}

impl Mode {
    /// Its name in event logs (`cc::PHASES`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}

/// Linux `after(a, b)` on 32-bit wrapping counters (jiffies).
#[inline]
pub fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// The sample interval in µs, if valid (Linux `interval_us > 0`).
#[inline]
pub fn interval_us(rs: &RateSample) -> Option<u64> {
    rs.interval.map(|i| i.ns() / 1_000).filter(|&us| us > 0)
}

/// Linux `msecs_to_jiffies` of a duration in ns (rounds up).
pub fn to_jiffies(ns: u64, hz: u64) -> u32 {
    (ns * hz).div_ceil(1_000_000_000) as u32
}

/// The kernel's jiffies rate (both versions time min_rtt and PROBE_RTT in jiffies).
pub const PARAM_HZ: ParamSpec = ParamSpec {
    name: "hz",
    default: 1000.0,
    unit: "Hz",
    help: "kernel jiffies rate (CONFIG_HZ); min_rtt and PROBE_RTT are timed in jiffies",
};
/// The gain on the ACK-aggregation allowance.
pub const PARAM_EXTRA_ACKED_GAIN: ParamSpec = ParamSpec {
    name: "extra_acked_gain",
    default: 256.0,
    unit: "/256",
    help: "gain on the ACK-aggregation allowance (0 disables it)",
};
/// The margin below the estimated bandwidth.
pub const PARAM_PACING_MARGIN: ParamSpec = ParamSpec {
    name: "pacing_margin_percent",
    default: 1.0,
    unit: "%",
    help: "pace this much below the estimated bandwidth",
};

/// The min-RTT filter window, with the version's `help`.
pub const fn param_min_rtt_win(help: &'static str) -> ParamSpec {
    ParamSpec {
        name: "min_rtt_win_ns",
        default: 10e9,
        unit: "ns",
        help,
    }
}

/// The minimum time in PROBE_RTT, with the version's `help`.
pub const fn param_probe_rtt_mode(help: &'static str) -> ParamSpec {
    ParamSpec {
        name: "probe_rtt_mode_ns",
        default: 200e6,
        unit: "ns",
        help,
    }
}

/// The parameters both versions take.
#[derive(Copy, Clone, Debug)]
pub struct CommonParams {
    pub hz: u64,
    pub min_rtt_win_ns: u64,
    pub probe_rtt_mode_ns: u64,
    /// Pacing (and, in STARTUP, cwnd) gain before the pipe is full (/256).
    pub startup_gain: u32,
    pub extra_acked_gain: u32,
    pub pacing_margin_percent: u64,
    /// Least pacing rate, bytes/s (v3 keeps it at 1, v1 at 0).
    pub min_rate: u64,
}

impl CommonParams {
    /// Check and read the shared parameters (`startup_gain` and `min_rate` are the
    /// version's).
    pub fn parse(p: &Params<'_>, startup_gain: u32, min_rate: u64) -> Result<Self, ConfigError> {
        Ok(CommonParams {
            hz: p.int("hz", 100, 100_000)? as u64,
            min_rtt_win_ns: p.int("min_rtt_win_ns", 1_000_000, 3_600_000_000_000)? as u64,
            probe_rtt_mode_ns: p.int("probe_rtt_mode_ns", 0, 60_000_000_000)? as u64,
            startup_gain,
            extra_acked_gain: p.int("extra_acked_gain", 0, 1023)? as u32,
            pacing_margin_percent: p.int("pacing_margin_percent", 0, 99)? as u64,
            min_rate,
        })
    }
}

/// The state both versions keep (Linux `struct bbr`'s common fields and `sk_pacing_rate`).
#[derive(Debug, Clone)]
pub struct Common {
    // parameters
    pub hz: u32,
    pub min_rtt_win_jiffies: u32,
    pub probe_rtt_mode_jiffies: u32,
    pub startup_gain: u32,
    pub extra_acked_gain: u32,
    pub pacing_margin_percent: u64,
    pub min_rate: u64,
    pub mss: u32,
    /// A private stream: the random choices are a function of the seed.
    pub rng: SimRng,
    // model
    pub mode: Mode,
    pub prev_ca_state: CaState,
    pub min_rtt_us: u32,
    pub min_rtt_stamp: u32,
    pub probe_rtt_done_stamp: u32,
    pub probe_rtt_round_done: bool,
    pub next_rtt_delivered: u64,
    pub round_start: bool,
    pub idle_restart: bool,
    pub cycle_mstamp: u64,
    pub cycle_idx: u32,
    pub pacing_gain: u32,
    pub cwnd_gain: u32,
    pub full_bw_reached: bool,
    pub full_bw: u64,
    pub full_bw_cnt: u32,
    pub prior_cwnd: u32,
    pub has_seen_rtt: bool,
    // ACK aggregation
    pub ack_epoch_mstamp: u64,
    /// Kept as u16 like the kernel (values above 65535 truncate).
    pub extra_acked: [u16; 2],
    pub ack_epoch_acked: u32,
    pub extra_acked_win_rtts: u32,
    pub extra_acked_win_idx: usize,
    // socket state BBR reads or writes
    /// Linux `sk_pacing_rate`, bytes per second.
    pub pacing_rate: u64,
    /// Linux `tp->delivered_mstamp` (µs): time of the last delivery.
    pub delivered_mstamp: u64,
    pub initialized: bool,
}

impl Common {
    pub fn new(p: CommonParams, mss: u32, rng: SimRng) -> Common {
        Common {
            hz: p.hz as u32,
            // bbr_min_rtt_win_sec * HZ
            min_rtt_win_jiffies: (p.min_rtt_win_ns * p.hz / 1_000_000_000) as u32,
            probe_rtt_mode_jiffies: to_jiffies(p.probe_rtt_mode_ns, p.hz),
            startup_gain: p.startup_gain,
            extra_acked_gain: p.extra_acked_gain,
            pacing_margin_percent: p.pacing_margin_percent,
            min_rate: p.min_rate,
            mss,
            rng,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            probe_rtt_round_done: false,
            next_rtt_delivered: 0,
            round_start: false,
            idle_restart: false,
            cycle_mstamp: 0,
            cycle_idx: 0,
            pacing_gain: BBR_UNIT,
            cwnd_gain: BBR_UNIT,
            full_bw_reached: false,
            full_bw: 0,
            full_bw_cnt: 0,
            prior_cwnd: 0,
            has_seen_rtt: false,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            pacing_rate: 0,
            delivered_mstamp: 0,
            initialized: false,
        }
    }

    /// The common part of Linux `bbr_init`, run on the first hook after the connection is
    /// set up so that it sees the handshake's RTT (as `tcp_init_transfer` does).
    pub fn init(&mut self, w: &mut Window) {
        self.initialized = true;
        w.ssthresh = INFINITE_SSTHRESH;
        self.next_rtt_delivered = w.delivered;
        self.prev_ca_state = CaState::Open;
        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_round_done = false;
        self.min_rtt_us = w
            .min_rtt
            .map_or(u32::MAX, |m| m.us().min(u32::MAX as u64) as u32);
        self.min_rtt_stamp = w.jiffies(self.hz);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(w);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.mode = Mode::Startup;
        self.ack_epoch_mstamp = w.now_us();
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
    }

    // --- pacing ------------------------------------------------------------------------

    /// Linux `bbr_rate_bytes_per_sec`: bw (pkts/µs << 24) × gain → bytes/s, with the
    /// pacing margin; the operation order (and truncation) is the kernel's.
    pub fn rate_bytes_per_sec(&self, bw: u64, gain: u32) -> u64 {
        let mut r = bw as u128 * self.mss as u128;
        r *= gain as u128;
        r >>= BBR_SCALE;
        r *= (1_000_000 / 100 * (100 - self.pacing_margin_percent)) as u128;
        ((r >> BW_SCALE) as u64).max(self.min_rate)
    }

    /// The initial pacing rate, startup gain × cwnd / SRTT (SRTT 1 ms if none), bytes/s.
    pub fn initial_pacing_rate(&self, w: &Window) -> u64 {
        let rtt_us = w.srtt.map_or(1_000, |s| s.us().max(1));
        let bw = w.cwnd as u64 * BW_UNIT / rtt_us;
        self.rate_bytes_per_sec(bw, self.startup_gain)
    }

    /// Linux `bbr_init_pacing_rate_from_rtt`.
    pub fn init_pacing_rate_from_rtt(&mut self, w: &Window) {
        if w.srtt.is_some() {
            self.has_seen_rtt = true;
        }
        self.pacing_rate = self.initial_pacing_rate(w);
    }

    /// Linux `bbr_set_pacing_rate`: before the pipe is full the rate only goes up.
    pub fn set_pacing_rate(&mut self, w: &Window, bw: u64, gain: u32) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && w.srtt.is_some() {
            self.init_pacing_rate_from_rtt(w);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// The pacing rate the sender uses (bit/s), also before the first hook initialized it.
    pub fn pacing_rate_bps(&self, w: &Window) -> Option<u64> {
        if self.initialized {
            Some(self.pacing_rate * 8)
        } else {
            Some(self.initial_pacing_rate(w) * 8)
        }
    }

    // --- the model ---------------------------------------------------------------------

    /// Linux `bbr_save_cwnd`: remember the last good cwnd for after recovery/PROBE_RTT.
    pub fn save_cwnd(&mut self, w: &Window) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = w.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(w.cwnd);
        }
    }

    /// Linux `bbr_bdp`: ⌈bw × min_rtt × gain⌉ packets; `no_rtt` before any RTT sample.
    pub fn bdp(&self, bw: u64, gain: u32, no_rtt: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return no_rtt;
        }
        let w = bw as u128 * self.min_rtt_us as u128;
        ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128) as u32
    }

    /// Linux `bbr_packets_in_net_at_edt`: in-flight data minus what the bottleneck drains
    /// at `bw` before the next paced departure (plus that departure's burst of `tso_goal`
    /// when raising inflight).
    pub fn packets_in_net_at_edt(&self, w: &Window, bw: u64, tso_goal: u32, inflight: u32) -> u32 {
        let edt = w.next_departure.max(w.now);
        let interval_us = edt.since(w.now).ns() / 1_000;
        let interval_delivered = ((bw as u128 * interval_us as u128) >> BW_SCALE) as u64;
        let mut inflight_at_edt = inflight as u64;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += tso_goal as u64;
        }
        inflight_at_edt.saturating_sub(interval_delivered) as u32
    }

    /// Max extra_acked of the last two windows (packets).
    pub fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1]) as u32
    }

    /// Linux `bbr_ack_aggregation_cwnd`: the allowance for ACK aggregation at `bw`.
    pub fn ack_aggregation_cwnd(&self, bw: u64) -> u32 {
        if self.extra_acked_gain == 0 {
            return 0;
        }
        let max_aggr = (bw as u128 * EXTRA_ACKED_MAX_US as u128 / BW_UNIT as u128) as u32;
        ((self.extra_acked_gain * self.extra_acked()) >> BBR_SCALE).min(max_aggr)
    }

    /// Linux `bbr_update_ack_aggregation`: the windowed max of data ACKed beyond what the
    /// estimated bandwidth `bw` explains since the epoch began; the window is `win_rtts`
    /// rounds.
    pub fn update_ack_aggregation(&mut self, w: &Window, rs: &RateSample, bw: u64, win_rtts: u32) {
        if self.extra_acked_gain == 0
            || rs.acked_sacked == 0
            || rs.delivered.is_none()
            || interval_us(rs).is_none()
        {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= win_rtts {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = self.delivered_mstamp.saturating_sub(self.ack_epoch_mstamp) as u32;
        let mut expected = (bw as u128 * epoch_us as u128 / BW_UNIT as u128) as u32;
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = self.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(w.cwnd);
        if extra > self.extra_acked[self.extra_acked_win_idx] as u32 {
            self.extra_acked[self.extra_acked_win_idx] = extra as u16;
        }
    }

    /// The `TX_START` part of Linux `bbr_cwnd_event`: a new flight restarts the delivery
    /// clock (`tcp_rate_skb_sent`); true if the sender restarts from idle while
    /// application-limited (the version then paces at its estimate or ends PROBE_RTT).
    pub fn on_tx_start(&mut self, w: &Window) -> bool {
        if w.packets_out == 0 {
            self.delivered_mstamp = w.now_us();
        }
        if w.app_limited == 0 {
            return false;
        }
        self.idle_restart = true;
        self.ack_epoch_mstamp = w.now_us();
        self.ack_epoch_acked = 0;
        true
    }

    /// The PROBE_RTT hold of Linux `bbr_update_min_rtt`: samples at the low cwnd say
    /// nothing about the path's bandwidth; once inflight is at most `cwnd_target` the mode
    /// lasts `probe_rtt_mode_jiffies` and a round. True when its end should be checked.
    pub fn probe_rtt_hold(&mut self, w: &mut Window, now: u32, cwnd_target: u32) -> bool {
        if self.mode != Mode::ProbeRtt {
            return false;
        }
        w.app_limited = (w.delivered + w.in_flight as u64).max(1);
        if self.probe_rtt_done_stamp == 0 && w.in_flight <= cwnd_target {
            self.probe_rtt_done_stamp = now.wrapping_add(self.probe_rtt_mode_jiffies);
            self.probe_rtt_round_done = false;
            self.next_rtt_delivered = w.delivered;
            return false;
        }
        if self.probe_rtt_done_stamp == 0 {
            return false;
        }
        if self.round_start {
            self.probe_rtt_round_done = true;
        }
        self.probe_rtt_round_done
    }

    /// Enter PROBE_RTT when the min-RTT filter of the version expired (and PROBE_RTT is on,
    /// and the sender is not restarting from idle); true if it did.
    pub fn enter_probe_rtt(&mut self, w: &Window, expired: bool) -> bool {
        if self.probe_rtt_mode_jiffies == 0 || !expired || self.idle_restart {
            return false;
        }
        if self.mode == Mode::ProbeRtt {
            return false;
        }
        self.mode = Mode::ProbeRtt;
        self.save_cwnd(w);
        self.probe_rtt_done_stamp = 0;
        true
    }

    /// The first half of Linux `bbr_check_probe_rtt_done`: the hold is over; restore the
    /// saved cwnd. False while PROBE_RTT must go on.
    pub fn probe_rtt_done(&self, w: &mut Window, now: u32) -> bool {
        if !(self.probe_rtt_done_stamp != 0 && after(now, self.probe_rtt_done_stamp)) {
            return false;
        }
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        true
    }
}

/// A min-RTT sample filter of Linux `bbr_update_min_rtt`: a new minimum, or any sample
/// not delayed by a delayed ACK once the window `win_jiffies` expired. Returns whether it
/// had expired.
pub fn take_min_rtt(
    us: &mut u32,
    stamp: &mut u32,
    win_jiffies: u32,
    now: u32,
    rs: &RateSample,
) -> bool {
    let expired = after(now, stamp.wrapping_add(win_jiffies));
    if let Some(rtt) = rs.rtt {
        let rtt_us = rtt.us().min(u32::MAX as u64) as u32;
        if rtt_us < *us || (expired && !rs.is_ack_delayed) {
            *us = rtt_us;
            *stamp = now;
        }
    }
    expired
}

/// What each version supplies to the parts of the model both compute the same way.
pub trait Model {
    fn common(&self) -> &Common;
    fn common_mut(&mut self) -> &mut Common;
    /// The bandwidth in use (packets/µs << 24).
    fn bw(&self) -> u64;
    /// The max-filtered bandwidth (packets/µs << 24).
    fn max_bw(&self) -> u64;
    /// Linux `bbr_tso_segs_goal`: segments per TSO burst at the current pacing rate.
    fn tso_segs_goal(&self) -> u32;
    /// Linux `bbr_quantization_budget`: room for the TSO bursts on top of a target.
    fn quantization_budget(&self, cwnd: u32) -> u32;
    /// The BDP (packets) before any RTT sample.
    fn no_rtt_cwnd(&self) -> u32;
    /// Linux `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, w: &mut Window);
    /// The version's Linux `bbr_init` (after `Common::init`).
    fn init(&mut self, w: &mut Window);

    /// Run `init` on the first hook after the connection is set up, so that it sees the
    /// handshake's RTT (as `tcp_init_transfer` does).
    fn ensure_init(&mut self, w: &mut Window) {
        if !self.common().initialized {
            self.common_mut().init(w);
            self.init(w);
        }
    }

    /// Linux `bbr_bdp`.
    fn bdp(&self, bw: u64, gain: u32) -> u32 {
        self.common().bdp(bw, gain, self.no_rtt_cwnd())
    }

    /// Linux `bbr_inflight`: the BDP at `gain` with the quantization budget.
    fn inflight(&self, bw: u64, gain: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// Linux `bbr_packets_in_net_at_edt`, at the bandwidth in use.
    fn packets_in_net_at_edt(&self, w: &Window, inflight_now: u32) -> u32 {
        self.common()
            .packets_in_net_at_edt(w, self.bw(), self.tso_segs_goal(), inflight_now)
    }

    /// STARTUP ends once the pipe is full: DRAIN, with ssthresh at one BDP; true if so.
    fn enter_drain(&mut self, w: &mut Window) -> bool {
        let c = self.common_mut();
        if c.mode != Mode::Startup || !c.full_bw_reached {
            return false;
        }
        c.mode = Mode::Drain;
        w.ssthresh = self.inflight(self.max_bw(), BBR_UNIT);
        true
    }

    /// DRAIN is over: the packets in the network at the next departure fit one BDP.
    fn drained(&self, w: &Window) -> bool {
        self.packets_in_net_at_edt(w, w.in_flight) <= self.inflight(self.max_bw(), BBR_UNIT)
    }

    /// Linux `bbr_cwnd_event` on `TX_START`: restarting app-limited, pace at the estimated
    /// bandwidth (not above it), or end PROBE_RTT.
    fn tx_start(&mut self, w: &mut Window) {
        if !self.common_mut().on_tx_start(w) {
            return;
        }
        let bw = self.bw();
        let c = self.common_mut();
        if c.mode == Mode::ProbeBw {
            c.set_pacing_rate(w, bw, BBR_UNIT);
        } else if c.mode == Mode::ProbeRtt {
            self.check_probe_rtt_done(w);
        }
    }

    /// The end of Linux `bbr_update_min_rtt`: hold PROBE_RTT until inflight is at most
    /// `cwnd_target` for its time and a round; a delivery ends an idle restart.
    fn hold_probe_rtt(&mut self, w: &mut Window, rs: &RateSample, now: u32, cwnd_target: u32) {
        if self.common_mut().probe_rtt_hold(w, now, cwnd_target) {
            self.check_probe_rtt_done(w);
        }
        if rs.delivered.unwrap_or(0) > 0 {
            self.common_mut().idle_restart = false;
        }
    }
}

/// The `CongestionControl` hooks both versions answer the same way: BBR owns cwnd
/// (`cong_control`, no `cong_avoid`), paces at its own rate, and on `TX_START` restarts
/// from idle (`Model::tx_start`). Expands inside an `impl CongestionControl` of a type
/// with an `ensure_init` and its `Common` in field `c`.
macro_rules! shared_hooks {
    () => {
        fn cong_avoid(&mut self, _w: &mut Window, _acked: u32) {}

        /// Linux `bbr_cwnd_event`.
        fn on_cwnd_event(&mut self, w: &mut Window, ev: CwndEvent) {
            self.ensure_init(w);
            if ev == CwndEvent::TxStart {
                self.tx_start(w);
            }
        }

        fn has_cong_control(&self) -> bool {
            true
        }

        fn pacing_rate_bps(&self, w: &Window) -> Option<u64> {
            self.c.pacing_rate_bps(w)
        }

        fn sets_pacing_rate(&self) -> bool {
            true
        }
    };
}
pub(super) use shared_hooks;

/// `Model::common` and `common_mut` of a type keeping its `Common` in field `c`.
macro_rules! common_in_field_c {
    () => {
        fn common(&self) -> &Common {
            &self.c
        }

        fn common_mut(&mut self) -> &mut Common {
            &mut self.c
        }
    };
}
pub(super) use common_in_field_c;

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::cc::{CongestionControl, CwndEvent, FlowInit};
    use crate::engine::time::{SimDuration, SimTime};
    use crate::tcp::linux::rate::{RateSampler, TxStamp};
    use std::collections::{BTreeMap, VecDeque};

    /// A controller built with `params` (the rest defaults) for a 1448-byte MSS, IW 10,
    /// and a window with a 100 ms smoothed and minimum RTT, paced.
    pub(in crate::cc::bbr) fn build<C>(
        params: &[(&str, f64)],
        seed: u64,
        name: &str,
        specs: &'static [ParamSpec],
        new: fn(&Params<'_>, &FlowInit, &mut SimRng) -> Result<C, ConfigError>,
    ) -> (C, Window) {
        let m: BTreeMap<String, f64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let p = Params::new(name, &m, specs).unwrap();
        let init = FlowInit {
            mss: 1448,
            initial_window: 10,
        };
        let b = new(&p, &init, &mut SimRng::substream(seed, "flow/0/cca")).unwrap();
        let mut w = Window::new(10, 1448);
        w.srtt = Some(SimDuration::from_ms(100));
        w.min_rtt = Some(SimDuration::from_ms(100));
        w.pacing = true;
        (b, w)
    }

    /// Every ACK of a path run: (time ns, mode, cycle index or phase, pacing gain, cwnd
    /// gain, cwnd, in_flight).
    pub(in crate::cc::bbr) type Log = Vec<(u64, Mode, u32, u32, u32, u32, u32)>;

    /// Run `(b, w)` for `secs` on a path of 1000 packets/s with a 100 ms base RTT
    /// (BDP = 100 packets), logging every ACK.
    pub(in crate::cc::bbr) fn run<C: CongestionControl + Model>(
        (b, w): (C, Window),
        secs: u64,
    ) -> (Path<C>, Log) {
        let mut path = Path::new(b, w, 1_000_000, 99_000_000);
        let mut log = Vec::new();
        while path.now < secs * 1_000_000_000 {
            let before = path.rate.delivered;
            path.step();
            if path.rate.delivered != before {
                let c = path.b.common();
                log.push((
                    path.now,
                    c.mode,
                    c.cycle_idx,
                    c.pacing_gain,
                    c.cwnd_gain,
                    path.w.cwnd,
                    path.w.in_flight,
                ));
            }
        }
        (path, log)
    }

    // --- a fixed-rate, fixed-RTT path ----------------------------------------------------

    pub(in crate::cc::bbr) struct Pkt {
        tx: u64,
        ack_at: u64,
        stamp: TxStamp,
        end_seq: u64,
    }

    /// One BBR flow alone on a bottleneck of `1/t_ns` packets per ns with round-trip
    /// propagation `prop_ns` (no loss, one ACK per packet): the sender side mirrors the
    /// simulator's (rate sampler, pacing, cwnd gate, PROBE_RTT app-limited write-back).
    pub(in crate::cc::bbr) struct Path<C: CongestionControl> {
        pub(in crate::cc::bbr) b: C,
        pub(in crate::cc::bbr) w: Window,
        pub(in crate::cc::bbr) rate: RateSampler,
        pub(in crate::cc::bbr) now: u64,
        t_ns: u64,
        prop_ns: u64,
        last_depart: u64,
        net: VecDeque<Pkt>,
        next_send: u64,
        sent: u64,
        min_rtt: Option<SimDuration>,
    }

    impl<C: CongestionControl> Path<C> {
        pub(in crate::cc::bbr) fn new(b: C, w: Window, t_ns: u64, prop_ns: u64) -> Path<C> {
            Path {
                b,
                w,
                rate: RateSampler::default(),
                now: 0,
                t_ns,
                prop_ns,
                last_depart: 0,
                net: VecDeque::new(),
                next_send: 0,
                sent: 0,
                min_rtt: None,
            }
        }

        fn sync(&mut self) {
            self.w.now = SimTime(self.now);
            self.w.in_flight = self.net.len() as u32;
            self.w.packets_out = self.net.len() as u32;
            self.w.delivered = self.rate.delivered;
            self.w.app_limited = self.rate.app_limited_until;
            self.w.next_departure = SimTime(self.next_send);
        }

        /// Process the next event (a transmission or an ACK); ACKs first on ties.
        pub(in crate::cc::bbr) fn step(&mut self) {
            let ack_at = self.net.front().map_or(u64::MAX, |p| p.ack_at);
            let can_send = (self.net.len() as u32) < self.w.cwnd;
            let send_at = if can_send {
                self.next_send.max(self.now)
            } else {
                u64::MAX
            };
            if ack_at <= send_at {
                self.now = ack_at;
                self.ack();
            } else {
                self.now = send_at;
                self.send();
            }
        }

        fn send(&mut self) {
            self.sync();
            if self.net.is_empty() {
                self.b.on_cwnd_event(&mut self.w, CwndEvent::TxStart);
            }
            let mut stamp = self.rate.on_send(SimTime(self.now), self.net.len() as u32);
            stamp.in_flight = self.net.len() as u32 + 1;
            let depart = self.last_depart.max(self.now) + self.t_ns;
            self.last_depart = depart;
            self.sent += 1;
            self.net.push_back(Pkt {
                tx: self.now,
                ack_at: depart + self.prop_ns,
                stamp,
                end_seq: self.sent * 1448,
            });
            self.sync();
            let rate = self.b.pacing_rate_bps(&self.w).unwrap() / 8;
            self.next_send = self.now + 1448 * 1_000_000_000 / rate.max(1);
        }

        fn ack(&mut self) {
            let prior_in_flight = self.net.len() as u32;
            let mut p = self.net.pop_front().unwrap();
            let mut rs = RateSample {
                prior_in_flight,
                ..Default::default()
            };
            self.rate.delivered += 1;
            self.rate.on_delivered(
                &mut p.stamp,
                SimTime(p.tx),
                p.end_seq,
                false,
                false,
                &mut rs,
            );
            let rtt = SimDuration(self.now - p.tx);
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.rate
                .generate(SimTime(self.now), 1, 0, self.min_rtt, &mut rs);
            rs.rtt = Some(rtt);
            self.sync();
            self.b.cong_control(&mut self.w, &rs);
            self.rate.app_limited_until = self.w.app_limited;
        }
    }
}
