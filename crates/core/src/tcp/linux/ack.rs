//! ACK processing: Linux `tcp_ack` step by step — window update, SACK tagging, removal of
//! acknowledged segments with RTT measurement (Karn's rule; timestamps as fallback), TLP
//! bookkeeping, the CA-state machine, delivery-rate sample, then the window update by the
//! controller (or PRR) and transmission.
use crate::cc::{AckFlags, AckSample, CaState, CongestionControl};
use crate::engine::time::{SimDuration, SimTime};
use crate::net::packet::{flags as pflags, Packet, PacketKind};
use crate::tcp::linux::prr::PrrAck;
use crate::tcp::linux::rack::sent_after;
use crate::tcp::linux::rate::RateSample;
use crate::tcp::linux::scoreboard::segflags::*;
use crate::tcp::linux::sender::{ConnState, Rexmit, Sender, MIN_RTT_WINDOW};

/// Linux `FLAG_*` bits of one ACK.
#[derive(Copy, Clone, Debug, Default)]
pub struct AckFlagSet {
    pub data_acked: bool,
    pub retrans_data_acked: bool,
    pub win_update: bool,
    pub data_sacked: bool,
    pub ece: bool,
    pub snd_una_advanced: bool,
    pub dsacking_ack: bool,
    pub dsack_tlp: bool,
    pub orig_sack_acked: bool,
    pub set_xmit_timer: bool,
    pub lost_retrans: bool,
    pub ack_maybe_delayed: bool,
}

impl AckFlagSet {
    /// FLAG_NOT_DUP = DATA | WIN_UPDATE | ACKED (our receiver never sends data).
    pub fn not_dup(&self) -> bool {
        self.win_update || self.data_acked
    }
    /// FLAG_CA_ALERT = DATA_SACKED | ECE | DSACKING_ACK.
    pub fn ca_alert(&self) -> bool {
        self.data_sacked || self.ece || self.dsacking_ack
    }
}

/// Per-ACK SACK processing results (Linux `tcp_sacktag_state`).
#[derive(Debug, Default)]
struct SackState {
    first_sackt: Option<SimTime>,
    last_sackt: Option<SimTime>,
}

impl Sender {
    /// An ACK-bearing packet arrived from the receiver.
    pub fn on_packet(&mut self, now: SimTime, p: &Packet, out: &mut Vec<Packet>) {
        // TS.Recent (RFC 7323 §4.3): every segment of the peer (pure ACKs never lie above
        // the last sequence we acknowledged), an older TSval never replacing a newer (PAWS).
        if self.cfg.tcp.timestamps && p.ts_val != 0 {
            self.ts_recent = self.ts_recent.max(p.ts_val);
        }
        match p.kind {
            PacketKind::Ack => self.stats.rtt.prefetch_recent(),
            PacketKind::Fin => return self.on_peer_fin(now, p, out),
            _ => return self.on_handshake(now, p, out),
        }
        if self.state != ConnState::Established {
            return;
        }
        if p.ack > self.snd_nxt {
            return; // acknowledges data never sent: ignore (RFC 793)
        }
        if p.ack < self.snd_una {
            return; // old ACK
        }
        self.on_ack(now, p, out);
        self.note_fin_acked(now);
    }

    /// Our FIN (on the last byte of a file) is acknowledged once everything is.
    fn note_fin_acked(&mut self, now: SimTime) {
        if self.fin_acked_at.is_none()
            && matches!(self.cfg.app, crate::scenario::AppConfig::File { .. })
            && self.finished()
        {
            self.fin_acked_at = Some(now);
        }
    }

    /// The peer closes (FIN|ACK): take its acknowledgment if it brings news (a segment with
    /// a FIN is never a duplicate ACK: it occupies sequence space), then acknowledge the FIN
    /// — again for a retransmitted FIN whose ACK was lost (TIME-WAIT, RFC 793 §3.5).
    fn on_peer_fin(&mut self, now: SimTime, p: &Packet, out: &mut Vec<Packet>) {
        if self.state != ConnState::Established {
            return;
        }
        if p.ack > self.snd_una && p.ack <= self.snd_nxt {
            self.on_ack(now, p, out);
            self.note_fin_acked(now);
        }
        if !self.finished() {
            return; // our peer only closes after reading the whole file
        }
        self.peer_fin_at.get_or_insert(now);
        let mut ack = self.control_packet(now, PacketKind::Ack);
        ack.ts_ecr = p.ts_val;
        out.push(ack);
    }

    fn on_ack(&mut self, now: SimTime, p: &Packet, out: &mut Vec<Packet>) {
        let prior_snd_una = self.snd_una;
        let prior_delivered = self.rate.delivered;
        let prior_lost = self.lost_total;
        let prior_in_flight = self.in_flight();
        let prior_sacked = self.sacked_out();
        let mut flag = AckFlagSet::default();
        let mut rexmit = Rexmit::None;

        if p.ack > prior_snd_una {
            flag.snd_una_advanced = true;
            self.retransmits = 0;
        }
        if self.cfg.tcp.timestamps && p.ts_ecr != 0 {
            // Linux tcp_parse_aligned_timestamp: TSecr is brought back to our own clock.
            let ecr = p.ts_ecr.saturating_sub(self.ts_offset).max(1);
            self.rcv_tsecr = ecr;
            self.w.rcv_tsecr = ecr;
            self.w.rcv_tsval = p.ts_val;
        }
        // Window update (Linux tcp_ack_update_window: a dupACK only counts as an update if
        // the window grew).
        if p.ack > prior_snd_una || p.wnd > self.snd_wnd {
            flag.win_update = true;
        }
        self.snd_wnd = p.wnd;
        flag.ece = self.cfg.tcp.ecn && p.has(pflags::ECE);

        let mut rs = RateSample {
            prior_in_flight,
            ..Default::default()
        };
        let mut ss = SackState::default();
        let before_sack = self.rate.delivered;
        if self.is_sack() && p.n_sack > 0 {
            self.sacktag(now, p, prior_snd_una, &mut flag, &mut ss, &mut rs);
        }
        // Linux tcp_count_delivered: packets delivered by an ECE ACK count as CE.
        if flag.ece {
            self.rate.delivered_ce += self.rate.delivered - before_sack;
        }

        // Linux (tcp_ack, before 6.14): `in_ack_event` runs after the window/snd_una update
        // and SACK tagging, before the cumulatively ACKed segments are removed.
        self.sync_view(now);
        self.w.snd_una = p.ack;
        let ack_flags = AckFlags {
            slow_path: p.n_sack > 0 || !flag.snd_una_advanced,
            window_update: flag.win_update,
            ece: flag.ece,
        };
        self.cc.on_ack_event(&mut self.w, ack_flags);

        let before_clean = self.rate.delivered;
        self.clean_rtx_queue(now, p, prior_snd_una, prior_sacked, &mut flag, &ss, &mut rs);
        if flag.ece {
            self.rate.delivered_ce += self.rate.delivered - before_clean;
        }
        if self.cfg.tcp.rack {
            self.rack.update_reo_wnd(flag.dsacking_ack, false);
        }
        if self.tlp_high_seq.is_some() {
            self.process_tlp_ack(now, p.ack, &flag);
        }
        let dubious = !flag.not_dup() || flag.ca_alert() || self.ca_state != CaState::Open;
        if dubious {
            let num_dupack = if !(flag.snd_una_advanced || flag.not_dup() || flag.dsacking_ack) {
                1
            } else {
                0
            };
            self.fastretrans_alert(now, num_dupack, &mut flag, &mut rexmit);
        }
        if flag.set_xmit_timer {
            self.set_xmit_timer(now);
        }

        let delivered = (self.rate.delivered - prior_delivered) as u32;
        let lost = (self.lost_total - prior_lost) as u32;
        rs.is_ack_delayed = flag.ack_maybe_delayed;
        let min_rtt = self.min_rtt();
        self.rate.generate(now, delivered, lost, min_rtt, &mut rs);
        if rs.prior_time.is_some() {
            rs.lost = self.lost_total.saturating_sub(rs.prior_lost);
        }
        self.cong_control(now, delivered, lost, &flag, &rs);
        if self.sb.is_empty() {
            self.xmit_timer = None;
        }
        self.transmit_with(
            now,
            if rexmit == Rexmit::None {
                Rexmit::Lost
            } else {
                rexmit
            },
            out,
        );
    }

    /// Linux `tcp_cong_control`: the controller's `cong_control`, else PRR during a
    /// reduction, else `cong_avoid` if the ACK may raise cwnd.
    fn cong_control(
        &mut self,
        now: SimTime,
        delivered: u32,
        lost: u32,
        flag: &AckFlagSet,
        rs: &RateSample,
    ) {
        self.sync_view(now);
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.w, rs);
            // The controller may mark the connection application-limited (BBR PROBE_RTT
            // writes Linux `tp->app_limited`).
            self.rate.app_limited_until = self.w.app_limited;
            return;
        }
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) && !self.cfg.tcp.prr {
            // RFC 6675 §5: cwnd = ssthresh for the whole recovery; pipe limits sending.
            self.w.cwnd = self.w.ssthresh.max(1);
        } else if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            let in_flight = self.in_flight();
            if let Some(c) = self.prr.on_ack(PrrAck {
                newly_acked_sacked: delivered,
                newly_lost: lost,
                snd_una_advanced: flag.snd_una_advanced,
                in_flight,
                ssthresh: self.w.ssthresh,
                prior_cwnd: self.w.prior_cwnd,
            }) {
                self.w.cwnd = c;
            }
        } else {
            // Linux tcp_may_raise_cwnd: in-order delivery (forward progress if reordering).
            let may_raise = if self.reordering > crate::tcp::linux::sender::DUPTHRESH {
                flag.data_acked || flag.data_sacked
            } else {
                flag.data_acked
            };
            if may_raise {
                self.cc.cong_avoid(&mut self.w, delivered);
            }
        }
    }

    /// Linux `tcp_sacktag_write_queue` (+ `tcp_sacktag_one` per newly SACKed segment).
    fn sacktag(
        &mut self,
        now: SimTime,
        p: &Packet,
        prior_snd_una: u64,
        flag: &mut AckFlagSet,
        ss: &mut SackState,
        rs: &mut RateSample,
    ) {
        let blocks = p.sack_blocks();
        let mut first = 0;
        // D-SACK (RFC 2883): the first block is below the cumulative ACK or inside the
        // second block.
        if !blocks.is_empty() && p.has(pflags::DSACK) {
            first = 1;
            let d = blocks[0];
            flag.dsacking_ack = true;
            if self.cfg.tcp.dsack {
                self.on_dsack(d.start, d.end, prior_snd_una, flag);
            }
        }
        let mss = self.cfg.tcp.mss_bytes as u64;
        for b in &blocks[first..] {
            if b.end <= self.snd_una.max(prior_snd_una)
                || b.start >= self.snd_nxt
                || b.start >= b.end
            {
                continue;
            }
            let start_no = b.start.div_ceil(mss).max(self.sb.front());
            // A block ends on a segment boundary, or at the end of a short last segment.
            let end_no = if b.end >= self.snd_nxt {
                self.sb.back()
            } else {
                b.end / mss
            };
            let high_seq = self.high_seq;
            let min_rtt = self.min_rtt();
            let rack_on = self.cfg.tcp.rack;
            // Each newly SACKed segment is seen as the scoreboard marks it: what is done with
            // it reads and writes only RACK, the rate sampler and this ACK's state.
            let (rate, rack) = (&mut self.rate, &mut self.rack);
            let seg_bytes = self.sb.seq_of(1);
            self.sb.sack(start_no, end_no, |no, seg| {
                let (tx_time, fl) = (seg.tx_time, seg.flags);
                flag.data_sacked = true;
                let end_seq = no * seg_bytes + mss;
                if rack_on {
                    rack.advance(now, tx_time, end_seq, fl & EVER_RETRANS != 0, min_rtt);
                }
                if fl & EVER_RETRANS == 0 {
                    if end_seq <= high_seq {
                        flag.orig_sack_acked = true;
                    }
                    if ss.first_sackt.is_none() {
                        ss.first_sackt = Some(tx_time);
                    }
                    ss.last_sackt = Some(tx_time);
                }
                rate.delivered += 1;
                // A SACKed segment feeds the rate sample once; the cumulative ACK that later
                // covers it skips it (its SACKED flag stands for Linux's cleared stamp).
                let (mut stamp, retrans) = (seg.stamp, fl & EVER_RETRANS != 0);
                rate.on_delivered(&mut stamp, tx_time, end_seq, retrans, true, rs);
            });
        }
    }

    /// A D-SACK for `[start, end)`: undo accounting (Linux `tcp_check_dsack` and the D-SACK
    /// branch of `tcp_sacktag_one`).
    fn on_dsack(&mut self, start: u64, end: u64, prior_snd_una: u64, flag: &mut AckFlagSet) {
        if self.tlp_high_seq.is_some() && self.tlp_retrans {
            // The probe's D-SACK: original and probe both arrived.
            if let Some(h) = self.tlp_high_seq {
                if end == h || end + self.cfg.tcp.mss_bytes as u64 >= h {
                    flag.dsack_tlp = true;
                }
            }
        }
        let mss = self.cfg.tcp.mss_bytes as u64;
        let first = start / mss;
        let last = end.div_ceil(mss);
        for no in first..last {
            let seq_end = (no + 1) * mss;
            if let Some(seg) = self.sb.get(no) {
                if seg.has(EVER_RETRANS) {
                    self.dsack_undo_count(seq_end);
                    self.sb.dsack_clear_retrans(no);
                }
            } else if end <= prior_snd_una && self.undo_marker.is_some() {
                // Already cumulatively ACKed: it was a retransmission if any was made.
                self.dsack_undo_count(seq_end);
            }
        }
    }

    fn dsack_undo_count(&mut self, seq_end: u64) {
        if let Some(m) = self.undo_marker {
            if self.undo_retrans > 0 && seq_end > m {
                self.undo_retrans -= 1;
            }
        }
    }

    /// Linux `tcp_clean_rtx_queue` + `tcp_ack_update_rtt` + the `pkts_acked` hook.
    #[allow(clippy::too_many_arguments)]
    fn clean_rtx_queue(
        &mut self,
        now: SimTime,
        p: &Packet,
        prior_snd_una: u64,
        prior_sacked: u32,
        flag: &mut AckFlagSet,
        ss: &SackState,
        rs: &mut RateSample,
    ) {
        let new_una = p.ack;
        let mut first_ackt: Option<SimTime> = None;
        let mut last_ackt: Option<SimTime> = None;
        let mut pkts_acked: u32 = 0;
        let is_sack = self.is_sack();
        let rack_on = self.cfg.tcp.rack;
        let min_rtt = self.min_rtt();
        let tsecr = if self.cfg.tcp.timestamps && p.ts_ecr != 0 {
            p.ts_ecr.saturating_sub(self.ts_offset).max(1)
        } else {
            0
        };
        let high_seq = self.high_seq;
        let mss = self.cfg.tcp.mss_bytes as u64;
        if new_una > self.snd_una {
            // Segments wholly below the new cumulative ACK.
            let new_front = if new_una >= self.snd_nxt {
                self.sb.back()
            } else {
                new_una / mss
            };
            // Each segment is seen as it leaves the scoreboard: what is done with it reads and
            // writes only the rate sampler, RACK and this ACK's flags, never the scoreboard.
            let (rate, rack) = (&mut self.rate, &mut self.rack);
            let seg_bytes = self.sb.seq_of(1);
            self.sb.ack_through(new_front, |no, seg| {
                let (tx_time, fl, len) = (seg.tx_time, seg.flags, seg.len);
                let end_seq = no * seg_bytes + len as u64;
                pkts_acked += 1;
                if fl & (RETRANS | EVER_RETRANS) != 0 {
                    flag.retrans_data_acked = true;
                } else if fl & SACKED == 0 {
                    if first_ackt.is_none() {
                        first_ackt = Some(tx_time);
                    }
                    last_ackt = Some(tx_time);
                    if end_seq <= high_seq {
                        flag.orig_sack_acked = true;
                    }
                }
                if fl & SACKED == 0 && is_sack {
                    rate.delivered += 1;
                    let spurious = fl & EVER_RETRANS != 0 && tsecr != 0 && tsecr < tx_time.ns();
                    if rack_on && !spurious {
                        rack.advance(now, tx_time, end_seq, fl & EVER_RETRANS != 0, min_rtt);
                    }
                }
                if fl & SACKED == 0 {
                    let (mut stamp, retrans) = (seg.stamp, fl & EVER_RETRANS != 0);
                    rate.on_delivered(&mut stamp, tx_time, end_seq, retrans, false, rs);
                }
                flag.data_acked = true;
            });
            self.snd_una = new_una;
        }

        // RTT samples (Linux: seq_rtt from the oldest never-retransmitted newly ACKed
        // segment, ca_rtt from the newest; SACK RTT otherwise; TSecr last).
        let mut seq_rtt: Option<SimDuration> = None;
        let mut ca_rtt: Option<SimDuration> = None;
        if let (Some(f), Some(l)) = (first_ackt, last_ackt) {
            if !flag.retrans_data_acked {
                seq_rtt = Some(now.since(f));
                ca_rtt = Some(now.since(l));
                if pkts_acked == 1
                    && prior_sacked == 0
                    && new_una - prior_snd_una < mss
                    && rs.prior_delivered + 1 == self.rate.delivered
                    && !flag.ca_alert()
                {
                    flag.ack_maybe_delayed = true;
                }
            }
        }
        let mut sack_rtt = None;
        if let (Some(f), Some(l)) = (ss.first_sackt, ss.last_sackt) {
            sack_rtt = Some(now.since(f));
            ca_rtt = Some(now.since(l));
        }
        if seq_rtt.is_none() {
            seq_rtt = sack_rtt;
        }
        if seq_rtt.is_none() && tsecr != 0 && flag.data_acked {
            let r = SimDuration(now.ns().saturating_sub(tsecr));
            seq_rtt = Some(r);
            ca_rtt = Some(r);
        }
        rs.rtt = ca_rtt;
        if let Some(r) = seq_rtt {
            let ca = ca_rtt.unwrap_or(r);
            if !(flag.ack_maybe_delayed && self.min_rtt().is_some_and(|m| ca > m)) {
                self.min_rtt
                    .update(MIN_RTT_WINDOW.ns(), now.ns(), ca.ns().max(1));
            }
            self.rtt.sample(r, self.snd_una, self.snd_nxt);
            self.icsk_rto = self.rtt.rto();
            self.backoff = 0;
            self.record_rtt(now, r);
        }

        if flag.data_acked {
            flag.set_xmit_timer = true;
            if !is_sack {
                self.remove_reno_sacks(pkts_acked);
                if flag.retrans_data_acked {
                    flag.orig_sack_acked = false;
                }
            }
        } else if let (Some(sr), Some(head)) = (sack_rtt, self.sb.get(self.sb.front())) {
            // Re-arm only if the SACK RTT was measured on data sent before the head.
            if seq_rtt.is_some() && sr > now.saturating_since(head.tx_time) {
                flag.set_xmit_timer = true;
            }
        }
        self.sync_view(now);
        let sample = AckSample {
            pkts_acked,
            rtt: ca_rtt.filter(|_| seq_rtt.is_some()),
            in_flight: rs.prior_in_flight,
        };
        self.cc.on_pkts_acked(&mut self.w, &sample);
    }

    /// Linux `tcp_remove_reno_sacks`: a cumulative ACK on a non-SACK connection consumes
    /// the dupACKs counted as SACKs.
    fn remove_reno_sacks(&mut self, acked: u32) {
        if acked > 0 {
            let extra = acked.saturating_sub(self.reno_sacked).max(1);
            self.rate.delivered += extra as u64;
            if acked > self.reno_sacked {
                self.reno_sacked = 0;
            } else {
                self.reno_sacked -= acked - 1;
            }
        }
    }

    /// Linux `tcp_add_reno_sack`: a dupACK on a non-SACK connection.
    pub(crate) fn add_reno_sack(&mut self, num_dupack: u32) {
        if num_dupack == 0 {
            return;
        }
        let prior = self.reno_sacked;
        self.reno_sacked += num_dupack;
        // tcp_limit_reno_sacked: leave room for the holes.
        let holes = self.sb.lost_out.max(1).min(self.sb.packets_out());
        if self.reno_sacked + holes > self.sb.packets_out() {
            self.reno_sacked = self.sb.packets_out().saturating_sub(holes);
        }
        if self.reno_sacked > prior {
            self.rate.delivered += (self.reno_sacked - prior) as u64;
        }
    }

    /// Linux `tcp_process_tlp_ack`.
    fn process_tlp_ack(&mut self, now: SimTime, ack: u64, flag: &AckFlagSet) {
        let Some(h) = self.tlp_high_seq else { return };
        if ack < h {
            return;
        }
        if !self.tlp_retrans || flag.dsack_tlp {
            self.tlp_high_seq = None;
        } else if ack > h {
            // The probe repaired a loss: reduce cwnd once (CWR).
            self.init_cwnd_reduction(now, crate::cc::LossKind::Cwr);
            self.set_ca_state(now, CaState::Cwr);
            self.end_cwnd_reduction(now);
            self.try_keep_open(now);
            self.tlp_high_seq = None;
        } else if !(flag.snd_una_advanced || flag.not_dup() || flag.data_sacked) {
            self.tlp_high_seq = None;
        }
    }

    /// True if the ACK's TSecr shows the original transmission arrived (Linux
    /// `tcp_packet_delayed`): the echoed timestamp predates the first retransmission.
    pub(crate) fn packet_delayed(&self) -> bool {
        match self.retrans_stamp {
            Some(rs) => self.cfg.tcp.timestamps && self.rcv_tsecr != 0 && self.rcv_tsecr < rs.ns(),
            None => false,
        }
    }

    /// RACK loss detection (Linux `tcp_rack_detect_loss`); returns the reorder timeout.
    pub(crate) fn rack_detect_loss(&mut self, now: SimTime) -> Option<SimDuration> {
        let recovering = self.ca_state >= CaState::Recovery;
        let reo_wnd = self.rack.reo_wnd(
            recovering,
            self.sacked_out(),
            self.reordering,
            self.min_rtt(),
            self.rtt.srtt(),
        );
        let rack = self.rack.clone();
        let mss = self.cfg.tcp.mss_bytes as u64;
        let front = self.sb.front();
        let (lost, wait) = self.sb.rack_walk(
            |no, seg| {
                sent_after(
                    rack.xmit_time,
                    seg.tx_time,
                    rack.end_seq,
                    (no.max(front) + 1) * mss,
                )
            },
            |seg| {
                let rem = rack.remaining_ns(now, seg.tx_time, reo_wnd);
                if rem <= 0 {
                    crate::tcp::linux::scoreboard::RackVerdict::Lost
                } else {
                    crate::tcp::linux::scoreboard::RackVerdict::Wait(rem as u64)
                }
            },
        );
        self.lost_total += lost as u64;
        (wait > 0).then_some(SimDuration(wait))
    }
}

#[cfg(test)]
mod tests {
    //! ACK processing against hand-worked numbers, grouped by the CA state the ACKs meet:
    //! tail-loss probes (RFC 8985 §7) and the RACK reorder window (RFC 8985 §6.2). The
    //! fixtures are those of `ca_state`'s tests (`tcp::harness`): Linux Reno, 1000-byte
    //! segments, IW 10, a 100 ms round trip without serialization, every segment ACKed.
    use crate::cc::CaState;
    use crate::engine::time::SimDuration;
    use crate::scenario::{AppConfig, TcpConfig};
    use crate::tcp::harness::{ms, plain_tcp, reno, reno_with, window, PairSpec};
    use crate::tcp::linux::sender::XmitTimer;

    // --- Open: tail-loss probes ----------------------------------------------------------

    #[test]
    fn open_tlp_repairs_a_lost_tail_and_the_next_new_data_acked_reduces_cwnd_once() {
        // A relaying sender (a PEP's) has 10 segments at the handshake (100 ms); the last
        // is lost. The ACKs of 0..8 arrive at 200 ms: slow start takes cwnd to 19, and the
        // probe timer is re-armed at min(2·srtt + 200 ms (one segment out), RTO 300 ms)
        // = 300 ms later.
        let tcp = TcpConfig {
            rack: true,
            tlp: true,
            ..plain_tcp()
        };
        let mut p = reno_with(PairSpec {
            tcp,
            relay: true,
            ..PairSpec::default()
        });
        p.supply_at(ms(0), 10_000)
            .supply_at(ms(510), 5_000)
            .lose(9, 1);
        p.run_until(ms(201));
        assert_eq!(p.linux().w.cwnd, 19);
        assert_eq!(p.linux().xmit_timer, Some((ms(500), XmitTimer::Tlp)));
        // 500 ms: no new data to probe with, so the probe retransmits segment 9.
        p.run_until(ms(501));
        let s = p.linux();
        assert_eq!((s.stats.tlp_probes, s.stats.retrans_segs), (1, 1));
        assert_eq!(s.tlp_high_seq, Some(10_000));
        // 510 ms: five more segments (10..14) leave. 600 ms: the probe's ACK reaches
        // tlp_high_seq but not beyond: nothing is decided yet; slow start: cwnd 20.
        let ack = p.next_ack();
        assert_eq!((ack.ack, p.now), (10_000, ms(600)));
        assert_eq!(
            (p.linux().w.cwnd, p.linux().tlp_high_seq),
            (20, Some(10_000))
        );
        // 610 ms: an ACK beyond tlp_high_seq: the probe repaired a real loss, so cwnd is
        // reduced once, as for ECN (CWR): ssthresh = 20/2 = 10, cwnd = ssthresh, and the
        // connection is Open again (congestion avoidance: cwnd_cnt 1 of 10).
        let ack = p.next_ack();
        assert_eq!((ack.ack, p.now), (11_000, ms(610)));
        assert_eq!(window(&p), (10, 10, 0, 0, CaState::Open));
        let s = p.linux();
        assert_eq!((s.tlp_high_seq, s.stats.fast_recoveries), (None, 0));
    }

    // --- Open / Disorder: the RACK reorder window ------------------------------------------

    /// A 2-segment download whose first segment travels `late_ms` longer than the second.
    /// The client's SYN leaves at 0, the server's SYN-ACK at 50 ms; the request reaches the
    /// server at 150 ms (handshake RTT sample 100 ms) and both segments leave.
    fn reordered_download(late_ms: u64) -> crate::tcp::harness::Pair {
        let tcp = TcpConfig {
            rack: true,
            ..plain_tcp()
        };
        let mut p = reno(tcp, AppConfig::File { size_bytes: 2_000 });
        p.delay_data(0, 1, SimDuration::from_ms(late_ms));
        p
    }

    #[test]
    fn disorder_sack_of_a_later_segment_arms_the_reorder_timer_for_the_window_left() {
        // 250 ms: segment 1 is SACKed. RACK: segment 0 left at the same instant with a
        // lower sequence, so it was sent "before"; with no reordering seen and 1 < 3
        // segments SACKed, reo_wnd = min_rtt/4 = 25 ms. It is lost at 150 + RACK.rtt 100 +
        // 25 = 275 ms: 25 ms left, + Linux's 2 ms timer slack → the timer at 277 ms.
        let mut p = reordered_download(10);
        let ack = p.next_ack();
        assert_eq!((ack.ack, ack.n_sack, p.now), (0, 1, ms(250)));
        let s = p.linux();
        assert_eq!(s.xmit_timer, Some((ms(277), XmitTimer::Reo)));
        assert_eq!((s.ca_state, s.sb.lost_out), (CaState::Disorder, 0));
        // 260 ms: segment 0 arrived after all (10 ms late): nothing was retransmitted.
        let ack = p.next_ack();
        assert_eq!((ack.ack, p.now), (2_000, ms(260)));
        let s = p.linux();
        assert_eq!((s.ca_state, s.stats.retrans_segs), (CaState::Open, 0));
        assert_eq!(s.xmit_timer, None);
    }

    #[test]
    fn disorder_reorder_timer_expiry_marks_the_hole_lost_and_enters_recovery() {
        // Segment 0 is 60 ms late (its ACK would come at 310 ms). At 277 ms the timer
        // finds it 2 ms past its RACK deadline: lost. Recovery with ssthresh 10/2 = 5 and
        // PRR fed one delivered segment: in_flight = 2 − 1 − 1 = 0 < 5, sndcnt =
        // min(5 − 0, max(1 − 0, 1)) = 1, cwnd = 0 + 1 = 1: the retransmission.
        let mut p = reordered_download(60);
        p.run_until(ms(278));
        assert_eq!(window(&p), (1, 5, 1, 1, CaState::Recovery));
        let s = p.linux();
        assert_eq!((s.stats.fast_recoveries, s.stats.retrans_segs), (1, 1));
        assert_eq!(p.sent.last(), Some(&(ms(277), 0, true)));
    }
}
