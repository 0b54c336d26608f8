//! The Linux congestion-avoidance state machine (`tcp_fastretrans_alert` and helpers in
//! `tcp_input.c`), and the retransmission-slot timers (RTO, TLP, RACK reorder timeout).
//!
//! States: Open → Disorder (SACKs/dupACKs, nothing lost yet) → Recovery (loss detected;
//! PRR reduction) or Loss (RTO). CWR is an ECN/TLP reduction without retransmissions.
//! Undo restores the window when the reduction proves spurious (timestamps, D-SACK, F-RTO).
use crate::cc::{CaState, CongestionControl, CwndEvent, LossKind};
use crate::engine::time::{SimDuration, SimTime};
use crate::net::packet::Packet;
use crate::tcp::linux::ack::AckFlagSet;
use crate::tcp::linux::rtt::RTO_MAX;
use crate::tcp::linux::scoreboard::segflags::*;
use crate::tcp::linux::sender::{Rexmit, Sender, XmitTimer, DUPTHRESH};

impl Sender {
    /// Linux `tcp_set_ca_state`: the controller hears every call (also Loss → Loss on a
    /// repeated RTO) while the view still shows the old state.
    pub(crate) fn set_ca_state(&mut self, now: SimTime, s: CaState) {
        self.sync_view(now);
        self.cc.on_state_change(&mut self.w, s);
        self.ca_state = s;
        self.w.ca_state = s;
    }

    /// Linux `tcp_init_undo`.
    fn init_undo(&mut self) {
        self.undo_marker = Some(self.snd_una);
        self.undo_retrans = if self.sb.retrans_out > 0 {
            self.sb.retrans_out as i32
        } else {
            -1
        };
    }

    /// Linux `tcp_any_retrans_done`.
    fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0
            || self
                .sb
                .get(self.sb.front())
                .is_some_and(|s| s.has(EVER_RETRANS))
    }

    /// Linux `tcp_may_undo`.
    fn may_undo(&self) -> bool {
        self.undo_marker.is_some() && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// Linux `tcp_init_cwnd_reduction`.
    pub(crate) fn init_cwnd_reduction(&mut self, now: SimTime, kind: LossKind) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.w.cwnd_cnt = 0;
        self.w.prior_cwnd = self.w.cwnd;
        self.prr.enter();
        self.sync_view(now);
        self.w.ssthresh = self.cc.on_congestion_event(&mut self.w, kind);
        if self.cfg.tcp.ecn {
            self.ecn_queue_cwr = true;
        }
    }

    /// Linux `tcp_enter_cwr`: an ECN echo reduces cwnd once per window, without
    /// retransmitting.
    pub(crate) fn enter_cwr(&mut self, now: SimTime) {
        self.prior_ssthresh = 0;
        if self.ca_state < CaState::Cwr {
            self.undo_marker = None;
            self.init_cwnd_reduction(now, LossKind::Cwr);
            self.set_ca_state(now, CaState::Cwr);
        }
    }

    /// Linux `tcp_end_cwnd_reduction`.
    pub(crate) fn end_cwnd_reduction(&mut self, now: SimTime) {
        if self.cc.has_cong_control() {
            return;
        }
        if self.w.ssthresh < crate::cc::INFINITE_SSTHRESH
            && (self.ca_state == CaState::Cwr || self.undo_marker.is_some())
        {
            self.w.cwnd = self.w.ssthresh;
        }
        self.sync_view(now);
        self.cc.on_cwnd_event(&mut self.w, CwndEvent::CompleteCwr);
    }

    /// Linux `tcp_enter_recovery`.
    fn enter_recovery(&mut self, now: SimTime, ece_ack: bool) {
        self.stats.fast_recoveries += 1;
        self.prior_ssthresh = 0;
        self.init_undo();
        if !matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            if !ece_ack {
                self.prior_ssthresh = self.w.current_ssthresh();
            }
            self.init_cwnd_reduction(now, LossKind::Recovery);
        }
        self.set_ca_state(now, CaState::Recovery);
    }

    /// Linux `tcp_try_keep_open`.
    pub(crate) fn try_keep_open(&mut self, now: SimTime) {
        let mut s = CaState::Open;
        if self.sacked_out() + self.sb.lost_out > 0 || self.any_retrans_done() {
            s = CaState::Disorder;
        }
        if self.ca_state != s {
            self.set_ca_state(now, s);
            self.high_seq = self.snd_nxt;
        }
    }

    /// Linux `tcp_try_to_open`.
    fn try_to_open(&mut self, now: SimTime, flag: &AckFlagSet) {
        if !self.any_retrans_done() {
            self.retrans_stamp = None;
        }
        if flag.ece {
            self.enter_cwr(now);
        }
        if self.ca_state != CaState::Cwr {
            self.try_keep_open(now);
        }
    }

    /// Linux `tcp_undo_cwnd_reduction`.
    fn undo_cwnd_reduction(&mut self, now: SimTime, unmark_loss: bool) {
        if unmark_loss {
            self.sb.unmark_all_lost();
        }
        if self.prior_ssthresh != 0 {
            self.sync_view(now);
            self.w.cwnd = self.cc.on_spurious_loss(&mut self.w);
            if self.prior_ssthresh > self.w.ssthresh {
                self.w.ssthresh = self.prior_ssthresh;
            }
        }
        self.undo_marker = None;
        self.rack.advanced = true;
        self.stats.undos += 1;
    }

    /// Linux `tcp_try_undo_recovery`; true if the state is held (caller returns).
    fn try_undo_recovery(&mut self, now: SimTime) -> bool {
        if self.may_undo() {
            self.undo_cwnd_reduction(now, false);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        if self.snd_una == self.high_seq && !self.is_sack() {
            // NewReno: hold the state until something above high_seq is ACKed (RFC 6582).
            if !self.any_retrans_done() {
                self.retrans_stamp = None;
            }
            return true;
        }
        self.set_ca_state(now, CaState::Open);
        false
    }

    /// Linux `tcp_try_undo_dsack`.
    fn try_undo_dsack(&mut self, now: SimTime) -> bool {
        if self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = self.rack.reo_wnd_persist.max(16);
            self.undo_cwnd_reduction(now, false);
            return true;
        }
        false
    }

    /// Linux `tcp_try_undo_loss`.
    fn try_undo_loss(&mut self, now: SimTime, frto_undo: bool) -> bool {
        if frto_undo || self.may_undo() {
            self.undo_cwnd_reduction(now, true);
            self.retransmits = 0;
            if frto_undo || self.is_sack() {
                self.set_ca_state(now, CaState::Open);
            }
            return true;
        }
        false
    }

    /// Linux `tcp_try_undo_partial`; true if the caller must return.
    fn try_undo_partial(&mut self, now: SimTime) -> bool {
        if self.undo_marker.is_some() && self.packet_delayed() {
            if self.sb.retrans_out > 0 {
                return true;
            }
            if !self.any_retrans_done() {
                self.retrans_stamp = None;
            }
            self.undo_cwnd_reduction(now, true);
            self.try_keep_open(now);
        }
        false
    }

    /// Linux `tcp_newreno_mark_lost`: without SACK, the head is lost after DupThresh dupACKs
    /// and, in recovery, after each partial ACK.
    fn newreno_mark_lost(&mut self, snd_una_advanced: bool) {
        let state = self.ca_state;
        if (state < CaState::Recovery && self.sacked_out() >= self.reordering)
            || (state == CaState::Recovery && snd_una_advanced)
        {
            let head = self.sb.front();
            if self.sb.get(head).is_some_and(|s| s.has(LOST)) {
                return;
            }
            if self.sb.mark_lost(head) {
                self.lost_total += 1;
            }
        }
    }

    /// RFC 6675 IsLost marking used when RACK is off: every un-SACKed segment with at least
    /// DupThresh SACKed segments above it is lost.
    fn dupthresh_mark_lost(&mut self) {
        if let Some(boundary) = self.sb.dupthresh_boundary(self.reordering) {
            self.mark_lost_below(boundary);
        }
    }

    /// FACK (Mathis & Mahdavi 1996; Linux < 4.15 with `tcp_fack`): everything un-SACKed more
    /// than `reordering` segments below the forward-most SACKed segment is lost.
    fn fack_mark_lost(&mut self) {
        if let Some(fack_end) = self.sb.highest_sacked_end() {
            self.mark_lost_below(fack_end.saturating_sub(self.reordering as u64));
        }
    }

    /// Mark every un-SACKed segment below segment `boundary` lost, scanning each segment
    /// once over the connection (`dupthresh_scan`).
    fn mark_lost_below(&mut self, boundary: u64) {
        let mut no = self.sb.front().max(self.dupthresh_scan);
        while no < boundary {
            if let Some(s) = self.sb.get(no) {
                if !s.has(SACKED) && !s.has(LOST) && self.sb.mark_lost(no) {
                    self.lost_total += 1;
                }
            }
            no += 1;
        }
        self.dupthresh_scan = self.dupthresh_scan.max(boundary);
    }

    /// Linux `tcp_identify_packet_loss`.
    fn identify_packet_loss(&mut self, now: SimTime, flag: &mut AckFlagSet) {
        if self.sb.is_empty() {
            return;
        }
        if !self.is_sack() {
            self.newreno_mark_lost(flag.snd_una_advanced);
        } else if self.cfg.tcp.fack {
            self.fack_mark_lost();
        } else if self.cfg.tcp.rack {
            if !self.rack.advanced {
                return;
            }
            self.rack.advanced = false;
            let prior_retrans = self.sb.retrans_out;
            if let Some(timeout) = self.rack_detect_loss(now) {
                // Linux adds TCP_TIMEOUT_MIN (2 jiffies) to the reorder timeout.
                let t = now + timeout + SimDuration::from_ms(2);
                let cap = now + self.icsk_rto;
                self.xmit_timer = Some((if t < cap { t } else { cap }, XmitTimer::Reo));
                flag.set_xmit_timer = false;
            }
            if prior_retrans > self.sb.retrans_out {
                flag.lost_retrans = true;
            }
        } else {
            self.dupthresh_mark_lost();
        }
    }

    /// Linux `tcp_time_to_recover`.
    fn time_to_recover(&self) -> bool {
        if self.sb.lost_out > 0 {
            return true;
        }
        // Classic rule, only without RACK: more than DupThresh dupACK-equivalents (FACK:
        // the forward-most SACK is more than DupThresh segments above snd_una).
        if self.cfg.tcp.fack && self.is_sack() {
            let fackets = self
                .sb
                .highest_sacked_end()
                .map_or(0, |e| e - self.sb.front());
            return fackets > self.reordering as u64;
        }
        !self.cfg.tcp.rack && self.is_sack() && self.sacked_out() + 1 > self.reordering
    }

    /// Linux `tcp_fastretrans_alert`: process an unusual ACK.
    pub(crate) fn fastretrans_alert(
        &mut self,
        now: SimTime,
        num_dupack: u32,
        flag: &mut AckFlagSet,
        rexmit: &mut Rexmit,
    ) {
        if self.sb.is_empty() && self.reno_sacked > 0 {
            self.reno_sacked = 0;
        }
        if flag.ece {
            self.prior_ssthresh = 0;
        }
        if self.ca_state == CaState::Open {
            self.retrans_stamp = None;
        } else if self.snd_una >= self.high_seq {
            match self.ca_state {
                CaState::Cwr if self.snd_una != self.high_seq => {
                    self.end_cwnd_reduction(now);
                    self.set_ca_state(now, CaState::Open);
                }
                CaState::Recovery => {
                    if !self.is_sack() {
                        self.reno_sacked = 0;
                    }
                    if self.try_undo_recovery(now) {
                        return;
                    }
                    self.end_cwnd_reduction(now);
                    if self.cfg.tcp.rack {
                        self.rack.update_reo_wnd(false, true);
                    }
                }
                _ => {}
            }
        }

        let mut fall_through = false;
        match self.ca_state {
            CaState::Recovery => {
                if !flag.snd_una_advanced {
                    if !self.is_sack() {
                        self.add_reno_sack(num_dupack);
                    }
                } else if self.try_undo_partial(now) {
                    return;
                }
                if self.try_undo_dsack(now) {
                    self.try_keep_open(now);
                }
                self.identify_packet_loss(now, flag);
                if self.ca_state != CaState::Recovery {
                    if !self.time_to_recover() {
                        return;
                    }
                    self.enter_recovery(now, flag.ece);
                }
            }
            CaState::Loss => {
                self.process_loss(now, flag, num_dupack, rexmit);
                self.identify_packet_loss(now, flag);
                if !(self.ca_state == CaState::Open || flag.lost_retrans) {
                    return;
                }
                fall_through = true;
            }
            _ => fall_through = true,
        }
        if fall_through {
            if !self.is_sack() {
                if flag.snd_una_advanced {
                    self.reno_sacked = 0;
                }
                self.add_reno_sack(num_dupack);
            }
            if self.ca_state <= CaState::Disorder {
                self.try_undo_dsack(now);
            }
            self.identify_packet_loss(now, flag);
            if !self.time_to_recover() {
                self.try_to_open(now, flag);
                return;
            }
            self.enter_recovery(now, flag.ece);
        }
        *rexmit = Rexmit::Lost;
    }

    /// Linux `tcp_process_loss` (with SACK-enhanced F-RTO, RFC 5682 §3.1).
    fn process_loss(
        &mut self,
        now: SimTime,
        flag: &AckFlagSet,
        num_dupack: u32,
        rexmit: &mut Rexmit,
    ) {
        let recovered = self.snd_una >= self.high_seq;
        if flag.snd_una_advanced && self.try_undo_loss(now, false) {
            return;
        }
        if self.frto {
            // Step 3.b: never-retransmitted data was (S)ACKed: the timeout was spurious.
            if flag.orig_sack_acked && self.try_undo_loss(now, true) {
                return;
            }
            if self.snd_nxt > self.high_seq {
                if flag.data_sacked || num_dupack > 0 {
                    self.frto = false; // step 3.a: the loss was real
                }
            } else if flag.snd_una_advanced && !recovered {
                self.high_seq = self.snd_nxt;
                // Step 2.b: send new data (if any may be sent) before retransmitting more.
                if self.snd_nxt < self.app_end && self.snd_una + self.snd_wnd > self.snd_nxt {
                    *rexmit = Rexmit::New;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            self.try_undo_recovery(now);
            return;
        }
        if !self.is_sack() {
            if self.snd_nxt > self.high_seq && num_dupack > 0 {
                self.add_reno_sack(num_dupack);
            } else if flag.snd_una_advanced {
                self.reno_sacked = 0;
            }
        }
        *rexmit = Rexmit::Lost;
    }

    /// Linux `tcp_enter_loss`.
    fn enter_loss(&mut self, now: SimTime) {
        let new_recovery = self.ca_state < CaState::Recovery;
        // Mark every un-SACKed segment lost (RACK: except recently sent ones but the head).
        let rack_on = self.cfg.tcp.rack;
        let rack = self.rack.clone();
        let n = self.sb.mark_all_lost(|_, seg| {
            rack_on
                && rack.remaining_ns(now, seg.tx_time, SimDuration::ZERO) > 0
                && rack.rtt.ns() > 0
        });
        self.lost_total += n as u64;
        if !self.is_sack() {
            self.reno_sacked = 0;
        }
        if self.ca_state <= CaState::Disorder
            || self.high_seq <= self.snd_una
            || (self.ca_state == CaState::Loss && self.retransmits == 0)
        {
            self.prior_ssthresh = self.w.current_ssthresh();
            self.w.prior_cwnd = self.w.cwnd;
            self.sync_view(now);
            self.w.ssthresh = self.cc.on_congestion_event(&mut self.w, LossKind::Rto);
            self.cc.on_cwnd_event(&mut self.w, CwndEvent::Loss);
            self.init_undo();
        }
        self.w.cwnd = self.in_flight() + 1;
        self.w.cwnd_cnt = 0;
        if self.ca_state <= CaState::Disorder && self.sacked_out() >= DUPTHRESH {
            self.reordering = self.reordering.min(DUPTHRESH);
        }
        self.set_ca_state(now, CaState::Loss);
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.frto = self.cfg.tcp.frto && (new_recovery || self.retransmits > 0);
    }

    /// Retransmission timeout (Linux `tcp_retransmit_timer`).
    pub(crate) fn on_rto(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.sb.is_empty() {
            return;
        }
        self.stats.rto_count += 1;
        self.enter_loss(now);
        let head = self.sb.front();
        self.retransmit(now, head, out);
        self.retransmits += 1;
        self.backoff += 1;
        self.icsk_rto = (self.icsk_rto * 2).min(RTO_MAX);
        self.xmit_timer = Some((now + self.icsk_rto, XmitTimer::Rto));
    }

    /// Tail loss probe (Linux `tcp_send_loss_probe`).
    pub(crate) fn on_tlp(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.tlp_high_seq.is_none() {
            self.tlp_retrans = false;
            // Probe with one new segment if the receiver window allows, ignoring cwnd.
            let sent = self.send_new(now, out);
            if !sent {
                // Otherwise retransmit the last segment.
                let last = self.sb.back().wrapping_sub(1);
                if self.sb.get(last).is_some_and(|s| !s.has(SACKED)) {
                    self.retransmit(now, last, out);
                    self.tlp_retrans = true;
                } else {
                    self.rearm_rto(now);
                    return;
                }
            }
            self.stats.tlp_probes += 1;
            self.tlp_high_seq = Some(self.snd_nxt);
            self.xmit_timer = None;
        }
        self.rearm_rto(now);
    }

    /// RACK reorder timer (Linux `tcp_rack_reo_timeout`).
    pub(crate) fn on_reo_timeout(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let prior_in_flight = self.in_flight();
        self.rack_detect_loss(now);
        if prior_in_flight != self.in_flight() {
            if self.ca_state != CaState::Recovery {
                self.enter_recovery(now, false);
                if !self.cc.has_cong_control() {
                    let in_flight = self.in_flight();
                    if let Some(c) = self.prr.on_ack(crate::tcp::linux::prr::PrrAck {
                        newly_acked_sacked: 1,
                        newly_lost: 0,
                        snd_una_advanced: false,
                        in_flight,
                        ssthresh: self.w.ssthresh,
                        prior_cwnd: self.w.prior_cwnd,
                    }) {
                        self.w.cwnd = c;
                    }
                }
            }
            self.transmit(now, out);
        }
        // Linux re-arms only the RTO here; a later ACK re-arms the reorder timer if needed.
        if !matches!(self.xmit_timer, Some((_, XmitTimer::Rto))) {
            self.rearm_rto(now);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The CA-state machine against hand-worked numbers, grouped by the state the behaviour
    //! starts in. The fixtures (`tcp::harness`): a Linux Reno sender (ssthresh = cwnd/2)
    //! with 1000-byte segments and IW 10 on a 100 ms round trip without serialization, its
    //! receiver ACKing every segment at once, so a flight's ACKs arrive together and are
    //! processed one by one. A bulk sender's handshake ends at 100 ms (RTT sample 100 ms:
    //! RTO = srtt + max(2·100, 200) ms = 300 ms) and segments 0..9 leave then.
    use crate::cc::{CaState, INFINITE_SSTHRESH};
    use crate::engine::time::SimDuration;
    use crate::scenario::{AppConfig, TcpConfig};
    use crate::tcp::harness::{ms, plain_tcp, reno, window};

    // --- Disorder ----------------------------------------------------------------------

    #[test]
    fn disorder_third_dupack_enters_recovery_and_prr_paces_the_reduction() {
        // Segment 0 is lost. RFC 6675 marking (rack = false): the 3rd dupACK makes it
        // lost. Reno's ssthresh = 10/2 = 5, RecoverFS (Linux prior_cwnd) = 10. in_flight =
        // packets_out − sacked − lost + retransmitted. Per RFC 6937, while pipe > ssthresh:
        // sndcnt = ⌈prr_delivered · 5 / 10⌉ − prr_out; else min(ssthresh − pipe,
        // max(prr_delivered − prr_out, delivered)) (+1 only if snd_una advanced).
        let mut p = reno(plain_tcp(), AppConfig::Bulk);
        p.lose(0, 1);
        // dupACK 1 (SACK 1): Disorder; in_flight 9 < cwnd 10 sends segment 10 (limited
        // transmit in Linux's accounting); dupACK 2 likewise sends segment 11.
        p.next_ack();
        assert_eq!(window(&p), (10, INFINITE_SSTHRESH, 0, 0, CaState::Disorder));
        p.next_ack();
        assert_eq!(p.linux().snd_nxt, 12_000);
        // dupACK 3 (SACK 1-3): segment 0 lost. prr_delivered = 1; in_flight = 12 − 3 − 1
        // = 8 > 5: sndcnt = ⌈1 · 5/10⌉ − 0 = 1, cwnd = 8 + 1 = 9: the retransmission.
        p.next_ack();
        assert_eq!(window(&p), (9, 5, 1, 1, CaState::Recovery));
        assert_eq!(p.linux().stats.retrans_segs, 1);
        // Each further dupACK delivers one segment; (in_flight before sending, sndcnt):
        // 4: 12−4−1+1 = 8, ⌈10/10⌉ − 1 = 0 → cwnd 8, nothing sent;
        // 5: 7, ⌈15/10⌉ − 1 = 1 → cwnd 8, segment 12 sent (prr_out 2);
        // 6: 13−6−1+1 = 7, ⌈20/10⌉ − 2 = 0 → cwnd 7;
        // 7: 6, ⌈25/10⌉ − 2 = 1 → cwnd 7, segment 13 sent (prr_out 3);
        // 8: 14−8−1+1 = 6, ⌈30/10⌉ − 3 = 0 → cwnd 6;
        // 9: 5 = ssthresh, so the slow-start reduction bound: min(5 − 5, …) = 0 → cwnd 5.
        let expect = [
            (8, 2, 1),
            (8, 3, 2),
            (7, 4, 2),
            (7, 5, 3),
            (6, 6, 3),
            (5, 7, 3),
        ];
        for (i, &(cwnd, delivered, out)) in expect.iter().enumerate() {
            p.next_ack();
            assert_eq!(
                window(&p),
                (cwnd, 5, delivered, out, CaState::Recovery),
                "dupACK {}",
                i + 4
            );
        }
        assert_eq!(p.linux().snd_nxt, 14_000);
        // A round trip later segments 10 and 11 are SACKed: in_flight 14−10−1+1 = 4 < 5,
        // sndcnt = min(5 − 4, max(8 − 3, 1)) = 1 each time: cwnd 5, segments 14 and 15.
        p.next_ack();
        assert_eq!(window(&p), (5, 5, 8, 4, CaState::Recovery));
        p.next_ack();
        assert_eq!(window(&p), (5, 5, 9, 5, CaState::Recovery));
        // The retransmission's ACK covers 0..11 = high_seq: recovery ends with cwnd =
        // ssthresh (no undo: the retransmission was needed) and Reno's congestion
        // avoidance, cwnd_cnt 1 of 5, leaves it at 5.
        let ack = p.next_ack();
        assert_eq!(ack.ack, 12_000);
        let s = p.linux();
        assert_eq!((s.w.cwnd, s.w.ssthresh, s.ca_state), (5, 5, CaState::Open));
        assert_eq!((s.stats.fast_recoveries, s.stats.undos), (1, 0));
        assert_eq!(p.now, ms(300));
    }

    // --- Recovery ------------------------------------------------------------------------

    #[test]
    fn recovery_partial_ack_keeps_reducing_and_a_dsack_then_undoes_it() {
        // Segment 0 is only late (10 ms): 1..9 arrive first, so at 200 ms the sender goes
        // through the recovery of the test above (cwnd 5, ssthresh 5, prr_delivered 7,
        // prr_out 3, segments 10..13 sent, one retransmission).
        let tcp = TcpConfig {
            dsack: true,
            ..plain_tcp()
        };
        let mut p = reno(tcp, AppConfig::Bulk);
        p.delay_data(0, 1, SimDuration::from_ms(10));
        p.run_until(ms(201));
        assert_eq!(window(&p), (5, 5, 7, 3, CaState::Recovery));
        // 210 ms: the original's ACK (0..9) is partial (high_seq = 12 000). Recovery goes
        // on (no timestamps to prove it spurious); PRR: prr_delivered 8, in_flight = 4
        // (10..13) < 5, sndcnt = min(5 − 4, max(8 − 3, 1) + 1) = 1: cwnd 5, segment 14.
        let ack = p.next_ack();
        assert_eq!((ack.ack, p.now), (10_000, ms(210)));
        assert_eq!(window(&p), (5, 5, 8, 4, CaState::Recovery));
        // 300 ms: segment 10's ACK is partial too (prr_delivered 9, cwnd 5), segment 11's
        // reaches high_seq: recovery ends, cwnd = ssthresh = 5.
        p.next_ack();
        assert_eq!(window(&p), (5, 5, 9, 5, CaState::Recovery));
        let ack = p.next_ack();
        assert_eq!(ack.ack, 12_000);
        assert_eq!((p.linux().w.cwnd, p.linux().ca_state), (5, CaState::Open));
        // The retransmission arrived as a duplicate: its D-SACK accounts for the one
        // retransmission (undo_retrans 1 → 0), so the reduction was spurious (RFC 2883,
        // Linux tcp_try_undo_dsack): cwnd = max(5, prior_cwnd 10) = 10, ssthresh back to
        // its value before the recovery (infinite).
        let ack = p.next_ack();
        assert_eq!((ack.ack, ack.n_sack), (12_000, 1));
        let s = p.linux();
        assert_eq!((s.w.cwnd, s.w.ssthresh), (10, INFINITE_SSTHRESH));
        assert_eq!((s.stats.undos, s.ca_state), (1, CaState::Open));
    }

    // --- Loss ----------------------------------------------------------------------------

    #[test]
    fn loss_frto_new_data_acked_after_the_timeout_undoes_it() {
        // The ACKs of segments 0..9 are held 300 ms (they arrive at 500 ms): the RTO fires
        // at 100 + 300 = 400 ms. tcp_enter_loss: every segment lost, ssthresh = 10/2 = 5,
        // cwnd = in_flight + 1 = 1, F-RTO on; segment 0 is retransmitted.
        let tcp = TcpConfig {
            frto: true,
            ..plain_tcp()
        };
        let mut p = reno(tcp, AppConfig::Bulk);
        for nth in 1..=10 {
            p.delay_ack(nth, SimDuration::from_ms(300));
        }
        p.run_until(ms(401));
        assert_eq!(window(&p).0, 1);
        assert_eq!(
            (p.linux().w.ssthresh, p.linux().ca_state),
            (5, CaState::Loss)
        );
        assert_eq!(p.linux().stats.rto_count, 1);
        // RFC 5682 step 2: the first ACK (segment 0: the retransmitted one) advances
        // snd_una: slow start makes cwnd 2 and F-RTO sends two new segments (10, 11)
        // instead of retransmitting.
        let ack = p.next_ack();
        assert_eq!((ack.ack, p.now), (1_000, ms(500)));
        assert_eq!((p.linux().w.cwnd, p.linux().snd_nxt), (2, 12_000));
        assert_eq!(p.linux().stats.retrans_segs, 1);
        // Step 3: the next ACK covers segment 1, never retransmitted: the timeout was
        // spurious. Undo: cwnd = max(2, prior_cwnd 10) = 10, ssthresh infinite again,
        // Open; then the ACK's own slow-start step: 11.
        p.next_ack();
        let s = p.linux();
        assert_eq!((s.w.cwnd, s.w.ssthresh), (11, INFINITE_SSTHRESH));
        assert_eq!((s.ca_state, s.stats.undos), (CaState::Open, 1));
        assert_eq!(s.stats.retrans_segs, 1);
    }
}
