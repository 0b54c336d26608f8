//! Linux Reno (`tcp_cong.c`: `tcp_reno_cong_avoid`, `tcp_reno_ssthresh`,
//! `tcp_reno_undo_cwnd`), RFC 5681 in packets.
//!
//! On a connection without SACK (`tcp.sack = false`) Linux recovers with NewReno
//! partial-ACK semantics (RFC 6582): one more segment is marked lost per partial ACK. The
//! catalogue's `newreno` is ns-2's agent (`tcp::ns2`); `reno` with `tcp.stack = "ns2"` is
//! ns-2's Reno.
use super::{CcInfo, CongestionControl, FlowInit, LossKind, Params, Window};
use crate::scenario::ConfigError;

pub const INFO: CcInfo = CcInfo {
    name: "reno",
    summary: "Linux Reno: slow start, +1 MSS per RTT, halve on loss (RFC 5681), SACK recovery",
    feedback: "loss",
    reference: "RFC 5681; Linux net/ipv4/tcp_cong.c",
    params: &[],
    sack: None,
    ecn: false,
};

/// Linux Reno.
#[derive(Debug, Clone)]
pub struct Reno;

impl Reno {
    pub fn new(_p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        Ok(Reno)
    }
}

impl CongestionControl for Reno {
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        (w.cwnd >> 1).max(2)
    }

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
        let cwnd = w.cwnd;
        w.cong_avoid_ai(cwnd, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn reno() -> (Reno, Window) {
        let m = BTreeMap::new();
        let p = Params::new("reno", &m, INFO.params).unwrap();
        let r = Reno::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (r, w)
    }

    #[test]
    fn slow_start_adds_one_packet_per_packet_acked() {
        let (mut r, mut w) = reno();
        r.cong_avoid(&mut w, 2);
        assert_eq!(w.cwnd, 12);
    }

    #[test]
    fn congestion_avoidance_adds_one_packet_per_cwnd_acked() {
        let (mut r, mut w) = reno();
        w.ssthresh = 10;
        // 10 ACKs of 1 packet at cwnd 10: +1 packet.
        for _ in 0..10 {
            r.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 11);
    }

    #[test]
    fn loss_halves_with_floor_of_two() {
        let (mut r, mut w) = reno();
        w.cwnd = 41;
        assert_eq!(r.on_congestion_event(&mut w, LossKind::Recovery), 20);
        w.cwnd = 3;
        assert_eq!(r.on_congestion_event(&mut w, LossKind::Rto), 2);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let (mut r, mut w) = reno();
        w.cwnd_limited = false;
        w.max_packets_out = 4; // cwnd 10 >= 2*4: app/rwnd-limited
        r.cong_avoid(&mut w, 5);
        assert_eq!(w.cwnd, 10);
    }
}
