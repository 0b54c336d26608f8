//! ns-2 `Agent/TCP/Fack` (`tcp-fack.cc`, PSC), Mathis & Mahdavi's forward acknowledgement
//! (SIGCOMM 1996).
//!
//! `fack_` is the highest packet known received (cumulative ACK or SACK). Every ACK with
//! SACK blocks sets `dupacks_` = `fack_` − `last_ack_` − 1, so recovery starts as soon as
//! three packets beyond the hole are SACKed (one ACK may be enough). At entry: `recover_` =
//! `t_seqno_`, ssthresh = ⌊window/2⌋, cwnd = 1 (`CLOSE_CWND_RESTART`); cwnd then grows on
//! every ACK of the recovery (slow start up to ssthresh, as `opencwnd` runs on each).
//!
//! Sending (`send_much`): while `awnd` = `t_seqno_` − 1 − `fack_` + `retran_data_` <
//! window(), retransmit the first packet of the scoreboard neither SACKed nor already
//! retransmitted (every hole below `fack_` counts as lost), else send new data. `window()`
//! = ⌊min(cwnd, window_) + `wintrim_`⌋. With `rampdown_` (off by default) the window is not
//! cut at once: `wintrim_` = (data beyond `fack_`) × ½ at entry, less ½ per packet `fack_`
//! advances — Mathis & Mahdavi's rate-halving, one packet sent per two ACKed.
//!
//! A SACK above the `snd_nxt` of an outstanding retransmission means the retransmission was
//! lost: sending stops (`timeout_`) until the RTO. Recovery ends on an ACK without SACK
//! blocks at or beyond `recover_`. Unlike the other agents, FACK never applies
//! `windowInit_` (the SYN's ACK takes cwnd from 1 to 2 by slow start) and samples the RTT
//! from the echoed timestamp of every duplicate ACK (`oldack`).
use super::agent::{how, AckInfo, CwndAction, Ns2Sender, RESTART_BUGFIX};

impl Ns2Sender {
    /// `FackTcpAgent::recv`.
    pub(crate) fn fack_recv(&mut self, a: &AckInfo) {
        let maxburst = self.cfg.max_burst;
        if !self.fack.fastrecov {
            if a.seqno > self.last_ack && a.n_sack == 0 {
                self.recv_newack_helper(a);
                self.fack.fack = self.last_ack;
                self.fack.timeout = false;
                self.fack.scb.clear();
                self.fack.retran_data = 0;
                self.fack.wintrim = 0.0;
            } else if a.seqno < self.last_ack {
                // Misordered ACK.
            } else {
                // The scoreboard still uses the previous cumulative ACK (as in ns-2).
                let decr = self.fack.scb.update(self.highest_ack, a.sacks());
                self.fack.retran_data -= decr;
                self.fack_oldack(a);
                let ms = maxsack(a);
                if ms > self.fack.fack {
                    self.fack.fack = ms;
                }
                if self.fack.fack >= self.t_seqno {
                    self.t_seqno = self.fack.fack + 1;
                }
                self.dupacks = (self.fack.fack - self.last_ack) - 1;
                if self.dupacks >= self.cfg.numdupacks {
                    self.fack_enter_recovery();
                }
            }
            if self.dupacks == 0 {
                self.send_much(maxburst);
            }
        } else {
            self.fack_oldack(a);
            let ms = maxsack(a);
            if ms > self.fack.fack {
                if self.cfg.rampdown {
                    self.fack.wintrim -= (ms - self.fack.fack) as f64 * self.fack.wintrimmult;
                    if self.fack.wintrim < 0.0 {
                        self.fack.wintrim = 0.0;
                    }
                }
                self.fack.fack = ms;
            }
            if self.fack.fack >= self.t_seqno {
                self.t_seqno = self.fack.fack + 1;
            }
            let decr = self.fack.scb.update(self.highest_ack, a.sacks());
            self.fack.retran_data -= decr;
            // A retransmission lost again stops sending until the RTO.
            if self.fack.scb.check_snd_nxt(a.sacks()) {
                self.fack.timeout = true;
            }
            self.opencwnd();
            if a.n_sack == 0 && self.last_ack >= self.recover {
                self.fack.fastrecov = false;
                self.fack.timeout = false;
                self.fack.scb.clear();
                self.fack.retran_data = 0;
                self.fack.wintrim = 0.0;
                self.dupacks = 0;
            }
            self.send_much(maxburst);
        }
    }

    /// Enter fast recovery (the `dupacks_ >= numdupacks_` branch).
    fn fack_enter_recovery(&mut self) {
        self.recover = self.t_seqno;
        self.last_cwnd_action = CwndAction::Dupack;
        if self.cfg.ss_div4 && self.cwnd <= self.ssthresh as f64 + 0.5 {
            self.cwnd /= 2.0;
            self.fack.wintrimmult = 0.75;
        } else {
            self.fack.wintrimmult = 0.5;
        }
        self.slowdown(how::SSTHRESH_HALF | how::CWND_RESTART);
        if self.cfg.rampdown {
            self.fack.wintrim = (self.t_seqno - self.fack.fack - 1) as f64 * self.fack.wintrimmult;
        }
        self.reset_rtx_timer(true, false);
        self.fack.fastrecov = true;
        self.fack.scb.mark_retran(self.last_ack + 1, self.t_seqno);
        self.fack.retran_data += 1;
        self.output(self.last_ack + 1);
        self.stats.fast_recoveries += 1;
    }

    /// `FackTcpAgent::oldack`: an ACK that may or may not advance, with an RTT sample from
    /// its echoed timestamp.
    fn fack_oldack(&mut self, a: &AckInfo) {
        let now = self.clock();
        self.last_ack = a.seqno;
        self.highest_ack = self.last_ack;
        self.fack.fack = self.fack.fack.max(self.highest_ack);
        self.maxseq = self.maxseq.max(self.highest_ack);
        if self.t_seqno < self.last_ack + 1 {
            self.t_seqno = self.last_ack + 1;
        }
        self.newtimer(a.seqno);
        if self.rtt_active && a.seqno >= self.rtt_seq {
            self.rtt_active = false;
            self.rtt.t_backoff = 1;
        }
        self.rtt.update(now - a.ts_echo, now, self.cfg.timestamps);
        self.check_closed();
    }

    /// `FackTcpAgent::timeout`: go-back-N from the cumulative ACK; `fastrecov_` and
    /// `recover_` are left as they are.
    pub(crate) fn fack_timeout(&mut self) {
        let idle = self.highest_ack == self.maxseq;
        self.fack.timeout = false;
        if self.highest_ack > self.last_ack {
            self.last_ack = self.highest_ack;
        }
        self.fack.retran_data = 0;
        self.last_cwnd_action = CwndAction::Timeout;
        if idle && RESTART_BUGFIX {
            self.slowdown(how::CWND_INIT);
        } else {
            self.stats.rto_count += 1;
            self.slowdown(how::SSTHRESH_HALF | how::CWND_RESTART);
        }
        self.fack.scb.clear();
        self.reset_rtx_timer(true, !idle);
        self.fack.fack = self.last_ack;
        self.t_seqno = self.last_ack + 1;
        self.send_much(0);
    }

    /// `FackTcpAgent::send_much`: while awnd < window, holes first, then new data.
    pub(crate) fn fack_send_much(&mut self, maxburst: i64) {
        let mut win = self.window();
        if self.t_seqno == 0 {
            self.firstsent = self.clock();
        }
        let wnd = self.cfg.window_pkts as i64;
        let mut npacket = 0;
        while self.t_seqno <= self.fack.fack + win - self.fack.retran_data && !self.fack.timeout {
            let mut xmit = self.fack.scb.next_retran();
            if xmit == -1 {
                if self.t_seqno >= self.send_limit() {
                    return;
                }
                if self.fack.fastrecov && self.t_seqno > self.highest_ack + wnd {
                    break;
                }
                xmit = self.t_seqno;
                self.t_seqno += 1;
            } else {
                self.fack.scb.mark_retran(xmit, self.t_seqno);
                self.fack.retran_data += 1;
                win = self.window();
            }
            self.output(xmit);
            if self.t_seqno <= xmit {
                self.t_seqno = xmit + 1;
            }
            npacket += 1;
            if maxburst > 0 && npacket == maxburst {
                break;
            }
        }
    }

    /// awnd = snd.nxt − snd.fack + retran_data, in packets (`t_seqno_` is the next packet,
    /// so the data beyond `fack_` is `t_seqno_` − 1 − `fack_`).
    pub fn fack_awnd(&self) -> i64 {
        self.t_seqno - 1 - self.fack.fack + self.fack.retran_data
    }
}

/// `maxsack`: highest packet SACKed by this ACK (−2 without blocks).
fn maxsack(a: &AckInfo) -> i64 {
    a.sacks().iter().map(|b| b.1).max().unwrap_or(-1) - 1
}

#[cfg(test)]
mod tests {
    use crate::tcp::ns2::agent::testutil::*;
    use crate::tcp::ns2::Ns2Kind;

    /// cwnd 10, packets 9..=18 out (ACK 8); 9 lost.
    fn open_window(params: &[(&str, f64)]) -> (crate::tcp::ns2::Ns2Sender, u64) {
        let mut s = established(Ns2Kind::Fack, 100, params);
        let t = grow_to(&mut s, 10.0);
        assert_eq!((s.highest_ack, s.t_seqno, s.fack.fack), (8, 19, 8));
        (s, t)
    }

    #[test]
    fn recovery_starts_when_fack_is_three_beyond_the_hole() {
        let (mut s, t) = open_window(&[]);
        // SACK 10..=11: dupacks = fack 11 − 8 − 1 = 2: no recovery, no send.
        assert!(ack(&mut s, t, 8, &[(10, 12)]).is_empty());
        assert_eq!((s.dupacks, s.fack.fack), (2, 11));
        // SACK 10..=12 in one ACK: dupacks 3 → recovery, ssthresh = ⌊10/2⌋ = 5, cwnd = 1,
        // recover = t_seqno = 19, 9 retransmitted (retran_data 1).
        assert_eq!(ack(&mut s, t + 1, 8, &[(10, 13)]), vec![9]);
        assert!(s.fack.fastrecov);
        assert_eq!(
            (s.ssthresh, s.cwnd, s.recover, s.fack.retran_data),
            (5, 1.0, 19, 1)
        );
        // awnd = t_seqno − 1 − fack + retran_data = 19 − 1 − 12 + 1 = 7.
        assert_eq!(s.fack_awnd(), 7);
    }

    #[test]
    fn sending_resumes_when_awnd_falls_below_the_growing_window() {
        let (mut s, t) = open_window(&[]);
        ack(&mut s, t, 8, &[(10, 13)]);
        // Each further SACK: fack +1 (awnd −1), cwnd +1 (slow start to ssthresh 5).
        // ACK (SACK to 13): awnd 6, cwnd 2; (to 14): awnd 5, cwnd 3; (to 15): awnd 4,
        // cwnd 4; (to 16): awnd 3, cwnd 5 → sends while awnd < 5: 19, 20 (awnd 5).
        for (i, hi) in (14..=16).enumerate() {
            assert!(
                ack(&mut s, t + 1 + i as u64, 8, &[(10, hi)]).is_empty(),
                "{hi}"
            );
        }
        assert_eq!((s.fack_awnd(), s.cwnd), (4, 4.0));
        assert_eq!(ack(&mut s, t + 4, 8, &[(10, 17)]), vec![19, 20]);
        assert_eq!((s.fack_awnd(), s.cwnd), (5, 5.0));
        // Next: fack 17, awnd 4; cwnd 5 + 1/5 → window 5: one packet.
        assert_eq!(ack(&mut s, t + 5, 8, &[(10, 18)]), vec![21]);
    }

    #[test]
    fn rampdown_trims_half_the_data_beyond_fack_then_releases_half_per_ack() {
        let (mut s, t) = open_window(&[("rampdown", 1.0)]);
        ack(&mut s, t, 8, &[(10, 13)]);
        // Entry: t_seqno 19, fack 12: wintrim = (19 − 12 − 1) × ½ = 3; window ⌊1 + 3⌋ = 4.
        assert_eq!(s.fack.wintrim, 3.0);
        assert_eq!(s.window(), 4);
        // SACK to 13: wintrim 3 − ½ = 2.5, cwnd 2 → window ⌊4.5⌋ = 4; awnd 6: no send.
        assert!(ack(&mut s, t + 1, 8, &[(10, 14)]).is_empty());
        assert_eq!((s.fack.wintrim, s.window()), (2.5, 4));
        // SACK to 14: wintrim 2, cwnd 3 → window 5; awnd 5: no send.
        assert!(ack(&mut s, t + 2, 8, &[(10, 15)]).is_empty());
        // SACK to 15: wintrim 1.5, cwnd 4 → window 5; awnd 4 → one packet (19), awnd 5.
        assert_eq!(ack(&mut s, t + 3, 8, &[(10, 16)]), vec![19]);
    }

    #[test]
    fn recovery_ends_on_an_ack_without_sack_at_recover() {
        let (mut s, t) = open_window(&[]);
        ack(&mut s, t, 8, &[(10, 13)]);
        for (i, hi) in (14..=19).enumerate() {
            ack(&mut s, t + 1 + i as u64, 8, &[(10, hi)]);
        }
        // The retransmission of 9 arrives; everything up to the new data is in.
        let end = s.t_seqno - 1;
        ack(&mut s, t + 50, end, &[]);
        assert!(!s.fack.fastrecov);
        assert_eq!((s.fack.retran_data, s.dupacks), (0, 0));
    }
}
