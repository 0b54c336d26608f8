//! BIC-TCP (Xu, Harfoush, Rhee, INFOCOM 2004) as Linux `tcp_bic.c` implements it.
//!
//! After a loss BIC remembers the window where it happened (Wmax) and searches for the
//! available capacity by binary search: each RTT it moves cwnd towards the midpoint
//! between the current window and Wmax, by at most Smax = `max_increment` = 16 packets
//! (linear increase when far away) and by very little once close (`smooth_part`). Past
//! Wmax it probes slowly first, then faster ("max probing", mirroring the search), and
//! linearly by 16 packets per RTT beyond Wmax + 48. Fast convergence: if a loss happens
//! below the previous Wmax, the new Wmax is lowered to cwnd·(1 + β)/2 to release
//! bandwidth to newer flows. The decrease keeps β = 819/1024 ≈ 0.8 of cwnd.
//!
//! Linux specifics kept here, u32 integer arithmetic (wrapping) included:
//! - Up to `low_window` = 14 packets BIC is exactly Reno: `cnt = cwnd` (returned before
//!   any scaling below) and ssthresh = cwnd/2.
//! - `cnt` (ACKed packets per +1 packet, fed to `tcp_cong_avoid_ai`) is recomputed at
//!   most every HZ/32 jiffies unless cwnd changed.
//! - Before the first loss (Wmax = 0) cnt is capped at 20: at least 5 % growth per RTT.
//! - Above `low_window`, cnt is scaled by 16/`delayed_ack`, where `delayed_ack` estimates
//!   packets per ACK × 16 with a 1/16 EWMA (updated in Open from `pkts_acked`, starting at
//!   2 × 16). Because `tcp_cong_avoid_ai` already counts packets, this speeds growth up by
//!   the ACK ratio (×2 with delayed ACKs). With one packet per ACK the estimate settles at
//!   31, not 16 (31 + 1 − ⌊31/16⌋ = 31), so growth is still almost doubled.
//! - Entering Loss (RTO) resets all state (Wmax included). Undo is Reno's.
use super::{AckSample, CaState, CcInfo, CongestionControl, FlowInit, LossKind, ParamSpec};
use super::{CwndEvent, Params, Window};
use crate::scenario::ConfigError;

const BETA_SCALE: u32 = 1024;
/// Binary search divisor: go to (max + min)/B.
const BICTCP_B: u32 = 4;
/// `delayed_ack` is packets per ACK << ACK_RATIO_SHIFT.
const ACK_RATIO_SHIFT: u32 = 4;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "beta",
        default: 819.0,
        unit: "/1024",
        help: "multiplicative decrease factor (819/1024 = 0.8)",
    },
    ParamSpec {
        name: "max_increment",
        default: 16.0,
        unit: "pkts",
        help: "Smax: largest increase per RTT during the binary search",
    },
    ParamSpec {
        name: "low_window",
        default: 14.0,
        unit: "pkts",
        help: "at or below this cwnd BIC behaves like Reno",
    },
    ParamSpec {
        name: "smooth_part",
        default: 20.0,
        unit: "RTTs",
        help: "RTTs to creep from Wmax - B to Wmax (cnt = cwnd*smooth_part/B near Wmax)",
    },
    ParamSpec {
        name: "fast_convergence",
        default: 1.0,
        unit: "bool",
        help: "lower Wmax to cwnd*(1+beta)/2 on a loss below the previous Wmax",
    },
    ParamSpec {
        name: "initial_ssthresh",
        default: 0.0,
        unit: "pkts",
        help: "initial ssthresh (0 = infinite)",
    },
    ParamSpec {
        name: "hz",
        default: 1000.0,
        unit: "Hz",
        help: "kernel jiffies rate (CONFIG_HZ)",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "bic",
    summary: "BIC: binary search towards the window of the last loss (Smax 16), beta 0.8",
    feedback: "loss",
    reference: "Xu, Harfoush, Rhee, INFOCOM 2004; Linux net/ipv4/tcp_bic.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux BIC state (`struct bictcp`).
#[derive(Debug, Clone, Default)]
pub struct Bic {
    // parameters
    beta: u32,
    max_increment: u32,
    low_window: u32,
    smooth_part: u32,
    fast_convergence: bool,
    initial_ssthresh: u32,
    hz: u32,
    // state
    /// ACKed packets per +1 packet of cwnd.
    cnt: u32,
    /// Wmax: cwnd at the last loss (0 before the first one).
    last_max_cwnd: u32,
    last_cwnd: u32,
    /// Jiffies of the last `cnt` update.
    last_time: u32,
    epoch_start: u32,
    /// Packets per ACK × 16 (EWMA 1/16).
    delayed_ack: u32,
    initialized: bool,
}

impl Bic {
    /// Build from scenario parameters.
    pub fn new(p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        let mut b = Bic {
            beta: p.int("beta", 1, 1023)? as u32,
            max_increment: p.int("max_increment", 1, 1 << 20)? as u32,
            low_window: p.int("low_window", 0, 1 << 20)? as u32,
            smooth_part: p.int("smooth_part", 1, 1 << 20)? as u32,
            fast_convergence: p.flag("fast_convergence")?,
            initial_ssthresh: p.int("initial_ssthresh", 0, 1 << 30)? as u32,
            hz: p.int("hz", 100, 100_000)? as u32,
            ..Default::default()
        };
        b.reset();
        Ok(b)
    }

    /// Linux `bictcp_reset`.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.epoch_start = 0;
        self.delayed_ack = 2 << ACK_RATIO_SHIFT;
    }

    /// Linux `bictcp_init`, run on the first hook (the connection's first transmission).
    fn ensure_init(&mut self, w: &mut Window) {
        if self.initialized {
            return;
        }
        self.initialized = true;
        self.reset();
        if self.initial_ssthresh != 0 {
            w.ssthresh = self.initial_ssthresh;
        }
    }

    /// Linux `bictcp_update`: recompute `cnt` for the current window.
    fn update(&mut self, w: &Window, cwnd: u32) {
        let jiffies = w.jiffies(self.hz);
        if self.last_cwnd == cwnd
            && (jiffies.wrapping_sub(self.last_time) as i32) <= (self.hz / 32) as i32
        {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = jiffies;
        if self.epoch_start == 0 {
            self.epoch_start = jiffies;
        }
        if cwnd <= self.low_window {
            // Reno-like region (no delayed-ACK scaling either).
            self.cnt = cwnd;
            return;
        }
        let wmax = self.last_max_cwnd;
        if cwnd < wmax {
            // Binary search towards Wmax, at most Smax per RTT.
            let dist = (wmax - cwnd) / BICTCP_B;
            self.cnt = if dist > self.max_increment {
                cwnd / self.max_increment
            } else if dist <= 1 {
                cwnd.wrapping_mul(self.smooth_part) / BICTCP_B
            } else {
                cwnd / dist
            };
        } else {
            // Max probing: slow just above Wmax, then faster, then linear.
            self.cnt = if cwnd < wmax.wrapping_add(BICTCP_B) {
                cwnd.wrapping_mul(self.smooth_part) / BICTCP_B
            } else if cwnd < wmax.wrapping_add(self.max_increment.wrapping_mul(BICTCP_B - 1)) {
                cwnd.wrapping_mul(BICTCP_B - 1) / (cwnd - wmax)
            } else {
                cwnd / self.max_increment
            };
        }
        // No loss yet (or after an RTO reset): grow by at least 5 % per RTT.
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
        self.cnt = self.cnt.wrapping_shl(ACK_RATIO_SHIFT) / self.delayed_ack;
        if self.cnt == 0 {
            self.cnt = 1;
        }
    }

    /// Wmax (packets), for tests and traces.
    pub fn last_max_cwnd(&self) -> u32 {
        self.last_max_cwnd
    }

    /// Current ACK-per-increment count, for tests.
    pub fn cnt(&self) -> u32 {
        self.cnt
    }

    /// Packets-per-ACK estimate × 16, for tests.
    pub fn delayed_ack(&self) -> u32 {
        self.delayed_ack
    }
}

impl CongestionControl for Bic {
    fn on_cwnd_event(&mut self, w: &mut Window, _ev: CwndEvent) {
        self.ensure_init(w);
    }

    /// Linux `bictcp_recalc_ssthresh`.
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        self.ensure_init(w);
        self.epoch_start = 0;
        let cwnd = w.cwnd;
        if cwnd < self.last_max_cwnd && self.fast_convergence {
            self.last_max_cwnd = cwnd.wrapping_mul(BETA_SCALE + self.beta) / (2 * BETA_SCALE);
        } else {
            self.last_max_cwnd = cwnd;
        }
        if cwnd <= self.low_window {
            (cwnd >> 1).max(2)
        } else {
            (cwnd.wrapping_mul(self.beta) / BETA_SCALE).max(2)
        }
    }

    /// Linux `bictcp_cong_avoid`.
    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        self.ensure_init(w);
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
        self.update(w, cwnd);
        let cnt = self.cnt;
        w.cong_avoid_ai(cnt, acked);
    }

    /// Linux `bictcp_state`: an RTO forgets everything.
    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        self.ensure_init(w);
        if new == CaState::Loss {
            self.reset();
        }
    }

    /// Linux `bictcp_acked`: delayed_ack += pkts_acked − delayed_ack/16, in Open only.
    fn on_pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
        self.ensure_init(w);
        if w.ca_state == CaState::Open {
            self.delayed_ack = self.delayed_ack.wrapping_add(
                s.pkts_acked
                    .wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::SimTime;
    use std::collections::BTreeMap;

    fn bic() -> (Bic, Window) {
        let m = BTreeMap::new();
        let p = Params::new("bic", &m, PARAMS).unwrap();
        let b = Bic::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        w.now = SimTime(1_000_000_000);
        let mut b = b;
        b.on_cwnd_event(&mut w, CwndEvent::TxStart); // init, as at the first transmission
        (b, w)
    }

    fn acked(n: u32) -> AckSample {
        AckSample {
            pkts_acked: n,
            rtt: None,
            in_flight: 0,
        }
    }

    /// `cnt` computed for `cwnd` with Wmax = `wmax` and the default delayed_ack (32).
    fn cnt_at(cwnd: u32, wmax: u32) -> u32 {
        let (mut b, mut w) = bic();
        b.last_max_cwnd = wmax;
        w.cwnd = cwnd;
        w.ssthresh = 2;
        b.cong_avoid(&mut w, 1);
        b.cnt()
    }

    #[test]
    fn open_delayed_ack_estimate_tracks_packets_per_ack() {
        let (mut b, mut w) = bic();
        assert_eq!(b.delayed_ack(), 32, "starts at 2 packets/ACK x 16");
        // Two packets per ACK: 32 + 2 − 32/16 = 32, steady.
        b.on_pkts_acked(&mut w, &acked(2));
        assert_eq!(b.delayed_ack(), 32);
        // One packet per ACK: 32 + 1 − 2 = 31, then 31 + 1 − ⌊31/16⌋ = 31 for ever.
        for _ in 0..100 {
            b.on_pkts_acked(&mut w, &acked(1));
        }
        assert_eq!(b.delayed_ack(), 31);
        // Stretch ACKs of 4: 31 + 4 − 1 = 34, 34 + 4 − 2 = 36, ...; the fixed point is
        // where ⌊d/16⌋ = 4, i.e. d = 64.
        for _ in 0..200 {
            b.on_pkts_acked(&mut w, &acked(4));
        }
        assert_eq!(b.delayed_ack(), 64);
    }

    #[test]
    fn recovery_does_not_update_delayed_ack() {
        let (mut b, mut w) = bic();
        w.ca_state = CaState::Recovery;
        b.on_pkts_acked(&mut w, &acked(10));
        assert_eq!(b.delayed_ack(), 32);
    }

    #[test]
    fn congestion_avoidance_low_window_is_reno() {
        // cwnd 10 ≤ 14: cnt = cwnd = 10 with no delayed-ACK scaling, i.e. Reno's
        // cong_avoid_ai(cwnd): delayed ACKs of 2 packets → cnt_ai 2, 4, 6, 8, 10 → cwnd 11
        // on the 5th ACK: +1 packet per 10 packets ACKed.
        let (mut b, mut w) = bic();
        w.cwnd = 10;
        w.ssthresh = 5;
        for _ in 0..4 {
            b.cong_avoid(&mut w, 2);
        }
        assert_eq!((w.cwnd, b.cnt()), (10, 10));
        b.cong_avoid(&mut w, 2);
        assert_eq!((w.cwnd, w.cwnd_cnt), (11, 0));
    }

    #[test]
    fn congestion_avoidance_before_first_loss_grows_at_least_5_percent_per_rtt() {
        // Wmax = 0, cwnd 1000: cwnd ≥ Wmax + 48 → cnt = 1000/16 = 62, capped at 20
        // (5 %/RTT), then × 16/32 → 10. cwnd 40 (< 0 + 48): cnt = 40·3/40 = 3 → 3·16/32 = 1.
        assert_eq!(cnt_at(1000, 0), 10);
        assert_eq!(cnt_at(40, 0), 1);
    }

    #[test]
    fn congestion_avoidance_binary_search_below_wmax() {
        // Wmax 1000, each cnt then halved by delayed_ack 32:
        // cwnd 900: dist = 100/4 = 25 > 16 → linear, cnt = 900/16 = 56 → 28.
        assert_eq!(cnt_at(900, 1000), 28);
        // cwnd 980: dist = 20/4 = 5 → cnt = 980/5 = 196 → 98 (+5 packets per RTT).
        assert_eq!(cnt_at(980, 1000), 98);
        // cwnd 997: dist = 3/4 = 0 ≤ 1 → smooth: cnt = 997·20/4 = 4985 → 2492.
        assert_eq!(cnt_at(997, 1000), 2492);
    }

    #[test]
    fn congestion_avoidance_max_probing_above_wmax() {
        // cwnd 1002 < Wmax + 4: cnt = 1002·20/4 = 5010 → 2505.
        assert_eq!(cnt_at(1002, 1000), 2505);
        // cwnd 1020 < Wmax + 48: cnt = 1020·3/20 = 153 → 76.
        assert_eq!(cnt_at(1020, 1000), 76);
        // cwnd 1100 ≥ Wmax + 48: linear, cnt = 1100/16 = 68 → 34.
        assert_eq!(cnt_at(1100, 1000), 34);
    }

    #[test]
    fn congestion_avoidance_recomputes_cnt_at_most_every_hz_over_32() {
        // HZ 1000: same cwnd within 31 jiffies keeps the old cnt, even if Wmax moved.
        let (mut b, mut w) = bic();
        b.last_max_cwnd = 1000;
        w.cwnd = 900;
        w.ssthresh = 2;
        w.cwnd_cnt = 0;
        b.cong_avoid(&mut w, 1);
        assert_eq!(b.cnt(), 28);
        b.last_max_cwnd = 920; // dist = 20/4 = 5 → 900/5 = 180 → 90 once recomputed
        w.now = SimTime(1_031_000_000);
        b.cong_avoid(&mut w, 1);
        assert_eq!(b.cnt(), 28, "31 jiffies later: not yet");
        w.now = SimTime(1_032_000_000);
        b.cong_avoid(&mut w, 1);
        assert_eq!(b.cnt(), 90, "32 jiffies later: recomputed");
    }

    #[test]
    fn loss_keeps_beta_and_records_wmax() {
        // cwnd 1000, no previous Wmax: Wmax = 1000, ssthresh = ⌊1000·819/1024⌋ = 799.
        let (mut b, mut w) = bic();
        w.cwnd = 1000;
        assert_eq!(b.on_congestion_event(&mut w, LossKind::Recovery), 799);
        assert_eq!(b.last_max_cwnd(), 1000);
        // Fast convergence, loss at 900 < 1000: Wmax = ⌊900·1843/2048⌋ = ⌊809.9⌋ = 809,
        // ssthresh = ⌊900·819/1024⌋ = ⌊719.8⌋ = 719.
        w.cwnd = 900;
        assert_eq!(b.on_congestion_event(&mut w, LossKind::Recovery), 719);
        assert_eq!(b.last_max_cwnd(), 809);
        // Loss above Wmax: Wmax = cwnd.
        w.cwnd = 850;
        b.on_congestion_event(&mut w, LossKind::Recovery);
        assert_eq!(b.last_max_cwnd(), 850);
    }

    #[test]
    fn loss_at_low_window_halves() {
        let (mut b, mut w) = bic();
        w.cwnd = 14;
        assert_eq!(b.on_congestion_event(&mut w, LossKind::Recovery), 7);
        w.cwnd = 15;
        // 15·819/1024 = 11.99 → 11.
        assert_eq!(b.on_congestion_event(&mut w, LossKind::Recovery), 11);
        w.cwnd = 3;
        assert_eq!(b.on_congestion_event(&mut w, LossKind::Rto), 2);
    }

    #[test]
    fn loss_state_resets_wmax_and_ack_ratio() {
        let (mut b, mut w) = bic();
        w.cwnd = 1000;
        b.on_congestion_event(&mut w, LossKind::Rto);
        b.on_pkts_acked(&mut w, &acked(1));
        assert_eq!((b.last_max_cwnd(), b.delayed_ack()), (1000, 31));
        b.on_state_change(&mut w, CaState::Loss);
        assert_eq!((b.last_max_cwnd(), b.delayed_ack()), (0, 32));
    }

    #[test]
    fn initial_ssthresh_parameter_is_applied_at_init() {
        let mut m = BTreeMap::new();
        m.insert("initial_ssthresh".to_string(), 64.0);
        let p = Params::new("bic", &m, PARAMS).unwrap();
        let mut b = Bic::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        b.on_cwnd_event(&mut w, CwndEvent::TxStart);
        assert_eq!(w.ssthresh, 64);
    }
}
