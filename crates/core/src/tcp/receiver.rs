//! The TCP receiver: reassembly, ACK policy and SACK generation, modelled on Linux
//! (`tcp_data_queue`, `__tcp_ack_snd_check`, `tcp_sack_new_ofo_skb`).
//!
//! ACK policy (Linux):
//! - quick-ACK mode at the start (every segment ACKed, up to 16 ACKs);
//! - every segment that opens the advertised window further (`tcp_grow_window`, see
//!   [`crate::tcp::rcvbuf`]) is ACKed at once as well;
//! - otherwise ACK every second full segment, or after the delayed-ACK timer (40 ms,
//!   Linux's `TCP_DELACK_MIN`, which bulk transfers see);
//! - immediately when a hole is filled, for duplicates (with a D-SACK), and for the first
//!   three ACKs per out-of-order episode; later out-of-order ACKs are compressed
//!   (delay min(5 % RTT, 1 ms), at most 44 held back).
//!
//! SACK blocks (RFC 2018): the block holding the latest segment first, then the most
//! recently reported ones; at most 3 with timestamps (4 without), a D-SACK taking a slot.
//! TSecr echoes TS.Recent, taken from segments at or below the last ACKed sequence, so the
//! sender's RTT includes the delayed-ACK wait (RFC 7323).
//!
//! The advertised window is Linux's (`RcvSpace`: receive-buffer autotuning, or a fixed
//! SO_RCVBUF) for the Linux stack, and `rwnd` minus out-of-order data for ns-2's sink. The
//! application reads in-order data at once.
use crate::engine::time::{SimDuration, SimTime};
use crate::net::packet::{self, flags, Packet, PacketKind, SackBlock, SYN_OPTION_BYTES};
use crate::scenario::AppConfig;
use crate::tcp::connection::TimerSlot;
use crate::tcp::intervals::IntervalSet;
use crate::tcp::linux::rtt::RttEstimator;
use crate::tcp::linux::sender::REQUEST_BYTES;
use crate::tcp::rcvbuf::{skb_truesize, RcvBufPolicy, RcvSpace};

/// Linux `TCP_DELACK_MIN`.
pub const DELACK: SimDuration = SimDuration::from_ms(40);
/// Linux `TCP_MAX_QUICKACKS`.
pub const MAX_QUICKACKS: u32 = 16;
/// Linux `sysctl_tcp_comp_sack_nr` and `sysctl_tcp_comp_sack_delay_ns`.
pub const COMP_SACK_NR: u32 = 44;
pub const COMP_SACK_DELAY: SimDuration = SimDuration::from_ms(1);
/// Linux `TCP_NUM_SACKS`: SACK blocks remembered.
const NUM_SACKS: usize = 4;

/// Receiver options.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    pub mss: u32,
    pub sack: bool,
    pub dsack: bool,
    pub timestamps: bool,
    pub delayed_ack: bool,
    /// The scenario's `rwnd` (at most 65535 without window scaling): ns-2's window, or
    /// Linux's tcp_rmem[2] / SO_RCVBUF (see `rcvbuf`).
    pub rwnd_bytes: u64,
    /// How `rwnd_bytes` sizes the window.
    pub rcvbuf: RcvBufPolicy,
    /// RFC 7323 window scaling (the Linux window's alignment and 16-bit reach).
    pub window_scaling: bool,
    pub app: AppConfig,
    pub ecn: EcnEcho,
}

/// How the receiver echoes Congestion Experienced marks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EcnEcho {
    /// No ECN.
    Off,
    /// RFC 3168: ECE on every ACK from the first CE until the sender's CWR.
    Classic,
    /// DCTCP: ECE mirrors the CE bit of the latest data; an ACK is sent at once when the
    /// CE state flips (Linux `dctcp_ece_ack_update`).
    Dctcp,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum RcvState {
    Closed,
    /// File client: SYN sent.
    SynSent,
    /// Bulk server: SYN-ACK sent.
    SynReceived,
    Established,
    /// Our FIN is out, waiting for its ACK (RFC 793 LAST-ACK: the server closed first).
    LastAck,
    /// Torn down: our FIN was acknowledged.
    Done,
}

/// Counters of a receiver.
#[derive(Debug, Clone, Default)]
pub struct ReceiverStats {
    /// In-order payload bytes handed to the application.
    pub bytes_delivered: u64,
    /// Payload bytes received that were already held (duplicates).
    pub dup_bytes: u64,
    pub acks_sent: u64,
    pub segments_received: u64,
}

/// The receiver of one flow.
pub struct Receiver {
    pub flow: u32,
    cfg: ReceiverConfig,
    state: RcvState,
    start: SimTime,
    pub rcv_nxt: u64,
    /// Out-of-order data: merged byte ranges above rcv_nxt.
    ofo: IntervalSet,
    ofo_bytes: u64,
    sacks: [SackBlock; NUM_SACKS],
    n_sacks: usize,
    dsack: Option<SackBlock>,
    right_edge: u64,
    rcv_wup: u64,
    ts_recent: u64,
    quick: u32,
    ack_timer: Option<SimTime>,
    compressed_ack: u32,
    compressed_ack_rcv_nxt: u64,
    dup_ack_counter: u32,
    /// ns-2 sink: a smoothed receiver RTT for the compressed-SACK delay.
    rcv_rtt_ns: u64,
    /// Linux: the receive buffer and window (None: ns-2's fixed window).
    space: Option<RcvSpace>,
    /// What the application has read (it reads in-order data at once).
    copied_seq: u64,
    /// Truesize of a full-sized segment (Linux's buffer accounting).
    truesize: u64,
    hs_timer: Option<SimTime>,
    hs_rtt: RttEstimator,
    hs_sent_at: SimTime,
    hs_tries: u32,
    got_data: bool,
    /// Per-connection timestamp offset (Linux `tsoffset`) added to our TSvals.
    pub ts_offset: u64,
    /// At a split-TCP PEP: the relay buffer size; data held (received in order but not yet
    /// acknowledged downstream) plus out-of-order data must fit in it.
    pub relay_limit: Option<u64>,
    /// Bytes the downstream connection has had acknowledged (the relay has released).
    relay_drained: u64,
    /// Right edge of the window last advertised (for window updates after a drain).
    last_adv_edge: u64,
    /// A PEP's upstream client holds its request until the downstream request arrived.
    pub hold_request: bool,
    request_due: bool,
    /// Classic ECN: echo ECE until CWR. DCTCP: CE state of the latest segment.
    ece: bool,
    pub completion: Option<SimTime>,
    /// The sender's FIN arrived (it rides on the last byte of a file).
    fin_seen: bool,
    /// When our own FIN was acknowledged: the connection is closed at this end.
    pub closed_at: Option<SimTime>,
    pub stats: ReceiverStats,
}

impl Receiver {
    pub fn new(flow: u32, cfg: ReceiverConfig) -> Self {
        let space = match cfg.rcvbuf {
            RcvBufPolicy::Fixed => None,
            policy => Some(RcvSpace::new(
                policy,
                cfg.rwnd_bytes,
                cfg.mss,
                cfg.window_scaling,
            )),
        };
        let truesize = skb_truesize(Packet::wire_size(cfg.mss, cfg.timestamps, 0) as u64);
        Receiver {
            space,
            copied_seq: 0,
            truesize,
            flow,
            right_edge: 0,
            cfg,
            state: RcvState::Closed,
            start: SimTime::ZERO,
            rcv_nxt: 0,
            ofo: IntervalSet::new(),
            ofo_bytes: 0,
            sacks: [SackBlock::default(); NUM_SACKS],
            n_sacks: 0,
            dsack: None,
            rcv_wup: 0,
            ts_recent: 0,
            quick: 0,
            ack_timer: None,
            compressed_ack: 0,
            compressed_ack_rcv_nxt: u64::MAX,
            dup_ack_counter: 0,
            rcv_rtt_ns: 0,
            hs_timer: None,
            hs_rtt: RttEstimator::new(),
            hs_sent_at: SimTime::ZERO,
            hs_tries: 0,
            got_data: false,
            ts_offset: 0,
            relay_limit: None,
            relay_drained: 0,
            last_adv_edge: 0,
            hold_request: false,
            request_due: false,
            ece: false,
            completion: None,
            fin_seen: false,
            closed_at: None,
            stats: ReceiverStats::default(),
        }
    }

    fn file_size(&self) -> Option<u64> {
        match self.cfg.app {
            AppConfig::File { size_bytes } => Some(size_bytes),
            AppConfig::Bulk | AppConfig::Cbr { .. } => None,
        }
    }

    /// The scenario's `rwnd` as this receiver applies it (for traces).
    pub fn rwnd_bytes(&self) -> u64 {
        self.cfg.rwnd_bytes
    }

    /// Bytes held out of order (for tests and traces).
    pub fn ofo_bytes(&self) -> u64 {
        self.ofo_bytes
    }

    /// The window the latest ACK advertised, in bytes (for tests and traces).
    pub fn last_window(&self) -> u64 {
        self.last_adv_edge.saturating_sub(self.rcv_wup)
    }

    /// Linux's receive-buffer state (None for ns-2's sink), for tests and traces.
    pub fn rcv_space(&self) -> Option<&RcvSpace> {
        self.space.as_ref()
    }

    pub fn timer_deadline(&self, slot: TimerSlot) -> Option<SimTime> {
        match slot {
            TimerSlot::Ack => self.ack_timer,
            TimerSlot::Handshake => self.hs_timer,
            _ => None,
        }
    }

    fn control(&self, now: SimTime, kind: PacketKind) -> Packet {
        let ts = if self.cfg.timestamps {
            packet::TS_OPTION_BYTES
        } else {
            0
        };
        let mut p = Packet {
            flow: self.flow,
            kind,
            ts_val: if self.cfg.timestamps {
                (now.ns() + self.ts_offset).max(1)
            } else {
                0
            },
            ts_ecr: self.ts_recent,
            ..Default::default()
        };
        p.wire_bytes = match kind {
            PacketKind::Syn | PacketKind::SynAck => packet::BASE_HEADER_BYTES + SYN_OPTION_BYTES,
            PacketKind::Request => packet::BASE_HEADER_BYTES + ts + REQUEST_BYTES,
            _ => packet::BASE_HEADER_BYTES + ts,
        };
        p
    }

    /// The flow starts: a file client opens the connection and will send its request.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.start = now;
        if self.file_size().is_some() {
            self.state = RcvState::SynSent;
            self.hs_sent_at = now;
            out.push(self.control(now, PacketKind::Syn));
            self.hs_timer = Some(now + self.hs_rtt.rto());
        }
    }

    /// A packet from the sender.
    pub fn on_packet(&mut self, now: SimTime, p: &Packet, out: &mut Vec<Packet>) {
        match p.kind {
            PacketKind::Syn => {
                // Bulk server: answer (again) with a SYN-ACK.
                if matches!(self.state, RcvState::Closed | RcvState::SynReceived) {
                    self.state = RcvState::SynReceived;
                    let mut syn_ack = self.control(now, PacketKind::SynAck);
                    syn_ack.wnd = match &self.space {
                        Some(space) => space.syn_window(),
                        None => self.window().min(65_535),
                    };
                    out.push(syn_ack);
                }
            }
            PacketKind::SynAck => {
                if self.state == RcvState::SynSent
                    || (self.state == RcvState::Established && !self.got_data)
                {
                    if self.state == RcvState::SynSent && self.hs_tries == 0 {
                        self.hs_rtt.sample(now.since(self.hs_sent_at), 0, 0);
                    }
                    if self.state == RcvState::SynSent {
                        self.establish(now);
                    }
                    if self.cfg.timestamps {
                        self.ts_recent = p.ts_val;
                    }
                    if self.hold_request {
                        self.request_due = true;
                        return;
                    }
                    self.send_request(now, out);
                }
            }
            PacketKind::Ack => match self.state {
                RcvState::SynReceived => self.establish(now),
                RcvState::LastAck => {
                    self.state = RcvState::Done;
                    self.closed_at = Some(now);
                    self.hs_timer = None;
                }
                _ => {}
            },
            PacketKind::Data => self.on_data(now, p, out),
            PacketKind::Request | PacketKind::Udp | PacketKind::Fin => {}
        }
    }

    /// The handshake completed (Linux `tcp_init_transfer`: right-sizing starts measuring).
    fn establish(&mut self, now: SimTime) {
        self.state = RcvState::Established;
        if let Some(space) = &mut self.space {
            space.established(now, self.copied_seq);
        }
    }

    fn send_request(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let mut p = self.control(now, PacketKind::Request);
        p.wnd = self.advertise().min(65_535);
        self.rcv_wup = self.rcv_nxt;
        out.push(p);
        self.hs_timer = Some(now + self.hs_rtt.rto());
    }

    /// The request may go now (a PEP got the client's request downstream).
    pub fn release_request(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.hold_request = false;
        if self.request_due {
            self.request_due = false;
            self.send_request(now, out);
        }
    }

    /// The relay released data up to `drained_total` (downstream snd_una): open the window
    /// again, and tell the sender if it grew by at least two segments or reopened from below
    /// one (Linux sends a window update when the application frees that much space).
    pub fn drain(&mut self, now: SimTime, drained_total: u64, out: &mut Vec<Packet>) {
        if drained_total <= self.relay_drained {
            return;
        }
        self.relay_drained = drained_total;
        if self.state != RcvState::Established || !self.got_data {
            return;
        }
        let mss = self.cfg.mss as u64;
        let before = self.last_adv_edge.saturating_sub(self.rcv_nxt);
        let edge = self.rcv_nxt + self.free_space();
        if edge >= self.last_adv_edge + 2 * mss || (before < mss && edge >= self.rcv_nxt + mss) {
            self.send_ack(now, out);
        }
    }

    /// Handshake/request retransmission timer of a file client, and the ACK timer.
    pub fn on_timer(&mut self, now: SimTime, slot: TimerSlot, out: &mut Vec<Packet>) {
        match slot {
            TimerSlot::Ack if self.ack_timer.is_some_and(|t| t <= now) => {
                self.ack_timer = None;
                self.send_ack(now, out);
            }
            TimerSlot::Handshake if self.state == RcvState::LastAck => {
                if self.hs_timer.is_none_or(|t| t > now) {
                    return;
                }
                // Our FIN or its ACK was lost: send it again, backing off (RFC 6298 §5.5).
                let rto = (self.hs_rtt.rto() * 2).min(crate::tcp::linux::rtt::RTO_MAX);
                self.hs_rtt.set_rto(rto);
                self.send_fin(now, out);
            }
            TimerSlot::Handshake => {
                if self.hs_timer.is_none_or(|t| t > now) || self.got_data {
                    return;
                }
                self.hs_tries += 1;
                let rto = (self.hs_rtt.rto() * 2).min(crate::tcp::linux::rtt::RTO_MAX);
                self.hs_rtt.set_rto(rto);
                match self.state {
                    RcvState::SynSent => {
                        self.hs_sent_at = now;
                        out.push(self.control(now, PacketKind::Syn));
                    }
                    RcvState::Established if !self.hold_request => {
                        out.push(self.control(now, PacketKind::Request))
                    }
                    _ => {
                        self.hs_timer = None;
                        return;
                    }
                }
                self.hs_timer = Some(now + rto);
            }
            _ => {}
        }
    }

    fn on_data(&mut self, now: SimTime, p: &Packet, out: &mut Vec<Packet>) {
        if self.state == RcvState::SynReceived {
            self.establish(now);
        }
        // After our FIN, data can only be a retransmission whose ACK (carried by our FIN) was
        // lost: it is answered like any duplicate, below.
        if !matches!(self.state, RcvState::Established | RcvState::LastAck) {
            return;
        }
        if p.has(flags::FIN) {
            self.fin_seen = true;
        }
        if !self.got_data {
            self.got_data = true;
            self.hs_timer = None;
            self.quick = match &self.space {
                // Linux tcp_incr_quickack: half the window offered, in segments (2 if none).
                Some(space) => match space.rcv_wnd / (2 * self.cfg.mss as u64) {
                    0 => 2,
                    n => n.min(MAX_QUICKACKS as u64) as u32,
                },
                None => (self.cfg.rwnd_bytes / (2 * self.cfg.mss as u64))
                    .clamp(2, MAX_QUICKACKS as u64) as u32,
            };
        }
        if p.len == 0 {
            // A zero-window probe: answer with the current window.
            self.send_ack(now, out);
            return;
        }
        self.stats.segments_received += 1;
        let seq = p.seq;
        let end = p.seq + p.len as u64;
        if self.cfg.timestamps {
            // RFC 7323 TS.Recent: only from segments at or below the last ACKed sequence.
            if seq <= self.rcv_wup {
                self.ts_recent = p.ts_val;
            }
            match &mut self.space {
                Some(space) if p.ts_ecr != 0 => {
                    space.rtt_measure_ts(now.ns() + self.ts_offset, p.ts_ecr, p.len as u64)
                }
                Some(_) => {}
                None if p.ts_ecr != 0 && p.len >= self.cfg.mss => {
                    let m = (now.ns() + self.ts_offset).saturating_sub(p.ts_ecr).max(1);
                    self.rcv_rtt_ns = if self.rcv_rtt_ns == 0 {
                        m
                    } else {
                        self.rcv_rtt_ns - self.rcv_rtt_ns / 8 + m / 8
                    };
                }
                None => {}
            }
        }
        // Linux tcp_ecn_accept_cwr, on every data segment: the sender has reduced its
        // window (its cwnd may now be tiny), so stop echoing (RFC 3168) and ACK at once.
        // Under DCTCP the echo is the CE state of the next in-window segment anyway (Linux
        // re-sets TCP_ECN_DEMAND_CWR from it right after), so only the immediate ACK matters.
        if self.cfg.ecn != EcnEcho::Off && p.has(flags::CWR) {
            if self.cfg.ecn == EcnEcho::Classic {
                self.ece = false;
            }
            self.quick = self.quick.max(1);
        }
        if end > self.rcv_nxt {
            // Linux tcp_data_ecn_check runs for in-window data only (tcp_event_data_recv,
            // tcp_data_queue_ofo), not for an entirely old duplicate.
            self.ecn_check_ce(now, p, out);
        }

        if end <= self.rcv_nxt {
            // Entirely old: a spurious retransmission. D-SACK it and ACK at once.
            self.stats.dup_bytes += p.len as u64;
            if self.cfg.sack && self.cfg.dsack {
                self.dsack = Some(SackBlock { start: seq, end });
            }
            self.quick = MAX_QUICKACKS;
            self.send_ack(now, out);
            return;
        }
        if seq <= self.rcv_nxt {
            if seq < self.rcv_nxt {
                self.stats.dup_bytes += self.rcv_nxt - seq;
                if self.cfg.sack && self.cfg.dsack {
                    self.dsack = Some(SackBlock {
                        start: seq,
                        end: self.rcv_nxt,
                    });
                }
            }
            let had_ofo = !self.ofo.is_empty();
            self.advance(end);
            if self.space.is_some() {
                self.event_data_recv(now, p.len);
            }
            // Pull in out-of-order data the segment made contiguous.
            while let Some((s, e)) = self.ofo.first() {
                if s > self.rcv_nxt {
                    break;
                }
                self.ofo.pop_first();
                self.ofo_bytes -= e - s;
                if e > self.rcv_nxt {
                    self.advance(e);
                }
            }
            self.sack_remove();
            if let Some(size) = self.file_size() {
                if self.rcv_nxt >= size && self.completion.is_none() {
                    self.completion = Some(now);
                }
            }
            if had_ofo && self.ofo.is_empty() {
                // RFC 5681 §4.2: ACK at once when a gap is filled.
                self.send_ack(now, out);
            } else {
                self.ack_check(now, out);
            }
            if self.space.is_some() {
                self.app_read(now, out);
            }
            // A client application reads the end of the file and closes at once; a PEP
            // closes when the connection on its other side does (`close`, from the relay).
            if self.relay_limit.is_none() {
                self.close(now, out);
            }
            return;
        }
        // Out of order. Linux flushes held (compressed) ACKs before this segment would push
        // a SACK block beyond the first two, so the sender hears of every block
        // (`tcp_sack_compress_send_ack`, TCP_SACK_BLOCKS_EXPECTED = 2).
        if self.compressed_ack > 0 && self.cfg.sack && self.sack_slot(seq, end) >= 2 {
            self.send_ack(now, out);
        }
        let rmem = self.rmem_alloc();
        self.insert_ofo(seq, end);
        let truesize = self.segment_truesize(p.len);
        let span = self.ofo_span();
        if let Some(space) = &mut self.space {
            if space.ofo_queued(p.len as u64, truesize, rmem, self.cfg.sack, span) {
                self.quick |= 1;
            }
        }
        self.ack_check(now, out);
    }

    /// Linux `tcp_event_data_recv` for the in-order segment just queued: the window may open
    /// a step, which asks for an immediate ACK (`icsk_ack.quick |= 1`: an even quick-ACK
    /// count gains one, so the ACK does not use up a quick ACK).
    fn event_data_recv(&mut self, now: SimTime, len: u32) {
        let rmem = self.rmem_alloc();
        let truesize = self.segment_truesize(len);
        let rcv_nxt = self.rcv_nxt;
        let space = self.space.as_mut().expect("Linux receiver");
        if space.data_recv(now, len as u64, truesize, rcv_nxt, rmem) {
            self.quick |= 1;
        }
    }

    /// The application reads what is in order (Linux `tcp_recvmsg`): right-sizing measures
    /// the read (`tcp_rcv_space_adjust`), and if the window on offer has become small next to
    /// the one we could offer, a window update goes out (`tcp_cleanup_rbuf`).
    fn app_read(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.copied_seq = self.rcv_nxt;
        let span = self.ofo_span();
        let (rcv_nxt, rcv_wup) = (self.rcv_nxt, self.rcv_wup);
        let rmem = self.rmem_alloc();
        let cap = self.relay_free();
        let space = self.space.as_mut().expect("Linux receiver");
        space.space_adjust(now, rcv_nxt, rcv_nxt, span);
        // No window updates once the peer's FIN is in (RCV_SHUTDOWN).
        if !self.fin_seen && space.window_update_due(rcv_nxt, rcv_wup, rmem, cap) {
            // A pure window update, with nothing new to acknowledge, uses up no quick ACK.
            let scheduled = self.ack_timer.is_some() || self.rcv_nxt > self.rcv_wup;
            let quick = self.quick;
            self.send_ack(now, out);
            if !scheduled {
                self.quick = quick;
            }
        }
    }

    /// Truesize of a segment with `len` payload bytes.
    fn segment_truesize(&self, len: u32) -> u64 {
        skb_truesize(Packet::wire_size(len, self.cfg.timestamps, 0) as u64)
    }

    /// Linux `sk_rmem_alloc`: the truesize of what the buffer holds, unread in-order data and
    /// out-of-order data, counted in full-sized segments.
    fn rmem_alloc(&self) -> u64 {
        let mss = self.cfg.mss as u64;
        let unread = self.rcv_nxt - self.copied_seq;
        // mostly nothing or one segment each (the application reads at once; no holes), and
        // a division costs more than the rest of the computation
        let segments = |bytes: u64| match bytes {
            0 => 0,
            b if b <= mss => 1,
            b => b.div_ceil(mss),
        };
        (segments(unread) + segments(self.ofo_bytes)) * self.truesize
    }

    /// From rcv_nxt to the end of the highest out-of-order data.
    fn ofo_span(&self) -> u64 {
        self.ofo
            .last()
            .map_or(0, |(_, e)| e.saturating_sub(self.rcv_nxt))
    }

    /// The whole file and the sender's FIN are in.
    pub fn at_eof(&self) -> bool {
        self.fin_seen && self.file_size().is_some_and(|size| self.rcv_nxt >= size)
    }

    /// The application closes after reading the end of the file: FIN|ACK, which carries
    /// the ACK a delayed-ACK timer may still hold (Linux `tcp_send_fin`), then LAST-ACK with
    /// the FIN retransmitted on a timeout until acknowledged. No-op before the end of file.
    pub fn close(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.state != RcvState::Established || !self.at_eof() {
            return;
        }
        self.state = RcvState::LastAck;
        self.send_fin(now, out);
    }

    fn send_fin(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let mut p = self.control(now, PacketKind::Fin);
        p.ack = self.rcv_nxt;
        p.wnd = self.advertise();
        self.rcv_wup = self.rcv_nxt;
        self.ack_timer = None;
        self.compressed_ack = 0;
        out.push(p);
        self.hs_timer = Some(now + self.hs_rtt.rto());
    }

    /// Linux `tcp_data_ecn_check` (with DCTCP's `dctcp_ece_ack_update` for `EcnEcho::Dctcp`).
    fn ecn_check_ce(&mut self, now: SimTime, p: &Packet, out: &mut Vec<Packet>) {
        match self.cfg.ecn {
            EcnEcho::Off => {}
            EcnEcho::Classic => {
                if p.has(flags::CE) && !self.ece {
                    self.ece = true;
                    self.quick = self.quick.max(2);
                }
            }
            EcnEcho::Dctcp => {
                let ce = p.has(flags::CE);
                if ce != self.ece {
                    // Report the old state for data already received (the ACK of the prior
                    // rcv_nxt), then the new one at once.
                    if self.ack_timer.is_some() {
                        self.send_ack(now, out);
                    }
                    self.ece = ce;
                    self.quick = self.quick.max(1);
                }
            }
        }
    }

    fn advance(&mut self, new_rcv_nxt: u64) {
        self.stats.bytes_delivered += new_rcv_nxt - self.rcv_nxt;
        self.rcv_nxt = new_rcv_nxt;
    }

    /// Queue `[seq, end)` out of order and update the SACK list.
    fn insert_ofo(&mut self, seq: u64, end: u64) {
        let mut covered = 0u64;
        let mut absorbed_bytes = 0u64;
        let (ms, me) = self.ofo.insert(seq, end, |s, e| {
            covered += e.min(end).saturating_sub(s.max(seq));
            absorbed_bytes += e - s;
        });
        self.ofo_bytes = self.ofo_bytes - absorbed_bytes + (me - ms);
        if covered == end - seq && self.cfg.sack && self.cfg.dsack {
            self.dsack = Some(SackBlock { start: seq, end });
        }
        self.stats.dup_bytes += covered;
        if !self.cfg.sack {
            return;
        }
        // The merged block goes first; blocks it absorbed disappear (Linux
        // tcp_sack_new_ofo_skb + tcp_sack_maybe_coalesce).
        let mut list = [SackBlock::default(); NUM_SACKS];
        list[0] = SackBlock { start: ms, end: me };
        let mut n = 1;
        for b in &self.sacks[..self.n_sacks] {
            if (b.end < ms || b.start > me) && n < NUM_SACKS {
                list[n] = *b;
                n += 1;
            }
        }
        self.sacks = list;
        self.n_sacks = n;
    }

    /// Index of the SACK block `[seq, end)` extends, or the number of blocks if it starts a
    /// new one.
    fn sack_slot(&self, seq: u64, end: u64) -> usize {
        self.sacks[..self.n_sacks]
            .iter()
            .position(|b| seq <= b.end && end >= b.start)
            .unwrap_or(self.n_sacks)
    }

    /// Drop SACK blocks now covered by the cumulative ACK (Linux `tcp_sack_remove`).
    fn sack_remove(&mut self) {
        let mut n = 0;
        for i in 0..self.n_sacks {
            let b = self.sacks[i];
            if b.start > self.rcv_nxt {
                self.sacks[n] = b;
                n += 1;
            }
        }
        self.n_sacks = n;
    }

    /// Linux `__tcp_ack_snd_check`.
    fn ack_check(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let two_segments = self.rcv_nxt - self.rcv_wup > self.cfg.mss as u64;
        if !self.cfg.delayed_ack || two_segments || self.quick > 0 {
            self.send_ack(now, out);
            return;
        }
        if self.ofo.is_empty() {
            // Delayed ACK; an already pending timer keeps its earlier deadline.
            if self.ack_timer.is_none() {
                self.ack_timer = Some(now + DELACK);
            }
            return;
        }
        if !self.cfg.sack || self.compressed_ack >= COMP_SACK_NR {
            self.send_ack(now, out);
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < 3 {
            self.dup_ack_counter += 1;
            self.send_ack(now, out);
            return;
        }
        self.compressed_ack += 1;
        if self.ack_timer.is_some() {
            return;
        }
        let rcv_rtt_ns = match &self.space {
            Some(space) => space.rcv_rtt_ns(),
            None => self.rcv_rtt_ns,
        };
        let rtt_5pct = SimDuration(rcv_rtt_ns / 20);
        let delay = if rcv_rtt_ns == 0 {
            COMP_SACK_DELAY
        } else {
            rtt_5pct.min(COMP_SACK_DELAY)
        };
        self.ack_timer = Some(now + delay);
    }

    /// The window of an outgoing ACK, FIN or request: Linux's (`tcp_select_window`), or
    /// ns-2's fixed window.
    fn advertise(&mut self) -> u64 {
        if self.space.is_none() {
            return self.window();
        }
        let rmem = self.rmem_alloc();
        let cap = self.relay_free();
        let (rcv_nxt, rcv_wup) = (self.rcv_nxt, self.rcv_wup);
        let space = self.space.as_mut().expect("Linux receiver");
        let (wnd, quick_off) = space.select_window(rcv_nxt, rcv_wup, rmem, cap);
        if quick_off {
            self.quick = 0;
        }
        wnd
    }

    /// At a PEP: the relay buffer's free space.
    fn relay_free(&self) -> Option<u64> {
        self.relay_limit.map(|limit| {
            let held = self.rcv_nxt.saturating_sub(self.relay_drained) + self.ofo_bytes;
            limit.saturating_sub(held)
        })
    }

    /// ns-2's advertised window: free buffer space, never retreating the right edge (RFC 7323
    /// §2.4).
    fn window(&mut self) -> u64 {
        let free = self.free_space();
        self.right_edge = self.right_edge.max(self.rcv_nxt + free);
        self.right_edge - self.rcv_nxt
    }

    /// The window we could offer beyond rcv_nxt: Linux's, or ns-2's socket buffer minus
    /// out-of-order data; at a PEP at most the relay buffer's free space.
    fn free_space(&self) -> u64 {
        let free = match &self.space {
            Some(space) => space.raw_window(self.rmem_alloc()).0,
            None => self.cfg.rwnd_bytes.saturating_sub(self.ofo_bytes),
        };
        self.relay_free().map_or(free, |relay| free.min(relay))
    }

    fn send_ack(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let mut p = self.control(now, PacketKind::Ack);
        p.ack = self.rcv_nxt;
        p.wnd = self.advertise();
        self.last_adv_edge = self.rcv_nxt + p.wnd;
        if self.ece {
            p.flags |= flags::ECE;
        }
        if self.cfg.sack {
            let max_blocks = if self.cfg.timestamps { 3 } else { 4 };
            let mut n = 0;
            if let Some(d) = self.dsack.take() {
                p.sack[0] = d;
                p.flags |= flags::DSACK;
                n = 1;
            }
            for b in &self.sacks[..self.n_sacks] {
                if n >= max_blocks {
                    break;
                }
                p.sack[n] = *b;
                n += 1;
            }
            p.n_sack = n as u8;
            p.wire_bytes = Packet::wire_size(0, self.cfg.timestamps, p.n_sack);
        }
        self.rcv_wup = self.rcv_nxt;
        self.quick = self.quick.saturating_sub(1);
        self.ack_timer = None;
        self.compressed_ack = 0;
        self.stats.acks_sent += 1;
        out.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::linux::rtt::RTO_INIT;

    fn rx(delayed: bool) -> Receiver {
        let mut r = Receiver::new(
            0,
            ReceiverConfig {
                mss: 1000,
                sack: true,
                dsack: true,
                timestamps: true,
                delayed_ack: delayed,
                rwnd_bytes: 100_000,
                // The ACK-policy tests below hold the window still (ns-2's fixed one); the
                // Linux window's own ACKs have their tests further down.
                rcvbuf: RcvBufPolicy::Fixed,
                window_scaling: true,
                app: AppConfig::Bulk,
                ecn: EcnEcho::Off,
            },
        );
        r.state = RcvState::Established;
        r
    }

    fn rx_ecn(ecn: EcnEcho) -> Receiver {
        let mut r = rx(true);
        r.cfg.ecn = ecn;
        r
    }

    fn seg(seq: u64) -> Packet {
        Packet {
            kind: PacketKind::Data,
            seq,
            len: 1000,
            ts_val: 7,
            ..Default::default()
        }
    }

    #[test]
    fn after_quickack_every_second_segment_is_acked() {
        let mut r = rx(true);
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        r.quick = 0; // leave quick-ACK mode
        out.clear();
        r.on_data(SimTime(1), &seg(1000), &mut out);
        assert!(out.is_empty(), "first segment: delayed");
        assert_eq!(r.ack_timer, Some(SimTime(1) + DELACK));
        r.on_data(SimTime(2), &seg(2000), &mut out);
        assert_eq!(out.len(), 1, "second full segment: ACK now");
        assert_eq!(out[0].ack, 3000);
        assert_eq!(r.ack_timer, None);
    }

    #[test]
    fn out_of_order_segments_are_sacked_most_recent_first() {
        let mut r = rx(true);
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        out.clear();
        r.on_data(SimTime(1), &seg(2000), &mut out); // hole at 1000
        r.on_data(SimTime(2), &seg(5000), &mut out); // second hole
        r.on_data(SimTime(3), &seg(3000), &mut out); // extends first block
        assert_eq!(out.len(), 3, "first three out-of-order ACKs are immediate");
        let last = out.last().unwrap();
        assert_eq!(last.ack, 1000);
        assert_eq!(
            last.sack_blocks(),
            &[
                SackBlock {
                    start: 2000,
                    end: 4000
                },
                SackBlock {
                    start: 5000,
                    end: 6000
                }
            ]
        );
        // Fill the first hole: ACK at once, blocks below rcv_nxt are gone.
        out.clear();
        r.on_data(SimTime(4), &seg(1000), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 4000);
        assert_eq!(
            out[0].sack_blocks(),
            &[SackBlock {
                start: 5000,
                end: 6000
            }]
        );
        assert_eq!(r.stats.bytes_delivered, 4000);
    }

    #[test]
    fn held_compressed_ack_is_flushed_before_a_sack_block_is_displaced() {
        let mut r = rx(true);
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        r.quick = 0;
        out.clear();
        // Holes at 1000, 3000, 5000, ...: three immediate dupACKs, then compression.
        for (i, s) in [2000u64, 4000, 6000].iter().enumerate() {
            r.on_data(SimTime(1 + i as u64), &seg(*s), &mut out);
        }
        assert_eq!(out.len(), 3);
        r.on_data(SimTime(10), &seg(6000 + 1000), &mut out); // extends the front block: held
        assert_eq!(out.len(), 3, "compressed");
        // A new block while two exist would push the 2000 block down: flush first.
        r.on_data(SimTime(11), &seg(9000), &mut out);
        assert_eq!(out.len(), 4);
        let flushed = &out[3];
        assert_eq!(
            flushed.sack_blocks()[0],
            SackBlock {
                start: 6000,
                end: 8000
            }
        );
    }

    #[test]
    fn duplicate_segment_gets_a_dsack() {
        let mut r = rx(true);
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        out.clear();
        r.on_data(SimTime(1), &seg(0), &mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0].has(flags::DSACK));
        assert_eq!(
            out[0].sack_blocks()[0],
            SackBlock {
                start: 0,
                end: 1000
            }
        );
        assert_eq!(r.stats.bytes_delivered, 1000);
        assert_eq!(r.stats.dup_bytes, 1000);
    }

    #[test]
    fn ts_recent_comes_from_the_segment_at_the_left_edge() {
        // With delayed ACKs, the ACK for two segments echoes the first one's TSval.
        let mut r = rx(true);
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out); // first segment: quick-ACK mode starts
        r.quick = 0;
        out.clear();
        let mut a = seg(1000);
        a.ts_val = 100;
        let mut b = seg(2000);
        b.ts_val = 200;
        r.on_data(SimTime(1), &a, &mut out);
        r.on_data(SimTime(2), &b, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ts_ecr, 100);
    }

    #[test]
    fn window_shrinks_by_out_of_order_data_but_right_edge_never_retreats() {
        let mut r = rx(false);
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        assert_eq!(out[0].wnd, 100_000);
        r.on_data(SimTime(1), &seg(2000), &mut out);
        // Right edge stays at 1000 + 100000; window relative to rcv_nxt=1000 is 100000.
        assert_eq!(out[1].wnd, 100_000);
    }

    fn ce(seq: u64) -> Packet {
        let mut p = seg(seq);
        p.flags |= flags::ECT | flags::CE;
        p
    }

    #[test]
    fn dctcp_ce_flip_flushes_the_delayed_ack_with_the_old_state_then_acks_at_once() {
        let mut r = rx_ecn(EcnEcho::Dctcp);
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        r.quick = 0;
        out.clear();
        r.on_data(SimTime(1), &seg(1000), &mut out); // delayed
        assert!(out.is_empty());
        // CE arrives with an ACK pending: first the pending ACK (ack 2000, no ECE), then
        // the CE segment's own ACK (ack 3000, ECE) without waiting for a second segment.
        r.on_data(SimTime(2), &ce(2000), &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].ack, out[0].has(flags::ECE)), (2000, false));
        assert_eq!((out[1].ack, out[1].has(flags::ECE)), (3000, true));
        // Still CE: no flip, normal delayed ACKs, each echoing ECE.
        out.clear();
        r.on_data(SimTime(3), &ce(3000), &mut out);
        assert!(out.is_empty());
        r.on_data(SimTime(4), &ce(4000), &mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0].has(flags::ECE));
        // Back to not-CE: immediate ACK without ECE (nothing pending to flush).
        out.clear();
        r.on_data(SimTime(5), &seg(5000), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].ack, out[0].has(flags::ECE)), (6000, false));
    }

    #[test]
    fn dctcp_duplicate_segment_does_not_change_the_ce_state() {
        // Linux checks CE only for in-window data: an old CE-marked duplicate is D-SACKed
        // but the echo stays as it was.
        let mut r = rx_ecn(EcnEcho::Dctcp);
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        out.clear();
        r.on_data(SimTime(1), &ce(0), &mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0].has(flags::DSACK));
        assert!(!out[0].has(flags::ECE));
        assert!(!r.ece);
    }

    #[test]
    fn classic_ece_is_held_until_cwr_which_is_acked_at_once() {
        let mut r = rx_ecn(EcnEcho::Classic);
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        r.quick = 0;
        out.clear();
        r.on_data(SimTime(1), &ce(1000), &mut out);
        assert_eq!(out.len(), 1, "CE: quick-ACK mode");
        assert!(out[0].has(flags::ECE));
        r.quick = 0;
        out.clear();
        let mut plain = seg(2000);
        plain.flags |= flags::ECT;
        r.on_data(SimTime(2), &plain, &mut out); // delayed, but ECE still held
        let mut cwr = seg(3000);
        cwr.flags |= flags::ECT | flags::CWR;
        r.on_data(SimTime(3), &cwr, &mut out);
        assert_eq!(out.len(), 1);
        assert!(!out[0].has(flags::ECE), "CWR stops the echo");
        r.quick = 0;
        out.clear();
        let mut cwr2 = seg(4000);
        cwr2.flags |= flags::ECT | flags::CWR;
        r.on_data(SimTime(4), &cwr2, &mut out);
        assert_eq!(
            out.len(),
            1,
            "a CWR segment is ACKed at once (tcp_ecn_accept_cwr)"
        );
    }

    // --- Linux receive window (numbers worked from the kernel's formulas; the windows
    // and ACK sizes are those a tcp_probe trace of Linux 6.18 shows) -----------------

    /// A Linux receiver (MSS 1448 with timestamps), established at `t_ns`.
    fn linux_rx(rcvbuf: RcvBufPolicy, rwnd_bytes: u64, t_ns: u64) -> Receiver {
        let mut r = Receiver::new(
            0,
            ReceiverConfig {
                mss: 1448,
                sack: true,
                dsack: true,
                timestamps: true,
                delayed_ack: true,
                rwnd_bytes,
                rcvbuf,
                window_scaling: true,
                app: AppConfig::Bulk,
                ecn: EcnEcho::Off,
            },
        );
        r.establish(SimTime(t_ns));
        r
    }

    /// Segment `k` (from 1) of a 1448-byte stream, echoing `ts_ecr` (0: none).
    fn seg_k(k: u64, ts_ecr: u64) -> Packet {
        Packet {
            kind: PacketKind::Data,
            seq: (k - 1) * 1448,
            len: 1448,
            ts_val: 7,
            ts_ecr,
            ..Default::default()
        }
    }

    /// Feed segment `k` at `t_ns`; the window of each ACK it drew (none: delayed).
    fn feed(r: &mut Receiver, k: u64, t_ns: u64, ts_ecr: u64) -> Vec<u64> {
        let mut out = vec![];
        r.on_data(SimTime(t_ns), &seg_k(k, ts_ecr), &mut out);
        out.iter().map(|p| p.wnd).collect()
    }

    #[test]
    fn linux_initial_window_is_45_segments_of_the_128k_default_buffer() {
        // tcp_rmem[1] = 131072 B at the default ratio 1/2 backs 65536 B: 45 whole segments
        // (65160 B) are offered. init_buffer_space keeps one segment back from the clamp
        // (65536 - 1448 = 64088), and right-sizing expects 10 segments per RTT at first.
        let r = linux_rx(RcvBufPolicy::Autotune, 6 * 1024 * 1024, 0);
        let s = r.rcv_space().unwrap();
        assert_eq!((s.rcv_wnd, s.syn_window()), (65_160, 65_160));
        assert_eq!((s.window_clamp, s.rcv_ssthresh), (64_088, 64_088));
        assert_eq!((s.rcvbuf, s.space, s.scaling_ratio), (131_072, 14_480, 128));
        // Window scale: ilog2(tcp_rmem[2] = 6 MiB) - 15 = 22 - 15 = 7.
        assert_eq!(s.wscale, 7);
    }

    #[test]
    fn linux_first_segments_are_each_acked_while_rcv_ssthresh_opens() {
        // Segment 1 (truesize 2304) sets the ratio to 1448 * 256 / 2304 = 160: the clamp
        // becomes 131072 * 160 / 256 = 81920 and rcv_ssthresh the window offered, 65160.
        // With the segment held, the free space is (131072 - 2304) * 160 / 256 = 80480, so
        // rcv_ssthresh grows by 2 x 1448 per segment: 68056, 70952, 73848, 76744, 79640, then
        // the last 840 B to 80480 (windows aligned up to 128 B, the window scale 7). Each step
        // ACKs at once, and quick |= 1 turns the 16 quick ACKs' even count odd, so the steps
        // use none of them: 6 + 16 = 22 single ACKs, then one per two segments.
        let mut r = linux_rx(RcvBufPolicy::Autotune, 6 * 1024 * 1024, 0);
        let mut windows = vec![];
        for k in 1..=22 {
            let acks = feed(&mut r, k, k * 1_200_000, 0);
            assert_eq!(acks.len(), 1, "segment {k} is ACKed at once");
            windows.push(acks[0]);
        }
        assert_eq!(
            windows[..7],
            [68_096, 71_040, 73_856, 76_800, 79_744, 80_512, 80_512]
        );
        assert_eq!(r.rcv_space().unwrap().rcv_ssthresh, 80_480);
        // Once rcv_ssthresh has reached the free space, ACKs pair up.
        assert!(feed(&mut r, 23, 23 * 1_200_000, 0).is_empty());
        assert_eq!(feed(&mut r, 24, 24 * 1_200_000, 0), [80_512]);
    }

    #[test]
    fn linux_right_sizing_grows_the_buffer_and_single_acks_resume() {
        // RTT 42 ms, 1.2 ms per segment: rounds of 10, 20 and 40 segments from 42, 84 and
        // 126 ms; the handshake completed at 42 ms, and each round echoes a TSval one RTT old,
        // so the receiver's RTT estimate is 42 ms (timestamps count in ms).
        let ms = 1_000_000u64;
        let mut r = linux_rx(RcvBufPolicy::Autotune, 6 * 1024 * 1024, 42 * ms);
        let at = |k: u64| match k {
            1..=10 => 42 * ms + (k - 1) * 1_200_000,
            11..=30 => 84 * ms + (k - 11) * 1_200_000,
            _ => 126 * ms + (k - 31) * 1_200_000,
        };
        let echo = |k: u64| match k {
            1..=10 => 1,
            11..=30 => 42 * ms,
            _ => 84 * ms,
        };
        let mut acks = vec![];
        for k in 1..=30 {
            acks.push(feed(&mut r, k, at(k), echo(k)).len());
        }
        // 22 single ACKs (see above), then pairs.
        assert_eq!(acks[..22], [1; 22]);
        assert_eq!(acks[22..], [0, 1, 0, 1, 0, 1, 0, 1]);
        // The first measurement (segment 11, one RTT after the handshake): 11 segments read,
        // 15928 B > 14480 B: rcvwin = 2 x 15928 + 2 x (31856 x 1448 / 14480 = 3185) = 38226,
        // whose 38226 x 256 / 160 = 61161 B of buffer are less than the 131072 B held.
        assert_eq!(r.rcv_space().unwrap().space, 15_928);
        assert_eq!(r.rcv_space().unwrap().rcvbuf, 131_072);
        // Segment 31 (126 ms) still finds no room, and waits for a second one. Its read is
        // the next measurement: 20 segments (28960 B) since segment 11. rcvwin = 2 x 28960
        // plus 2 x (57920 x (28960 - 15928) / 15928 = 47389) = 152698; the buffer grows to
        // 152698 x 256 / 160 = 244316 B, the clamp to 244316 x 160 / 256 = 152697 B.
        assert!(feed(&mut r, 31, at(31), echo(31)).is_empty());
        let s = r.rcv_space().unwrap();
        assert_eq!(
            (s.space, s.rcvbuf, s.window_clamp),
            (28_960, 244_316, 152_697)
        );
        // Room again: rcv_ssthresh opens 2896 B per segment from 80480 (83376, 86272, 89168,
        // 92064; aligned to 128 B) and every segment is ACKed at once.
        let mut windows = vec![];
        for k in 32..=35 {
            let a = feed(&mut r, k, at(k), echo(k));
            assert_eq!(a.len(), 1, "segment {k} is ACKed at once");
            windows.push(a[0]);
        }
        assert_eq!(windows, [83_456, 86_272, 89_216, 92_160]);
    }

    #[test]
    fn linux_explicit_rwnd_is_a_fixed_buffer_that_right_sizing_leaves_alone() {
        // SO_RCVBUF = 100000 B: a 200000 B buffer, of which ratio 1/2 backs 100000 B: 69
        // whole segments (99912 B) offered, the SYN-ACK's field carrying 65535. The clamp
        // (100000 - 1448 = 98552 after init) grows with the ratio 160 to 125000 B; the window
        // then opens up to the free space with one segment held, (200000 - 2304) x 160 /
        // 256 = 123560 B (window scale ilog2(100000) - 15 = 1), and no further: the buffer
        // stays at 200000 B however much is read per RTT.
        let ms = 1_000_000u64;
        let mut r = linux_rx(RcvBufPolicy::Locked, 100_000, 42 * ms);
        {
            let s = r.rcv_space().unwrap();
            assert_eq!((s.rcv_wnd, s.syn_window(), s.wscale), (99_912, 65_535, 1));
            assert_eq!(
                (s.rcvbuf, s.window_clamp, s.rcv_ssthresh),
                (200_000, 98_552, 98_552)
            );
        }
        let mut last = 0;
        for k in 1..=200 {
            let round = (k - 1) / 50;
            let t = 42 * ms * (round + 1) + ((k - 1) % 50) * 1_200_000;
            if let Some(&w) = feed(&mut r, k, t, 42 * ms * round + 1).last() {
                last = w;
            }
        }
        let s = r.rcv_space().unwrap();
        assert_eq!((s.rcvbuf, s.window_clamp), (200_000, 125_000));
        assert_eq!(
            s.space,
            50 * 1448,
            "right-sizing measures 50 segments per RTT"
        );
        assert_eq!(last, 123_560);
    }

    // --- teardown (file downloads) ---------------------------------------------------

    /// A file client (2000 B file) that is receiving data, in delayed-ACK mode.
    fn file_client() -> Receiver {
        let mut r = rx(true);
        r.cfg.app = AppConfig::File { size_bytes: 2000 };
        r
    }

    fn last(seq: u64) -> Packet {
        let mut p = seg(seq);
        p.flags |= flags::FIN;
        p
    }

    #[test]
    fn established_client_closes_when_the_last_byte_and_fin_are_in() {
        let mut r = file_client();
        let mut out = vec![];
        (r.got_data, r.quick) = (true, 0); // past quick-ACK mode
        r.on_data(SimTime(0), &seg(0), &mut out);
        assert!(out.is_empty(), "delayed");
        r.on_data(SimTime(10), &last(1000), &mut out);
        // Two segments unacknowledged: ACK now (__tcp_ack_snd_check), then the application
        // reads EOF and closes: FIN|ACK.
        let kinds: Vec<(PacketKind, u64)> = out.iter().map(|p| (p.kind, p.ack)).collect();
        assert_eq!(kinds, [(PacketKind::Ack, 2000), (PacketKind::Fin, 2000)]);
        assert_eq!(r.state, RcvState::LastAck);
        assert_eq!(r.completion, Some(SimTime(10)));
        assert_eq!(r.hs_timer, Some(SimTime(10) + RTO_INIT));
        out.clear();
        r.on_packet(
            SimTime(20),
            &Packet {
                kind: PacketKind::Ack,
                ..Default::default()
            },
            &mut out,
        );
        assert_eq!(
            (r.state, r.closed_at, r.hs_timer),
            (RcvState::Done, Some(SimTime(20)), None)
        );
        assert!(out.is_empty());
    }

    #[test]
    fn established_fin_carries_the_ack_a_delayed_ack_timer_held() {
        let mut r = file_client();
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        assert_eq!(out.len(), 1, "quick-ACK mode at the start");
        r.quick = 0;
        out.clear();
        r.on_data(SimTime(10), &last(1000), &mut out);
        assert_eq!(
            out.len(),
            1,
            "one segment pending: no pure ACK, the FIN acknowledges it"
        );
        assert_eq!((out[0].kind, out[0].ack), (PacketKind::Fin, 2000));
        assert_eq!(r.ack_timer, None);
    }

    #[test]
    fn established_without_the_servers_fin_the_client_does_not_close() {
        // ns-2 agents send no FIN: the download completes, the connection stays open.
        let mut r = file_client();
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        r.on_data(SimTime(1), &seg(1000), &mut out);
        assert_eq!(r.completion, Some(SimTime(1)));
        assert!(out.iter().all(|p| p.kind == PacketKind::Ack));
        assert_eq!(r.state, RcvState::Established);
    }

    #[test]
    fn established_relay_receiver_waits_for_the_other_side_to_close() {
        let mut r = file_client();
        r.relay_limit = Some(1 << 20);
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        r.on_data(SimTime(1), &last(1000), &mut out);
        assert!(out.iter().all(|p| p.kind == PacketKind::Ack));
        assert!(r.at_eof());
        out.clear();
        r.close(SimTime(5), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].kind, out[0].ack), (PacketKind::Fin, 2000));
        assert_eq!(r.state, RcvState::LastAck);
    }

    #[test]
    fn last_ack_fin_is_sent_again_with_a_doubled_timeout_until_acknowledged() {
        let mut r = file_client();
        let mut out = vec![];
        r.on_data(SimTime(0), &seg(0), &mut out);
        r.on_data(SimTime(0), &last(1000), &mut out);
        out.clear();
        let t1 = SimTime(0) + RTO_INIT;
        r.on_timer(t1, TimerSlot::Handshake, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].kind, out[0].ack), (PacketKind::Fin, 2000));
        assert_eq!(r.hs_timer, Some(t1 + RTO_INIT * 2), "RFC 6298 §5.5 backoff");
        // A retransmitted data segment (its ACK was lost) is answered with a duplicate ACK.
        out.clear();
        r.on_data(t1 + SimDuration::from_ms(1), &last(1000), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].kind, out[0].ack), (PacketKind::Ack, 2000));
        assert_eq!(r.state, RcvState::LastAck);
    }
}
