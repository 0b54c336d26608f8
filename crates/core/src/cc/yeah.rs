//! YeAH-TCP as in Linux `tcp_yeah.c` (Baiocchi, Castellani & Vacirca, PFLDnet 2007).
//!
//! YeAH runs in one of two modes, switched once per RTT from Vegas-style samples (the
//! Vegas sampling hooks are reused as in the kernel, `VegasSampler`):
//! - **Fast mode** (little queueing): Scalable-TCP growth, `cong_avoid_ai(min(cwnd, 100))`,
//!   i.e. Reno below 100 packets and +1 % per RTT above;
//! - **Slow mode** (queue building): Reno growth.
//!
//! Per RTT with more than 2 samples: Q = cwnd·(rtt − base)/rtt (packets queued, with
//! rtt = min sample of the RTT, both +1 µs as in Vegas), L = rtt − base.
//! - Q > α = 80 or L > base/φ (φ = 8): slow mode. If Q > α and cwnd > reno_count, do a
//!   *precautionary decongestion*: cwnd −= min(Q/γ, cwnd/2^ε) (γ = 1, ε = 1), floored at
//!   reno_count, and ssthresh = cwnd. reno_count (an estimate of what a competing Reno flow
//!   would hold) becomes max(cwnd/2, 2) when ≤ 2, else +1; `doing_reno_now` += 1.
//! - Otherwise fast mode: `fast_count` += 1 (past ζ = 50 it resets reno_count to 2),
//!   `doing_reno_now` = 0.
//! - lastQ = Q.
//!
//! **Loss** (`ssthresh`): if the flow has been in slow mode for fewer than ρ = 16 RTTs the
//! reduction is lastQ bounded to [cwnd/2^δ, max(cwnd/2, 2)] (δ = 3), i.e. just the own
//! queue; otherwise (competing with Reno flows) cwnd/2. Then fast_count = 0 and
//! reno_count = max(reno_count/2, 2). Undo is Reno's.
//!
//! Kernel details kept: slow start runs first and the mode logic only sees the leftover of
//! the ACK; the per-RTT sampling runs in every state where `cong_avoid` is called (only the
//! Vegas set_state/cwnd_event hooks reset it); `cwnd_clamp` ≤ 2³²/128 at init.
use super::vegas::VegasSampler;
use super::{
    AckSample, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind, ParamSpec,
    Params, Window,
};
use crate::scenario::ConfigError;

/// Linux `TCP_SCALABLE_AI_CNT`.
const SCALABLE_AI_CNT: u32 = 100;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "alpha",
        default: 80.0,
        unit: "pkts",
        help: "queued packets above which YeAH decongests (TCP_YEAH_ALPHA)",
    },
    ParamSpec {
        name: "gamma",
        default: 1.0,
        unit: "",
        help: "decongestion removes queue/gamma packets per RTT (TCP_YEAH_GAMMA)",
    },
    ParamSpec {
        name: "delta",
        default: 3.0,
        unit: "log2",
        help: "a loss removes at least cwnd/2^delta (TCP_YEAH_DELTA)",
    },
    ParamSpec {
        name: "epsilon",
        default: 1.0,
        unit: "log2",
        help: "decongestion removes at most cwnd/2^epsilon (TCP_YEAH_EPSILON)",
    },
    ParamSpec {
        name: "phy",
        default: 8.0,
        unit: "",
        help: "slow mode when rtt - base > base/phy (TCP_YEAH_PHY)",
    },
    ParamSpec {
        name: "rho",
        default: 16.0,
        unit: "RTTs",
        help: "slow-mode RTTs after which a loss halves cwnd (TCP_YEAH_RHO)",
    },
    ParamSpec {
        name: "zeta",
        default: 50.0,
        unit: "RTTs",
        help: "fast-mode RTTs after which reno_count resets (TCP_YEAH_ZETA)",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "yeah",
    summary: "YeAH: Scalable growth while the queue is small, Reno plus precautionary decongestion when it builds",
    feedback: "hybrid",
    reference: "Baiocchi, Castellani, Vacirca, PFLDnet 2007; Linux net/ipv4/tcp_yeah.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux YeAH (`struct yeah`).
#[derive(Debug, Clone)]
pub struct Yeah {
    alpha: u32,
    gamma: u32,
    delta: u32,
    epsilon: u32,
    phy: u32,
    rho: u32,
    zeta: u32,
    v: VegasSampler,
    last_q: u32,
    doing_reno_now: u32,
    reno_count: u32,
    fast_count: u32,
    clamp_set: bool,
}

impl Yeah {
    /// Build from the scenario's YeAH constants (kernel defaults).
    pub fn new(p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        Ok(Yeah {
            alpha: p.int("alpha", 0, 1 << 24)? as u32,
            gamma: p.int("gamma", 1, 1 << 24)? as u32,
            delta: p.int("delta", 0, 31)? as u32,
            epsilon: p.int("epsilon", 0, 31)? as u32,
            phy: p.int("phy", 1, 1 << 24)? as u32,
            rho: p.int("rho", 0, 1 << 24)? as u32,
            zeta: p.int("zeta", 0, 1 << 24)? as u32,
            v: VegasSampler::new(),
            last_q: 0,
            doing_reno_now: 0,
            reno_count: 2,
            fast_count: 0,
            clamp_set: false,
        })
    }

    /// `tcp_yeah_init`'s clamp (so that cwnd·128 fits 32 bits), applied on the first hook
    /// that sees the window.
    fn ensure_clamp(&mut self, w: &mut Window) {
        if !self.clamp_set {
            self.clamp_set = true;
            w.cwnd_clamp = w.cwnd_clamp.min(u32::MAX / 128);
        }
    }

    /// Slow (Reno) mode for this many consecutive RTTs; 0 = fast (Scalable) mode.
    pub fn doing_reno_now(&self) -> u32 {
        self.doing_reno_now
    }

    pub fn reno_count(&self) -> u32 {
        self.reno_count
    }

    /// The once-per-RTT mode decision.
    fn per_rtt(&mut self, w: &mut Window) {
        let rtt = self.v.min_rtt_us;
        let base = self.v.base_rtt_us;
        let queue = (w.cwnd as u64 * rtt.wrapping_sub(base) as u64 / rtt as u64) as u32;
        if queue > self.alpha || rtt.wrapping_sub(base) > base / self.phy {
            if queue > self.alpha && w.cwnd > self.reno_count {
                let reduction = (queue / self.gamma).min(w.cwnd >> self.epsilon);
                w.cwnd -= reduction;
                w.cwnd = w.cwnd.max(self.reno_count);
                w.ssthresh = w.cwnd;
            }
            if self.reno_count <= 2 {
                self.reno_count = (w.cwnd >> 1).max(2);
            } else {
                self.reno_count += 1;
            }
            self.doing_reno_now = (self.doing_reno_now + 1).min(0xff_ffff);
        } else {
            self.fast_count += 1;
            if self.fast_count > self.zeta {
                self.reno_count = 2;
                self.fast_count = 0;
            }
            self.doing_reno_now = 0;
        }
        self.last_q = queue;
    }
}

impl CongestionControl for Yeah {
    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        self.ensure_clamp(w);
        if !w.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        let mut grow = true;
        if w.in_slow_start() {
            acked = w.slow_start(acked);
            grow = acked != 0;
        }
        if grow {
            let cwnd = w.cwnd;
            if self.doing_reno_now == 0 {
                w.cong_avoid_ai(cwnd.min(SCALABLE_AI_CNT), acked); // Scalable
            } else {
                w.cong_avoid_ai(cwnd, acked); // Reno
            }
        }
        if w.snd_una > self.v.beg_snd_nxt {
            if self.v.cnt_rtt > 2 {
                self.per_rtt(w);
            }
            self.v.beg_snd_nxt = w.snd_nxt;
            self.v.next_round();
        }
    }

    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        self.ensure_clamp(w);
        let reduction = if self.doing_reno_now < self.rho {
            // Only our own queue needs to go.
            self.last_q
                .min((w.cwnd >> 1).max(2))
                .max(w.cwnd >> self.delta)
        } else {
            // Long in slow mode: competing with Reno flows, back off like them.
            (w.cwnd >> 1).max(2)
        };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(2);
        (w.cwnd as i64 - reduction as i64).max(2) as u32
    }

    fn on_pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
        self.ensure_clamp(w);
        self.v.pkts_acked(s);
    }

    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        self.v.state(w, new);
    }

    fn on_cwnd_event(&mut self, w: &mut Window, ev: CwndEvent) {
        self.ensure_clamp(w);
        self.v.cwnd_event(w, ev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::SimDuration;
    use std::collections::BTreeMap;

    const MSS: u64 = 1448;

    fn yeah() -> (Yeah, Window) {
        let m = BTreeMap::new();
        let p = Params::new("yeah", &m, PARAMS).unwrap();
        let y = Yeah::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (y, w)
    }

    fn ack(y: &mut Yeah, w: &mut Window, rtt_us: u64) {
        w.snd_una += MSS;
        y.on_pkts_acked(
            w,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(SimDuration::from_us(rtt_us)),
                in_flight: 0,
            },
        );
        y.cong_avoid(w, 1);
    }

    /// Congestion avoidance at `cwnd` with baseRTT 100 ms (+1 µs) known from an earlier
    /// RTT, then one RTT of three samples at `rtt_us` ending with the boundary ACK.
    fn one_rtt(cwnd: u32, rtt_us: u64) -> (Yeah, Window) {
        let (mut y, mut w) = yeah();
        w.cwnd = cwnd;
        w.ssthresh = 10;
        w.snd_nxt = 1000 * MSS;
        y.on_cwnd_event(&mut w, CwndEvent::TxStart); // boundary at 1000 packets
        y.on_pkts_acked(
            &mut w,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(SimDuration::from_us(100_000)),
                in_flight: 0,
            },
        );
        y.v.next_round(); // the base sample belongs to an earlier RTT
        w.snd_una = 998 * MSS; // ACKs of 999, 1000 and 1001: the last one is the boundary
        for _ in 0..3 {
            ack(&mut y, &mut w, rtt_us);
        }
        (y, w)
    }

    #[test]
    fn fast_mode_grows_like_scalable_above_100_packets() {
        // cwnd 400, no queue: cong_avoid_ai(min(400, 100)) = +1 per 100 packets ACKed.
        let (mut y, mut w) = one_rtt(400, 100_000);
        assert_eq!(y.doing_reno_now(), 0);
        assert_eq!(w.cwnd_cnt, 3);
        for _ in 0..97 {
            ack(&mut y, &mut w, 100_000);
        }
        assert_eq!(w.cwnd, 401);
    }

    #[test]
    fn slow_mode_decongests_a_queue_above_alpha() {
        // cwnd 400, rtt 150 ms (+1), base 100 ms (+1): Q = 400·50000/150001 = 133 > 80 and
        // cwnd > reno_count = 2: reduction = min(133/1, 400/2) = 133 → cwnd 267 = ssthresh;
        // reno_count = max(267/2, 2) = 133; slow mode for 1 RTT; lastQ = 133.
        let (y, w) = one_rtt(400, 150_000);
        assert_eq!(w.cwnd, 267);
        assert_eq!(w.ssthresh, 267);
        assert_eq!(y.reno_count(), 133);
        assert_eq!(y.doing_reno_now(), 1);
        assert_eq!(y.last_q, 133);
    }

    #[test]
    fn slow_mode_entered_on_delay_alone_without_decongestion() {
        // cwnd 100, rtt 120 ms: Q = 100·20000/120001 = 16 ≤ 80 but L = 20000 > 100001/8 =
        // 12500: slow (Reno) mode, no reduction; reno_count = max(100/2, 2) = 50.
        let (y, w) = one_rtt(100, 120_000);
        assert_eq!(w.cwnd, 100);
        assert_eq!(y.doing_reno_now(), 1);
        assert_eq!(y.reno_count(), 50);
    }

    #[test]
    fn loss_before_rho_slow_rtts_removes_only_the_own_queue() {
        // After the decongestion above (cwnd 267, lastQ 133, 1 slow RTT < ρ = 16):
        // reduction = max(min(133, max(267/2, 2) = 133), 267/8 = 33) = 133,
        // ssthresh = 267 − 133 = 134; reno_count = max(133/2, 2) = 66.
        let (mut y, mut w) = one_rtt(400, 150_000);
        assert_eq!(y.on_congestion_event(&mut w, LossKind::Recovery), 134);
        assert_eq!(y.reno_count(), 66);
    }

    #[test]
    fn loss_with_tiny_queue_removes_at_least_an_eighth() {
        // cwnd 400 without queue: lastQ = 0, reduction = max(min(0, 200), 400/8 = 50) = 50,
        // ssthresh = 350.
        let (mut y, mut w) = one_rtt(400, 100_000);
        assert_eq!(y.on_congestion_event(&mut w, LossKind::Recovery), 350);
    }

    #[test]
    fn loss_after_rho_slow_rtts_halves() {
        // 16 RTTs in slow mode (competing with Reno): reduction = max(cwnd/2, 2).
        let (mut y, mut w) = one_rtt(400, 150_000);
        y.doing_reno_now = 16;
        w.cwnd = 300;
        assert_eq!(y.on_congestion_event(&mut w, LossKind::Recovery), 150);
    }

    #[test]
    fn open_init_clamps_cwnd_to_fit_the_md_arithmetic() {
        let (mut y, mut w) = yeah();
        y.on_cwnd_event(&mut w, CwndEvent::TxStart);
        assert_eq!(w.cwnd_clamp, 0xffff_ffff / 128);
    }
}
