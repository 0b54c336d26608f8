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
use crate::tcp::linux::sender::{Rexmit, Sender, XmitTimer};

impl Sender {
    /// Linux `tcp_set_ca_state`.
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
        if self.cfg.ecn {
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
            if self.ca_state == CaState::Loss {
                // nothing extra
            }
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
        let Some(boundary) = self.sb.dupthresh_boundary(self.reordering) else {
            return;
        };
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

    /// FACK (Mathis & Mahdavi 1996; Linux < 4.15 with `tcp_fack`): everything un-SACKed more
    /// than `reordering` segments below the forward-most SACKed segment is lost.
    fn fack_mark_lost(&mut self) {
        let Some(fack_end) = self.sb.highest_sacked_end() else {
            return;
        };
        let boundary = fack_end.saturating_sub(self.reordering as u64);
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
        } else if self.cfg.fack {
            self.fack_mark_lost();
        } else if self.cfg.rack {
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
        if self.cfg.fack && self.is_sack() {
            let fackets = self
                .sb
                .highest_sacked_end()
                .map_or(0, |e| e - self.sb.front());
            return fackets > self.reordering as u64;
        }
        !self.cfg.rack && self.is_sack() && self.sacked_out() + 1 > self.reordering
    }

    /// Linux `tcp_fastretrans_alert`: process an unusual ACK.
    pub(crate) fn fastretrans_alert(
        &mut self,
        now: SimTime,
        prior_snd_una: u64,
        num_dupack: u32,
        flag: &mut AckFlagSet,
        rexmit: &mut Rexmit,
    ) {
        let _ = prior_snd_una;
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
                    if self.cfg.rack {
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
        let rack_on = self.cfg.rack;
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
        if self.ca_state <= CaState::Disorder && self.sacked_out() >= DUPTHRESH_SYSCTL {
            self.reordering = self.reordering.min(DUPTHRESH_SYSCTL);
        }
        self.set_ca_state(now, CaState::Loss);
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.frto = self.cfg.frto && (new_recovery || self.retransmits > 0);
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
        let timeout = self.rack_detect_loss(now);
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
        let _ = timeout;
        if !matches!(self.xmit_timer, Some((_, XmitTimer::Rto))) {
            self.rearm_rto(now);
        }
    }
}

/// Linux `sysctl_tcp_reordering`.
const DUPTHRESH_SYSCTL: u32 = 3;
