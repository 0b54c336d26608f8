//! Scalable TCP (Kelly 2003) as Linux `tcp_scalable.c` implements it.
//!
//! Multiplicative increase, multiplicative decrease: in congestion avoidance cwnd grows by
//! `a = 0.01` packet per packet ACKed (1 % per RTT) and a loss cuts it by `b = 1/8`. The
//! response function is w ≈ 0.08/p, so the time to recover from a loss no longer grows
//! with the window (≈ 13.4 RTTs whatever the rate).
//!
//! Linux writes the increase as Reno's `tcp_cong_avoid_ai` with the per-increment count
//! capped at 100 packets: `cong_avoid_ai(min(cwnd, 100), acked)`. Below 100 packets it is
//! therefore exactly Reno's +1 packet per RTT; above, +1 packet per 100 ACKed. The paper's
//! switch to Reno below a low window (16 packets) concerns only the increase here: Linux
//! keeps the 7/8 decrease at every window size (`ssthresh = max(cwnd − cwnd/8, 2)`).
//! Slow start and undo are Reno's.
use super::{CcInfo, CongestionControl, FlowInit, LossKind, ParamSpec, Params, Window};
use crate::scenario::ConfigError;

/// Tunables; Linux has them as compile-time constants (`TCP_SCALABLE_AI_CNT`,
/// `TCP_SCALABLE_MD_SCALE`).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "ai_cnt",
        default: 100.0,
        unit: "pkts",
        help: "packets ACKed per +1 packet above this window (1/a; 100 -> a = 0.01)",
    },
    ParamSpec {
        name: "md_shift",
        default: 3.0,
        unit: "bits",
        help: "decrease b = 2^-md_shift (3 -> cwnd - cwnd/8)",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "scalable",
    summary: "Scalable TCP: +0.01 packet per ACK above 100 packets (MIMD), cwnd x 7/8 on loss",
    feedback: "loss",
    reference: "Kelly, CCR 33(2), 2003; Linux net/ipv4/tcp_scalable.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux Scalable TCP (stateless apart from its two constants).
#[derive(Debug, Clone)]
pub struct Scalable {
    ai_cnt: u32,
    md_shift: u32,
}

impl Scalable {
    /// Build from scenario parameters.
    pub fn new(p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        Ok(Scalable {
            ai_cnt: p.int("ai_cnt", 1, 1 << 20)? as u32,
            md_shift: p.int("md_shift", 1, 16)? as u32,
        })
    }
}

impl CongestionControl for Scalable {
    /// Linux `tcp_scalable_ssthresh`: cwnd − cwnd/8, at least 2.
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        (w.cwnd - (w.cwnd >> self.md_shift)).max(2)
    }

    /// Linux `tcp_scalable_cong_avoid`.
    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
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
        let cnt = w.cwnd.min(self.ai_cnt);
        w.cong_avoid_ai(cnt, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn scalable() -> (Scalable, Window) {
        let m = BTreeMap::new();
        let p = Params::new("scalable", &m, PARAMS).unwrap();
        let s = Scalable::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (s, w)
    }

    #[test]
    fn congestion_avoidance_above_100_adds_a_hundredth_packet_per_ack() {
        // cwnd 1000: cong_avoid_ai(min(1000, 100) = 100): +1 per 100 packets ACKed, i.e.
        // +0.01 per ACK. 99 ACKs leave cwnd at 1000 (cnt 99); the 100th makes it 1001.
        let (mut s, mut w) = scalable();
        w.cwnd = 1000;
        w.ssthresh = 500;
        for _ in 0..99 {
            s.cong_avoid(&mut w, 1);
        }
        assert_eq!((w.cwnd, w.cwnd_cnt), (1000, 99));
        s.cong_avoid(&mut w, 1);
        assert_eq!((w.cwnd, w.cwnd_cnt), (1001, 0));
        // One RTT of 1001 packets in delayed ACKs of 2 (500 ACKs = 1000 packets): +10
        // packets = 1 % of the window.
        for _ in 0..500 {
            s.cong_avoid(&mut w, 2);
        }
        assert_eq!(w.cwnd, 1011);
    }

    #[test]
    fn congestion_avoidance_below_100_is_reno() {
        // cwnd 50 < 100: +1 packet per 50 ACKed, Reno's rate.
        let (mut s, mut w) = scalable();
        w.cwnd = 50;
        w.ssthresh = 20;
        for _ in 0..49 {
            s.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 50);
        s.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 51);
    }

    #[test]
    fn loss_keeps_seven_eighths_of_cwnd() {
        let (mut s, mut w) = scalable();
        // 1000 − 1000/8 = 1000 − 125 = 875.
        w.cwnd = 1000;
        assert_eq!(s.on_congestion_event(&mut w, LossKind::Recovery), 875);
        // 203 − ⌊203/8⌋ = 203 − 25 = 178: the integer shift rounds the cut down.
        w.cwnd = 203;
        assert_eq!(s.on_congestion_event(&mut w, LossKind::Recovery), 178);
        // Small windows keep 7/8 too (no Reno halving): 12 − 1 = 11; 7 − 0 = 7.
        w.cwnd = 12;
        assert_eq!(s.on_congestion_event(&mut w, LossKind::Rto), 11);
        w.cwnd = 7;
        assert_eq!(s.on_congestion_event(&mut w, LossKind::Rto), 7);
        // Floor of 2.
        w.cwnd = 1;
        assert_eq!(s.on_congestion_event(&mut w, LossKind::Rto), 2);
    }

    #[test]
    fn slow_start_carries_leftover_acks_into_congestion_avoidance() {
        // cwnd 98, ssthresh 100, a stretch ACK of 5: slow start uses 2 (→ 100), the
        // remaining 3 go to cong_avoid_ai(100, 3): cnt = 3.
        let (mut s, mut w) = scalable();
        w.cwnd = 98;
        w.ssthresh = 100;
        s.cong_avoid(&mut w, 5);
        assert_eq!((w.cwnd, w.cwnd_cnt), (100, 3));
    }

    #[test]
    fn application_limited_window_does_not_grow() {
        let (mut s, mut w) = scalable();
        w.cwnd = 1000;
        w.ssthresh = 500;
        w.cwnd_limited = false;
        for _ in 0..200 {
            s.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 1000);
    }
}
