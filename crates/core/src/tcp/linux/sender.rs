//! The TCP data sender, modelled on Linux (`tcp_output.c`, `tcp_input.c`, `tcp_timer.c`).
//!
//! Sans-IO: every entry point receives `now` and an output buffer; timers are deadlines the
//! simulation polls after each call (`timer_deadline`). Sequence numbers are 64-bit byte
//! offsets of the payload stream; the handshake does not consume sequence space.
//!
//! The window is in packets (`Window`, Linux style); every segment but a file's last is
//! MSS-sized and never re-packetized. The flow of an ACK is Linux's `tcp_ack` (see
//! `ack.rs`); state transitions are `tcp_fastretrans_alert` and friends (`ca_state.rs`).
use crate::cc::{
    tso_autosize_bytes, CaState, Cc, CongestionControl, CwndEvent, Window, GSO_LEGACY_MAX_SIZE,
};
use crate::engine::minmax::WindowedMin;
use crate::engine::stats::{LogHistogram, TimeWeighted};
use crate::engine::time::{serialization_time, SimDuration, SimTime};
use crate::limits::NO_WSCALE_MAX_RWND_BYTES;
use crate::net::packet::{self, Packet, PacketKind, SYN_OPTION_BYTES};
use crate::scenario::{AppConfig, TcpConfig};
use crate::tcp::connection::TimerSlot;
use crate::tcp::linux::rate::RateSampler;
use crate::tcp::linux::rtt::{RttEstimator, RTO_FALLBACK, RTO_INIT, RTO_MAX};
use crate::tcp::linux::scoreboard::{segflags, Scoreboard};
use crate::tcp::linux::{Prr, Rack};

/// Linux `tcp_min_rtt_wlen`: the window of the min-RTT filter (a `WindowedMin` in ns).
pub const MIN_RTT_WINDOW: SimDuration = SimDuration::from_secs(300);
/// Linux `TCP_TIMEOUT_MIN` added to the probe timeout when several packets are out.
pub const TLP_MIN_EXTRA: SimDuration = SimDuration::from_ms(2);
/// Linux `sysctl_tcp_reordering` (the DupThresh).
pub const DUPTHRESH: u32 = 3;
/// Size of the client's request in a file download (an HTTP GET).
pub const REQUEST_BYTES: u32 = 100;

/// Per-connection options of the sender.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    /// The flow's TCP options as in effect: SACK-based ones (D-SACK, RACK, TLP, FACK) off
    /// without SACK, `ecn` as negotiated.
    pub tcp: TcpConfig,
    pub app: AppConfig,
    /// The data comes from a relay (a split-TCP PEP): it is supplied as it arrives
    /// (`supply`) instead of being available from the start.
    pub relay: bool,
    /// ECT on retransmissions too (Linux `tcp_ca_needs_ecn`, i.e. DCTCP).
    pub ecn_always_ect: bool,
}

/// Connection state (RFC 793 names) as far as the data sender needs them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// Bulk: not started. File: waiting for the client's SYN.
    Closed,
    /// Bulk: our SYN is out.
    SynSent,
    /// File: our SYN-ACK is out, waiting for the request.
    SynReceived,
    Established,
}

/// Which timer the retransmission slot runs (Linux `icsk_pending`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum XmitTimer {
    Rto,
    Tlp,
    Reo,
    /// Zero-window probe (Linux `ICSK_TIME_PROBE0`): the peer's window is closed and nothing
    /// is in flight to bring its update.
    Probe,
}

/// Counters of a sender.
#[derive(Debug, Clone, Default)]
pub struct SenderStats {
    pub segments_sent: u64,
    /// Payload bytes transmitted, retransmissions included.
    pub bytes_sent: u64,
    pub retrans_segs: u64,
    pub rto_count: u64,
    pub fast_recoveries: u64,
    pub undos: u64,
    pub tlp_probes: u64,
    /// Every RTT sample (ns); its sum and count are cumulative, so the series takes
    /// interval means from their differences.
    pub rtt: LogHistogram,
    /// The smoothed RTT (ns) as a step function of time, from its first sample on: its
    /// time average is what `ss`/`TCP_INFO` sampled at regular instants report, which
    /// weighs slow periods as much as fast ones (unlike the mean over per-ACK samples).
    pub srtt: TimeWeighted,
    /// When the smoothed RTT got its first sample (ns).
    pub srtt_since_ns: Option<u64>,
}

impl SenderStats {
    /// Record an RTT sample `r` taken at `now` and the smoothed RTT after it.
    pub fn record_rtt(&mut self, now: SimTime, r: SimDuration, srtt: SimDuration) {
        self.rtt.record(r.ns());
        if self.srtt_since_ns.is_none() {
            self.srtt_since_ns = Some(now.ns());
            self.srtt.last_t_ns = now.ns();
        }
        self.srtt.set(now.ns(), srtt.ns());
    }

    /// Time average of the smoothed RTT from its first sample until `end_ns` (ns).
    pub fn srtt_time_mean_ns(&self, end_ns: u64) -> Option<f64> {
        let since = self.srtt_since_ns?;
        let mut tw = self.srtt;
        tw.advance(end_ns);
        let span = tw.last_t_ns.saturating_sub(since);
        Some(if span == 0 {
            tw.value as f64
        } else {
            tw.area as f64 / span as f64
        })
    }
}

/// Retransmission request computed by `fastretrans_alert` (Linux `REXMIT_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Rexmit {
    None,
    Lost,
    New,
}

/// The data sender of one flow.
pub struct Sender {
    pub flow: u32,
    pub cfg: SenderConfig,
    pub cc: Cc,
    pub w: Window,
    pub rtt: RttEstimator,
    pub(crate) min_rtt: WindowedMin,
    pub rate: RateSampler,
    pub sb: Scoreboard,
    pub(crate) prr: Prr,
    pub(crate) rack: Rack,
    pub state: ConnState,
    pub(crate) ca_state: CaState,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// End of the application's data (u64::MAX for bulk).
    pub(crate) app_end: u64,
    /// Total the application will send (u64::MAX for bulk); `app_end` reaches it at once,
    /// except for relayed data.
    pub(crate) app_total: u64,
    /// Zero-window probes sent since the window was last open (for the backoff).
    pub(crate) probes: u32,
    /// Peer's advertised window (bytes beyond snd_una).
    pub(crate) snd_wnd: u64,
    pub(crate) high_seq: u64,
    pub(crate) undo_marker: Option<u64>,
    pub(crate) undo_retrans: i32,
    pub(crate) prior_ssthresh: u32,
    pub(crate) retrans_stamp: Option<SimTime>,
    pub(crate) frto: bool,
    pub(crate) tlp_high_seq: Option<u64>,
    pub(crate) tlp_retrans: bool,
    pub(crate) reordering: u32,
    /// Non-SACK connections count dupACKs as "fake" SACKed segments (Linux Reno emulation).
    pub(crate) reno_sacked: u32,
    /// Total segments marked lost (Linux `tp->lost`).
    pub(crate) lost_total: u64,
    pub(crate) cwnd_usage_seq: u64,
    /// Latest TSecr received (for RTT fallback and undo decisions).
    pub(crate) rcv_tsecr: u64,
    /// Per-connection timestamp offset (Linux `tsoffset`, random since 4.10): added to our
    /// TSvals and removed from the TSecr we receive, so only the peer sees it.
    pub ts_offset: u64,
    /// RFC 7323 TS.Recent: the peer's newest TSval, echoed in our data segments (the
    /// receiver times its RTT with the echo, Linux `tcp_rcv_rtt_measure_ts`).
    pub(crate) ts_recent: u64,
    /// Set CWR on the next new data segment (Linux `TCP_ECN_QUEUE_CWR`).
    pub(crate) ecn_queue_cwr: bool,
    // timers
    pub(crate) xmit_timer: Option<(SimTime, XmitTimer)>,
    pub(crate) icsk_rto: SimDuration,
    pub(crate) backoff: u32,
    pub(crate) retransmits: u32,
    pub(crate) pace_next: SimTime,
    pub(crate) pace_timer: Option<SimTime>,
    /// Segments the TSO/GSO burst being built may still take without a pacing check
    /// (Linux paces per skb, and a paced skb holds `tcp_tso_autosize` segments).
    burst_left: u32,
    /// The sender can be paced at all: it paces by itself (`pacing`, with an algorithm that
    /// does not own cwnd) or its algorithm sets a rate. Decided once: neither changes.
    may_pace: bool,
    pub(crate) hs_timer: Option<SimTime>,
    pub(crate) hs_sent_at: SimTime,
    pub(crate) hs_retransmitted: bool,
    pub(crate) data_segs_out: u64,
    /// RFC 6675 marking: segments below this were already examined.
    pub(crate) dupthresh_scan: u64,
    /// Teardown of a file transfer (RFC 793 §3.5, the server closing first): when the FIN
    /// that rode on the last byte was acknowledged (FIN-WAIT-2), and when the peer's FIN
    /// arrived (TIME-WAIT).
    pub fin_acked_at: Option<SimTime>,
    pub peer_fin_at: Option<SimTime>,
    pub stats: SenderStats,
}

impl Sender {
    pub fn new(flow: u32, cfg: SenderConfig, cc: Cc) -> Sender {
        let mut w = Window::new(cfg.tcp.initial_window_pkts, cfg.tcp.mss_bytes);
        w.pacing = cfg.tcp.pacing || cc.has_cong_control();
        let app_total = match cfg.app {
            AppConfig::Bulk | AppConfig::Cbr { .. } => u64::MAX,
            AppConfig::File { size_bytes } => size_bytes,
        };
        let app_end = if cfg.relay { 0 } else { app_total };
        let may_pace = cc.sets_pacing_rate() || (cfg.tcp.pacing && !cc.has_cong_control());
        Sender {
            flow,
            sb: Scoreboard::new(cfg.tcp.mss_bytes),
            cfg,
            cc,
            w,
            rtt: RttEstimator::new(),
            min_rtt: WindowedMin::default(),
            rate: RateSampler::default(),
            prr: Prr::default(),
            rack: Rack::new(),
            state: ConnState::Closed,
            ca_state: CaState::Open,
            snd_una: 0,
            snd_nxt: 0,
            app_end,
            app_total,
            probes: 0,
            snd_wnd: NO_WSCALE_MAX_RWND_BYTES,
            high_seq: 0,
            undo_marker: None,
            undo_retrans: -1,
            prior_ssthresh: 0,
            retrans_stamp: None,
            frto: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            reordering: DUPTHRESH,
            reno_sacked: 0,
            lost_total: 0,
            cwnd_usage_seq: 0,
            rcv_tsecr: 0,
            ts_offset: 0,
            ts_recent: 0,
            ecn_queue_cwr: false,
            xmit_timer: None,
            icsk_rto: RTO_INIT,
            backoff: 0,
            retransmits: 0,
            pace_next: SimTime::ZERO,
            pace_timer: None,
            burst_left: 0,
            may_pace,
            hs_timer: None,
            hs_sent_at: SimTime::ZERO,
            hs_retransmitted: false,
            data_segs_out: 0,
            dupthresh_scan: 0,
            fin_acked_at: None,
            peer_fin_at: None,
            stats: SenderStats::default(),
        }
    }

    // --- accessors ---------------------------------------------------------------------

    #[inline]
    pub(crate) fn is_sack(&self) -> bool {
        self.cfg.tcp.sack
    }

    /// Linux `tcp_packets_in_flight` (with the non-SACK dupACK emulation).
    #[inline]
    pub fn in_flight(&self) -> u32 {
        self.sb.in_flight().saturating_sub(self.reno_sacked)
    }

    #[inline]
    pub(crate) fn sacked_out(&self) -> u32 {
        self.sb.sacked_out + self.reno_sacked
    }

    pub fn ca_state(&self) -> CaState {
        self.ca_state
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.w.cwnd_bytes()
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.w.ssthresh as u64 * self.cfg.tcp.mss_bytes as u64
    }

    /// The rate the sender paces at, in bits per second (`None`: it does not pace).
    pub fn pacing_rate_bps(&self) -> Option<u64> {
        self.pacing_rate_bytes().map(|r| r.saturating_mul(8))
    }

    /// Segments marked lost so far (Linux `tp->lost`).
    pub fn lost_segments(&self) -> u64 {
        self.lost_total
    }

    /// All of the application's data has been acknowledged.
    pub fn finished(&self) -> bool {
        self.app_total != u64::MAX && self.snd_una >= self.app_total
    }

    /// A relay hands over `bytes` more of the stream to send.
    pub fn supply(&mut self, now: SimTime, bytes: u64, out: &mut Vec<Packet>) {
        if bytes == 0 {
            return;
        }
        self.app_end = (self.app_end + bytes).min(self.app_total);
        self.transmit(now, out);
    }

    /// Refresh the read-only part of the window view before a controller hook.
    #[inline]
    pub(crate) fn sync_view(&mut self, now: SimTime) {
        let w = &mut self.w;
        w.now = now;
        w.srtt = self.rtt.srtt();
        let m = self.min_rtt.get();
        w.min_rtt = (m != u64::MAX).then_some(SimDuration(m));
        w.in_flight = self.sb.in_flight().saturating_sub(self.reno_sacked);
        w.packets_out = self.sb.packets_out();
        w.snd_una = self.snd_una;
        w.snd_nxt = self.snd_nxt;
        w.delivered = self.rate.delivered;
        w.delivered_ce = self.rate.delivered_ce;
        w.lost = self.lost_total;
        w.ca_state = self.ca_state;
        w.app_limited = self.rate.app_limited_until;
        w.next_departure = self.pace_next;
    }

    pub(crate) fn min_rtt(&self) -> Option<SimDuration> {
        let m = self.min_rtt.get();
        (m != u64::MAX).then_some(SimDuration(m))
    }

    /// Deadline of a timer slot, if armed.
    pub fn timer_deadline(&self, slot: TimerSlot) -> Option<SimTime> {
        match slot {
            TimerSlot::Retransmit => self.xmit_timer.map(|(t, _)| t),
            TimerSlot::Pacing => match (self.pace_timer, self.cc.send_timer()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            TimerSlot::Handshake => self.hs_timer,
            TimerSlot::Ack => None,
        }
    }

    // --- packets -----------------------------------------------------------------------

    fn header(&self, kind: PacketKind, now: SimTime) -> Packet {
        Packet {
            flow: self.flow,
            kind,
            ts_val: if self.cfg.tcp.timestamps {
                (now.ns() + self.ts_offset).max(1)
            } else {
                0
            },
            ..Default::default()
        }
    }

    fn data_packet(&mut self, now: SimTime, seq: u64, len: u32, retrans: bool) -> Packet {
        let mut p = self.header(PacketKind::Data, now);
        p.ts_ecr = self.ts_recent;
        p.seq = seq;
        p.len = len;
        p.wire_bytes = Packet::wire_size(len, self.cfg.tcp.timestamps, 0);
        if retrans {
            p.flags |= packet::flags::RETRANS;
        }
        // A file server closes once it has written the file: the FIN rides on the last
        // segment, and on its retransmissions.
        if matches!(self.cfg.app, AppConfig::File { .. }) && seq + len as u64 == self.app_total {
            p.flags |= packet::flags::FIN;
        }
        // Linux tcp_ecn_send: new data is ECT and carries a queued CWR; retransmissions are
        // not ECT unless the algorithm needs ECN (RFC 3168 §6.1.5).
        if self.cfg.tcp.ecn {
            if !retrans {
                p.flags |= packet::flags::ECT;
                if self.ecn_queue_cwr {
                    self.ecn_queue_cwr = false;
                    p.flags |= packet::flags::CWR;
                }
            } else if self.cfg.ecn_always_ect {
                p.flags |= packet::flags::ECT;
            }
        }
        p
    }

    pub(crate) fn control_packet(&self, now: SimTime, kind: PacketKind) -> Packet {
        let mut p = self.header(kind, now);
        let ts = if self.cfg.tcp.timestamps {
            packet::TS_OPTION_BYTES
        } else {
            0
        };
        p.wire_bytes = match kind {
            PacketKind::Syn | PacketKind::SynAck => packet::BASE_HEADER_BYTES + SYN_OPTION_BYTES,
            _ => packet::BASE_HEADER_BYTES + ts,
        };
        p
    }

    // --- connection set-up -------------------------------------------------------------

    /// The application starts: a bulk sender opens the connection (iperf-like); a file
    /// server waits for the client's SYN.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if matches!(self.cfg.app, AppConfig::Bulk) {
            self.state = ConnState::SynSent;
            self.hs_sent_at = now;
            out.push(self.control_packet(now, PacketKind::Syn));
            self.hs_timer = Some(now + self.icsk_rto);
        }
    }

    /// Handshake packets from the peer.
    pub(crate) fn on_handshake(&mut self, now: SimTime, p: &Packet, out: &mut Vec<Packet>) {
        match (self.state, p.kind) {
            (ConnState::SynSent, PacketKind::SynAck) => {
                out.push(self.control_packet(now, PacketKind::Ack));
                self.take_window(p);
                self.establish(now, p, out);
            }
            (ConnState::Closed | ConnState::SynReceived, PacketKind::Syn) => {
                // (Re)send the SYN-ACK.
                if self.state == ConnState::SynReceived {
                    self.hs_retransmitted = true;
                }
                self.state = ConnState::SynReceived;
                self.hs_sent_at = now;
                out.push(self.control_packet(now, PacketKind::SynAck));
                self.hs_timer = Some(now + self.icsk_rto);
            }
            (ConnState::SynReceived, PacketKind::Request) => {
                self.take_window(p);
                self.establish(now, p, out);
            }
            _ => {}
        }
    }

    /// The window a SYN-ACK or request advertises (unscaled on the handshake: ≤ 65535).
    fn take_window(&mut self, p: &Packet) {
        if p.wnd > 0 {
            self.snd_wnd = p.wnd.min(NO_WSCALE_MAX_RWND_BYTES);
        }
    }

    fn establish(&mut self, now: SimTime, _p: &Packet, out: &mut Vec<Packet>) {
        self.state = ConnState::Established;
        self.hs_timer = None;
        if self.hs_retransmitted {
            // Karn: no sample from a retransmitted SYN; Linux starts with cwnd 1 and an RTO
            // of 3 s when the handshake needed retransmissions (RFC 6298 §5.7).
            self.w.cwnd = 1;
            self.icsk_rto = RTO_FALLBACK;
            self.rtt.set_rto(RTO_FALLBACK);
        } else {
            let r = now.since(self.hs_sent_at);
            self.rtt.sample(r, 0, 0);
            self.min_rtt.update(MIN_RTT_WINDOW.ns(), now.ns(), r.ns());
            self.icsk_rto = self.rtt.rto();
        }
        self.backoff = 0;
        self.w.last_send = now;
        self.transmit(now, out);
    }

    pub(crate) fn on_handshake_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.hs_timer.is_none_or(|t| t > now) {
            return;
        }
        self.hs_retransmitted = true;
        self.icsk_rto = (self.icsk_rto * 2).min(RTO_MAX);
        self.hs_sent_at = now;
        match self.state {
            ConnState::SynSent => out.push(self.control_packet(now, PacketKind::Syn)),
            ConnState::SynReceived => out.push(self.control_packet(now, PacketKind::SynAck)),
            _ => {
                self.hs_timer = None;
                return;
            }
        }
        self.hs_timer = Some(now + self.icsk_rto);
    }

    // --- output ------------------------------------------------------------------------

    /// Pacing rate in bytes per second, if the connection paces.
    fn pacing_rate_bytes(&self) -> Option<u64> {
        if !self.may_pace {
            debug_assert!(self.cc.pacing_rate_bps(&self.w).is_none());
            return None;
        }
        if let Some(bps) = self.cc.pacing_rate_bps(&self.w) {
            return Some(bps / 8);
        }
        // Linux refreshes sk_pacing_rate (tcp_update_pacing_rate) only for modules without
        // cong_control; one that owns cwnd and sets no rate (TCP Wave, whose burst timer
        // replaces rate pacing) leaves it at ~0U, i.e. unpaced.
        if self.cfg.tcp.pacing && !self.cc.has_cong_control() {
            let r = self.w.linux_pacing_rate_bytes();
            return (r > 0).then_some(r);
        }
        None
    }

    /// Linux `tcp_tso_autosize` (`tcp_tso_segs`): segments per skb of a paced sender — about
    /// 1 ms of data at the pacing rate (`sk_pacing_shift` 10), plus 64 KB halved per 512 µs
    /// of min RTT (`tcp_tso_rtt_log` 9), at most 64 KB, at least the module's minimum.
    fn tso_segs(&self, rate_bytes: u64) -> u32 {
        if !self.cfg.tcp.tso {
            return 1;
        }
        let min_rtt_us = self.min_rtt().map(|m| m.us());
        let bytes = tso_autosize_bytes(rate_bytes, min_rtt_us, GSO_LEGACY_MAX_SIZE);
        let segs = (bytes / self.w.mss.max(1) as u64) as u32;
        segs.max(self.cc.min_tso_segs(&self.w))
    }

    /// Account a transmission for pacing (Linux `tcp_update_skb_after_send`; the first 10
    /// segments are not paced). The segments of one skb leave back to back: the first one
    /// waits for the pacing slot and opens a burst of `tso_segs`, the others follow at once.
    fn pace_after_send(&mut self, now: SimTime, payload_bytes: u32) {
        if self.data_segs_out < 10 {
            return;
        }
        if let Some(rate) = self.pacing_rate_bytes() {
            if rate > 0 {
                if self.burst_left == 0 {
                    self.burst_left = self.tso_segs(rate);
                }
                self.burst_left -= 1;
                let len = serialization_time(payload_bytes as u64, rate.saturating_mul(8));
                let base = if self.pace_next > now {
                    self.pace_next
                } else {
                    now
                };
                self.pace_next = base + len;
            }
        }
    }

    #[inline]
    fn pacing_blocked(&mut self, now: SimTime) -> bool {
        if self.burst_left > 0 {
            return false;
        }
        if self.pace_next > now && self.pacing_rate_bytes().is_some() {
            self.pace_timer = Some(self.pace_next);
            return true;
        }
        false
    }

    /// Emit one segment (new or retransmitted) and do the per-send bookkeeping.
    fn emit(&mut self, now: SimTime, seq: u64, len: u32, retrans: bool, out: &mut Vec<Packet>) {
        let p = self.data_packet(now, seq, len, retrans);
        // Linux tcp_update_skb_after_send paces by skb->len: the payload, not the wire size.
        self.pace_after_send(now, p.len);
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len as u64;
        self.data_segs_out += 1;
        if retrans {
            self.stats.retrans_segs += 1;
        }
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.prr.on_sent(1);
        }
        self.sync_view(now);
        self.cc.on_packet_sent(&self.w, len);
        out.push(p);
    }

    /// Linux `tcp_event_data_sent`: any data segment (retransmissions too) sent with nothing
    /// in flight is a `TX_START`; then `lsndtime` moves.
    fn data_sent_event(&mut self, now: SimTime) {
        if self.in_flight() == 0 {
            self.sync_view(now);
            self.cc.on_cwnd_event(&mut self.w, CwndEvent::TxStart);
        }
        self.w.last_send = now;
    }

    /// Retransmit segment `no` (Linux `tcp_retransmit_skb`).
    pub(crate) fn retransmit(&mut self, now: SimTime, no: u64, out: &mut Vec<Packet>) {
        let seq = self.sb.seq_of(no);
        let Some(seg) = self.sb.get(no) else { return };
        if seg.has(segflags::SACKED) {
            return;
        }
        let len = seg.len;
        self.data_sent_event(now);
        let mut stamp = self.rate.on_send(now, self.sb.packets_out());
        stamp.in_flight = self.in_flight() + 1;
        stamp.lost = self.lost_total;
        self.sb.on_retransmit(no, now, stamp);
        if self.retrans_stamp.is_none() {
            self.retrans_stamp = Some(now);
        }
        // Linux counts every retransmission for DSACK-based undo.
        if self.undo_retrans < 0 {
            self.undo_retrans = 0;
        }
        self.undo_retrans += 1;
        self.emit(now, seq, len, true, out);
    }

    /// Send one new segment if the receiver's window allows; returns false otherwise.
    pub(crate) fn send_new(&mut self, now: SimTime, out: &mut Vec<Packet>) -> bool {
        if self.snd_nxt >= self.app_end {
            return false;
        }
        let len = (self.app_end - self.snd_nxt).min(self.cfg.tcp.mss_bytes as u64) as u32;
        if self.snd_nxt + len as u64 > self.snd_una + self.snd_wnd {
            return false;
        }
        let prior_packets = self.sb.packets_out();
        if prior_packets == 0 {
            self.idle_restart(now);
        }
        self.data_sent_event(now);
        let mut stamp = self.rate.on_send(now, prior_packets);
        stamp.in_flight = self.in_flight() + 1;
        stamp.lost = self.lost_total;
        let seq = self.snd_nxt;
        self.sb.push_new(len, now, stamp);
        self.snd_nxt += len as u64;
        self.emit(now, seq, len, false, out);
        if prior_packets == 0 || matches!(self.xmit_timer, Some((_, XmitTimer::Tlp))) {
            self.rearm_rto(now);
        }
        true
    }

    /// Linux `tcp_slow_start_after_idle_check` + `tcp_cwnd_restart`.
    fn idle_restart(&mut self, now: SimTime) {
        if !self.cfg.tcp.slow_start_after_idle
            || self.cc.has_cong_control()
            || self.data_segs_out == 0
        {
            return;
        }
        let idle = now.saturating_since(self.w.last_send);
        if idle <= self.icsk_rto {
            return;
        }
        self.sync_view(now);
        self.cc.on_cwnd_event(&mut self.w, CwndEvent::CwndRestart);
        self.w.ssthresh = self.w.current_ssthresh();
        let restart = self.w.initial_window.min(self.w.cwnd);
        let mut cwnd = self.w.cwnd;
        let mut delta = idle.ns() as i64;
        loop {
            delta -= self.icsk_rto.ns() as i64;
            if delta <= 0 || cwnd <= restart {
                break;
            }
            cwnd >>= 1;
        }
        self.w.cwnd = cwnd.max(restart);
    }

    /// Send what cwnd, the receiver window and pacing allow: lost segments first, then new
    /// data (Linux `tcp_xmit_retransmit_queue` then `tcp_write_xmit`).
    pub(crate) fn transmit_with(&mut self, now: SimTime, rexmit: Rexmit, out: &mut Vec<Packet>) {
        if self.state != ConnState::Established {
            return;
        }
        let mut sent_any = false;
        let mut cwnd_limited = false;
        if rexmit == Rexmit::New {
            // F-RTO step 2b: probe with new data before retransmitting anything.
            while self.in_flight() < self.w.cwnd && !self.pacing_blocked(now) {
                if !self.send_new(now, out) {
                    break;
                }
                sent_any = true;
            }
            if self.snd_nxt > self.high_seq {
                return self.after_write(now, sent_any, cwnd_limited);
            }
            self.frto = false;
        }
        loop {
            if self.in_flight() >= self.w.cwnd {
                cwnd_limited = true;
                break;
            }
            if self.pacing_blocked(now) {
                break;
            }
            if let Some(no) = self.sb.next_lost() {
                let is_head = no == self.sb.front();
                self.retransmit(now, no, out);
                if is_head && !matches!(self.xmit_timer, Some((_, XmitTimer::Reo))) {
                    self.xmit_timer = Some((now + self.icsk_rto, XmitTimer::Rto));
                }
                sent_any = true;
                continue;
            }
            if !self.send_new(now, out) {
                break;
            }
            sent_any = true;
        }
        self.after_write(now, sent_any, cwnd_limited)
    }

    fn after_write(&mut self, now: SimTime, sent_any: bool, cwnd_limited: bool) {
        // An skb is built in one pass of the write loop: what cwnd or the data cut short
        // stays a smaller skb, already paced as such.
        self.burst_left = 0;
        let cwnd_limited = cwnd_limited || self.in_flight() >= self.w.cwnd;
        if sent_any {
            self.probes = 0;
        } else if self.sb.is_empty() && self.snd_nxt < self.app_end && self.xmit_timer.is_none() {
            // Data waits but the peer's window is closed and nothing is in flight: only a
            // probe can bring the window update if it gets lost (Linux tcp_check_probe_timer).
            let backoff = (self.icsk_rto * (1u64 << self.probes.min(10))).min(RTO_MAX);
            self.xmit_timer = Some((now + backoff, XmitTimer::Probe));
        }
        if sent_any {
            self.schedule_loss_probe(now, false);
        }
        if sent_any || cwnd_limited {
            self.cwnd_validate(cwnd_limited);
        }
        if self.snd_nxt >= self.app_end
            && self.in_flight() < self.w.cwnd
            && self.sb.lost_out <= self.sb.retrans_out
        {
            self.rate.set_app_limited(self.in_flight());
        }
    }

    pub fn transmit(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.transmit_with(now, Rexmit::Lost, out)
    }

    /// Linux `tcp_cwnd_validate`: remember whether cwnd limited sending in this window.
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        let packets_out = self.sb.packets_out();
        if self.snd_una >= self.cwnd_usage_seq
            || is_cwnd_limited
            || (!self.w.cwnd_limited && packets_out > self.w.max_packets_out)
        {
            self.w.cwnd_limited = is_cwnd_limited;
            self.w.max_packets_out = packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    // --- timers ------------------------------------------------------------------------

    /// Linux `tcp_rearm_rto`.
    pub(crate) fn rearm_rto(&mut self, now: SimTime) {
        if self.sb.is_empty() {
            self.xmit_timer = None;
            return;
        }
        let mut rto = self.icsk_rto;
        if matches!(self.xmit_timer, Some((_, XmitTimer::Reo | XmitTimer::Tlp))) {
            rto = SimDuration(self.rto_delta_ns(now).max(1) as u64);
        }
        self.xmit_timer = Some((now + rto, XmitTimer::Rto));
    }

    /// Time until the RTO of the head segment would fire (Linux `tcp_rto_delta_us`).
    pub(crate) fn rto_delta_ns(&self, now: SimTime) -> i64 {
        let head_tx = self.sb.get(self.sb.front()).map_or(now, |s| s.tx_time);
        (head_tx.ns() + self.icsk_rto.ns()) as i64 - now.ns() as i64
    }

    /// Linux `tcp_schedule_loss_probe`: arm a TLP at 2·SRTT (+ slack) if allowed.
    pub(crate) fn schedule_loss_probe(&mut self, now: SimTime, advancing_rto: bool) -> bool {
        if !self.cfg.tcp.tlp
            || self.sb.is_empty()
            || !self.is_sack()
            || !matches!(self.ca_state, CaState::Open | CaState::Cwr)
        {
            return false;
        }
        let mut timeout = match self.rtt.srtt() {
            Some(srtt) => {
                let extra = if self.sb.packets_out() == 1 {
                    crate::tcp::linux::rtt::RTO_MIN
                } else {
                    TLP_MIN_EXTRA
                };
                srtt * 2 + extra
            }
            None => RTO_INIT,
        };
        let rto_delta = if advancing_rto {
            self.icsk_rto.ns() as i64
        } else {
            self.rto_delta_ns(now)
        };
        if rto_delta > 0 {
            timeout = timeout.min(SimDuration(rto_delta as u64));
        }
        self.xmit_timer = Some((now + timeout, XmitTimer::Tlp));
        true
    }

    /// Linux `tcp_set_xmit_timer`.
    pub(crate) fn set_xmit_timer(&mut self, now: SimTime) {
        if !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
    }

    /// A timer slot fired (possibly stale: the deadline is re-checked).
    pub fn on_timer(&mut self, now: SimTime, slot: TimerSlot, out: &mut Vec<Packet>) {
        match slot {
            TimerSlot::Retransmit => {
                let Some((t, kind)) = self.xmit_timer else {
                    return;
                };
                if t > now {
                    return;
                }
                self.xmit_timer = None;
                match kind {
                    XmitTimer::Rto => self.on_rto(now, out),
                    XmitTimer::Tlp => self.on_tlp(now, out),
                    XmitTimer::Reo => self.on_reo_timeout(now, out),
                    XmitTimer::Probe => self.on_probe(now, out),
                }
            }
            TimerSlot::Pacing => {
                let mut act = false;
                if self.cc.send_timer().is_some_and(|t| t <= now) {
                    self.sync_view(now);
                    self.cc.on_send_timer(&mut self.w);
                    act = true;
                }
                if self.pace_timer.is_some_and(|t| t <= now) {
                    self.pace_timer = None;
                    act = true;
                }
                if act {
                    self.transmit(now, out);
                }
            }
            TimerSlot::Handshake => self.on_handshake_timer(now, out),
            TimerSlot::Ack => {}
        }
    }

    /// Zero-window probe: a segment without payload that the receiver must ACK with its
    /// current window (Linux sends one old byte; an empty segment suffices here).
    fn on_probe(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if !self.sb.is_empty() || self.snd_nxt >= self.app_end {
            return;
        }
        self.probes += 1;
        let p = self.data_packet(now, self.snd_nxt, 0, false);
        out.push(p);
        self.transmit(now, out);
        if self.xmit_timer.is_none() && self.sb.is_empty() {
            let backoff = (self.icsk_rto * (1u64 << self.probes.min(10))).min(RTO_MAX);
            self.xmit_timer = Some((now + backoff, XmitTimer::Probe));
        }
    }

    /// Record an RTT sample for the statistics (after the estimator took it).
    pub(crate) fn record_rtt(&mut self, now: SimTime, r: SimDuration) {
        let srtt = self.rtt.srtt().unwrap_or(r);
        self.stats.record_rtt(now, r, srtt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::SimRng;
    use std::collections::BTreeMap;

    /// A Linux Reno file server (3 segments of 1000 B) that got the client's SYN and
    /// request at t = 0 and 100 ms and sent the whole file (IW 10 covers it).
    fn file_server_sent_all() -> (Sender, Vec<Packet>) {
        file_server(3000, false)
    }

    /// A Linux Reno file server of `size_bytes` (1000 B segments, IW 10) that got the
    /// client's SYN and request at t = 0 and 100 ms and sent its initial window.
    fn file_server(size_bytes: u64, pacing: bool) -> (Sender, Vec<Packet>) {
        let init = crate::cc::FlowInit {
            mss: 1000,
            initial_window: 10,
        };
        let cc = crate::cc::build(
            "reno",
            &BTreeMap::new(),
            &init,
            &mut SimRng::substream(1, "test"),
        )
        .unwrap();
        let cfg = SenderConfig {
            tcp: TcpConfig {
                mss_bytes: 1000,
                initial_window_pkts: 10,
                pacing,
                ..TcpConfig::default()
            },
            app: AppConfig::File { size_bytes },
            relay: false,
            ecn_always_ect: false,
        };
        let mut s = Sender::new(0, cfg, cc);
        let mut out = vec![];
        let syn = Packet {
            kind: PacketKind::Syn,
            ..Default::default()
        };
        s.on_packet(SimTime::ZERO, &syn, &mut out);
        let request = Packet {
            kind: PacketKind::Request,
            wnd: 65_535,
            ..Default::default()
        };
        out.clear();
        s.on_packet(ms(100), &request, &mut out);
        (s, out)
    }

    fn ms(v: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_ms(v)
    }

    fn from_client(kind: PacketKind, ack: u64) -> Packet {
        Packet {
            kind,
            ack,
            wnd: 65_535,
            ts_val: 5,
            ..Default::default()
        }
    }

    #[test]
    fn paced_sender_sends_two_segment_bursts_at_the_pacing_rate() {
        // IW 10 leaves unpaced at 100 ms. Its ACK at 200 ms (RTT 100 ms) opens cwnd to 20;
        // Linux then paces at 200 % of cwnd/srtt in slow start: 2 · 20 · 1000 B / 0.1 s =
        // 400 kB/s, whose ~1 ms skb (390 B) is below one MSS, so each skb holds the minimum
        // 2 segments. They leave together; the next skb waits 2000 B / 400 kB/s = 5 ms.
        let (mut s, iw) = file_server(100_000, true);
        assert_eq!(iw.len(), 10);
        let mut out = vec![];
        s.on_packet(ms(200), &from_client(PacketKind::Ack, 10_000), &mut out);
        let data: Vec<_> = out.iter().filter(|p| p.len > 0).collect();
        assert_eq!(data.len(), 2, "one skb of two segments");
        assert_eq!(s.pace_next, ms(205));
        assert_eq!(s.pace_timer, Some(ms(205)));
    }

    #[test]
    fn paced_skbs_hold_about_a_millisecond_of_data_and_more_on_short_paths() {
        // Linux tcp_tso_autosize with MSS 1000 and the sysctl minimum of 2 segments:
        let (mut s, _) = file_server_sent_all();
        let mut at_min_rtt = |us: u64, rate_bytes: u64| {
            s.min_rtt = WindowedMin::default();
            s.min_rtt
                .update(MIN_RTT_WINDOW.ns(), ms(200).ns(), us * 1_000);
            s.tso_segs(rate_bytes)
        };
        // 10 Mbit/s, 20 ms: 1_250_000 >> 10 = 1220 B < 1 MSS (20_000 >> 9 = 39: no bonus) → 2
        assert_eq!(at_min_rtt(20_000, 1_250_000), 2);
        // 100 Mbit/s, 20 ms: 12_207 B → 12 segments
        assert_eq!(at_min_rtt(20_000, 12_500_000), 12);
        // 10 Mbit/s, 2 ms: 2_000 >> 9 = 3, + 65_536 >> 3 = 8_192 → 9_412 B → 9 segments
        assert_eq!(at_min_rtt(2_000, 1_250_000), 9);
        // 10 Mbit/s, 200 µs: + 65_536 → capped at 65_536 B → 65 segments
        assert_eq!(at_min_rtt(200, 1_250_000), 65);
    }

    #[test]
    fn srtt_time_mean_weighs_time_not_samples() {
        // 100 ms smoothed RTT for 1 s (one sample), then 300 ms for 3 s (a thousand
        // samples): per time (100·1 + 300·3) / 4 = 250 ms, whatever the sample counts.
        let mut st = SenderStats::default();
        let ms = SimDuration::from_ms;
        st.record_rtt(SimTime(1_000_000_000), ms(100), ms(100));
        for i in 0..1000u64 {
            st.record_rtt(SimTime(2_000_000_000 + i), ms(300), ms(300));
        }
        let mean = st.srtt_time_mean_ns(5_000_000_000).expect("sampled");
        assert!((mean - 250e6).abs() < 1e3, "{mean}");
        assert_eq!(
            SenderStats::default().srtt_time_mean_ns(5_000_000_000),
            None
        );
    }

    #[test]
    fn established_file_server_puts_fin_on_the_last_segment_only() {
        let (_, out) = file_server_sent_all();
        let fins: Vec<bool> = out.iter().map(|p| p.has(packet::flags::FIN)).collect();
        assert_eq!(
            out.iter().map(|p| p.seq).collect::<Vec<_>>(),
            [0, 1000, 2000]
        );
        assert_eq!(fins, [false, false, true]);
    }

    #[test]
    fn established_fin_is_acknowledged_with_the_last_byte() {
        let (mut s, _) = file_server_sent_all();
        let mut out = vec![];
        s.on_packet(ms(200), &from_client(PacketKind::Ack, 2000), &mut out);
        assert_eq!(s.fin_acked_at, None, "one segment (and the FIN) still out");
        s.on_packet(ms(201), &from_client(PacketKind::Ack, 3000), &mut out);
        assert_eq!(s.fin_acked_at, Some(ms(201)));
    }

    #[test]
    fn fin_wait_peer_fin_carrying_the_last_ack_is_acknowledged_each_time_it_comes() {
        let (mut s, _) = file_server_sent_all();
        let mut out = vec![];
        // The client's FIN|ACK acknowledges everything at once (its pure ACK was lost).
        s.on_packet(ms(300), &from_client(PacketKind::Fin, 3000), &mut out);
        assert_eq!(s.fin_acked_at, Some(ms(300)));
        assert_eq!(s.peer_fin_at, Some(ms(300)));
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].kind, out[0].ts_ecr), (PacketKind::Ack, 5));
        // Our ACK was lost and the FIN comes again: TIME-WAIT answers it again.
        out.clear();
        s.on_packet(ms(900), &from_client(PacketKind::Fin, 3000), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, PacketKind::Ack);
        assert_eq!(s.peer_fin_at, Some(ms(300)));
    }

    #[test]
    fn established_premature_fin_is_not_acknowledged() {
        // A FIN that does not acknowledge the whole file cannot come from our client (it
        // closes only after reading everything): it is taken as an ACK and nothing more.
        let (mut s, _) = file_server_sent_all();
        let mut out = vec![];
        s.on_packet(ms(300), &from_client(PacketKind::Fin, 1000), &mut out);
        assert_eq!(s.snd_una, 1000);
        assert!(out.iter().all(|p| p.kind != PacketKind::Ack));
        assert_eq!(s.peer_fin_at, None);
    }
}
