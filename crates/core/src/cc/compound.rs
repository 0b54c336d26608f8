//! Compound TCP (Tan, Song, Zhang & Sridharan, INFOCOM 2006; draft-sridharan-tcpm-ctcp-02;
//! the out-of-tree Linux `tcp_compound.c`, Andrew's release 1.3). Paper-defined, so the
//! delay window is a real number.
//!
//! The send window is the sum of a loss-based Reno window and a delay-based window:
//! `win = cwnd + dwnd` (the receiver window is applied by the sender). Per ACK the Reno part
//! grows by 1/win (slow start: +1 per packet ACKed); once per RTT, with Vegas-style samples
//! (minimum RTT of the RTT, more than 2 samples, baseRTT = minimum ever, all +1 µs as in the
//! kernel module), the backlog
//!
//! ```text
//! diff = (win/baseRTT − win/RTT)·baseRTT = win·(RTT − baseRTT)/RTT       (packets)
//! diff < γ:  dwnd += max(α·win^k − 1, 0)          (scalable growth, −1 for Reno's +1)
//! diff ≥ γ:  dwnd  = max(dwnd − ζ·diff, 0)        (give the queue back)
//! loss:      dwnd  = max(win·(1 − β) − cwnd/2, 0),  cwnd = cwnd/2   (win → win·(1 − β))
//! RTO:       dwnd  = 0 (and the sender sets cwnd = 1)
//! ```
//!
//! with α = 1/8, β = 1/2, k = 0.75, ζ = 1, γ = 30 packets.
//!
//! How the two windows map onto the sender: the sender only knows `Window.cwnd`, which is
//! its send window, so this controller sets `Window.cwnd = cwnd_reno + ⌊dwnd⌋` and keeps
//! the Reno part (`reno`) and the real-valued `dwnd` privately. The Reno increase is done on
//! the total window with the kernel helpers (which is exactly "+1/win per ACK") and then
//! attributed to the Reno part. `ssthresh` (returned from `on_congestion_event`) is the
//! reduced total, max(cwnd/2 + ⌊dwnd'⌋, 2), so the sender's PRR brings the window to
//! precisely the new sum. Whenever the sender changed the window behind the controller's
//! back (PRR ending elsewhere, RTO, idle restart), the next hook rescales both parts in
//! proportion, as the 1.3 module does; an undo restores the state saved at the reduction.
//!
//! Choices where the sources differ (documented, configurable):
//! - `dwnd` is only updated in congestion avoidance and while win ≥ `low_window` = 38
//!   packets; otherwise it is set to 0 (module 1.3 `LOW_WINDOW`; the paper starts dwnd at 0
//!   and lets the delay component act only after slow start). 0 disables the threshold.
//! - `win` in `diff` and in the increase is the current window (paper), not the packets
//!   sent in the last RTT (module); the increase is applied at once, not paced over the RTT.
//! - γ is fixed (the module's optional γ auto-tuning is not implemented).
//! - The delay component is active only in Open (the Vegas sampling rule); TX_START and
//!   CWND_RESTART restart the sampling but keep baseRTT (module 1.3), with dwnd = 0.
use super::vegas::VegasSampler;
use super::{
    AckSample, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind, ParamSpec,
    Params, Window,
};
use crate::scenario::ConfigError;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "alpha",
        default: 0.125,
        unit: "",
        help: "scale of the delay-window increase alpha*win^k - 1 per RTT",
    },
    ParamSpec {
        name: "beta",
        default: 0.5,
        unit: "",
        help: "multiplicative decrease of the total window on loss",
    },
    ParamSpec {
        name: "k",
        default: 0.75,
        unit: "",
        help: "exponent of the delay-window increase (aggressiveness)",
    },
    ParamSpec {
        name: "zeta",
        default: 1.0,
        unit: "",
        help: "delay-window decrease per packet of backlog above gamma",
    },
    ParamSpec {
        name: "gamma",
        default: 30.0,
        unit: "pkts",
        help: "backlog at which the delay window starts shrinking",
    },
    ParamSpec {
        name: "low_window",
        default: 38.0,
        unit: "pkts",
        help: "below this window the delay component is off (0 = always on)",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "compound",
    summary: "Compound TCP: Reno window plus a delay window that grows as win^0.75 while the backlog is under gamma",
    feedback: "hybrid",
    reference: "Tan, Song, Zhang, Sridharan, INFOCOM 2006; draft-sridharan-tcpm-ctcp-02; out-of-tree tcp_compound.c 1.3",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Compound TCP.
#[derive(Debug, Clone)]
pub struct Compound {
    alpha: f64,
    beta: f64,
    k: f64,
    zeta: f64,
    gamma: f64,
    low_window: u32,
    s: VegasSampler,
    /// Loss-based (Reno) part, packets.
    reno: u32,
    /// Delay-based part, packets (real).
    dwnd: f64,
    /// The `Window.cwnd` this controller last set (= reno + ⌊dwnd⌋, clamped).
    exposed: u32,
    /// (reno, dwnd) before the last reduction, for an undo.
    saved: Option<(u32, f64)>,
}

impl Compound {
    /// Build from the scenario's α, β, k, ζ, γ and `low_window`.
    pub fn new(p: &Params<'_>, init: &FlowInit) -> Result<Self, ConfigError> {
        Ok(Compound {
            alpha: p.real("alpha", 0.0, 100.0)?,
            beta: p.real("beta", 0.0, 1.0)?,
            k: p.real("k", 0.0, 2.0)?,
            zeta: p.real("zeta", 0.0, 100.0)?,
            gamma: p.real("gamma", 0.0, 1e6)?,
            low_window: p.int("low_window", 0, 1 << 30)? as u32,
            s: VegasSampler::new(),
            reno: init.initial_window,
            dwnd: 0.0,
            exposed: init.initial_window,
            saved: None,
        })
    }

    /// The loss-based window (packets).
    pub fn reno_cwnd(&self) -> u32 {
        self.reno
    }

    /// The delay-based window (packets).
    pub fn dwnd(&self) -> f64 {
        self.dwnd
    }

    /// Adopt a window the sender set on its own: a decrease scales both parts in
    /// proportion, an increase goes to the Reno part.
    fn sync(&mut self, w: &Window) {
        let c = w.cwnd;
        if c == self.exposed {
            return;
        }
        if c < self.exposed && self.exposed > 0 {
            self.dwnd = self.dwnd * c as f64 / self.exposed as f64;
        }
        // The Reno part keeps at least one packet.
        let max_d = c.saturating_sub(1) as f64;
        if self.dwnd.floor() > max_d {
            self.dwnd = max_d;
        }
        self.reno = c - self.dwnd.floor() as u32;
        self.exposed = c;
    }

    /// Publish reno + ⌊dwnd⌋ as the sender's window.
    fn expose(&mut self, w: &mut Window) {
        let sum = self.reno as u64 + self.dwnd.floor() as u64;
        w.cwnd = sum.min(w.cwnd_clamp as u64) as u32;
        self.exposed = w.cwnd;
    }

    /// The once-per-RTT delay-window update.
    fn per_rtt(&mut self, w: &Window) {
        let win = w.cwnd;
        if w.in_slow_start() || win < self.low_window {
            self.dwnd = 0.0;
            return;
        }
        if self.s.cnt_rtt <= 2 {
            return;
        }
        let rtt = self.s.min_rtt_us as f64;
        let base = self.s.base_rtt_us as f64;
        let win = win as f64;
        // Expected minus actual rate, times baseRTT: the packets this flow has queued.
        let diff = win * (rtt - base) / rtt;
        if diff < self.gamma {
            self.dwnd += (self.alpha * win.powf(self.k) - 1.0).max(0.0);
        } else {
            self.dwnd = (self.dwnd - self.zeta * diff).max(0.0);
        }
    }
}

impl CongestionControl for Compound {
    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        self.sync(w);
        if !w.is_cwnd_limited() {
            return;
        }
        // Loss-based part: Reno on the total window (+1 per packet in slow start, +1/win per
        // packet in congestion avoidance), credited to the Reno part.
        let d = self.dwnd.floor() as u32;
        let mut acked = acked;
        if w.in_slow_start() {
            acked = w.slow_start(acked);
        }
        if acked > 0 {
            let win = w.cwnd;
            w.cong_avoid_ai(win, acked);
        }
        self.reno = w.cwnd.saturating_sub(d).max(1);
        if w.snd_una > self.s.beg_snd_nxt {
            self.s.beg_snd_nxt = w.snd_nxt;
            if self.s.doing_vegas_now {
                self.per_rtt(w);
            }
            self.s.next_round();
        }
        self.expose(w);
    }

    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        self.sync(w);
        self.saved = Some((self.reno, self.dwnd));
        let win = w.cwnd as f64;
        let reno = (self.reno / 2).max(1);
        // The total becomes win·(1 − β): what the halved Reno part does not cover stays in
        // the delay window.
        let dwnd = (win * (1.0 - self.beta) - reno as f64).max(0.0);
        let ssthresh = (reno + dwnd.floor() as u32).max(2);
        self.reno = ssthresh - dwnd.floor() as u32;
        self.dwnd = dwnd;
        // The sender walks cwnd down to ssthresh (PRR); that is the new sum.
        self.exposed = ssthresh;
        ssthresh
    }

    fn on_spurious_loss(&mut self, w: &mut Window) -> u32 {
        let Some((reno, dwnd)) = self.saved.take() else {
            return w.cwnd.max(w.prior_cwnd);
        };
        self.reno = reno;
        self.dwnd = dwnd;
        let sum = reno + dwnd.floor() as u32;
        let cwnd = w.cwnd.max(sum);
        self.reno += cwnd - sum;
        self.exposed = cwnd;
        cwnd
    }

    fn on_pkts_acked(&mut self, _w: &mut Window, s: &AckSample) {
        self.s.pkts_acked(s);
    }

    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        self.s.state(w, new);
    }

    fn on_cwnd_event(&mut self, w: &mut Window, ev: CwndEvent) {
        match ev {
            CwndEvent::TxStart | CwndEvent::CwndRestart => {
                // Fresh sampling, baseRTT kept; the whole window becomes the Reno part.
                self.s.enable(w);
                self.dwnd = 0.0;
                self.reno = w.cwnd;
                self.exposed = w.cwnd;
            }
            CwndEvent::Loss => self.dwnd = 0.0, // RTO: the delay window is reset
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::SimDuration;
    use std::collections::BTreeMap;

    const MSS: u64 = 1448;

    fn compound() -> (Compound, Window) {
        let m = BTreeMap::new();
        let p = Params::new("compound", &m, PARAMS).unwrap();
        let c = Compound::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (c, w)
    }

    fn ack(c: &mut Compound, w: &mut Window, rtt_us: u64) {
        w.snd_una += MSS;
        c.on_pkts_acked(
            w,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(SimDuration::from_us(rtt_us)),
                in_flight: 0,
            },
        );
        c.cong_avoid(w, 1);
    }

    /// Congestion avoidance with the given Reno and delay windows, baseRTT = 100000 µs
    /// (a 99999 µs sample +1) from an earlier RTT, then one RTT of three samples at
    /// `rtt_us` (+1) ending with the boundary ACK.
    fn one_rtt(reno: u32, dwnd: f64, rtt_us: u64) -> (Compound, Window) {
        let (mut c, mut w) = compound();
        w.cwnd = reno + dwnd as u32;
        w.ssthresh = 10;
        w.snd_nxt = 1000 * MSS;
        c.on_cwnd_event(&mut w, CwndEvent::TxStart);
        c.reno = reno;
        c.dwnd = dwnd;
        c.on_pkts_acked(
            &mut w,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(SimDuration::from_us(99_999)),
                in_flight: 0,
            },
        );
        c.s.next_round();
        w.snd_una = 998 * MSS; // ACKs of 999, 1000, 1001: the last is the boundary
        for _ in 0..3 {
            ack(&mut c, &mut w, rtt_us);
        }
        (c, w)
    }

    #[test]
    fn congestion_avoidance_dwnd_grows_by_alpha_win_pow_k_minus_one() {
        // win 256, no queue (diff 0 < 30): dwnd += 256^0.75/8 − 1 = 64/8 − 1 = 7; the three
        // ACKs only add 3/256 to the Reno part: cwnd = 256 + 7 = 263.
        let (c, w) = one_rtt(256, 0.0, 99_999);
        assert!((c.dwnd() - 7.0).abs() < 1e-9, "dwnd {}", c.dwnd());
        assert_eq!(c.reno_cwnd(), 256);
        assert_eq!(w.cwnd, 263);
        // win 1000: 1000^0.75 = 177.828, /8 = 22.229, −1: dwnd 21.229 → cwnd 1021.
        let (c, w) = one_rtt(1000, 0.0, 99_999);
        assert!((c.dwnd() - (177.827_941 / 8.0 - 1.0)).abs() < 1e-5);
        assert_eq!(w.cwnd, 1021);
    }

    #[test]
    fn congestion_avoidance_dwnd_still_grows_just_below_gamma() {
        // win 300 (200 + 100), RTT 110988 µs: diff = 300·10988/110988 = 29.70 < 30:
        // dwnd = 100 + 300^0.75/8 − 1 = 100 + 72.0843/8 − 1 = 108.01 → cwnd 308.
        let (c, w) = one_rtt(200, 100.0, 110_987);
        assert!((c.dwnd() - (100.0 + 72.084_342_424 / 8.0 - 1.0)).abs() < 1e-5);
        assert_eq!(w.cwnd, 308);
    }

    #[test]
    fn congestion_avoidance_dwnd_shrinks_by_zeta_diff_above_gamma() {
        // win 300, RTT 125000 µs vs base 100000: diff = 300·25000/125000 = 60 ≥ 30:
        // dwnd = 100 − 60 = 40, cwnd = 200 + 40 = 240.
        let (c, w) = one_rtt(200, 100.0, 124_999);
        assert!((c.dwnd() - 40.0).abs() < 1e-9);
        assert_eq!(w.cwnd, 240);
        // A backlog larger than dwnd empties it: win 290, diff = 290·50000/150000 = 96.7 > 90:
        // dwnd = max(90 − 96.7, 0) = 0, cwnd = 200.
        let (c, w) = one_rtt(200, 90.0, 149_999);
        assert_eq!(c.dwnd(), 0.0);
        assert_eq!(w.cwnd, 200);
    }

    #[test]
    fn loss_halves_the_total_and_keeps_the_rest_in_dwnd() {
        // reno 200 + dwnd 100 = 300: reno → 100, dwnd = 300·½ − 100 = 50, ssthresh 150.
        let (mut c, mut w) = one_rtt(200, 100.0, 124_999); // (dwnd 40 after this RTT)
        c.reno = 200;
        c.dwnd = 100.0;
        c.exposed = 300;
        w.cwnd = 300;
        assert_eq!(c.on_congestion_event(&mut w, LossKind::Recovery), 150);
        assert_eq!(c.reno_cwnd(), 100);
        assert!((c.dwnd() - 50.0).abs() < 1e-9);
        // Delay part larger than half the window: reno 100 + dwnd 300 → reno 50,
        // dwnd = 200 − 50 = 150, ssthresh 200.
        c.reno = 100;
        c.dwnd = 300.0;
        c.exposed = 400;
        w.cwnd = 400;
        assert_eq!(c.on_congestion_event(&mut w, LossKind::Recovery), 200);
        assert_eq!(c.reno_cwnd(), 50);
        assert!((c.dwnd() - 150.0).abs() < 1e-9);
        // No delay part: plain Reno, 301 → 150 (dwnd = 150.5 − 150 = 0.5, not a packet).
        c.reno = 301;
        c.dwnd = 0.0;
        c.exposed = 301;
        w.cwnd = 301;
        assert_eq!(c.on_congestion_event(&mut w, LossKind::Recovery), 150);
    }

    #[test]
    fn loss_then_undo_restores_both_parts() {
        let (mut c, mut w) = compound();
        c.reno = 200;
        c.dwnd = 100.5;
        c.exposed = 300;
        w.cwnd = 300;
        w.prior_cwnd = 300;
        w.ssthresh = c.on_congestion_event(&mut w, LossKind::Recovery);
        w.cwnd = w.ssthresh;
        assert_eq!(c.on_spurious_loss(&mut w), 300);
        assert_eq!(c.reno_cwnd(), 200);
        assert!((c.dwnd() - 100.5).abs() < 1e-12);
    }

    #[test]
    fn rto_resets_dwnd_and_restarts_from_one_packet() {
        let (mut c, mut w) = compound();
        c.reno = 200;
        c.dwnd = 100.0;
        c.exposed = 300;
        w.cwnd = 300;
        w.ssthresh = c.on_congestion_event(&mut w, LossKind::Rto);
        c.on_cwnd_event(&mut w, CwndEvent::Loss);
        w.cwnd = 1; // the sender: in_flight + 1
        w.ca_state = CaState::Loss;
        c.on_state_change(&mut w, CaState::Loss);
        ack(&mut c, &mut w, 100_000);
        // Slow start on the Reno part only: 1 + 1 = 2.
        assert_eq!(c.dwnd(), 0.0);
        assert_eq!(c.reno_cwnd(), 2);
        assert_eq!(w.cwnd, 2);
        assert_eq!(w.ssthresh, 150);
    }

    #[test]
    fn slow_start_keeps_dwnd_at_zero() {
        // ssthresh ∞: slow start, the boundary sets dwnd = 0 whatever the delay says.
        let (mut c, mut w) = compound();
        w.cwnd = 100;
        w.snd_nxt = 1000 * MSS;
        c.on_cwnd_event(&mut w, CwndEvent::TxStart);
        w.snd_una = 998 * MSS;
        for _ in 0..3 {
            ack(&mut c, &mut w, 100_000);
        }
        assert_eq!(c.dwnd(), 0.0);
        assert_eq!(w.cwnd, 103);
    }

    #[test]
    fn congestion_avoidance_below_low_window_is_reno() {
        // win 30 < 38: the delay component is off.
        let (c, w) = one_rtt(30, 0.0, 99_999);
        assert_eq!(c.dwnd(), 0.0);
        assert_eq!(w.cwnd, 30);
    }

    #[test]
    fn recovery_end_adopts_the_senders_window() {
        // The sender ended a reduction at a window other than ssthresh: the parts are scaled
        // in proportion, 200 + 100 → cwnd 150: dwnd 50, reno 100.
        let (mut c, mut w) = compound();
        c.reno = 200;
        c.dwnd = 100.0;
        c.exposed = 300;
        w.cwnd = 150;
        w.ssthresh = 10;
        w.cwnd_limited = false;
        w.max_packets_out = 10;
        c.cong_avoid(&mut w, 1);
        assert_eq!(c.reno_cwnd(), 100);
        assert!((c.dwnd() - 50.0).abs() < 1e-9);
        assert_eq!(w.cwnd, 150);
    }
}
