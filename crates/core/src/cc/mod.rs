//! Congestion control: the `CongestionControl` trait, the window it acts on, and the
//! registry of built-in algorithms.
//!
//! The hooks mirror Linux's `tcp_congestion_ops` one to one, because the algorithms are
//! ported from the kernel modules and must see the same calls in the same order:
//!
//! | hook here              | Linux                    | when                                   |
//! |------------------------|--------------------------|----------------------------------------|
//! | `on_ack_event`         | `in_ack_event`           | every ACK, before the scoreboard       |
//! | `on_pkts_acked`        | `pkts_acked`             | ACK that (S)ACKed data, with RTT       |
//! | `on_congestion_event`  | `ssthresh`               | entering CWR / Recovery / Loss         |
//! | `cong_avoid`           | `cong_avoid`             | cwnd may grow (not in PRR reduction)   |
//! | `on_state_change`      | `set_state`              | CA-state transitions                   |
//! | `on_cwnd_event`        | `cwnd_event`             | TX_START, COMPLETE_CWR, LOSS, ...      |
//! | `on_spurious_loss`     | `undo_cwnd`              | an undo (spurious recovery/RTO)        |
//! | `cong_control`         | `cong_control`           | replaces all cwnd logic (BBR)          |
//!
//! The window (`Window`) is kept in packets with integer arithmetic as in Linux; its byte
//! value is `cwnd · mss`. The sender owns it and hands it to hooks together with a read-only
//! view of the connection, which is all a `tcp_cong.c` module ever touches.
//!
//! Every algorithm is one file here (BBR: `bbr/`) and one row of the table in `registry`,
//! which generates the enum dispatch (`Cc`), the catalogue and the builder; `params` holds
//! the catalogue entry and parameter types.
pub mod params;
pub mod registry;

pub mod bbr;
pub mod bic;
pub mod compound;
pub mod cubic;
pub mod dctcp;
pub mod fast;
pub mod highspeed;
pub mod htcp;
pub mod hybla;
pub mod illinois;
pub mod ledbat;
pub mod lp;
pub mod reno;
pub mod scalable;
pub mod vegas;
pub mod veno;
pub mod wave;
pub mod westwood;
pub mod yeah;

pub use params::{CcInfo, FlowInit, ParamSpec, Params};
pub use registry::{build, catalogue, info, Cc};

use crate::engine::time::{SimDuration, SimTime};
use crate::tcp::linux::rate::RateSample;

/// Linux `sysctl_tcp_min_tso_segs` (default 2).
pub const TCP_MIN_TSO_SEGS: u32 = 2;
/// Linux `sk_pacing_shift` default: a paced skb holds ~1/1024 s of data.
pub const SK_PACING_SHIFT: u32 = 10;
/// Linux `sysctl_tcp_tso_rtt_log`: the 64 KB TSO allowance halves per 2^9 µs of min RTT.
pub const TSO_RTT_LOG: u32 = 9;
/// Linux `GSO_LEGACY_MAX_SIZE`: the largest skb a TSO/GSO burst fills.
pub const GSO_LEGACY_MAX_SIZE: u64 = 65_536;

/// Linux `tcp_tso_autosize` in bytes (also BBR's TSO goal): about 1 ms of data at
/// `rate_bytes` per second, plus 64 KB halved per 512 µs of `min_rtt_us` (nothing without
/// an RTT sample), at most `max_bytes`.
pub fn tso_autosize_bytes(rate_bytes: u64, min_rtt_us: Option<u64>, max_bytes: u64) -> u64 {
    let mut bytes = rate_bytes >> SK_PACING_SHIFT;
    if let Some(r) = min_rtt_us.map(|us| us >> TSO_RTT_LOG) {
        if r < 32 {
            bytes += GSO_LEGACY_MAX_SIZE >> r;
        }
    }
    bytes.min(max_bytes)
}

/// Linux `TCP_INFINITE_SSTHRESH`.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Linux congestion-avoidance states (`TCP_CA_*`), in Linux's order (comparisons matter).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    Open = 0,
    Disorder = 1,
    Cwr = 2,
    Recovery = 3,
    Loss = 4,
}

/// Linux `tcp_ca_event`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CwndEvent {
    /// First transmission when nothing is in flight.
    TxStart,
    /// Restart after idle (slow-start after idle).
    CwndRestart,
    /// End of a CWR or Recovery reduction.
    CompleteCwr,
    /// RTO: entering Loss.
    Loss,
    /// ECN: CE-marked / not-marked packet received (DCTCP).
    EcnIsCe,
    EcnNoCe,
}

/// Why the window is being reduced.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LossKind {
    /// Fast recovery (SACK/dupACK/RACK detected loss).
    Recovery,
    /// ECN echo or a TLP-repaired loss: cwnd reduction without retransmission.
    Cwr,
    /// Retransmission timeout.
    Rto,
}

/// Per-ACK flags for `on_ack_event` (Linux `CA_ACK_*`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AckFlags {
    /// Not a pure in-order cumulative ACK (SACK, dupACK, …): Linux's slow path.
    pub slow_path: bool,
    /// The ACK advertised a new window.
    pub window_update: bool,
    /// ECN echo set.
    pub ece: bool,
}

/// Linux `struct ack_sample` (for `pkts_acked`).
#[derive(Copy, Clone, Debug, Default)]
pub struct AckSample {
    /// Packets newly cumulatively ACKed.
    pub pkts_acked: u32,
    /// RTT of the newest (S)ACKed never-retransmitted segment.
    pub rtt: Option<SimDuration>,
    /// Packets in flight before this ACK.
    pub in_flight: u32,
}

/// The congestion window and threshold (packets), plus the connection facts Linux
/// congestion modules read. Hooks write `cwnd`, `ssthresh`, `cwnd_cnt`; the rest is
/// refreshed by the sender before each call.
#[derive(Copy, Clone, Debug)]
pub struct Window {
    pub cwnd: u32,
    pub ssthresh: u32,
    /// Linux `snd_cwnd_cnt`: fractional-increase accumulator of Reno-style growth.
    pub cwnd_cnt: u32,
    pub cwnd_clamp: u32,
    // --- read-only view ---------------------------------------------------------------
    pub now: SimTime,
    pub mss: u32,
    pub srtt: Option<SimDuration>,
    pub min_rtt: Option<SimDuration>,
    pub in_flight: u32,
    pub packets_out: u32,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Packets delivered so far (Linux `tp->delivered`) and those marked CE.
    pub delivered: u64,
    pub delivered_ce: u64,
    /// Packets marked lost so far (Linux `tp->lost`).
    pub lost: u64,
    /// cwnd was the limit on sending during the last window (Linux `is_cwnd_limited`).
    pub cwnd_limited: bool,
    pub max_packets_out: u32,
    /// cwnd when the current reduction started (Linux `prior_cwnd`).
    pub prior_cwnd: u32,
    pub ca_state: CaState,
    /// Time of the last data transmission (Linux `lsndtime`).
    pub last_send: SimTime,
    /// Initial window (packets).
    pub initial_window: u32,
    /// The sender paces packets (Linux `sk_pacing_status != SK_PACING_NONE`).
    pub pacing: bool,
    /// TSval and TSecr of the latest ACK (Linux `rx_opt.rcv_tsval/rcv_tsecr`), 0 if none;
    /// both clocks are the simulation clock in ns.
    pub rcv_tsval: u64,
    pub rcv_tsecr: u64,
    /// Linux `tp->app_limited`: non-zero while application-limited (the delivered count at
    /// which that ends). A `cong_control` controller may set it (BBR PROBE_RTT); the
    /// sender reads it back after the call.
    pub app_limited: u64,
    /// Earliest departure time of the next paced segment (Linux `tcp_wstamp_ns`).
    pub next_departure: SimTime,
}

impl Window {
    pub fn new(initial_window: u32, mss: u32) -> Self {
        Window {
            cwnd: initial_window,
            ssthresh: INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            cwnd_clamp: u32::MAX / 2,
            now: SimTime::ZERO,
            mss,
            srtt: None,
            min_rtt: None,
            in_flight: 0,
            packets_out: 0,
            snd_una: 0,
            snd_nxt: 0,
            delivered: 0,
            delivered_ce: 0,
            lost: 0,
            cwnd_limited: false,
            max_packets_out: 0,
            prior_cwnd: 0,
            ca_state: CaState::Open,
            last_send: SimTime::ZERO,
            initial_window,
            pacing: false,
            rcv_tsval: 0,
            rcv_tsecr: 0,
            app_limited: 0,
            next_departure: SimTime::ZERO,
        }
    }

    #[inline]
    pub fn cwnd_bytes(&self) -> u64 {
        self.cwnd as u64 * self.mss as u64
    }

    /// Linux `tcp_in_slow_start`.
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Linux `tcp_is_cwnd_limited`: growth is allowed only if cwnd was the limit, or in
    /// slow start while cwnd < 2 × the most packets recently in flight.
    #[inline]
    pub fn is_cwnd_limited(&self) -> bool {
        if self.cwnd_limited {
            return true;
        }
        if self.in_slow_start() {
            return self.cwnd < 2 * self.max_packets_out;
        }
        false
    }

    /// Linux `tcp_slow_start`: grow by `acked` up to ssthresh; returns the leftover.
    #[inline]
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = (self.cwnd.saturating_add(acked)).min(self.ssthresh);
        let used = cwnd.saturating_sub(self.cwnd);
        let left = acked - used.min(acked);
        self.cwnd = cwnd.min(self.cwnd_clamp);
        left
    }

    /// How every Linux `cong_avoid` starts: no growth unless cwnd was the limit
    /// (`tcp_is_cwnd_limited`); in slow start `tcp_slow_start` takes its share. Returns the
    /// ACKed packets left for congestion avoidance, `None` if there are none.
    #[inline]
    pub fn acked_after_slow_start(&mut self, acked: u32) -> Option<u32> {
        if !self.is_cwnd_limited() {
            return None;
        }
        let left = if self.in_slow_start() {
            self.slow_start(acked)
        } else {
            acked
        };
        (left > 0).then_some(left)
    }

    /// Linux `tcp_cong_avoid_ai`: +1 packet per `w` packets ACKed.
    #[inline]
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
        self.cwnd = self.cwnd.min(self.cwnd_clamp);
    }

    /// Linux `tcp_current_ssthresh`.
    pub fn current_ssthresh(&self) -> u32 {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.ssthresh
        } else {
            self.ssthresh.max((self.cwnd >> 1) + (self.cwnd >> 2))
        }
    }

    /// Linux jiffies at `HZ` = `hz` (some modules count time in jiffies, with its rounding).
    #[inline]
    pub fn jiffies(&self, hz: u32) -> u32 {
        (self.now.ns() / (1_000_000_000 / hz as u64)) as u32
    }

    /// Linux `tcp_mstamp` in µs (the clock most modules use).
    #[inline]
    pub fn now_us(&self) -> u64 {
        self.now.ns() / 1_000
    }

    /// The pacing rate Linux keeps in `sk_pacing_rate` even without pacing
    /// (`tcp_update_pacing_rate`): 200 % of cwnd/srtt in slow start, 120 % after, in bytes/s.
    pub fn linux_pacing_rate_bytes(&self) -> u64 {
        let srtt_ns = self.srtt.map_or(0, |d| d.ns());
        if srtt_ns == 0 {
            return 0;
        }
        let ratio = if self.cwnd < self.ssthresh / 2 {
            200
        } else {
            120
        };
        let bytes = self.mss as u128 * self.cwnd.max(self.packets_out) as u128;
        (bytes * ratio * 1_000_000_000 / 100 / srtt_ns as u128) as u64
    }
}

/// What a congestion controller is. Hooks default to doing nothing; `on_congestion_event`
/// (Linux `ssthresh`) and `cong_avoid` are required. Its name and parameters are its
/// catalogue entry (`CcInfo`, in the registry).
pub trait CongestionControl {
    /// Linux `in_ack_event`.
    fn on_ack_event(&mut self, _w: &mut Window, _flags: AckFlags) {}

    /// Linux `pkts_acked`.
    fn on_pkts_acked(&mut self, _w: &mut Window, _s: &AckSample) {}

    /// Linux `ssthresh`: the new slow-start threshold (packets) for a reduction.
    fn on_congestion_event(&mut self, w: &mut Window, kind: LossKind) -> u32;

    /// Linux `cong_avoid`: grow cwnd for `acked` newly delivered packets.
    fn cong_avoid(&mut self, w: &mut Window, acked: u32);

    /// Linux `set_state`.
    fn on_state_change(&mut self, _w: &mut Window, _new: CaState) {}

    /// Linux `cwnd_event`.
    fn on_cwnd_event(&mut self, _w: &mut Window, _ev: CwndEvent) {}

    /// Linux `undo_cwnd`: the cwnd to restore after a spurious reduction
    /// (default: Reno's `max(cwnd, prior_cwnd)`).
    fn on_spurious_loss(&mut self, w: &mut Window) -> u32 {
        w.cwnd.max(w.prior_cwnd)
    }

    /// Linux `cong_control`: if the algorithm owns cwnd entirely, do it here and return
    /// true (then PRR and `cong_avoid` are skipped).
    fn cong_control(&mut self, _w: &mut Window, _rs: &RateSample) -> bool {
        false
    }

    /// True if `cong_control` is implemented (Linux checks the pointer).
    fn has_cong_control(&self) -> bool {
        false
    }

    /// Pacing rate the algorithm asks for, in bits per second.
    fn pacing_rate_bps(&self, _w: &Window) -> Option<u64> {
        None
    }

    /// True if `pacing_rate_bps` can ever ask for a rate (Linux: the module sets
    /// `sk_pacing_rate`); a sender whose algorithm never does and that does not pace by
    /// itself skips asking for every segment.
    fn sets_pacing_rate(&self) -> bool {
        false
    }

    /// Fewest segments a paced sender puts in one TSO/GSO burst (Linux
    /// `ca_ops->min_tso_segs`, else the `tcp_min_tso_segs` sysctl).
    fn min_tso_segs(&self, _w: &Window) -> u32 {
        TCP_MIN_TSO_SEGS
    }

    /// A data segment left (for algorithms that schedule their own sending).
    fn on_packet_sent(&mut self, _w: &Window, _bytes: u32) {}

    /// For algorithms that schedule their own transmissions (TCP Wave's burst timer): the
    /// next instant at which the controller wants to act, if any.
    fn send_timer(&self) -> Option<SimTime> {
        None
    }

    /// The send timer fired at `w.now`: the controller may open the window (e.g. add a
    /// burst to cwnd); the sender transmits right after.
    fn on_send_timer(&mut self, _w: &mut Window) {}

    /// The controller's own state machine, for event logs (BBR's mode, and BBRv3's phase
    /// of PROBE_BW): one of `PHASES`, or `None` for algorithms without one.
    fn phase(&self) -> Option<&'static str> {
        None
    }
}

/// Every name `CongestionControl::phase` returns (the event log stores an index into it).
pub const PHASES: &[&str] = &[
    "startup",
    "drain",
    "probe_bw",
    "probe_rtt",
    "probe_bw_down",
    "probe_bw_cruise",
    "probe_bw_refill",
    "probe_bw_up",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::SimRng;
    use std::collections::BTreeMap;

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_leftover() {
        let mut w = Window::new(10, 1448);
        w.ssthresh = 12;
        assert_eq!(w.slow_start(5), 3);
        assert_eq!(w.cwnd, 12);
    }

    #[test]
    fn congestion_avoidance_gets_what_slow_start_leaves_and_only_when_cwnd_limited() {
        let mut w = Window::new(98, 1448);
        w.ssthresh = 100;
        // Not the limit (no cwnd-limited flag, 98 >= 2 x 40 in flight): no growth at all.
        w.max_packets_out = 40;
        assert_eq!(w.acked_after_slow_start(5), None);
        assert_eq!(w.cwnd, 98);
        // Limited: slow start takes 2 of 5 (to ssthresh 100), 3 are left.
        w.cwnd_limited = true;
        assert_eq!(w.acked_after_slow_start(5), Some(3));
        assert_eq!(w.cwnd, 100);
        // In congestion avoidance everything is left; in slow start below ssthresh nothing.
        assert_eq!(w.acked_after_slow_start(4), Some(4));
        w.ssthresh = 200;
        assert_eq!(w.acked_after_slow_start(4), None);
        assert_eq!(w.cwnd, 104);
    }

    #[test]
    fn cong_avoid_ai_adds_one_packet_per_window_of_acks() {
        let mut w = Window::new(10, 1448);
        for _ in 0..9 {
            w.cong_avoid_ai(10, 1);
        }
        assert_eq!(w.cwnd, 10);
        w.cong_avoid_ai(10, 1);
        assert_eq!(w.cwnd, 11);
        assert_eq!(w.cwnd_cnt, 0);
    }

    /// The error of building `name` with `given` parameters.
    fn build_error(name: &str, given: &BTreeMap<String, f64>) -> String {
        let init = FlowInit {
            mss: 1448,
            initial_window: 10,
        };
        let built = build(name, given, &init, &mut SimRng::substream(0, "x"));
        built.err().expect("an error").0
    }

    #[test]
    fn unknown_parameter_is_rejected_with_allowed_list() {
        let mut given = BTreeMap::new();
        given.insert("alpah".to_string(), 2.0);
        let e = build_error("cubic", &given);
        assert!(
            e.starts_with("cca_params.alpah: unknown parameter for cubic; allowed: "),
            "{e}"
        );
    }

    #[test]
    fn unknown_algorithm_lists_the_catalogue() {
        let e = build_error("cubik", &BTreeMap::new());
        assert!(e.contains("allowed: reno, newreno, cubic"), "{e}");
    }
}
