//! ns-2 `Agent/TCP/Reno` (`tcp-reno.cc`) and `Agent/TCP/Newreno` (`tcp-newreno.cc`).
//!
//! Reno: on the 3rd dupACK, ssthresh = ⌊window/2⌋ (≥ 2), cwnd = window/2 (a float),
//! retransmit `last_ack_ + 1`, and inflate the window by `dupwnd_` = 3, then +1 per further
//! dupACK; `window()` = ⌊cwnd⌋ + `dupwnd_` (≤ `window_`). Any ACK of new data ends fast
//! recovery (`dupwnd_` = 0): after a partial ACK, the next losses of the same window wait for
//! the RTO, because `bugFix_` forbids a second fast retransmit below `recover_`.
//!
//! NewReno: an ACK below `recover_` is partial: the next unACKed packet is retransmitted at
//! once and the sender stays in fast recovery; with `partial_window_deflation_` the
//! inflation shrinks by the packets the ACK covers (less one); the RTO timer is restarted on
//! the first partial ACK only (`newreno_changes1_`). During recovery at most two packets
//! leave per ACK (`send_much(…, 2)`). The full ACK (≥ `recover_`) deflates the window to
//! cwnd.
use super::agent::{how, AckInfo, CwndAction, Ns2Sender, DELAY_GROWTH, EXIT_FAST_RETRANS};

impl Ns2Sender {
    /// `RenoTcpAgent::recv`.
    pub(crate) fn reno_recv(&mut self, a: &AckInfo) {
        let nd = self.cfg.numdupacks;
        if a.seqno > self.last_ack {
            if self.last_cwnd_action == CwndAction::Dupack {
                self.last_cwnd_action = CwndAction::Exited;
            }
            self.reno.dupwnd = 0;
            self.recv_newack_helper(a);
            if self.last_ack == 0 && DELAY_GROWTH {
                self.cwnd = self.initial_window();
            }
        } else if a.seqno == self.last_ack {
            self.dupacks += 1;
            if self.dupacks == nd {
                self.reno_dupack_action(true);
                if !EXIT_FAST_RETRANS {
                    self.reno.dupwnd = nd;
                }
            } else if self.dupacks > nd
                && (!EXIT_FAST_RETRANS || self.last_cwnd_action == CwndAction::Dupack)
            {
                self.reno.dupwnd += 1;
            } else if self.dupacks < nd && self.cfg.singledup {
                self.send_one();
            }
        }
        if self.dupacks == 0 || self.dupacks > nd - 1 {
            self.send_much(self.cfg.max_burst);
        }
    }

    /// `RenoTcpAgent::dupack_action` (`allow_fast_retransmit` true) and
    /// `NewRenoTcpAgent::dupack_action` (false).
    fn reno_dupack_action(&mut self, allow_while_in_recovery: bool) {
        let allow = allow_while_in_recovery && self.last_cwnd_action == CwndAction::Dupack;
        if !(self.may_fast_retransmit() || allow) {
            return;
        }
        self.recover = self.maxseq;
        self.last_cwnd_action = CwndAction::Dupack;
        self.slowdown(how::SSTHRESH_HALF | how::CWND_HALF);
        self.reset_rtx_timer(true, false);
        self.output(self.last_ack + 1);
        self.reno.dupwnd = self.cfg.numdupacks;
        self.stats.fast_recoveries += 1;
    }

    /// `RenoTcpAgent::timeout`.
    pub(crate) fn reno_timeout(&mut self) {
        self.reno.dupwnd = 0;
        self.dupacks = 0;
        if self.cfg.bug_fix {
            self.recover = self.maxseq;
        }
        self.base_timeout();
    }

    /// `NewRenoTcpAgent::recv` (`newreno_changes_` 0, `exit_recovery_fix_` 0).
    pub(crate) fn newreno_recv(&mut self, a: &AckInfo) {
        let nd = self.cfg.numdupacks;
        if a.seqno > self.last_ack {
            if a.seqno >= self.recover || self.last_cwnd_action != CwndAction::Dupack {
                if self.reno.dupwnd > 0 {
                    // Full ACK: deflate the window to cwnd.
                    self.reno.dupwnd = 0;
                    if self.last_cwnd_action == CwndAction::Dupack {
                        self.last_cwnd_action = CwndAction::Exited;
                    }
                }
                self.reno.firstpartial = false;
                self.recv_newack_helper(a);
                if self.last_ack == 0 && DELAY_GROWTH {
                    self.cwnd = self.initial_window();
                }
            } else {
                // Partial ACK: stay in fast recovery.
                if !self.cfg.partial_window_deflation {
                    self.reno.dupwnd = 0;
                }
                self.partialnewack_helper(a);
            }
        } else if a.seqno == self.last_ack {
            self.dupacks += 1;
            if self.dupacks == nd {
                self.reno_dupack_action(false);
                if !EXIT_FAST_RETRANS {
                    self.reno.dupwnd = nd;
                }
            } else if self.dupacks > nd
                && (!EXIT_FAST_RETRANS || self.last_cwnd_action == CwndAction::Dupack)
            {
                self.reno.dupwnd += 1;
            } else if self.dupacks < nd && self.cfg.singledup {
                self.send_one();
            }
        }
        if self.dupacks == 0 {
            self.send_much(self.cfg.max_burst);
        } else if self.dupacks > nd - 1 {
            // Maxburst is only needed on the first window after recovery: 2 during it.
            self.send_much(2);
        }
    }

    /// `partialnewack_helper`: timer on the first partial ACK, deflate, retransmit.
    fn partialnewack_helper(&mut self, a: &AckInfo) {
        if !self.cfg.newreno_changes1 || !self.reno.firstpartial {
            self.reno.firstpartial = true;
            self.newtimer(a.seqno);
        }
        self.partialnewack(a);
        self.output(self.last_ack + 1);
    }

    /// `partialnewack`: a partial ACK (no RTT sample, `dupacks_` kept).
    fn partialnewack(&mut self, a: &AckInfo) {
        if self.cfg.partial_window_deflation {
            let deflate = a.seqno - self.last_ack;
            if self.reno.dupwnd > deflate {
                self.reno.dupwnd -= deflate - 1;
            } else {
                self.cwnd -= (deflate - self.reno.dupwnd) as f64;
                // Leave dupwnd_ > 0 to flag fast recovery.
                self.reno.dupwnd = 1;
            }
            if self.cwnd < 1.0 {
                self.cwnd = 1.0;
            }
        }
        self.last_ack = a.seqno;
        self.highest_ack = self.last_ack;
        if self.t_seqno < self.last_ack + 1 {
            self.t_seqno = self.last_ack + 1;
        }
        if self.rtt_active && a.seqno >= self.rtt_seq {
            self.rtt_active = false;
            self.rtt.t_backoff = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::ns2::agent::testutil::*;
    use crate::tcp::ns2::agent::CwndAction;
    use crate::tcp::ns2::Ns2Kind;

    /// cwnd 10 with packets 9..=18 out, then packets 9 and 13 lost: dupACKs of 8 for
    /// 10, 11, 12 (the third triggers fast retransmit).
    fn in_recovery(kind: Ns2Kind) -> (crate::tcp::ns2::Ns2Sender, u64) {
        let mut s = established(kind, 100, &[]);
        let t = grow_to(&mut s, 10.0);
        assert_eq!(ack(&mut s, t, 8, &[]), vec![19], "limited transmit");
        assert_eq!(ack(&mut s, t + 1, 8, &[]), vec![20], "limited transmit");
        assert_eq!(ack(&mut s, t + 2, 8, &[]), vec![9], "fast retransmit");
        (s, t + 3)
    }

    #[test]
    fn recovery_inflates_to_ssthresh_plus_three_then_one_per_dupack() {
        let (mut s, t) = in_recovery(Ns2Kind::Reno);
        // ssthresh = ⌊10/2⌋ = 5, cwnd = 5.0, dupwnd = 3: window = 5 + 3 = 8 = ssthresh + 3.
        assert_eq!((s.cwnd, s.ssthresh, s.reno.dupwnd), (5.0, 5, 3));
        assert_eq!(s.window(), 8);
        assert_eq!(s.recover, 20);
        // Dupacks 4..: window 9, 10, … ; outstanding is 8..=20 so new data (21) leaves when
        // highest_ack + window ≥ 21, i.e. window 13 at the 8th dupACK.
        let mut sent_at = Vec::new();
        for i in 4..=8 {
            let got = ack(&mut s, t + i, 8, &[]);
            assert_eq!(s.window(), 5 + i as i64, "dupack {i}");
            sent_at.push(got);
        }
        assert_eq!(sent_at, vec![vec![], vec![], vec![], vec![], vec![21]]);
    }

    #[test]
    fn partial_ack_ends_reno_recovery_and_deflates() {
        let (mut s, t) = in_recovery(Ns2Kind::Reno);
        for i in 4..=6 {
            ack(&mut s, t + i, 8, &[]);
        }
        // The retransmitted 9 arrives: ACK 12 (13 lost too) is partial but Reno leaves fast
        // recovery: dupwnd 0, cwnd = 5 + 1/5 (congestion avoidance), window ⌊5.2⌋ = 5.
        let got = ack(&mut s, t + 40, 12, &[]);
        assert_eq!(s.reno.dupwnd, 0);
        assert_eq!(s.last_cwnd_action, CwndAction::Exited);
        assert!((s.cwnd - 5.2).abs() < 1e-12);
        assert!(
            got.is_empty(),
            "12 + 5 = 17 < t_seqno 21: nothing may leave"
        );
        // Three dupACKs of 12: no fast retransmit below recover_ (bugFix_): wait for RTO.
        for i in 0..3 {
            ack(&mut s, t + 50 + i, 12, &[]);
        }
        assert_eq!(s.stats.fast_recoveries, 1);
        assert!((s.cwnd - 5.2).abs() < 1e-12);
    }

    #[test]
    fn newreno_partial_ack_retransmits_next_hole_and_stays_in_recovery() {
        let (mut s, t) = in_recovery(Ns2Kind::NewReno);
        for i in 4..=6 {
            ack(&mut s, t + i, 8, &[]);
        }
        assert_eq!(s.reno.dupwnd, 6);
        // ACK 12 (partial, < recover 20): deflate = 12 − 8 = 4 < dupwnd 6 → dupwnd =
        // 6 − (4 − 1) = 3; cwnd stays 5; retransmit 13 at once.
        let got = ack(&mut s, t + 40, 12, &[]);
        assert_eq!(got, vec![13]);
        assert_eq!((s.reno.dupwnd, s.cwnd), (3, 5.0));
        assert_eq!(s.last_cwnd_action, CwndAction::Dupack, "still in recovery");
        assert_eq!(s.dupacks, 6, "partial ACKs keep the dupACK count");
        // Dupacks of 12 inflate again (+1 each): window 5 + 4 = 9 → 12 + 9 = 21 ≥ t_seqno.
        let got = ack(&mut s, t + 41, 12, &[]);
        assert_eq!(s.reno.dupwnd, 4);
        assert_eq!(got, vec![21]);
    }

    #[test]
    fn newreno_full_ack_deflates_to_cwnd_and_exits() {
        let (mut s, t) = in_recovery(Ns2Kind::NewReno);
        for i in 4..=6 {
            ack(&mut s, t + i, 8, &[]);
        }
        assert_eq!(ack(&mut s, t + 40, 12, &[]), vec![13]);
        assert_eq!((s.reno.dupwnd, s.cwnd), (3, 5.0));
        // Everything up to recover_ = 20 arrives: dupwnd = 0, cwnd 5 → 5 + 1/5.
        ack(&mut s, t + 80, 20, &[]);
        assert_eq!(s.reno.dupwnd, 0);
        assert_eq!(s.last_cwnd_action, CwndAction::Exited);
        assert!((s.cwnd - 5.2).abs() < 1e-12);
        assert_eq!(s.window(), 5);
    }

    #[test]
    fn newreno_partial_ack_larger_than_inflation_shrinks_cwnd() {
        let (mut s, t) = in_recovery(Ns2Kind::NewReno);
        // No further dupACKs: dupwnd 3. Partial ACK 15 (deflate 7 ≥ 3):
        // cwnd = 5 − (7 − 3) = 1, dupwnd = 1.
        ack(&mut s, t + 40, 15, &[]);
        assert_eq!((s.cwnd, s.reno.dupwnd), (1.0, 1));
    }
}
