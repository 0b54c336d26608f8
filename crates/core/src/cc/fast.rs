//! FAST TCP (Jin, Wei & Low, INFOCOM 2004; Wei, Jin, Andrew & Low, IEEE/ACM ToN 14(6)
//! 2006), from the papers' equations: there is no mainline Linux module, so floating point
//! is used where the papers use real numbers.
//!
//! FAST is an equation-based delay controller. It keeps
//! - `baseRTT` = the minimum RTT sample seen (propagation delay estimate), and
//! - `avgRTT` = an EWMA of the RTT samples with weight η = min(3/cwnd, 1/4) per sample,
//!
//! and periodically sets
//!
//! ```text
//! w ← min{ 2w, (1 − γ)·w + γ·(baseRTT/avgRTT · w + α) }
//! ```
//!
//! whose fixed point is w·(1 − baseRTT/avgRTT) = α: the flow keeps α packets queued at the
//! bottleneck (rate × queueing delay = α), so w* = rate·baseRTT + α on a single-flow path.
//!
//! Choices made here where the papers leave room (all documented as parameters):
//! - **α = 20 packets** by default. The papers' Gbit/s experiments used α = 200 (and the
//!   Linux prototype up to ~800); ns-2/ns-3 ports and class simulators use 15–100. 20 keeps
//!   the standing queue small relative to the BDPs simulated here (e.g. 167 packets on a
//!   4 Mbit/s GEO path) while staying far above the ±1-packet integer noise of cwnd.
//! - **γ = 0.5**, as in the papers.
//! - **Update every other RTT** (`update_interval_rtts` = 2): the window is held for one RTT
//!   so that the RTT samples of the next RTT reflect the last update, as in the papers'
//!   implementation; 1 gives a per-RTT update. An RTT ends at the first ACK above the
//!   `snd_nxt` of the previous boundary (as in Vegas).
//! - **Start-up**: Reno slow start (+1 packet per packet ACKed) until the backlog estimate
//!   w·(avgRTT − baseRTT)/avgRTT reaches α at an RTT boundary (then ssthresh = cwnd and the
//!   equation takes over), or until a loss. The papers' "MI mode" threshold is not
//!   specified precisely; this is the natural one (stop doubling once α is queued).
//! - **Loss**: Reno halving (ssthresh = max(cwnd/2, 2)) with the sender's normal
//!   NewReno/SACK/PRR recovery; the equation resumes from cwnd = ssthresh in Open. An RTO
//!   slow-starts back to ssthresh. Outside Open (Disorder, Loss) cwnd grows as Reno.
//! - The equation's result is kept as a real number between updates and exposed as the
//!   nearest integer cwnd (≥ 2); if the sender changed cwnd meanwhile (recovery, RTO, idle
//!   restart) the next update starts from the sender's value. When an update lowers cwnd
//!   below ssthresh, ssthresh follows it down, so that the equation — not slow start —
//!   stays in charge.
//! - `TX_START`/`CWND_RESTART` restart the RTT averaging (stale after idle) but keep
//!   baseRTT.
use super::vegas::reno_cong_avoid;
use super::{
    AckSample, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind, ParamSpec,
    Params, Window,
};
use crate::scenario::ConfigError;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "alpha",
        default: 20.0,
        unit: "pkts",
        help: "packets the flow keeps queued in equilibrium (papers: 200 on Gbit/s paths)",
    },
    ParamSpec {
        name: "gamma",
        default: 0.5,
        unit: "",
        help: "smoothing of the window update, in (0, 1]",
    },
    ParamSpec {
        name: "update_interval_rtts",
        default: 2.0,
        unit: "RTTs",
        help: "window update period (2 = every other RTT, as the papers' implementation)",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "fast",
    summary:
        "FAST TCP: w <- min(2w, (1-g)w + g(baseRTT/avgRTT*w + alpha)); keeps alpha packets queued",
    feedback: "delay",
    reference: "Jin, Wei & Low, INFOCOM 2004; Wei, Jin, Andrew & Low, IEEE/ACM ToN 14(6) 2006",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// One FAST window update (packets): `min{2w, (1−γ)w + γ(base/avg·w + α)}`.
pub fn fast_window_update(w: f64, base_rtt: f64, avg_rtt: f64, alpha: f64, gamma: f64) -> f64 {
    let target = (1.0 - gamma) * w + gamma * (base_rtt / avg_rtt * w + alpha);
    target.min(2.0 * w)
}

/// FAST TCP.
#[derive(Debug, Clone)]
pub struct Fast {
    alpha: f64,
    gamma: f64,
    update_interval_rtts: u32,
    /// Minimum RTT sample (ns).
    base_rtt_ns: Option<u64>,
    /// EWMA of the RTT samples (ns).
    avg_rtt_ns: Option<f64>,
    /// `snd_nxt` at the last RTT boundary.
    beg_snd_nxt: u64,
    /// RTTs since the last window update.
    rtts_since_update: u32,
    /// The equation's window (real packets) and the integer cwnd it was exposed as.
    wnd: f64,
    exposed_cwnd: u32,
}

impl Fast {
    /// Build from the scenario's `alpha` (packets), `gamma` (0 < γ ≤ 1) and update period.
    pub fn new(p: &Params<'_>, init: &FlowInit) -> Result<Self, ConfigError> {
        let alpha = p.real("alpha", 0.0, 1e6)?;
        let gamma = p.real("gamma", 0.0, 1.0)?;
        if gamma <= 0.0 {
            return Err(ConfigError(format!(
                "cca_params.gamma: {gamma} is invalid for fast; allowed: 0 < gamma <= 1"
            )));
        }
        Ok(Fast {
            alpha,
            gamma,
            update_interval_rtts: p.int("update_interval_rtts", 1, 1000)? as u32,
            base_rtt_ns: None,
            avg_rtt_ns: None,
            beg_snd_nxt: 0,
            rtts_since_update: 0,
            wnd: init.initial_window as f64,
            exposed_cwnd: init.initial_window,
        })
    }

    /// avgRTT in ns, once there is a sample.
    pub fn avg_rtt_ns(&self) -> Option<f64> {
        self.avg_rtt_ns
    }

    /// baseRTT in ns, once there is a sample.
    pub fn base_rtt_ns(&self) -> Option<u64> {
        self.base_rtt_ns
    }

    fn restart_round(&mut self, w: &Window) {
        self.beg_snd_nxt = w.snd_nxt;
        self.rtts_since_update = 0;
    }

    /// Packets queued by this flow according to the averages: w·(avg − base)/avg.
    fn backlog(&self, cwnd: u32) -> Option<f64> {
        let (base, avg) = (self.base_rtt_ns? as f64, self.avg_rtt_ns?);
        Some(cwnd as f64 * (avg - base) / avg)
    }

    /// The periodic equation update.
    fn update_window(&mut self, w: &mut Window) {
        let (Some(base), Some(avg)) = (self.base_rtt_ns, self.avg_rtt_ns) else {
            return;
        };
        // Continue from the real-valued window unless the sender changed cwnd meanwhile.
        let w0 = if w.cwnd == self.exposed_cwnd {
            self.wnd
        } else {
            w.cwnd as f64
        };
        let new = fast_window_update(w0, base as f64, avg, self.alpha, self.gamma)
            .clamp(2.0, w.cwnd_clamp as f64);
        self.wnd = new;
        w.cwnd = (new + 0.5).floor() as u32;
        self.exposed_cwnd = w.cwnd;
        if w.cwnd < w.ssthresh {
            w.ssthresh = w.cwnd; // keep the equation (not slow start) in charge
        }
    }
}

impl CongestionControl for Fast {
    fn on_pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
        let Some(rtt) = s.rtt else { return };
        let r = rtt.ns().max(1);
        self.base_rtt_ns = Some(self.base_rtt_ns.map_or(r, |b| b.min(r)));
        // EWMA weight min(3/w, 1/4) per sample (the papers' averaging).
        let eta = (3.0 / w.cwnd.max(1) as f64).min(0.25);
        self.avg_rtt_ns = Some(match self.avg_rtt_ns {
            None => r as f64,
            Some(a) => a + eta * (r as f64 - a),
        });
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        if w.ca_state != CaState::Open {
            reno_cong_avoid(w, acked);
            return;
        }
        if !w.is_cwnd_limited() {
            return;
        }
        if w.in_slow_start() {
            w.slow_start(acked);
        }
        if w.snd_una <= self.beg_snd_nxt {
            return;
        }
        // An RTT ended.
        self.beg_snd_nxt = w.snd_nxt;
        if w.in_slow_start() {
            if self.backlog(w.cwnd).is_some_and(|q| q >= self.alpha) {
                w.ssthresh = w.cwnd; // α packets queued: the equation takes over
                self.wnd = w.cwnd as f64;
                self.exposed_cwnd = w.cwnd;
                self.rtts_since_update = 0;
            }
            return;
        }
        self.rtts_since_update += 1;
        if self.rtts_since_update >= self.update_interval_rtts {
            self.rtts_since_update = 0;
            self.update_window(w);
        }
    }

    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        (w.cwnd >> 1).max(2)
    }

    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        if new == CaState::Open {
            self.restart_round(w);
        }
    }

    fn on_cwnd_event(&mut self, w: &mut Window, ev: CwndEvent) {
        if matches!(ev, CwndEvent::TxStart | CwndEvent::CwndRestart) {
            // After idle the average is stale; baseRTT stays valid.
            self.avg_rtt_ns = None;
            self.restart_round(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::SimDuration;
    use std::collections::BTreeMap;

    const MSS: u64 = 1448;

    fn fast_with(alpha: f64) -> (Fast, Window) {
        let mut m = BTreeMap::new();
        m.insert("alpha".to_string(), alpha);
        let p = Params::new("fast", &m, PARAMS).unwrap();
        let f = Fast::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (f, w)
    }

    fn sample(rtt_ns: u64) -> AckSample {
        AckSample {
            pkts_acked: 1,
            rtt: Some(SimDuration(rtt_ns)),
            in_flight: 0,
        }
    }

    /// One RTT: the flight in progress is ACKed packet by packet with RTT `rtt_ns`, the
    /// window kept full, up to and including the boundary ACK.
    fn run_round(f: &mut Fast, w: &mut Window, rtt_ns: u64) {
        let end = w.snd_nxt;
        while w.snd_una <= end {
            w.snd_una += MSS;
            w.snd_nxt = w.snd_una + w.cwnd as u64 * MSS;
            f.on_pkts_acked(w, &sample(rtt_ns));
            f.cong_avoid(w, 1);
        }
    }

    /// Congestion avoidance (ssthresh 2) at `cwnd`, boundary at the current flight.
    fn in_ca(alpha: f64, cwnd: u32) -> (Fast, Window) {
        let (mut f, mut w) = fast_with(alpha);
        w.cwnd = cwnd;
        w.ssthresh = 2;
        w.snd_nxt = cwnd as u64 * MSS;
        f.on_cwnd_event(&mut w, CwndEvent::TxStart);
        (f, w)
    }

    #[test]
    fn congestion_avoidance_window_update_matches_hand_numbers() {
        // w = 100, base = avg = 100 ms, α = 20, γ = ½: 50 + ½(100 + 20) = 110.
        assert!((fast_window_update(100.0, 0.1, 0.1, 20.0, 0.5) - 110.0).abs() < 1e-12);
        // Equilibrium: avg = 125 ms (backlog 100·25/125 = 20 = α): 50 + ½(80 + 20) = 100.
        assert!((fast_window_update(100.0, 0.1, 0.125, 20.0, 0.5) - 100.0).abs() < 1e-12);
        // Too many queued (avg 200 ms, backlog 50): 50 + ½(50 + 20) = 85.
        assert!((fast_window_update(100.0, 0.1, 0.2, 20.0, 0.5) - 85.0).abs() < 1e-12);
        // Doubling cap: w = 10, α = 200: min(20, 5 + ½(10 + 200) = 110) = 20.
        assert!((fast_window_update(10.0, 0.1, 0.1, 200.0, 0.5) - 20.0).abs() < 1e-12);
    }

    #[test]
    fn open_avg_rtt_ewma_weight_is_min_of_3_over_w_and_a_quarter() {
        // cwnd 100: η = 3/100. avg = 100 ms, then a 200 ms sample: 100 + 0.03·100 = 103 ms.
        let (mut f, mut w) = in_ca(20.0, 100);
        f.on_pkts_acked(&mut w, &sample(100_000_000));
        f.on_pkts_acked(&mut w, &sample(200_000_000));
        assert!((f.avg_rtt_ns().unwrap() - 103e6).abs() < 1e-3);
        // cwnd 8: 3/8 > 1/4, η = 1/4: 103 + (200 − 103)/4 = 127.25 ms.
        w.cwnd = 8;
        f.on_pkts_acked(&mut w, &sample(200_000_000));
        assert!((f.avg_rtt_ns().unwrap() - 127.25e6).abs() < 1e-3);
        assert_eq!(f.base_rtt_ns(), Some(100_000_000));
    }

    #[test]
    fn open_updates_every_other_rtt() {
        // cwnd 100, all samples 100 ms (no queue): the 1st boundary holds, the 2nd applies
        // 50 + ½(100 + 20) = 110.
        let (mut f, mut w) = in_ca(20.0, 100);
        run_round(&mut f, &mut w, 100_000_000);
        assert_eq!(w.cwnd, 100);
        run_round(&mut f, &mut w, 100_000_000);
        assert_eq!(w.cwnd, 110);
    }

    /// A single bottleneck of C = 1000 packets/s with 100 ms propagation delay: a window of
    /// W packets sees RTT = max(100 ms, W/C).
    fn model_rtt_ns(cwnd: u32) -> u64 {
        (cwnd as u64 * 1_000_000).max(100_000_000)
    }

    #[test]
    fn open_converges_to_bdp_plus_alpha() {
        // Fixed point by hand: for W > BDP = C·d = 100, avg = W/C and the update is
        // W ← ½W + ½(d·C + α) = ½W + 60, whose fixed point is W* = 120 = BDP + α, i.e.
        // α = 20 packets queued (RTT 120 ms). From W = 50 the first updates are +10
        // (no queue): 60, 70, ...
        let (mut f, mut w) = in_ca(20.0, 50);
        for _ in 0..2 {
            let r = model_rtt_ns(w.cwnd);
            run_round(&mut f, &mut w, r);
        }
        assert_eq!(w.cwnd, 60);
        for _ in 0..80 {
            let r = model_rtt_ns(w.cwnd);
            run_round(&mut f, &mut w, r);
        }
        assert!((119..=121).contains(&w.cwnd), "cwnd {}", w.cwnd);
        let queued = w.cwnd as i64 - 100;
        assert!((19..=21).contains(&queued), "queued {queued}");
    }

    #[test]
    fn slow_start_ends_when_alpha_packets_are_queued() {
        // Slow start from 10 on the model path, +1 per ACK. The first RTT is the initial
        // flight plus the boundary ACK (11 ACKs: 10 → 21); each later RTT ACKs one window
        // and doubles it: 42, 84, 168. The 84-packet flight still sees 100 ms (no queue,
        // backlog 0 < α); the 168-packet flight sees 168 ms. At the 5th boundary avg ≈
        // 168 − 68·Π(1 − 3/c) for c = 169..336 ≈ 168 − 68·e^(−3·ln 2) ≈ 159.5 ms, so the
        // backlog estimate is 336·(159.5 − 100)/159.5 ≈ 125 ≥ α = 20: ssthresh = cwnd = 336.
        let (mut f, mut w) = fast_with(20.0);
        w.snd_nxt = 10 * MSS;
        f.on_cwnd_event(&mut w, CwndEvent::TxStart);
        let mut trajectory = vec![];
        while w.in_slow_start() {
            let r = model_rtt_ns(w.cwnd);
            run_round(&mut f, &mut w, r);
            trajectory.push(w.cwnd);
            assert!(trajectory.len() < 20);
        }
        assert_eq!(trajectory, [21, 42, 84, 168, 336]);
        assert_eq!(w.ssthresh, 336);
        // Then the equation pulls it back toward 120.
        for _ in 0..60 {
            let r = model_rtt_ns(w.cwnd);
            run_round(&mut f, &mut w, r);
        }
        assert!((119..=121).contains(&w.cwnd), "cwnd {}", w.cwnd);
    }

    #[test]
    fn loss_halves_and_the_equation_resumes() {
        let (mut f, mut w) = in_ca(20.0, 120);
        assert_eq!(f.on_congestion_event(&mut w, LossKind::Recovery), 60);
    }

    #[test]
    fn recovery_grows_like_reno_outside_open() {
        let (mut f, mut w) = in_ca(20.0, 50);
        w.ca_state = CaState::Disorder;
        for _ in 0..50 {
            f.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 51);
    }
}
