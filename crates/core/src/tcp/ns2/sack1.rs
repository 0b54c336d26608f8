//! ns-2 `Agent/TCP/Sack1` (`tcp-sack1.cc`), Fall & Floyd's SACK TCP (CCR 26(3), 1996).
//!
//! Outside fast recovery it is Reno-like, but only dupACKs whose SACK blocks report new
//! data count. On the 3rd (when the ACK passed `recover_`): `recover_` = `maxseq_`,
//! `pipe_` = `maxseq_` − `highest_ack_` − 3 (packets outstanding less those the dupACKs
//! report gone), ssthresh = ⌊window/2⌋, cwnd = window/2, and `last_ack_ + 1` is resent (ns-2
//! does not count that retransmission in `pipe_`).
//!
//! In fast recovery every ACK takes one from `pipe_`; a partial ACK takes another (the
//! retransmission and the original it replaced both left; `partial_ack_` off). While
//! `pipe_` < cwnd, send the next hole below the highest SACK (each once, in order, from the
//! scoreboard), else new data, and add one to `pipe_`. The ACK of `recover_` ends recovery
//! without growing cwnd. An RTO clears the scoreboard, and dupACKs are ignored until a new
//! ACK arrives (`timeout_`).
use super::agent::{how, AckInfo, CwndAction, Ns2Sender, DELAY_GROWTH};

impl Ns2Sender {
    /// `Sack1TcpAgent::recv`.
    pub(crate) fn sack1_recv(&mut self, a: &AckInfo) {
        let nd = self.cfg.numdupacks;
        let maxburst = self.cfg.max_burst;
        if !self.sack1.fastrecov {
            if a.seqno > self.last_ack {
                self.sack1.firstpartial = false;
                self.recv_newack_helper(a);
                self.sack1.timeout = false;
                self.sack1.scb.clear();
                if self.last_ack == 0 && DELAY_GROWTH {
                    self.cwnd = self.initial_window();
                }
            } else if a.seqno < self.last_ack {
                // Old ACK: nothing.
            } else if !self.sack1.timeout {
                self.sack1.scb.update(self.highest_ack, a.sacks());
                // A duplicate ACK counts only if its SACK blocks report new data.
                if self.sack1.scb.changed() {
                    self.dupacks += 1;
                    if self.dupacks == nd {
                        self.sack1_dupack_action();
                    } else if self.dupacks < nd && self.cfg.singledup {
                        self.send_one();
                    }
                }
            }
            if self.dupacks == 0 {
                self.send_much(maxburst);
            }
        } else {
            self.sack1.pipe -= 1;
            if a.seqno >= self.recover {
                // Fast recovery is over (cwnd stays at the reduced value).
                self.recover = 0;
                self.sack1.fastrecov = false;
                self.newack(a);
                self.check_closed();
                self.sack1.timeout = false;
                self.sack1.scb.clear();
            } else if a.seqno > self.highest_ack {
                // Partial ACK: highest_ack_ moves, last_ack_ does not.
                self.highest_ack = a.seqno;
                self.sack1.scb.update(self.highest_ack, a.sacks());
                if self.cfg.partial_ack {
                    self.sack1_partial_ack_action();
                    self.sack1.pipe += 1;
                    if !self.sack1.firstpartial {
                        self.newtimer(a.seqno);
                        self.rtt.t_backoff = 1;
                        self.sack1.firstpartial = true;
                    }
                } else {
                    // The retransmission and the packet it repaired both left the pipe.
                    self.sack1.pipe -= 1;
                    self.newtimer(a.seqno);
                    self.rtt.t_backoff = 1;
                }
            } else if !self.sack1.timeout {
                self.sack1.scb.update(self.highest_ack, a.sacks());
                if self.sack1.scb.changed() && self.dupacks > 0 {
                    self.dupacks += 1;
                }
            }
            self.send_much(maxburst);
        }
    }

    /// `Sack1TcpAgent::dupack_action` (`sack_action`).
    fn sack1_dupack_action(&mut self) {
        if !self.may_fast_retransmit() {
            return;
        }
        let nd = self.cfg.numdupacks;
        self.recover = self.maxseq;
        // numdupacks(cwnd_) packets have left the pipe.
        self.sack1.pipe = self.maxseq - self.highest_ack - nd;
        self.reset_rtx_timer(true, false);
        self.sack1.fastrecov = true;
        self.sack1.scb.mark_retran(self.highest_ack + 1);
        self.last_cwnd_action = CwndAction::Dupack;
        self.slowdown(how::SSTHRESH_HALF | how::CWND_HALF);
        self.output(self.last_ack + 1);
        self.stats.fast_recoveries += 1;
    }

    /// `partial_ack_action`: two packets per partial ACK (`partial_ack_` only).
    fn sack1_partial_ack_action(&mut self) {
        if self.sack1.next_pkt < self.highest_ack + 1 {
            self.sack1.next_pkt = self.highest_ack + 1;
        }
        for _ in 0..2 {
            let next = self.sack1.scb.next_unacked(self.sack1.next_pkt);
            if next > self.sack1.next_pkt {
                self.sack1.next_pkt = next;
            }
            if self.t_seqno < self.sack1.next_pkt {
                self.t_seqno = self.sack1.next_pkt;
            }
            self.output(self.sack1.next_pkt);
            self.sack1.scb.mark_retran(self.sack1.next_pkt);
            self.sack1.next_pkt += 1;
        }
    }

    /// `Sack1TcpAgent::timeout`.
    pub(crate) fn sack1_timeout(&mut self) {
        self.dupacks = 0;
        self.sack1.fastrecov = false;
        self.sack1.timeout = true;
        if self.highest_ack > self.last_ack {
            self.last_ack = self.highest_ack;
        }
        self.recover = self.maxseq;
        self.sack1.scb.clear();
        self.base_timeout();
    }

    /// `Sack1TcpAgent::send_much`: holes first, then new data; by `pipe_` in recovery.
    pub(crate) fn sack1_send_much(&mut self, maxburst: i64) {
        let mut win = self.window();
        let wnd = self.cfg.window_pkts as i64;
        if self.t_seqno == 0 {
            self.firstsent = self.clock();
        }
        let mut npacket = 0;
        let mut found = true;
        loop {
            let fr = self.sack1.fastrecov;
            let open = if fr {
                self.sack1.pipe < self.cwnd as i64
            } else {
                self.t_seqno <= self.last_ack + win
            };
            if !(open && self.last_ack + 1 < self.curseq && found) {
                break;
            }
            found = false;
            let mut xmit = self.sack1.scb.next_retran();
            if xmit == -1 {
                let room = if fr {
                    self.t_seqno <= self.highest_ack + wnd
                } else {
                    self.t_seqno <= self.highest_ack + win
                };
                if room && self.t_seqno < self.send_limit() {
                    found = true;
                    xmit = self.t_seqno;
                    self.t_seqno += 1;
                }
            } else if self.recover > 0 && xmit <= self.highest_ack + wnd {
                found = true;
                self.sack1.scb.mark_retran(xmit);
                win = self.window();
            }
            if found {
                self.output(xmit);
                if self.t_seqno <= xmit {
                    self.t_seqno = xmit + 1;
                }
                npacket += 1;
                self.sack1.pipe += 1;
            }
            if maxburst > 0 && npacket == maxburst {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::ns2::agent::testutil::*;
    use crate::tcp::ns2::Ns2Kind;

    /// cwnd 10, packets 9..=18 out; 9 and 12 lost. SACKs arrive for 10, 11 (limited
    /// transmit sends 19, 20), then 13 (third dupACK).
    fn in_recovery() -> (crate::tcp::ns2::Ns2Sender, u64) {
        let mut s = established(Ns2Kind::Sack1, 100, &[]);
        let t = grow_to(&mut s, 10.0);
        assert_eq!(ack(&mut s, t, 8, &[(10, 11)]), vec![19]);
        assert_eq!(ack(&mut s, t + 1, 8, &[(10, 12)]), vec![20]);
        assert_eq!(ack(&mut s, t + 2, 8, &[(13, 14), (10, 12)]), vec![9]);
        (s, t + 3)
    }

    #[test]
    fn entry_sets_pipe_to_outstanding_minus_dupacks() {
        let (s, _) = in_recovery();
        // maxseq 20, highest_ack 8: pipe = 20 − 8 − 3 = 9 (the retransmission of 9 is not
        // counted); ssthresh = ⌊10/2⌋ = 5, cwnd = 5.
        assert!(s.sack1.fastrecov);
        assert_eq!(
            (s.sack1.pipe, s.cwnd, s.ssthresh, s.recover),
            (9, 5.0, 5, 20)
        );
    }

    #[test]
    fn each_dupack_takes_one_from_pipe_and_holes_go_first() {
        let (mut s, t) = in_recovery();
        // SACK of 14, 15, 16, 17: pipe 9 → 8 → 7 → 6 → 5 (< cwnd 5? no: equal), nothing sent.
        for (i, hi) in (15..=17).enumerate() {
            assert!(ack(&mut s, t + i as u64, 8, &[(13, hi), (10, 12)]).is_empty());
        }
        assert_eq!(s.sack1.pipe, 6);
        assert!(ack(&mut s, t + 3, 8, &[(13, 18), (10, 12)]).is_empty());
        assert_eq!(s.sack1.pipe, 5);
        // SACK of 18: pipe 4 < 5 → the hole 12 (below the highest SACK) is sent, pipe 5.
        assert_eq!(ack(&mut s, t + 4, 8, &[(13, 19), (10, 12)]), vec![12]);
        assert_eq!(s.sack1.pipe, 5);
        // SACK of 19: pipe 4 → new data 21, pipe 5.
        assert_eq!(ack(&mut s, t + 5, 8, &[(13, 20), (10, 12)]), vec![21]);
    }

    #[test]
    fn partial_ack_takes_two_from_pipe_and_full_ack_exits() {
        let (mut s, t) = in_recovery();
        // Retransmitted 9 arrives: ACK 11 (partial, < recover 20): pipe 9 − 1 − 1 = 7.
        assert!(ack(&mut s, t, 11, &[(13, 14)]).is_empty());
        assert_eq!(s.sack1.pipe, 7);
        assert_eq!((s.highest_ack, s.last_ack), (11, 8));
        // Two partial ACKs more are impossible here; a SACK of 14 and 15: pipe 6, 5.
        ack(&mut s, t + 1, 11, &[(13, 15)]);
        assert!(ack(&mut s, t + 2, 11, &[(13, 16)]).is_empty());
        assert_eq!(s.sack1.pipe, 5);
        // SACK of 16: pipe 4 → hole 12 goes out.
        assert_eq!(ack(&mut s, t + 3, 11, &[(13, 17)]), vec![12]);
        // ACK of 20 = recover_: out of recovery, cwnd unchanged (5), window-based again.
        let got = ack(&mut s, t + 40, 20, &[]);
        assert!(!s.sack1.fastrecov);
        assert_eq!(s.cwnd, 5.0);
        assert_eq!(got, vec![21, 22, 23, 24, 25]);
    }
}
