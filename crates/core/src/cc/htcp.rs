//! H-TCP (Leith & Shorten, PFLDnet 2004) as Linux `tcp_htcp.c` implements it.
//!
//! H-TCP keeps Reno's AIMD form but makes both factors adaptive:
//! - **α (increase)** grows with the time Δ since the last congestion event: 1 packet per
//!   RTT during the first second (Reno-friendly), then `1 + 10(Δ−1) + ((Δ−1)/2)²`. With
//!   RTT scaling the per-RTT increase is multiplied by minRTT/100 ms (clamped to
//!   [0.5, 10]), so flows with different RTTs grow at the same rate in packets per second.
//!   The increase is then `2·factor·(1 − β)`, which keeps the average Reno-compatible for
//!   any β.
//! - **β (decrease)** = minRTT/maxRTT clamped to [0.5, 0.8], which empties the queue just
//!   enough to keep the link busy. The "bandwidth switch" falls back to β = 0.5 whenever
//!   the throughput measured before this loss differs by more than 20 % from the one
//!   before the previous loss (the network changed; converge like Reno), and for the very
//!   first loss (`modeswitch`).
//!
//! Kernel details kept, in jiffies (HZ configurable, default 1000) and ×128 fixed point:
//! - minRTT is the minimum of `usecs_to_jiffies(ca_rtt)` samples; maxRTT grows only in
//!   Open and only by samples within 20 ms of it; at each loss it decays to
//!   minRTT + 0.95·(maxRTT − minRTT).
//! - Throughput: in Open/Disorder, once ≥ cwnd − α packets were ACKed and ≥ minRTT
//!   elapsed, sample = packets·HZ/elapsed; within 3 minRTTs of congestion it resets
//!   minB = maxB = Bi, otherwise Bi = (3Bi + sample)/4 and maxB = max(maxB, Bi).
//! - CA: `if cnt·α/128 ≥ cwnd { cwnd += 1; cnt = 0; recompute α } else cnt += pkts_acked`,
//!   where pkts_acked is the packet count of the ACK when it arrived in Open (1 otherwise).
//!   The test comes before the add, so an increment needs one ACK more than Reno's.
//! - Slow start drops the ACKs left over when cwnd reaches ssthresh.
//! - ssthresh() updates β and α with Δ measured to the *previous* congestion; entering
//!   CWR/Recovery/Loss then saves the undo state and sets last_cong = now, and returning
//!   to Open sets last_cong = now again (Δ counts from the end of the episode). Undo
//!   restores last_cong, maxRTT and old_maxB; the window is Reno's undo.
//! - u32 wrap-around as in the kernel (e.g. `(Δ/2)²` wraps after ~131 s at HZ 1000).
//!
//! One deviation: Linux marks "no undo state" with `undo_last_cong == 0`, a jiffies value
//! that practically never occurs because jiffies start 5 minutes before wrapping; the
//! simulator's clock starts at 0, so an `Option` is used instead.
use super::{AckSample, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind};
use super::{ParamSpec, Params, Window};
use crate::scenario::ConfigError;

/// 1.0 in α's fixed point (<< 7).
const ALPHA_BASE: u32 = 1 << 7;
/// β = 0.5 (<< 7).
const BETA_MIN: u32 = 1 << 6;
/// β = 0.8 (<< 7).
const BETA_MAX: u32 = 102;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "use_rtt_scaling",
        default: 1.0,
        unit: "bool",
        help: "scale the increase by minRTT/100ms (clamped to 0.5..10)",
    },
    ParamSpec {
        name: "use_bandwidth_switch",
        default: 1.0,
        unit: "bool",
        help: "beta = 0.5 when the throughput changed by more than 20 % between losses",
    },
    ParamSpec {
        name: "hz",
        default: 1000.0,
        unit: "Hz",
        help: "kernel jiffies rate (CONFIG_HZ)",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "htcp",
    summary:
        "H-TCP: increase grows with time since the last loss; beta = minRTT/maxRTT in [0.5, 0.8]",
    feedback: "loss",
    reference: "Leith & Shorten, PFLDnet 2004; Linux net/ipv4/tcp_htcp.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux H-TCP state (`struct htcp`); times in jiffies, α and β × 128.
#[derive(Debug, Clone, Default)]
pub struct Htcp {
    // parameters
    use_rtt_scaling: bool,
    use_bandwidth_switch: bool,
    hz: u32,
    // state
    alpha: u32,
    beta: u32,
    /// Adaptive β allowed (set after a loss without a bandwidth change).
    modeswitch: bool,
    /// Packets ACKed by the current ACK if it arrived in Open (Linux keeps a u16).
    pkts_acked: u16,
    packetcount: u32,
    min_rtt: u32,
    max_rtt: u32,
    last_cong: u32,
    undo_last_cong: Option<u32>,
    undo_max_rtt: u32,
    undo_old_max_b: u32,
    // bandwidth estimation (packets per second)
    min_b: u32,
    max_b: u32,
    old_max_b: u32,
    bi: u32,
    lasttime: u32,
    initialized: bool,
}

impl Htcp {
    /// Build from scenario parameters.
    pub fn new(p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        Ok(Htcp {
            use_rtt_scaling: p.flag("use_rtt_scaling")?,
            use_bandwidth_switch: p.flag("use_bandwidth_switch")?,
            hz: p.int("hz", 100, 100_000)? as u32,
            ..Default::default()
        })
    }

    /// Linux `htcp_init`, run on the first hook (the connection's first transmission).
    fn ensure_init(&mut self, w: &Window) {
        if self.initialized {
            return;
        }
        *self = Htcp {
            use_rtt_scaling: self.use_rtt_scaling,
            use_bandwidth_switch: self.use_bandwidth_switch,
            hz: self.hz,
            alpha: ALPHA_BASE,
            beta: BETA_MIN,
            pkts_acked: 1,
            last_cong: w.jiffies(self.hz),
            initialized: true,
            ..Default::default()
        };
    }

    fn jiffies(&self, w: &Window) -> u32 {
        w.jiffies(self.hz)
    }

    /// Linux `usecs_to_jiffies` (rounds up).
    fn usecs_to_jiffies(&self, us: u64) -> u32 {
        let per = 1_000_000 / self.hz as u64;
        us.div_ceil(per).min(u32::MAX as u64) as u32
    }

    /// Linux `msecs_to_jiffies` (rounds up).
    fn msecs_to_jiffies(&self, ms: u32) -> u32 {
        ms.wrapping_mul(self.hz).div_ceil(1000)
    }

    /// Jiffies since the last congestion event.
    fn cong_time(&self, w: &Window) -> u32 {
        self.jiffies(w).wrapping_sub(self.last_cong)
    }

    /// Linux `htcp_reset`: a congestion episode starts; remember how to undo it.
    fn reset(&mut self, w: &Window) {
        self.undo_last_cong = Some(self.last_cong);
        self.undo_max_rtt = self.max_rtt;
        self.undo_old_max_b = self.old_max_b;
        self.last_cong = self.jiffies(w);
    }

    /// Linux `measure_rtt`.
    fn measure_rtt(&mut self, w: &Window, rtt: u32) {
        if self.min_rtt > rtt || self.min_rtt == 0 {
            self.min_rtt = rtt;
        }
        if w.ca_state == CaState::Open {
            if self.max_rtt < self.min_rtt {
                self.max_rtt = self.min_rtt;
            }
            // Ignore jumps of more than 20 ms (likely not queueing on this path).
            if self.max_rtt < rtt && rtt <= self.max_rtt + self.msecs_to_jiffies(20) {
                self.max_rtt = rtt;
            }
        }
    }

    /// Linux `htcp_beta_update`.
    fn beta_update(&mut self, min_rtt: u32, max_rtt: u32) {
        if self.use_bandwidth_switch {
            let max_b = self.max_b;
            let old_max_b = self.old_max_b;
            self.old_max_b = self.max_b;
            // Linux `between(5·maxB, 4·old, 6·old)`, i.e. maxB within ±20 % of the old one,
            // in wrapping u32 arithmetic.
            let lo = old_max_b.wrapping_mul(4);
            let hi = old_max_b.wrapping_mul(6);
            if hi.wrapping_sub(lo) < max_b.wrapping_mul(5).wrapping_sub(lo) {
                self.beta = BETA_MIN;
                self.modeswitch = false;
                return;
            }
        }
        if self.modeswitch && min_rtt > self.msecs_to_jiffies(10) && max_rtt != 0 {
            // Linux stores the ratio in a u8 before clamping.
            let b = ((min_rtt.wrapping_shl(7)) / max_rtt) as u8 as u32;
            self.beta = b.clamp(BETA_MIN, BETA_MAX);
        } else {
            self.beta = BETA_MIN;
            self.modeswitch = true;
        }
    }

    /// Linux `htcp_alpha_update`.
    fn alpha_update(&mut self, w: &Window) {
        let hz = self.hz;
        let mut factor: u32 = 1;
        let mut diff = self.cong_time(w);
        if diff > hz {
            diff -= hz;
            let half = diff / 2;
            factor = 1
                + (10u32
                    .wrapping_mul(diff)
                    .wrapping_add(half.wrapping_mul(half) / hz))
                    / hz;
        }
        if self.use_rtt_scaling && self.min_rtt != 0 {
            let scale = ((hz << 3) / self.min_rtt.saturating_mul(10)).clamp(1 << 2, 10 << 3);
            factor = (factor << 3) / scale;
            if factor == 0 {
                factor = 1;
            }
        }
        self.alpha = 2u32
            .wrapping_mul(factor)
            .wrapping_mul(ALPHA_BASE - self.beta);
        if self.alpha == 0 {
            self.alpha = ALPHA_BASE;
        }
    }

    /// Linux `htcp_param_update`, at a congestion event.
    fn param_update(&mut self, w: &Window) {
        let (min_rtt, max_rtt) = (self.min_rtt, self.max_rtt);
        self.beta_update(min_rtt, max_rtt);
        self.alpha_update(w);
        // Slowly fading memory of maxRTT (routing changes).
        if min_rtt > 0 && max_rtt > min_rtt {
            self.max_rtt = min_rtt.wrapping_add((max_rtt - min_rtt).wrapping_mul(95) / 100);
        }
    }

    /// α × 128 (packets per RTT), for tests and traces.
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// β × 128, for tests and traces.
    pub fn beta(&self) -> u32 {
        self.beta
    }
}

impl CongestionControl for Htcp {
    fn on_cwnd_event(&mut self, w: &mut Window, _ev: CwndEvent) {
        self.ensure_init(w);
    }

    /// Linux `measure_achieved_throughput` (the `pkts_acked` hook).
    fn on_pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
        self.ensure_init(w);
        let now = self.jiffies(w);
        if w.ca_state == CaState::Open {
            self.pkts_acked = s.pkts_acked as u16;
        }
        if let Some(rtt) = s.rtt {
            let us = rtt.us();
            if us > 0 {
                let j = self.usecs_to_jiffies(us);
                self.measure_rtt(w, j);
            }
        }
        if !self.use_bandwidth_switch {
            return;
        }
        if !matches!(w.ca_state, CaState::Open | CaState::Disorder) {
            self.packetcount = 0;
            self.lasttime = now;
            return;
        }
        self.packetcount = self.packetcount.wrapping_add(s.pkts_acked);
        let a = match self.alpha >> 7 {
            0 => 1,
            a => a,
        };
        let elapsed = now.wrapping_sub(self.lasttime);
        if self.packetcount >= w.cwnd.wrapping_sub(a) && elapsed >= self.min_rtt && self.min_rtt > 0
        {
            let cur_bi = self.packetcount.wrapping_mul(self.hz) / elapsed;
            if self.cong_time(w) / self.min_rtt <= 3 {
                // Just after a back-off: start the estimate afresh.
                self.min_b = cur_bi;
                self.max_b = cur_bi;
                self.bi = cur_bi;
            } else {
                self.bi = self.bi.wrapping_mul(3).wrapping_add(cur_bi) / 4;
                if self.bi > self.max_b {
                    self.max_b = self.bi;
                }
                if self.min_b > self.max_b {
                    self.min_b = self.max_b;
                }
            }
            self.packetcount = 0;
            self.lasttime = now;
        }
    }

    /// Linux `htcp_recalc_ssthresh`.
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        self.ensure_init(w);
        self.param_update(w);
        (w.cwnd.wrapping_mul(self.beta) >> 7).max(2)
    }

    /// Linux `htcp_cong_avoid`.
    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        self.ensure_init(w);
        if !w.is_cwnd_limited() {
            return;
        }
        if w.in_slow_start() {
            w.slow_start(acked);
            return;
        }
        // cwnd += α/cwnd per ACK, counted in packets ACKed.
        if (w.cwnd_cnt.wrapping_mul(self.alpha) >> 7) >= w.cwnd {
            if w.cwnd < w.cwnd_clamp {
                w.cwnd += 1;
            }
            w.cwnd_cnt = 0;
            self.alpha_update(w);
        } else {
            w.cwnd_cnt = w.cwnd_cnt.wrapping_add(self.pkts_acked as u32);
        }
        self.pkts_acked = 1;
    }

    /// Linux `htcp_state`.
    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        self.ensure_init(w);
        match new {
            CaState::Open => {
                // End of a congestion episode that was not undone: Δ counts from now.
                if self.undo_last_cong.take().is_some() {
                    self.last_cong = self.jiffies(w);
                }
            }
            CaState::Cwr | CaState::Recovery | CaState::Loss => self.reset(w),
            CaState::Disorder => {}
        }
    }

    /// Linux `htcp_cwnd_undo`: the episode was spurious, restore its start.
    fn on_spurious_loss(&mut self, w: &mut Window) -> u32 {
        self.ensure_init(w);
        if let Some(lc) = self.undo_last_cong.take() {
            self.last_cong = lc;
            self.max_rtt = self.undo_max_rtt;
            self.old_max_b = self.undo_old_max_b;
        }
        w.cwnd.max(w.prior_cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::{SimDuration, SimTime};
    use std::collections::BTreeMap;

    const T0: u64 = 10_000_000_000; // 10 s: jiffies 10000 at HZ 1000

    /// H-TCP initialised at t = 10 s, cwnd-limited, in congestion avoidance.
    fn htcp() -> (Htcp, Window) {
        let m = BTreeMap::new();
        let p = Params::new("htcp", &m, PARAMS).unwrap();
        let mut h = Htcp::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        w.ssthresh = 2;
        w.now = SimTime(T0);
        h.on_cwnd_event(&mut w, CwndEvent::TxStart);
        (h, w)
    }

    fn at_ms(w: &mut Window, ms: u64) {
        w.now = SimTime(T0 + ms * 1_000_000);
    }

    fn sample(pkts: u32, rtt_ms: Option<u64>) -> AckSample {
        AckSample {
            pkts_acked: pkts,
            rtt: rtt_ms.map(SimDuration::from_ms),
            in_flight: 0,
        }
    }

    /// α after a cwnd increment `delta_ms` after the last congestion, with minRTT.
    fn alpha_after(delta_ms: u64, min_rtt_ms: u64) -> u32 {
        let (mut h, mut w) = htcp();
        h.on_pkts_acked(&mut w, &sample(1, Some(min_rtt_ms)));
        at_ms(&mut w, delta_ms);
        w.cwnd = 10;
        w.cwnd_cnt = 10; // 10·α/128 ≥ 10: this ACK increments and recomputes α
        h.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 11);
        h.alpha()
    }

    #[test]
    fn congestion_avoidance_alpha_is_one_in_the_first_second() {
        // Δ ≤ 1 s → factor 1; minRTT 100 ms → scale = 8000/(10·100) = 8 → factor 8/8 = 1;
        // α = 2·1·(128 − 64) = 128 (1 packet per RTT).
        assert_eq!(alpha_after(1000, 100), 128);
    }

    #[test]
    fn congestion_avoidance_alpha_grows_with_time_since_congestion() {
        // Δ = 3 s: diff = 2000 jiffies; factor = 1 + (10·2000 + 1000²/1000)/1000 = 22
        // (= 1 + 10·2 + (2/2)²); α = 2·22·64 = 2816 (22 packets per RTT).
        assert_eq!(alpha_after(3000, 100), 2816);
        // Δ = 2.5 s: diff 1500; factor = 1 + (15000 + 750²/1000 = 562)/1000 = 16
        // (1 + 15 + 0.5625 floored); α = 2·16·64 = 2048.
        assert_eq!(alpha_after(2500, 100), 2048);
        // Δ = 11 s: diff 10000; factor = 1 + (100000 + 5000²/1000 = 25000)/1000 = 126.
        assert_eq!(alpha_after(11_000, 100), 2 * 126 * 64);
    }

    #[test]
    fn congestion_avoidance_alpha_is_scaled_by_min_rtt() {
        // minRTT 200 ms: scale = 8000/2000 = 4 → factor = 8·1/4 = 2 → α = 256.
        assert_eq!(alpha_after(500, 200), 256);
        // minRTT 400 ms: scale = 8000/4000 = 2, clamped up to 4 (ratio 0.5) → also 256.
        assert_eq!(alpha_after(500, 400), 256);
        // minRTT 20 ms, Δ = 3 s: scale = 8000/200 = 40 → factor = 22·8/40 = 4 → α = 512.
        assert_eq!(alpha_after(3000, 20), 512);
        // minRTT 10 ms: scale 80 → factor 8/80 = 0 → 1 → α = 128; 1 ms: 800 → 80, same.
        assert_eq!(alpha_after(500, 10), 128);
        assert_eq!(alpha_after(500, 1), 128);
    }

    #[test]
    fn congestion_avoidance_needs_one_ack_more_than_reno() {
        // α = 1.0, cwnd 10, one packet per ACK: the test cnt·α/128 ≥ cwnd comes before
        // cnt += 1, so cnt = 10 after 10 ACKs and the 11th ACK increments.
        let (mut h, mut w) = htcp();
        w.cwnd = 10;
        for _ in 0..10 {
            h.cong_avoid(&mut w, 1);
        }
        assert_eq!((w.cwnd, w.cwnd_cnt), (10, 10));
        h.cong_avoid(&mut w, 1);
        assert_eq!((w.cwnd, w.cwnd_cnt), (11, 0));
    }

    #[test]
    fn congestion_avoidance_counts_packets_of_acks_seen_in_open() {
        // Delayed ACKs of 2 packets in Open: cnt 2, 4, 6, 8, 10, then the 6th ACK gives 11.
        let (mut h, mut w) = htcp();
        w.cwnd = 10;
        for _ in 0..5 {
            h.on_pkts_acked(&mut w, &sample(2, None));
            h.cong_avoid(&mut w, 2);
        }
        assert_eq!((w.cwnd, w.cwnd_cnt), (10, 10));
        h.on_pkts_acked(&mut w, &sample(2, None));
        h.cong_avoid(&mut w, 2);
        assert_eq!(w.cwnd, 11);
        // In Disorder the count is not refreshed: each ACK counts as 1 packet.
        w.ca_state = CaState::Disorder;
        h.on_pkts_acked(&mut w, &sample(2, None));
        h.cong_avoid(&mut w, 2);
        assert_eq!(w.cwnd_cnt, 1);
    }

    #[test]
    fn congestion_avoidance_with_alpha_22_takes_six_acks_per_packet() {
        // α = 2816 (22 pkts/RTT), cwnd 100: cnt·22 ≥ 100 first holds at cnt = 5 (110), which
        // is reached after 5 ACKs; the 6th increments.
        let (mut h, mut w) = htcp();
        h.alpha = 2816;
        w.cwnd = 100;
        for _ in 0..5 {
            h.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 100);
        h.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 101);
    }

    #[test]
    fn slow_start_drops_leftover_acks() {
        let (mut h, mut w) = htcp();
        w.cwnd = 98;
        w.ssthresh = 100;
        h.cong_avoid(&mut w, 5);
        assert_eq!((w.cwnd, w.cwnd_cnt), (100, 0));
    }

    #[test]
    fn open_max_rtt_follows_samples_within_20ms() {
        let (mut h, mut w) = htcp();
        h.on_pkts_acked(&mut w, &sample(1, Some(100)));
        assert_eq!((h.min_rtt, h.max_rtt), (100, 100));
        h.on_pkts_acked(&mut w, &sample(1, Some(115)));
        assert_eq!(h.max_rtt, 115);
        h.on_pkts_acked(&mut w, &sample(1, Some(140))); // 140 > 115 + 20: ignored
        assert_eq!(h.max_rtt, 115);
        h.on_pkts_acked(&mut w, &sample(1, Some(130)));
        assert_eq!(h.max_rtt, 130);
        // Outside Open only minRTT is tracked.
        w.ca_state = CaState::Recovery;
        h.on_pkts_acked(&mut w, &sample(1, Some(145)));
        h.on_pkts_acked(&mut w, &sample(1, Some(90)));
        assert_eq!((h.min_rtt, h.max_rtt), (90, 130));
        // Sub-jiffy samples round up: 100.2 ms → 101 jiffies.
        let (mut h, mut w) = htcp();
        h.on_pkts_acked(
            &mut w,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(SimDuration::from_us(100_200)),
                in_flight: 0,
            },
        );
        assert_eq!(h.min_rtt, 101);
    }

    #[test]
    fn loss_first_halves_then_beta_is_min_over_max_rtt() {
        let (mut h, mut w) = htcp();
        h.on_pkts_acked(&mut w, &sample(1, Some(100)));
        h.on_pkts_acked(&mut w, &sample(1, Some(120)));
        h.on_pkts_acked(&mut w, &sample(1, Some(140)));
        h.on_pkts_acked(&mut w, &sample(1, Some(150)));
        assert_eq!(h.max_rtt, 150);
        w.cwnd = 100;
        // First loss: maxB = old_maxB = 0 (within 20 %), modeswitch off → β = 0.5 and
        // modeswitch on. maxRTT decays to 100 + 50·95/100 = 147.
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 50);
        assert_eq!((h.beta(), h.max_rtt), (64, 147));
        // Second loss: β = ⌊100·128/147⌋ = 87; ssthresh = ⌊100·87/128⌋ = 67.
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 67);
        assert_eq!(h.beta(), 87);
        // α recomputed at the loss with Δ = 0: 2·1·(128 − 87) = 82.
        assert_eq!(h.alpha(), 82);
    }

    #[test]
    fn loss_beta_is_clamped_to_half_and_four_fifths() {
        let (mut h, mut w) = htcp();
        w.cwnd = 100;
        h.modeswitch = true;
        h.min_rtt = 100;
        h.max_rtt = 110; // 12800/110 = 116 → 102 (0.8): ssthresh = ⌊10200/128⌋ = 79
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 79);
        assert_eq!(h.beta(), BETA_MAX);
        h.max_rtt = 300; // 12800/300 = 42 → 64 (0.5)
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 50);
        // minRTT ≤ 10 ms: β = 0.5 whatever maxRTT.
        h.min_rtt = 10;
        h.max_rtt = 11;
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 50);
    }

    #[test]
    fn loss_after_bandwidth_change_resets_beta_and_modeswitch() {
        let (mut h, mut w) = htcp();
        w.cwnd = 100;
        h.modeswitch = true;
        h.min_rtt = 100;
        h.max_rtt = 125;
        // maxB 1150 vs old 1000: 5·1150 = 5750 ∈ [4000, 6000] → adaptive β = 12800/125 = 102.
        h.old_max_b = 1000;
        h.max_b = 1150;
        h.on_congestion_event(&mut w, LossKind::Recovery);
        assert_eq!((h.beta(), h.modeswitch, h.old_max_b), (102, true, 1150));
        // maxB 1400 vs old 1150: 7000 > 6900 → β = 0.5, modeswitch off.
        h.max_b = 1400;
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 50);
        assert!(!h.modeswitch);
    }

    #[test]
    fn open_throughput_filter_restarts_after_congestion_then_averages() {
        // cwnd 100, α = 1 → a sample needs ≥ 99 packets and ≥ minRTT = 100 jiffies.
        let (mut h, mut w) = htcp();
        w.cwnd = 100;
        // t = 10.0 s (Δ = 0 since init): 99 packets over 10000 jiffies since lasttime 0:
        // cur = 99·1000/10000 = 9; ccount = 0 ≤ 3 → minB = maxB = Bi = 9.
        h.on_pkts_acked(&mut w, &sample(99, Some(100)));
        assert_eq!((h.bi, h.max_b), (9, 9));
        // t = 10.1 s: 100 packets in 100 jiffies → 1000 pkt/s; ccount = 1 → reset to 1000.
        at_ms(&mut w, 100);
        h.on_pkts_acked(&mut w, &sample(100, None));
        assert_eq!((h.min_b, h.max_b, h.bi), (1000, 1000, 1000));
        // t = 10.5 s: 50 packets (< 99, no sample); t = 10.6 s: 100 packets in 500 jiffies
        // → 200 pkt/s; ccount = 6 > 3 → Bi = (3·1000 + 200)/4 = 800; maxB stays 1000.
        at_ms(&mut w, 500);
        h.on_pkts_acked(&mut w, &sample(50, None));
        at_ms(&mut w, 600);
        h.on_pkts_acked(&mut w, &sample(50, None));
        assert_eq!((h.bi, h.max_b), (800, 1000));
        // t = 10.7 s: 200 packets in 100 jiffies → 2000; Bi = (2400 + 2000)/4 = 1100 = maxB.
        at_ms(&mut w, 700);
        h.on_pkts_acked(&mut w, &sample(200, None));
        assert_eq!((h.bi, h.max_b, h.min_b), (1100, 1100, 1000));
        // Recovery: the count restarts.
        w.ca_state = CaState::Recovery;
        h.on_pkts_acked(&mut w, &sample(500, None));
        assert_eq!((h.packetcount, h.lasttime), (0, 10_700));
    }

    #[test]
    fn recovery_end_restarts_the_congestion_clock() {
        // Congestion at 20 s, recovery ends (Open) at 20.5 s: Δ counts from 20.5 s, so a
        // cwnd increment at 23.5 s sees Δ = 3 s → factor 22 (minRTT 100 ms) → α = 2816.
        let (mut h, mut w) = htcp();
        h.on_pkts_acked(&mut w, &sample(1, Some(100)));
        at_ms(&mut w, 10_000);
        w.cwnd = 100;
        w.ssthresh = h.on_congestion_event(&mut w, LossKind::Recovery);
        h.on_state_change(&mut w, CaState::Recovery);
        at_ms(&mut w, 10_500);
        h.on_state_change(&mut w, CaState::Open);
        at_ms(&mut w, 13_500);
        w.cwnd = 50;
        w.cwnd_cnt = 50;
        h.cong_avoid(&mut w, 1);
        assert_eq!(h.alpha(), 2816);
    }

    #[test]
    fn undo_restores_the_previous_congestion_time() {
        // Init (last congestion) at 10 s; a spurious recovery at 20 s is undone: Δ at 21 s
        // is 11 s → factor 126 → α = 2·126·64 = 16128. The window is Reno's undo.
        let (mut h, mut w) = htcp();
        h.on_pkts_acked(&mut w, &sample(1, Some(100)));
        at_ms(&mut w, 10_000);
        w.cwnd = 100;
        w.prior_cwnd = 100;
        w.ssthresh = h.on_congestion_event(&mut w, LossKind::Recovery);
        h.on_state_change(&mut w, CaState::Recovery);
        w.cwnd = 60;
        assert_eq!(h.on_spurious_loss(&mut w), 100);
        at_ms(&mut w, 10_500);
        h.on_state_change(&mut w, CaState::Open); // nothing to restart: undone
        w.cwnd = 100;
        at_ms(&mut w, 11_000);
        w.cwnd_cnt = 100;
        h.cong_avoid(&mut w, 1);
        assert_eq!(h.alpha(), 2 * 126 * 64);
    }
}
