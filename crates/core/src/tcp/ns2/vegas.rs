//! ns-2 `Agent/TCP/Vegas` (`tcp-vegas.cc`, Ted Kuo's port of USC's NetBSD Vegas), with
//! ns-2's α = 1, β = 3, γ = 1 (`v_alpha_`, `v_beta_`, `v_gamma_`).
//!
//! Once per RTT (the first ACK at or beyond `v_begseq_`, the packet sent when the previous
//! RTT ended): rtt = mean of the fine-grained samples of the round (else the round's
//! duration); `baseRTT` = min(baseRTT, rtt) (also taken when one packet is in flight);
//! actual = packets sent in the round / rtt, expect = (`t_seqno_` − `last_ack_`) / baseRTT,
//! δ = ⌊(expect − actual)·baseRTT + ½⌋ packets.
//! - Slow start (cwnd < ssthresh): every other round, +1 per ACK, unless δ > γ: then
//!   ssthresh = 2, cwnd −= cwnd/8 (≥ 2) and the increase stops.
//! - Congestion avoidance: δ > β → cwnd −1 (≥ 2); δ < α → +1/cwnd per ACK for the round.
//!
//! The increase applies only while cwnd exceeds the data in flight by at most 2. There is no
//! `opencwnd`: cwnd moves only as above.
//!
//! Loss: a dupACK whose next packet is older than the fine-grained timeout `v_timeout_`
//! (or the 3rd dupACK) retransmits it; if cwnd has not changed since that packet was sent,
//! cwnd = window − window/4 (window/2 if it was a retransmission, 2 if window ≤ 3), inflated
//! by the dupACK count; the RTO timer is restarted *backed off*. The first two new ACKs
//! after it check the next packet against `v_timeout_` too. RTO: cwnd = `v_slowstart_` 2.
//!
//! Quirks kept from ns-2: the send-time ring has `window_` slots and is cleared only for ACK
//! ranges that do not wrap around it, so a later packet in an uncleared slot looks like a
//! retransmission; the SYN's send time is 0 on Vegas's clock, so it yields no sample; cwnd is
//! 1 until the first data packet is ACKed (then `windowInit_`).
use super::agent::{how, AckInfo, CwndAction, Ns2Config, Ns2Sender, DELAY_GROWTH};

/// Vegas state (`VegasTcpAgent`), times in seconds since the first packet (`vegastime`).
#[derive(Clone, Debug)]
pub struct VegasState {
    pub alpha: i64,
    pub beta: i64,
    pub gamma: i64,
    /// `t_cwnd_changed_`: last time cwnd was reduced for a loss.
    pub t_cwnd_changed: f64,
    pub firstrecv: f64,
    /// `v_slowstart_`: cwnd after an RTO.
    pub slowstart: f64,
    /// `v_sa_` (8·SRTT) and `v_sd_` (4·deviation) of the fine-grained timer, and its value.
    pub sa: f64,
    pub sd: f64,
    pub timeout: f64,
    /// `v_worried_`: new ACKs still to check for expired packets after a retransmission.
    pub worried: i64,
    /// `v_begseq_`, `v_begtime_`: start of the current RTT round.
    pub begseq: i64,
    pub begtime: f64,
    /// Fine-grained samples of the round.
    pub cnt_rtt: i64,
    pub sum_rtt: f64,
    pub base_rtt: f64,
    /// Increase per ACK decided for the round (`v_incr_`).
    pub incr: f64,
    pub inc_flag: bool,
    pub rtt: f64,
    pub actual: f64,
    /// `v_newcwnd_`: cwnd after the loss reduction, before inflation.
    pub newcwnd: f64,
    /// Send time (`vegastime`) and transmissions of packet `k` in slot `k % maxwnd`.
    pub sendtime: Vec<f64>,
    pub transmits: Vec<i64>,
    pub maxwnd: i64,
}

impl VegasState {
    pub fn new(cfg: &Ns2Config) -> Self {
        VegasState {
            alpha: cfg.v_alpha,
            beta: cfg.v_beta,
            gamma: cfg.v_gamma,
            t_cwnd_changed: 0.0,
            firstrecv: -1.0,
            slowstart: 2.0,
            sa: 0.0,
            sd: 0.0,
            timeout: 1000.0,
            worried: 0,
            begseq: 0,
            begtime: 0.0,
            cnt_rtt: 0,
            sum_rtt: 0.0,
            base_rtt: 1_000_000_000.0,
            incr: 0.0,
            inc_flag: true,
            rtt: 0.0,
            actual: 0.0,
            newcwnd: 0.0,
            sendtime: Vec::new(),
            transmits: Vec::new(),
            maxwnd: 1,
        }
    }

    fn slot(&self, seqno: i64) -> usize {
        seqno.rem_euclid(self.maxwnd) as usize
    }
}

impl Ns2Sender {
    /// `vegastime()`: seconds since the first packet (the SYN) was sent.
    fn vegastime(&self) -> f64 {
        self.clock() - self.firstsent
    }

    /// `VegasTcpAgent::output`: record the fine-grained send time and transmission count.
    pub(crate) fn vegas_output(&mut self, seqno: i64) {
        if seqno == 0 {
            let w = (self.cfg.window_pkts as i64).max(1);
            self.vegas.maxwnd = w;
            self.vegas.sendtime = vec![-1.0; w as usize];
            self.vegas.transmits = vec![0; w as usize];
        }
        let i = self.vegas.slot(seqno);
        self.vegas.sendtime[i] = self.vegastime();
        self.vegas.transmits[i] += 1;
        self.emit_packet(seqno);
        self.note_sent(seqno);
        if self.rtx_timer.is_none() {
            self.set_rtx_timer();
        }
    }

    /// `vegas_expire`: the packet after `seqno` if it is older than `v_timeout_`, else −1.
    fn vegas_expire(&self, seqno: i64) -> i64 {
        let elapse = self.vegastime() - self.vegas.sendtime[self.vegas.slot(seqno + 1)];
        if elapse >= self.vegas.timeout {
            seqno + 1
        } else {
            -1
        }
    }

    /// `VegasTcpAgent::recv`.
    pub(crate) fn vegas_recv(&mut self, a: &AckInfo) {
        let nd = self.cfg.numdupacks;
        let current = self.vegastime();
        if self.vegas.firstrecv < 0.0 {
            let v = &mut self.vegas;
            v.firstrecv = current;
            v.base_rtt = current;
            v.rtt = current;
            v.sa = v.rtt * 8.0;
            v.sd = v.rtt;
            v.timeout = ((v.sa / 4.0) + v.sd) / 2.0;
        }
        if a.seqno > self.last_ack {
            if self.last_ack == 0 && DELAY_GROWTH {
                self.cwnd = self.initial_window();
            }
            // Deflate a window inflated by dupACKs.
            if self.dupacks > nd && self.cwnd > self.vegas.newcwnd {
                self.cwnd = self.vegas.newcwnd;
                self.ssthresh = 2;
            }
            let oldack = self.last_ack;
            self.newack(a);
            self.check_closed();
            if a.seqno >= self.vegas.begseq {
                self.vegas_round(current);
            }
            // The increase was decided once per RTT; stop slow start at ssthresh.
            if self.vegas.incr == 1.0 && self.cwnd >= self.ssthresh as f64 {
                self.vegas.incr = 0.0;
            }
            // Grow only if the window is actually being used.
            if self.vegas.incr > 0.0 && (self.cwnd - (self.t_seqno - self.last_ack) as f64) <= 2.0 {
                self.cwnd += self.vegas.incr;
            }
            self.vegas_sample(a.seqno, oldack, current);
            if self.vegas.worried > 0 {
                self.vegas.worried -= 1;
                let expired = self.vegas_expire(a.seqno);
                if expired >= 0 {
                    self.dupacks = nd;
                    self.output(expired);
                } else {
                    self.vegas.worried = 0;
                }
            }
        } else if a.seqno == self.last_ack {
            self.dupacks += 1;
            let expired = self.vegas_expire(a.seqno);
            if expired >= 0 || self.dupacks == nd {
                self.vegas_dupack_action(expired, current);
            } else if self.dupacks > nd {
                self.cwnd += 1.0;
            }
        }
        if self.dupacks == 0 || self.dupacks > nd - 1 {
            self.send_much(self.cfg.max_burst);
        }
    }

    /// The once-per-RTT decision.
    fn vegas_round(&mut self, current: f64) {
        let v = &mut self.vegas;
        let rtt = if v.cnt_rtt > 0 {
            v.sum_rtt / v.cnt_rtt as f64
        } else {
            current - v.begtime
        };
        v.sum_rtt = 0.0;
        v.cnt_rtt = 0;
        let rtt_len = self.t_seqno - v.begseq;
        if rtt > 0.0 {
            if rtt < v.base_rtt || rtt_len <= 1 {
                v.base_rtt = rtt;
            }
            v.actual = rtt_len as f64 / rtt;
            let expect = (self.t_seqno - self.last_ack) as f64 / v.base_rtt;
            let delta = ((expect - v.actual) * v.base_rtt + 0.5) as i64;
            if self.cwnd < self.ssthresh as f64 {
                // Slow start: grow every other RTT.
                v.inc_flag = !v.inc_flag;
                if !v.inc_flag {
                    v.incr = 0.0;
                } else if delta > v.gamma {
                    self.ssthresh = 2;
                    self.cwnd -= self.cwnd / 8.0;
                    if self.cwnd < 2.0 {
                        self.cwnd = 2.0;
                    }
                    v.incr = 0.0;
                } else {
                    v.incr = 1.0;
                }
            } else if delta > v.beta {
                self.cwnd -= 1.0;
                if self.cwnd < 2.0 {
                    self.cwnd = 2.0;
                }
                v.incr = 0.0;
            } else if delta < v.alpha {
                v.incr = 1.0 / self.cwnd;
            } else {
                v.incr = 0.0;
            }
        }
        v.begseq = self.t_seqno;
        v.begtime = current;
    }

    /// Clear the slots of the packets ACKed (ns-2's loop, which skips wrapping ranges) and
    /// take a fine-grained sample from the packet at the ACK if it was sent once.
    fn vegas_sample(&mut self, seqno: i64, oldack: i64, current: f64) {
        let v = &mut self.vegas;
        let ia = v.slot(seqno);
        let send_time = v.sendtime[ia];
        let transmits = v.transmits[ia];
        let mut range = seqno - oldack;
        let mut k = v.slot(oldack + 1);
        while k <= ia && range > 0 {
            v.sendtime[k] = -1.0;
            v.transmits[k] = 0;
            k = (k + 1) % v.maxwnd as usize;
            range -= 1;
        }
        if send_time != 0.0 && transmits == 1 {
            let rtt = current - send_time;
            v.sum_rtt += rtt;
            v.cnt_rtt += 1;
            if rtt > 0.0 {
                v.rtt = rtt;
                if v.rtt < v.base_rtt {
                    v.base_rtt = v.rtt;
                }
                let mut n = v.rtt - v.sa / 8.0;
                v.sa += n;
                n = n.abs();
                n -= v.sd / 4.0;
                v.sd += n;
                v.timeout = ((v.sa / 4.0) + v.sd) / 2.0;
                v.timeout += v.timeout / 16.0;
            }
        }
    }

    /// Retransmission on an expired packet or the 3rd dupACK.
    fn vegas_dupack_action(&mut self, expired: i64, current: f64) {
        let nd = self.cfg.numdupacks;
        let i = self.vegas.slot(self.last_ack + 1);
        let send_time = self.vegas.sendtime[i];
        let transmits = self.vegas.transmits[i];
        if self.cfg.bug_fix
            && self.highest_ack <= self.recover
            && self.last_cwnd_action == CwndAction::Timeout
        {
            return;
        }
        let mut win = self.window();
        self.last_cwnd_action = CwndAction::Dupack;
        self.recover = self.maxseq;
        self.vegas.worried = 2.min(self.t_seqno - self.last_ack);
        if transmits > 1 {
            self.vegas.timeout *= 2.0;
        } else {
            self.vegas.timeout += self.vegas.timeout / 8.0;
        }
        if self.vegas.t_cwnd_changed < send_time {
            // cwnd has not been cut since that packet left.
            if win <= 3 {
                win = 2;
            } else if transmits > 1 {
                win >>= 1;
            } else {
                win -= win >> 2;
            }
            self.vegas.newcwnd = win as f64;
            self.cwnd = self.vegas.newcwnd + self.dupacks as f64;
            self.vegas.t_cwnd_changed = current;
        }
        self.reset_rtx_timer(true, true);
        if expired >= 0 {
            self.output(expired);
        } else {
            self.output(self.last_ack + 1);
        }
        if transmits == 1 {
            self.dupacks = nd;
        }
        self.stats.fast_recoveries += 1;
    }

    /// `VegasTcpAgent::timeout`.
    pub(crate) fn vegas_timeout(&mut self) {
        self.dupacks = 0;
        self.recover = self.maxseq;
        self.last_cwnd_action = CwndAction::Timeout;
        self.reset_rtx_timer(false, true);
        self.stats.rto_count += 1;
        self.slowdown(how::CWND_RESTART | how::SSTHRESH_HALF);
        self.cwnd = self.vegas.slowstart;
        self.vegas.newcwnd = 0.0;
        self.vegas.t_cwnd_changed = self.vegastime();
        self.send_much(0);
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::ns2::agent::testutil::*;
    use crate::tcp::ns2::Ns2Kind;

    #[test]
    fn first_data_round_has_cwnd_one_then_window_init() {
        // SYN sent at 0, ACKed at 100 ms: only packet 1 leaves (cwnd still 1).
        let mut s = established(Ns2Kind::Vegas, 100, &[]);
        assert_eq!(s.cwnd, 1.0);
        assert_eq!((s.t_seqno, s.maxseq), (2, 1));
        // baseRTT = time of the first ACK on Vegas's clock = 100 ms.
        assert!((s.vegas.base_rtt - 0.1).abs() < 1e-12);
        // ACK 1 at 200 ms: cwnd = windowInit_ 2; the round closes (ACK ≥ begseq 1) and,
        // every other round being an increase round, δ = 0 ≤ γ gives +1: cwnd 3.
        ack(&mut s, 200, 1, &[]);
        assert_eq!(s.cwnd, 3.0);
    }

    #[test]
    fn congestion_avoidance_holds_between_alpha_and_beta() {
        // Round of 10 packets, baseRTT 100 ms. diff = (expect − actual)·base with
        // expect = in flight / base, actual = sent in round / rtt.
        let mut s = established(Ns2Kind::Vegas, 100, &[]);
        s.cwnd = 10.0;
        s.ssthresh = 2; // congestion avoidance
        s.vegas.base_rtt = 0.1;
        // Case 1: rtt 125 ms, 10 packets sent in the round, 10 in flight:
        // actual 80/s, expect 100/s → δ = ⌊20·0.1 + ½⌋ = 2 ∈ [α=1, β=3] → no change.
        s.vegas.begseq = s.t_seqno;
        s.vegas.begtime = 0.0;
        s.t_seqno += 10;
        s.last_ack = s.t_seqno - 10;
        s.vegas.cnt_rtt = 1;
        s.vegas.sum_rtt = 0.125;
        s.vegas_round(1.0);
        assert_eq!((s.cwnd, s.vegas.incr), (10.0, 0.0));
        // Case 2: rtt 200 ms: actual 50/s → δ = ⌊50·0.1 + ½⌋ = 5 > β → cwnd 9.
        s.vegas.begseq = s.t_seqno;
        s.t_seqno += 10;
        s.last_ack = s.t_seqno - 10;
        s.vegas.cnt_rtt = 1;
        s.vegas.sum_rtt = 0.2;
        s.vegas_round(2.0);
        assert_eq!(s.cwnd, 9.0);
        // Case 3: rtt 105 ms: actual ≈ 95.2/s → δ = ⌊0.48 + ½⌋ = 0 < α → +1/cwnd per ACK.
        s.vegas.begseq = s.t_seqno;
        s.t_seqno += 10;
        s.last_ack = s.t_seqno - 10;
        s.vegas.cnt_rtt = 1;
        s.vegas.sum_rtt = 0.105;
        s.vegas_round(3.0);
        assert!((s.vegas.incr - 1.0 / 9.0).abs() < 1e-12);
    }

    #[test]
    fn slow_start_leaves_above_gamma_with_cwnd_cut_by_an_eighth() {
        let mut s = established(Ns2Kind::Vegas, 100, &[]);
        s.cwnd = 16.0;
        s.ssthresh = 100;
        s.vegas.base_rtt = 0.1;
        s.vegas.inc_flag = false; // this round is an "increase" round
        s.vegas.begseq = s.t_seqno;
        s.t_seqno += 16;
        s.last_ack = s.t_seqno - 16;
        s.vegas.cnt_rtt = 1;
        s.vegas.sum_rtt = 0.125;
        // actual 128/s, expect 160/s → δ = ⌊3.2 + ½⌋ = 3 > γ = 1: ssthresh 2, cwnd 16 − 2 = 14.
        s.vegas_round(1.0);
        assert_eq!((s.cwnd, s.ssthresh, s.vegas.incr), (14.0, 2, 0.0));
    }

    #[test]
    fn third_dupack_cuts_a_quarter_and_inflates_by_dupacks() {
        let mut s = established(Ns2Kind::Vegas, 100, &[]);
        ack(&mut s, 200, 1, &[]);
        // Grow by hand to a window of 8 packets, all sent at 0.3 s.
        s.cwnd = 8.0;
        s.set_now(crate::engine::time::SimTime(300 * 1_000_000));
        s.send_much(0);
        sent(&mut s);
        let maxseq = s.maxseq;
        s.vegas.timeout = 10.0; // no fine-grained expiry: the 3rd dupACK decides
        for i in 0..3 {
            let la = s.last_ack;
            ack(&mut s, 400 + i, la, &[]);
        }
        // win 8 > 3, first transmission: 8 − 8/4 = 6; cwnd = 6 + 3 dupACKs = 9.
        assert_eq!((s.vegas.newcwnd, s.cwnd), (6.0, 9.0));
        assert_eq!(
            s.rtt.t_backoff, 2,
            "Vegas backs the RTO off on a fast retransmit"
        );
        assert_eq!(s.recover, maxseq);
    }
}
