//! TCP Vegas as in Linux `tcp_vegas.c` (Brakmo & Peterson 1995, Linux variant).
//!
//! Vegas compares the window it has with the window the path would need at the
//! propagation delay: once per RTT (the first ACK beyond `beg_snd_nxt`, the `snd_nxt` of
//! the previous boundary) it takes `rtt` = the minimum RTT sample of the last RTT and
//! `baseRTT` = the minimum sample ever, and computes
//!
//! ```text
//! diff = cwnd · (rtt − baseRTT) / baseRTT          (packets queued, Linux divides by base)
//! SS:  diff > γ  ⇒ cwnd = min(cwnd, cwnd·base/rtt + 1), ssthresh = min(ssthresh, cwnd)
//!      else slow start
//! CA:  diff > β  ⇒ cwnd −= 1, ssthresh = min(ssthresh, cwnd);  diff < α ⇒ cwnd += 1
//! ```
//!
//! then floors cwnd at 2 and sets ssthresh = `tcp_current_ssthresh`. Between boundaries only
//! slow start runs. Kernel details kept on purpose (they are observable):
//! - every RTT sample is taken as `rtt_us + 1` ("never allow zero rtt"), so baseRTT and
//!   minRTT carry one extra microsecond and integer `diff` is truncated accordingly;
//! - `diff` is computed in 32-bit unsigned arithmetic (it wraps for cwnd·Δrtt ≥ 2³² µs);
//! - fewer than 3 RTT samples in the last RTT ⇒ plain Reno for that boundary (delayed ACKs);
//! - Vegas is active only in Open: entering any other state disables it (Reno increase),
//!   returning to Open restarts the per-RTT sampling; `TX_START` and `CWND_RESTART`
//!   restart everything, baseRTT included;
//! - the per-RTT adjustment itself ignores `is_cwnd_limited` (only the Reno fallback
//!   checks it), as in the kernel.
//!
//! Loss response and undo are Reno's (`tcp_reno_ssthresh`, `tcp_reno_undo_cwnd`).
//!
//! The sampling state (`VegasSampler`, Linux `struct vegas` from `tcp_vegas.h`) is shared
//! with YeAH, which reuses the Vegas hooks exactly as the kernel does.
use super::{
    AckSample, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind, ParamSpec,
    Params, Window,
};
use crate::scenario::ConfigError;

/// Linux initialises baseRTT and minRTT to this "infinite" value (µs).
pub(crate) const RTT_INFINITE_US: u32 = 0x7fff_ffff;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "alpha",
        default: 2.0,
        unit: "pkts",
        help: "lower bound of packets queued in the network (grow below it)",
    },
    ParamSpec {
        name: "beta",
        default: 4.0,
        unit: "pkts",
        help: "upper bound of packets queued in the network (shrink above it)",
    },
    ParamSpec {
        name: "gamma",
        default: 1.0,
        unit: "pkts",
        help: "queued packets that end slow start",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "vegas",
    summary:
        "Vegas: keep alpha..beta packets queued, comparing expected and actual rate once per RTT",
    feedback: "delay",
    reference: "Brakmo & Peterson, IEEE JSAC 13(8) 1995; Linux net/ipv4/tcp_vegas.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux Reno increase (`tcp_reno_cong_avoid`), used as the fallback of the Vegas family.
pub(crate) fn reno_cong_avoid(w: &mut Window, acked: u32) {
    if !w.is_cwnd_limited() {
        return;
    }
    let mut acked = acked;
    if w.in_slow_start() {
        acked = w.slow_start(acked);
        if acked == 0 {
            return;
        }
    }
    let cwnd = w.cwnd;
    w.cong_avoid_ai(cwnd, acked);
}

/// The RTT sampling state of Linux `struct vegas` (`tcp_vegas.h`), with the hooks Vegas
/// and YeAH share: `pkts_acked`, `set_state`, `cwnd_event`.
#[derive(Debug, Clone)]
pub(crate) struct VegasSampler {
    /// Linux `doing_vegas_now`: true in Open.
    pub doing_vegas_now: bool,
    /// `snd_nxt` at the last per-RTT boundary (bytes): the next boundary is the first ACK
    /// above it.
    pub beg_snd_nxt: u64,
    /// RTT samples since the last boundary (`u16` in the kernel).
    pub cnt_rtt: u16,
    /// Minimum sample since the last boundary, µs (+1).
    pub min_rtt_us: u32,
    /// Minimum sample ever (since the last restart), µs (+1).
    pub base_rtt_us: u32,
}

impl VegasSampler {
    /// State right after Linux `tcp_vegas_init` at connection set-up (snd_nxt = 0).
    pub fn new() -> Self {
        VegasSampler {
            doing_vegas_now: true,
            beg_snd_nxt: 0,
            cnt_rtt: 0,
            min_rtt_us: RTT_INFINITE_US,
            base_rtt_us: RTT_INFINITE_US,
        }
    }

    /// Linux `vegas_enable`: start a fresh per-RTT measurement at the current `snd_nxt`.
    pub fn enable(&mut self, w: &Window) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = w.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt_us = RTT_INFINITE_US;
    }

    /// Linux `tcp_vegas_init`: forget baseRTT too.
    pub fn init(&mut self, w: &Window) {
        self.base_rtt_us = RTT_INFINITE_US;
        self.enable(w);
    }

    /// Linux `tcp_vegas_pkts_acked`.
    pub fn pkts_acked(&mut self, s: &AckSample) {
        let Some(rtt) = s.rtt else { return };
        // rtt_us is a signed 32-bit value in the kernel; +1 so that no RTT is ever zero.
        let vrtt = (rtt.us().min(i32::MAX as u64) as u32).wrapping_add(1);
        if vrtt < self.base_rtt_us {
            self.base_rtt_us = vrtt;
        }
        self.min_rtt_us = self.min_rtt_us.min(vrtt);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
    }

    /// Linux `tcp_vegas_state`.
    pub fn state(&mut self, w: &Window, new: CaState) {
        if new == CaState::Open {
            self.enable(w);
        } else {
            self.doing_vegas_now = false;
        }
    }

    /// Linux `tcp_vegas_cwnd_event`.
    pub fn cwnd_event(&mut self, w: &Window, ev: CwndEvent) {
        if matches!(ev, CwndEvent::CwndRestart | CwndEvent::TxStart) {
            self.init(w);
        }
    }

    /// Start the next per-RTT interval (the "wipe the slate" step).
    pub fn next_round(&mut self) {
        self.cnt_rtt = 0;
        self.min_rtt_us = RTT_INFINITE_US;
    }
}

impl Default for VegasSampler {
    fn default() -> Self {
        Self::new()
    }
}

/// Linux Vegas.
#[derive(Debug, Clone)]
pub struct Vegas {
    alpha: u32,
    beta: u32,
    gamma: u32,
    s: VegasSampler,
}

impl Vegas {
    /// Build from the scenario's `alpha`, `beta`, `gamma` (packets; `alpha <= beta`).
    pub fn new(p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        let alpha = p.int("alpha", 0, 1 << 20)? as u32;
        let beta = p.int("beta", 0, 1 << 20)? as u32;
        let gamma = p.int("gamma", 0, 1 << 20)? as u32;
        if alpha > beta {
            return Err(ConfigError(format!(
                "cca_params.alpha: {alpha} is invalid for vegas; allowed: alpha <= beta ({beta})"
            )));
        }
        Ok(Vegas {
            alpha,
            beta,
            gamma,
            s: VegasSampler::new(),
        })
    }

    /// baseRTT in µs as Vegas holds it (sample + 1), if any sample was taken.
    pub fn base_rtt_us(&self) -> Option<u32> {
        (self.s.base_rtt_us != RTT_INFINITE_US).then_some(self.s.base_rtt_us)
    }

    /// The once-per-RTT adjustment (the body of the `after(ack, beg_snd_nxt)` branch).
    fn per_rtt(&mut self, w: &mut Window, acked: u32) {
        let rtt = self.s.min_rtt_us;
        let base = self.s.base_rtt_us;
        // Window that would fill the pipe at the base RTT (actual rate × baseRTT).
        let target_cwnd = (w.cwnd as u64 * base as u64 / rtt as u64) as u32;
        // Packets queued, in the kernel's 32-bit arithmetic (may wrap for huge windows).
        let diff = w.cwnd.wrapping_mul(rtt.wrapping_sub(base)) / base;
        if diff > self.gamma && w.in_slow_start() {
            // Too fast for slow start: jump to the measured rate (+1 for truncation) and
            // leave slow start.
            w.cwnd = w.cwnd.min(target_cwnd.wrapping_add(1));
            w.ssthresh = w.ssthresh.min(w.cwnd);
        } else if w.in_slow_start() {
            w.slow_start(acked);
        } else if diff > self.beta {
            w.cwnd -= 1;
            w.ssthresh = w.ssthresh.min(w.cwnd);
        } else if diff < self.alpha {
            w.cwnd += 1;
        }
        if w.cwnd < 2 {
            w.cwnd = 2;
        } else if w.cwnd > w.cwnd_clamp {
            w.cwnd = w.cwnd_clamp;
        }
        w.ssthresh = w.current_ssthresh();
    }
}

impl CongestionControl for Vegas {
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        (w.cwnd >> 1).max(2)
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        if !self.s.doing_vegas_now {
            reno_cong_avoid(w, acked);
            return;
        }
        if w.snd_una > self.s.beg_snd_nxt {
            // The ACK covers the whole flight sent when the last RTT began.
            self.s.beg_snd_nxt = w.snd_nxt;
            if self.s.cnt_rtt <= 2 {
                // ≤ 2 samples per RTT are probably all delayed ACKs: behave like Reno.
                reno_cong_avoid(w, acked);
            } else {
                self.per_rtt(w, acked);
            }
            self.s.next_round();
        } else if w.in_slow_start() {
            w.slow_start(acked);
        }
    }

    fn on_pkts_acked(&mut self, _w: &mut Window, s: &AckSample) {
        self.s.pkts_acked(s);
    }

    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        self.s.state(w, new);
    }

    fn on_cwnd_event(&mut self, w: &mut Window, ev: CwndEvent) {
        self.s.cwnd_event(w, ev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::SimDuration;
    use std::collections::BTreeMap;

    const MSS: u64 = 1448;

    fn vegas() -> (Vegas, Window) {
        let m = BTreeMap::new();
        let p = Params::new("vegas", &m, PARAMS).unwrap();
        let v = Vegas::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (v, w)
    }

    fn sample(rtt_us: u64) -> AckSample {
        AckSample {
            pkts_acked: 1,
            rtt: Some(SimDuration::from_us(rtt_us)),
            in_flight: 0,
        }
    }

    /// One RTT of a window-limited flow: every packet of the flight in progress is ACKed
    /// one by one with RTT `rtt_us`, the sender refilling the window; the loop ends with the
    /// first ACK above the flight, which is the per-RTT boundary.
    fn run_round(v: &mut Vegas, w: &mut Window, rtt_us: u64) {
        let end = w.snd_nxt;
        while w.snd_una <= end {
            w.snd_una += MSS;
            w.snd_nxt = w.snd_una + w.cwnd as u64 * MSS;
            v.on_pkts_acked(w, &sample(rtt_us));
            v.cong_avoid(w, 1);
        }
    }

    /// Congestion avoidance at cwnd 50 after one RTT without queue: the connection starts at
    /// cwnd 49, whose first RTT measures baseRTT = 100 ms (+1 µs) with diff = 0 < α, so
    /// cwnd becomes 50.
    fn in_ca_at_50() -> (Vegas, Window) {
        let (mut v, mut w) = vegas();
        w.cwnd = 49;
        w.ssthresh = 10;
        w.snd_nxt = 49 * MSS;
        v.on_cwnd_event(&mut w, CwndEvent::TxStart);
        run_round(&mut v, &mut w, 100_000);
        assert_eq!(w.cwnd, 50);
        assert_eq!(v.base_rtt_us(), Some(100_001));
        (v, w)
    }

    /// RTT when q of the 50 packets in flight are queued: the bottleneck carries 50 − q
    /// packets per 100 ms (its BDP is 50 − q), so rtt = cwnd/rate = 100 ms · 50 / (50 − q).
    fn rtt_with_queue_us(q: u64) -> u64 {
        100_000 * 50 / (50 - q)
    }

    #[test]
    fn congestion_avoidance_holds_cwnd_with_three_packets_queued() {
        // q = 3: rtt = 5e6/47 = 106382 µs, +1 = 106383. diff = 50·(106383 − 100001)/100001
        // = 319100/100001 = 3 (integer): α = 2 ≤ 3 ≤ β = 4, cwnd stays 50.
        let (mut v, mut w) = in_ca_at_50();
        run_round(&mut v, &mut w, rtt_with_queue_us(3));
        assert_eq!(w.cwnd, 50);
    }

    #[test]
    fn congestion_avoidance_grows_by_one_per_rtt_with_one_packet_queued() {
        // q = 1: rtt = 5e6/49 = 102040 µs, +1 = 102041. diff = 50·2040/100001 = 1 < α = 2:
        // +1 per RTT.
        let (mut v, mut w) = in_ca_at_50();
        run_round(&mut v, &mut w, rtt_with_queue_us(1));
        assert_eq!(w.cwnd, 51);
        // Next RTT, still one packet queued at the new window: 100000·51/50 = 102000 µs,
        // diff = 51·2000/100001 = 1 → 52.
        run_round(&mut v, &mut w, 102_000);
        assert_eq!(w.cwnd, 52);
    }

    #[test]
    fn congestion_avoidance_shrinks_by_one_per_rtt_with_five_packets_queued() {
        // q = 5: rtt = 5e6/45 = 111111 µs, +1 = 111112. diff = 50·11111/100001 = 5 > β = 4:
        // cwnd 49; ssthresh = min(37, 49) = 37, then current_ssthresh = max(37, 24 + 12) = 37.
        let (mut v, mut w) = in_ca_at_50();
        run_round(&mut v, &mut w, rtt_with_queue_us(5));
        assert_eq!(w.cwnd, 49);
        assert_eq!(w.ssthresh, 37);
    }

    #[test]
    fn congestion_avoidance_base_rtt_quirk_truncates_diff() {
        // 10 ms of queueing at cwnd 50 and base 100 ms is 5 packets, but Linux divides by
        // baseRTT + 1 µs: 50·(110001 − 100001)/100001 = 4.99995 → 4, not above β: cwnd holds.
        let (mut v, mut w) = in_ca_at_50();
        run_round(&mut v, &mut w, 110_000);
        assert_eq!(w.cwnd, 50);
    }

    #[test]
    fn slow_start_exits_to_the_measured_rate_when_diff_exceeds_gamma() {
        // Slow start at cwnd 40 (ssthresh ∞). First RTT at 100 ms: diff 0 → slow start
        // only, +1 per ACK: 40 ACKs plus the boundary ACK → cwnd 81.
        let (mut v, mut w) = vegas();
        w.cwnd = 40;
        w.snd_nxt = 40 * MSS;
        v.on_cwnd_event(&mut w, CwndEvent::TxStart);
        run_round(&mut v, &mut w, 100_000);
        assert_eq!(w.cwnd, 81);
        // Next RTT: 125 ms. The flight is the 80 packets sent while cwnd went 41 → 80 plus
        // one, i.e. 80 slow-start ACKs before the boundary: cwnd = 81 + 80 = 161. At the
        // boundary diff = 161·25000/100001 = 40 > γ = 1, target = 161·100001/125001 = 128,
        // cwnd = min(161, 129) = 129, ssthresh = min(∞, 129) = 129 (max(129, 64 + 32) = 129).
        run_round(&mut v, &mut w, 125_000);
        assert_eq!(w.cwnd, 129);
        assert_eq!(w.ssthresh, 129);
    }

    #[test]
    fn open_with_too_few_samples_falls_back_to_reno() {
        // cntRTT ≤ 2 at the boundary: Reno CA (+1 per cwnd ACKed), no Vegas decision even
        // with a large queue.
        let (mut v, mut w) = in_ca_at_50();
        w.snd_nxt = w.snd_una + 2 * MSS; // a flight of 2 packets
        let cnt0 = w.cwnd_cnt;
        v.on_cwnd_event(&mut w, CwndEvent::CwndRestart); // forget samples
        w.snd_una += 3 * MSS; // the boundary ACK, 1 sample only
        v.on_pkts_acked(&mut w, &sample(200_000));
        v.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 50);
        assert_eq!(w.cwnd_cnt, cnt0 + 1);
    }

    #[test]
    fn recovery_disables_vegas_and_open_restarts_sampling() {
        let (mut v, mut w) = in_ca_at_50();
        v.on_state_change(&mut w, CaState::Recovery);
        assert!(!v.s.doing_vegas_now);
        // Reno growth while disabled: 50 ACKs at cwnd 50 add one packet.
        w.cwnd_cnt = 0;
        for _ in 0..50 {
            v.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 51);
        w.snd_nxt = 777 * MSS;
        v.on_state_change(&mut w, CaState::Open);
        assert!(v.s.doing_vegas_now);
        assert_eq!(v.s.beg_snd_nxt, 777 * MSS);
        assert_eq!(v.s.cnt_rtt, 0);
        assert_eq!(v.base_rtt_us(), Some(100_001), "baseRTT survives recovery");
        v.on_cwnd_event(&mut w, CwndEvent::TxStart);
        assert_eq!(v.base_rtt_us(), None, "TX_START forgets baseRTT");
    }

    #[test]
    fn loss_halves_like_reno() {
        let (mut v, mut w) = vegas();
        w.cwnd = 41;
        assert_eq!(v.on_congestion_event(&mut w, LossKind::Recovery), 20);
    }

    #[test]
    fn config_alpha_above_beta_is_rejected() {
        let mut m = BTreeMap::new();
        m.insert("alpha".to_string(), 5.0);
        let p = Params::new("vegas", &m, PARAMS).unwrap();
        let e = Vegas::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .err()
        .unwrap();
        assert!(e.0.starts_with("cca_params.alpha: 5"), "{e}");
    }
}
