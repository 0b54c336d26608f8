//! ns-2 `Agent/TCP` = Tahoe (`TcpAgent::recv`, `TcpAgent::dupack_action` in `tcp.cc`).
//!
//! On the `numdupacks_`-th dupACK (3), unless `bugFix_` holds it back (the ACK has not passed
//! `recover_`, the highest packet sent at the last reduction): `recover_` = `maxseq_`,
//! ssthresh = max(⌊min(cwnd, window_)/2⌋, 2), cwnd = 1, and sending resumes at
//! `highest_ack_ + 1` (go-back-N) in slow start. An RTO does the same with the timer backed
//! off. DupACKs 1 and 2 may each send one new packet (`singledup_`, limited transmit).
use super::agent::{how, AckInfo, CwndAction, Ns2Sender, BUGFIX_SS, DELAY_GROWTH};

impl Ns2Sender {
    /// `TcpAgent::recv`.
    pub(crate) fn tahoe_recv(&mut self, a: &AckInfo) {
        let nd = self.cfg.numdupacks;
        if a.seqno > self.last_ack {
            self.recv_newack_helper(a);
            if self.last_ack == 0 && DELAY_GROWTH {
                self.cwnd = self.initial_window();
            }
        } else if a.seqno == self.last_ack {
            self.dupacks += 1;
            if self.dupacks == nd {
                self.tahoe_dupack_action();
            } else if self.dupacks < nd && self.cfg.singledup {
                self.send_one();
            }
        }
        // aggressive_maxburst_: every ACK may send.
        self.send_much(self.cfg.max_burst);
    }

    /// A fast retransmit may start: the ACK passed `recover_` (or `bugFix_` is off, or the
    /// very first data packet was lost).
    pub(crate) fn may_fast_retransmit(&self) -> bool {
        self.highest_ack > self.recover || !self.cfg.bug_fix || (BUGFIX_SS && self.highest_ack == 0)
    }

    /// `TcpAgent::dupack_action` (`tahoe_action`).
    fn tahoe_dupack_action(&mut self) {
        if !self.may_fast_retransmit() {
            return;
        }
        self.recover = self.maxseq;
        self.last_cwnd_action = CwndAction::Dupack;
        self.slowdown(how::SSTHRESH_HALF | how::CWND_ONE);
        self.reset_rtx_timer(false, false);
        self.stats.fast_recoveries += 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::ns2::agent::how;
    use crate::tcp::ns2::agent::testutil::*;
    use crate::tcp::ns2::Ns2Kind;

    #[test]
    fn three_dupacks_halve_min_of_cwnd_and_window_and_restart_from_one() {
        // window_ 100: cwnd 10 → ssthresh = max(⌊min(10, 100)/2⌋, 2) = 5, cwnd = 1.
        let mut s = established(Ns2Kind::Tahoe, 100, &[]);
        let t = grow_to(&mut s, 10.0);
        assert_eq!((s.highest_ack, s.maxseq), (8, 18));
        // Packet 9 lost: dupACKs of 8. The first two each send one new packet (limited
        // transmit: 19 ≤ 8 + 10 + 1, 20 ≤ 8 + 10 + 2).
        assert_eq!(ack(&mut s, t, 8, &[]), vec![19]);
        assert_eq!(ack(&mut s, t + 1, 8, &[]), vec![20]);
        // Third: slow down, go back to 9 with cwnd 1.
        assert_eq!(ack(&mut s, t + 2, 8, &[]), vec![9]);
        assert_eq!((s.cwnd, s.ssthresh, s.recover), (1.0, 5, 20));
        // Further dupACKs send nothing (9 is out, window 1).
        assert!(ack(&mut s, t + 3, 8, &[]).is_empty());
        // The retransmission is ACKed (up to 20, everything else had arrived): cwnd 2 and
        // go-back-N resumes with 21, 22.
        assert_eq!(ack(&mut s, t + 50, 20, &[]), vec![21, 22]);
        assert_eq!(s.cwnd, 2.0);
    }

    #[test]
    fn window_limited_halving_uses_window_not_cwnd() {
        // window_ 8 < cwnd 10: ssthresh = ⌊8/2⌋ = 4.
        let mut s = established(Ns2Kind::Tahoe, 8, &[]);
        let t = grow_to(&mut s, 10.0);
        for i in 0..3 {
            let ha = s.highest_ack;
            ack(&mut s, t + i, ha, &[]);
        }
        assert_eq!((s.cwnd, s.ssthresh), (1.0, 4));
    }

    #[test]
    fn small_window_halving_is_floored_at_two_packets() {
        // cwnd 3: ⌊3/2⌋ = 1 < 2 → ssthresh 2, cwnd 1.
        let mut s = established(Ns2Kind::Tahoe, 100, &[]);
        s.cwnd = 3.0;
        s.slowdown(how::SSTHRESH_HALF | how::CWND_ONE);
        assert_eq!((s.cwnd, s.ssthresh), (1.0, 2));
    }

    #[test]
    fn bugfix_blocks_a_second_fast_retransmit_below_recover() {
        let mut s = established(Ns2Kind::Tahoe, 100, &[]);
        let t = grow_to(&mut s, 10.0);
        for i in 0..3 {
            ack(&mut s, t + i, 8, &[]);
        }
        assert_eq!(s.recover, 20);
        // A new ACK below recover_, then three dupACKs of it: no second reduction.
        ack(&mut s, t + 50, 12, &[]);
        let cwnd = s.cwnd;
        for i in 0..3 {
            ack(&mut s, t + 60 + i, 12, &[]);
        }
        assert_eq!(s.cwnd, cwnd);
        assert_eq!(s.stats.fast_recoveries, 1);
    }
}
