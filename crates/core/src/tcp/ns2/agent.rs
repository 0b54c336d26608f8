//! The ns-2 `TcpAgent` base (`tcp.cc`) and the glue to the simulator.
//!
//! State keeps ns-2's names and units: packet numbers (`t_seqno_` next to send, `maxseq_`
//! highest sent, `highest_ack_`/`last_ack_` highest cumulatively ACKed packet, `recover_`),
//! `cwnd_` a float in packets, `ssthresh_` an integer, times in seconds. Packet 0 is the
//! handshake (`syn_` true): for a bulk sender the SYN it sends, for a file server the SYN-ACK
//! that answers the client; the SYN-ACK (or the client's request) that comes back is the ACK
//! of packet 0. Data packet k ≥ 1 carries bytes [(k − 1)·MSS, k·MSS).
//!
//! Defaults are those of `ns-default.tcl` (Agent/TCP): `windowOption_` 1, `decrease_num_`
//! 0.5, `precisionReduce_` true, `syn_` and `delay_growth_` true (cwnd 1 for the SYN, then
//! `windowInit_`), `slow_start_restart_` and `restart_bugfix_` true, `exitFastRetrans_` true,
//! `aggressive_maxburst_` true (every ACK may trigger sending), `timerfix_` and `rfc2988_`
//! true, ECN, Quick-Start, F-RTO and `overhead_` off.
//!
//! Each variant overrides `window`, `recv`, `timeout` and sometimes `send_much`/`output`, as
//! the C++ subclasses do; the dispatch is a `match` on `kind`.
use super::rtt::Ns2Rtt;
use super::scoreboard::{FackScoreboard, RqScoreboard};
use super::vegas::VegasState;
use super::Ns2Kind;
use crate::engine::time::{SimDuration, SimTime};
use crate::net::packet::{flags, Packet, PacketKind, BASE_HEADER_BYTES, SYN_OPTION_BYTES};
use crate::scenario::AppConfig;
use crate::tcp::connection::TimerSlot;
use crate::tcp::linux::sender::SenderStats;
use std::collections::VecDeque;

/// `delay_growth_`: cwnd is 1 for the SYN and `windowInit_` once it is ACKed.
pub const DELAY_GROWTH: bool = true;
/// `bugfix_ss_`: allow a fast retransmit when the first data packet is lost.
pub const BUGFIX_SS: bool = true;
/// `slow_start_restart_`: the RTO also fires (and resets cwnd) when nothing is outstanding.
pub const SLOW_START_RESTART: bool = true;
/// `restart_bugfix_`: such an idle timeout keeps ssthresh and does not back off.
pub const RESTART_BUGFIX: bool = true;
/// `exitFastRetrans_`: window inflation only while the dupACK action is the last one.
pub const EXIT_FAST_RETRANS: bool = true;
/// `ts_option_size_` (bytes) when `timestamps_` is on.
pub const TS_OPTION_BYTES: u32 = 10;

/// Flags of `slowdown` (`tcp.h`).
pub mod how {
    pub const SSTHRESH_HALF: u32 = 1;
    pub const CWND_HALF: u32 = 2;
    pub const CWND_RESTART: u32 = 4;
    pub const CWND_INIT: u32 = 8;
    pub const CWND_ONE: u32 = 16;
}

/// `last_cwnd_action_`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CwndAction {
    None,
    Dupack,
    Timeout,
    /// Reno/NewReno left fast recovery.
    Exited,
}

/// Settings of an agent (ns-2 bound variables).
#[derive(Clone, Debug)]
pub struct Ns2Config {
    /// `packetSize_` (payload bytes).
    pub mss: u32,
    /// `window_` (packets): the receiver's window, kept at the sender.
    pub window_pkts: f64,
    /// `windowInit_` (packets).
    pub window_init: f64,
    /// `maxburst_` (0: no limit).
    pub max_burst: i64,
    /// `numdupacks_`.
    pub numdupacks: i64,
    /// `singledup_` (limited transmit).
    pub singledup: bool,
    /// `bugFix_`.
    pub bug_fix: bool,
    /// `tcpTick_`, `minrto_`, `maxrto_`, `rtxcur_init_` (s).
    pub tick_s: f64,
    pub min_rto_s: f64,
    pub max_rto_s: f64,
    pub init_rto_s: f64,
    /// `timestamps_`.
    pub timestamps: bool,
    pub app: AppConfig,
    /// Fed by a relay: the application's data arrives over time (`supply`).
    pub relay: bool,
    /// Obey the receiver's advertised window (a PEP relay's backpressure).
    pub peer_window: bool,
    /// NewReno: `partial_window_deflation_`, `newreno_changes1_`.
    pub partial_window_deflation: bool,
    pub newreno_changes1: bool,
    /// Sack1: `partial_ack_`.
    pub partial_ack: bool,
    /// FACK: `rampdown_`, `ss-div4_`.
    pub rampdown: bool,
    pub ss_div4: bool,
    /// Vegas: `v_alpha_`, `v_beta_`, `v_gamma_`.
    pub v_alpha: i64,
    pub v_beta: i64,
    pub v_gamma: i64,
}

/// An ACK as an ns-2 agent sees it (packet numbers, seconds).
#[derive(Copy, Clone, Debug)]
pub struct AckInfo {
    /// Highest in-order packet received (`tcph->seqno()`).
    pub seqno: i64,
    /// SACK blocks `[left, right)`.
    pub sacks: [(i64, i64); 4],
    pub n_sack: usize,
    /// Echoed send time of the packet at the cumulative ACK (`ts_echo()`, s).
    pub ts_echo: f64,
}

impl AckInfo {
    pub fn new(seqno: i64, sacks: &[(i64, i64)], ts_echo: f64) -> Self {
        let mut a = AckInfo {
            seqno,
            sacks: [(0, 0); 4],
            n_sack: sacks.len().min(4),
            ts_echo,
        };
        a.sacks[..a.n_sack].copy_from_slice(&sacks[..a.n_sack]);
        a
    }

    #[inline]
    pub fn sacks(&self) -> &[(i64, i64)] {
        &self.sacks[..self.n_sack]
    }
}

/// Reno and NewReno state (`RenoTcpAgent`, `NewRenoTcpAgent`).
#[derive(Clone, Debug, Default)]
pub struct RenoState {
    /// `dupwnd_`: window inflation during fast recovery (packets).
    pub dupwnd: i64,
    /// NewReno `firstpartial_`.
    pub firstpartial: bool,
}

/// Sack1 state (`Sack1TcpAgent`).
#[derive(Clone, Debug, Default)]
pub struct Sack1State {
    /// `fastrecov_`.
    pub fastrecov: bool,
    /// `timeout_`: an RTO happened and no new ACK has arrived since.
    pub timeout: bool,
    /// `pipe_`: packets estimated in the network during fast recovery.
    pub pipe: i64,
    /// `next_pkt_` (partial_ack_ only).
    pub next_pkt: i64,
    /// `firstpartial_`.
    pub firstpartial: bool,
    pub scb: RqScoreboard,
}

/// FACK state (`FackTcpAgent`).
#[derive(Clone, Debug)]
pub struct FackState {
    pub fastrecov: bool,
    /// `timeout_`: a retransmission was lost again; sending stops until the RTO.
    pub timeout: bool,
    /// `fack_`: highest packet known to have arrived (cumulative ACK or SACK).
    pub fack: i64,
    /// `retran_data_`: retransmissions still in the network.
    pub retran_data: i64,
    /// `wintrim_`, `wintrimmult_`: the rampdown (rate-halving) allowance.
    pub wintrim: f64,
    pub wintrimmult: f64,
    pub scb: FackScoreboard,
}

impl Default for FackState {
    fn default() -> Self {
        FackState {
            fastrecov: false,
            timeout: false,
            fack: -1,
            retran_data: 0,
            wintrim: 0.0,
            wintrimmult: 0.5,
            scb: FackScoreboard::default(),
        }
    }
}

/// Connection set-up as far as packet 0 goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Open {
    /// File server before the client's SYN; bulk before the start.
    Idle,
    /// Packet 0 is out.
    Sent,
    /// Packet 0 has been ACKed.
    Established,
}

/// An ns-2 TCP sender (one of `Ns2Kind`).
pub struct Ns2Sender {
    pub flow: u32,
    pub kind: Ns2Kind,
    pub cfg: Ns2Config,
    // --- TcpAgent (ns-2 names) ---
    pub t_seqno: i64,
    pub dupacks: i64,
    pub curseq: i64,
    pub highest_ack: i64,
    pub last_ack: i64,
    pub prev_highest_ack: i64,
    pub maxseq: i64,
    pub cwnd: f64,
    pub ssthresh: i64,
    pub recover: i64,
    pub last_cwnd_action: CwndAction,
    /// `wnd_init_` (drops to 1 if the SYN is lost).
    pub wnd_init: f64,
    pub rtt: Ns2Rtt,
    pub rtt_active: bool,
    pub rtt_seq: i64,
    pub rtt_ts: f64,
    /// Time the first packet (the SYN) was sent (`firstsent_`, s).
    pub firstsent: f64,
    /// All application data ACKed (`closed_`).
    pub closed: bool,
    /// Retransmission timer deadline.
    pub rtx_timer: Option<SimTime>,
    /// With `peer_window`: the highest packet the receiver's window admits, and the
    /// zero-window probe timer with its backoff count.
    pub peer_edge: i64,
    persist_timer: Option<SimTime>,
    probes: u32,
    // --- variants ---
    pub reno: RenoState,
    pub sack1: Sack1State,
    pub fack: FackState,
    pub vegas: VegasState,
    // --- simulator glue ---
    now: SimTime,
    pending: Vec<Packet>,
    open: Open,
    /// A file server answers the client's SYN (packet 0 is a SYN-ACK).
    passive: bool,
    app_end: u64,
    syn_sent_at: SimTime,
    /// Send time and "retransmitted" flag of data packets from `tx_base` on (statistics).
    tx_log: VecDeque<(SimTime, bool)>,
    tx_base: i64,
    /// Bytes handed over by a relay so far.
    supplied: u64,
    pub stats: SenderStats,
}

impl Ns2Sender {
    /// A fresh agent (`TcpAgent::reset`); `boot_u01` ∈ [0, 1) sets the tick-clock phase.
    pub fn new(flow: u32, kind: Ns2Kind, cfg: Ns2Config, boot_u01: f64) -> Self {
        let (app_end, curseq, passive) = match cfg.app {
            AppConfig::Bulk | AppConfig::Cbr { .. } => (u64::MAX, i64::MAX / 4, false),
            AppConfig::File { size_bytes } => {
                let n = size_bytes.div_ceil(cfg.mss as u64) as i64;
                (size_bytes, n + 1, true)
            }
        };
        // A relayed stream starts with nothing to send but the handshake (packet 0).
        let curseq = if cfg.relay { 1 } else { curseq };
        let rtt = Ns2Rtt::new(
            cfg.tick_s,
            cfg.min_rto_s,
            cfg.max_rto_s,
            cfg.init_rto_s,
            boot_u01 * cfg.tick_s,
        );
        let vegas = VegasState::new(&cfg);
        Ns2Sender {
            flow,
            kind,
            t_seqno: 0,
            dupacks: 0,
            curseq,
            highest_ack: -1,
            last_ack: -1,
            prev_highest_ack: -1,
            maxseq: -1,
            // syn_ && delay_growth_: one packet (the SYN) first.
            cwnd: 1.0,
            ssthresh: cfg.window_pkts as i64,
            recover: 0,
            last_cwnd_action: CwndAction::None,
            wnd_init: cfg.window_init,
            rtt,
            rtt_active: false,
            rtt_seq: -1,
            rtt_ts: 0.0,
            firstsent: 0.0,
            closed: false,
            rtx_timer: None,
            peer_edge: i64::MAX,
            persist_timer: None,
            probes: 0,
            reno: RenoState::default(),
            sack1: Sack1State::default(),
            fack: FackState::default(),
            vegas,
            now: SimTime::ZERO,
            pending: Vec::new(),
            open: Open::Idle,
            passive,
            app_end,
            syn_sent_at: SimTime::ZERO,
            tx_log: VecDeque::new(),
            tx_base: 1,
            supplied: 0,
            stats: SenderStats::default(),
            cfg,
        }
    }

    // --- the endpoint interface the simulation uses ----------------------------------------

    /// The application starts: a bulk sender sends its SYN (packet 0); a file server waits.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.now = now;
        if !self.passive && self.open == Open::Idle {
            self.open = Open::Sent;
            self.send_much(self.cfg.max_burst);
        }
        out.append(&mut self.pending);
    }

    /// A relay hands over `bytes` more of the stream (ns-2's `advanceby`: `curseq_` grows
    /// by the packets now complete, the last partial one once the whole stream is in).
    pub fn supply(&mut self, now: SimTime, bytes: u64, out: &mut Vec<Packet>) {
        self.now = now;
        self.supplied = (self.supplied + bytes).min(self.app_end);
        let mss = self.cfg.mss as u64;
        let mut pkts = self.supplied / mss;
        if self.supplied == self.app_end && !self.supplied.is_multiple_of(mss) {
            pkts += 1;
        }
        self.curseq = 1 + pkts as i64;
        self.closed = false;
        if self.open == Open::Established {
            self.send_much(self.cfg.max_burst);
        }
        out.append(&mut self.pending);
    }

    /// A packet from the receiver.
    pub fn on_packet(&mut self, now: SimTime, p: &Packet, out: &mut Vec<Packet>) {
        self.now = now;
        match p.kind {
            PacketKind::Syn if self.passive => match self.open {
                Open::Idle => {
                    self.open = Open::Sent;
                    self.send_much(self.cfg.max_burst);
                }
                // The client did not get our SYN-ACK: answer again (packet 0's timer also runs).
                Open::Sent => self.pending.push(self.control(PacketKind::SynAck)),
                Open::Established => {}
            },
            PacketKind::SynAck if !self.passive && self.open != Open::Idle => {
                if self.open == Open::Sent {
                    self.open = Open::Established;
                    self.pending.push(self.control(PacketKind::Ack));
                }
                self.note_peer_window(p);
                let a = AckInfo::new(0, &[], self.echo(p));
                self.recv(&a);
            }
            PacketKind::Request if self.passive && self.open != Open::Idle => {
                self.open = Open::Established;
                let a = AckInfo::new(0, &[], self.echo(p));
                self.recv(&a);
            }
            PacketKind::Ack if self.open == Open::Established => {
                let mss = self.cfg.mss as u64;
                let seqno = p.ack.div_ceil(mss) as i64;
                if self.note_peer_window(p) && seqno <= self.highest_ack {
                    // A window update (the relay drained), not a duplicate ACK: TCP counts
                    // an ACK as a dupACK only if the window is unchanged (RFC 5681 §2).
                    self.send_much(self.cfg.max_burst);
                    self.check_persist();
                    out.append(&mut self.pending);
                    return;
                }
                let mut sacks = [(0i64, 0i64); 4];
                let n = p.n_sack as usize;
                for (d, b) in sacks.iter_mut().zip(p.sack_blocks()) {
                    *d = ((b.start / mss) as i64 + 1, b.end.div_ceil(mss) as i64 + 1);
                }
                let a = AckInfo::new(seqno, &sacks[..n], self.echo(p));
                self.recv(&a);
            }
            _ => {}
        }
        self.check_persist();
        out.append(&mut self.pending);
    }

    /// A timer slot fired (possibly stale: the deadline is re-checked).
    pub fn on_timer(&mut self, now: SimTime, slot: TimerSlot, out: &mut Vec<Packet>) {
        self.now = now;
        if slot == TimerSlot::Retransmit && self.rtx_timer.is_some_and(|t| t <= now) {
            self.rtx_timer = None;
            self.timeout();
            self.after_event();
        }
        if slot == TimerSlot::Handshake && self.persist_timer.is_some_and(|t| t <= now) {
            self.persist_timer = None;
            if self.window_blocked() {
                self.probes += 1;
                self.send_probe();
            }
        }
        self.check_persist();
        out.append(&mut self.pending);
    }

    /// Deadline of a timer slot, if armed. The agent's own handshake runs on the
    /// retransmission timer (packet 0), so the Handshake slot carries the persist timer.
    pub fn timer_deadline(&self, slot: TimerSlot) -> Option<SimTime> {
        match slot {
            TimerSlot::Retransmit => self.rtx_timer,
            TimerSlot::Handshake => self.persist_timer,
            _ => None,
        }
    }

    // --- the receiver's window (only behind a PEP relay) -------------------------------

    /// Take the right edge a packet advertises; true if it moved.
    fn note_peer_window(&mut self, p: &Packet) -> bool {
        if !self.cfg.peer_window {
            return false;
        }
        let edge_bytes = p.ack + p.wnd;
        // Packet k ends at k·MSS (or at the stream's end): admitted if that is in the window.
        let edge = if edge_bytes >= self.app_end {
            i64::MAX
        } else {
            (edge_bytes / self.cfg.mss as u64) as i64
        };
        let moved = edge != self.peer_edge;
        self.peer_edge = edge;
        moved
    }

    /// The first packet to send lies beyond the receiver's window and nothing is in flight:
    /// only a probe can recover a lost window update.
    fn window_blocked(&self) -> bool {
        self.cfg.peer_window
            && self.open == Open::Established
            && self.t_seqno < self.curseq
            && self.t_seqno > self.peer_edge
            && self.highest_ack >= self.maxseq
    }

    /// Arm or cancel the persist timer (RFC 9293 §3.8.6.1), backing off as the RTO does.
    fn check_persist(&mut self) {
        if !self.window_blocked() {
            self.persist_timer = None;
            self.probes = 0;
        } else if self.persist_timer.is_none() {
            let secs = (self.rtt.timeout() * f64::from(1u32 << self.probes.min(10)))
                .min(self.cfg.max_rto_s);
            self.persist_timer = Some(self.now + SimDuration((secs * 1e9).round() as u64));
        }
    }

    /// A segment without payload: the receiver answers with its current window.
    fn send_probe(&mut self) {
        let mut p = self.control(PacketKind::Data);
        p.seq = self.snd_una();
        self.pending.push(p);
    }

    /// Last packet the send loops may emit as new data: the application's supply and,
    /// behind a relay, the receiver's window.
    #[inline]
    pub(crate) fn send_limit(&self) -> i64 {
        self.curseq.min(self.peer_edge.saturating_add(1))
    }

    /// `cwnd_` in bytes (without Reno's `dupwnd_` inflation).
    pub fn cwnd_bytes(&self) -> u64 {
        (self.cwnd.max(0.0) * self.cfg.mss as f64) as u64
    }

    /// `ssthresh_` in bytes.
    pub fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh.max(0) as u64 * self.cfg.mss as u64
    }

    pub fn mss(&self) -> u32 {
        self.cfg.mss
    }

    /// First unacknowledged byte.
    pub fn snd_una(&self) -> u64 {
        self.bytes_of(self.highest_ack)
    }

    /// One past the highest byte sent.
    pub fn snd_nxt(&self) -> u64 {
        self.bytes_of(self.maxseq)
    }

    /// All of the application's data has been acknowledged.
    pub fn finished(&self) -> bool {
        self.app_end != u64::MAX && self.snd_una() >= self.app_end
    }

    fn bytes_of(&self, pkt: i64) -> u64 {
        if pkt <= 0 {
            0
        } else {
            (pkt as u64 * self.cfg.mss as u64).min(self.app_end)
        }
    }

    /// Packets produced by the last call (tests).
    #[cfg(test)]
    pub(crate) fn take_pending(&mut self) -> Vec<Packet> {
        std::mem::take(&mut self.pending)
    }

    #[cfg(test)]
    pub(crate) fn set_now(&mut self, now: SimTime) {
        self.now = now;
    }

    // --- packets -----------------------------------------------------------------------

    /// The echoed timestamp in seconds; before any in-order data the sink echoes the SYN's.
    fn echo(&self, p: &Packet) -> f64 {
        let t = if p.ts_ecr != 0 && p.kind == PacketKind::Ack {
            p.ts_ecr
        } else {
            self.syn_sent_at.ns()
        };
        t as f64 * 1e-9
    }

    fn control(&self, kind: PacketKind) -> Packet {
        Packet {
            flow: self.flow,
            kind,
            ts_val: self.now.ns().max(1),
            wire_bytes: match kind {
                PacketKind::Syn | PacketKind::SynAck => BASE_HEADER_BYTES + SYN_OPTION_BYTES,
                _ => BASE_HEADER_BYTES,
            },
            ..Default::default()
        }
    }

    /// Put packet `seqno` on the wire (the part of `output` that builds the packet).
    fn emit(&mut self, seqno: i64) {
        if seqno == 0 {
            self.syn_sent_at = self.now;
            let kind = if self.passive {
                PacketKind::SynAck
            } else {
                PacketKind::Syn
            };
            self.pending.push(self.control(kind));
            return;
        }
        let seq = (seqno as u64 - 1) * self.cfg.mss as u64;
        if seq >= self.app_end {
            return;
        }
        let len = (self.app_end - seq).min(self.cfg.mss as u64) as u32;
        let retrans = seqno <= self.maxseq;
        let opt = if self.cfg.timestamps {
            TS_OPTION_BYTES
        } else {
            0
        };
        let mut p = Packet {
            flow: self.flow,
            kind: PacketKind::Data,
            seq,
            len,
            wire_bytes: BASE_HEADER_BYTES + opt + len,
            ts_val: self.now.ns().max(1),
            ..Default::default()
        };
        if retrans {
            p.flags |= flags::RETRANS;
            self.stats.retrans_segs += 1;
        }
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len as u64;
        self.log_send(seqno, retrans);
        self.pending.push(p);
    }

    fn log_send(&mut self, seqno: i64, retrans: bool) {
        let i = seqno - self.tx_base;
        if i < 0 {
            return;
        }
        let i = i as usize;
        if i < self.tx_log.len() {
            self.tx_log[i].1 = true;
        } else if i == self.tx_log.len() {
            self.tx_log.push_back((self.now, retrans));
        }
    }

    /// RTT statistics: one Karn-valid sample per ACK that advances, from the newest
    /// packet it covers (the agents themselves time one packet per window).
    fn log_ack(&mut self, seqno: i64) {
        if seqno < self.tx_base {
            return;
        }
        let n = (seqno - self.tx_base + 1) as usize;
        if let Some(&(t, retrans)) = self.tx_log.get(n - 1) {
            if !retrans {
                let r = self.now.since(t);
                // The agent's own (tick-granular) smoothed RTT, as ns-2 keeps it.
                let srtt = self
                    .rtt
                    .srtt()
                    .map_or(r, |s| SimDuration::from_ns((s * 1e9).round() as u64));
                self.stats.record_rtt(self.now, r, srtt);
            }
        }
        let n = n.min(self.tx_log.len());
        self.tx_log.drain(..n);
        self.tx_base = seqno + 1;
    }

    /// `TcpAgent::output`: send packet `seqno`, time it if it is new and nothing is being
    /// timed, and arm the retransmission timer if it is idle or nothing was outstanding.
    pub(crate) fn output(&mut self, seqno: i64) {
        if self.kind == Ns2Kind::Vegas {
            return self.vegas_output(seqno);
        }
        let force_set_rtx_timer = self.highest_ack == self.maxseq;
        self.emit(seqno);
        self.note_sent(seqno);
        if self.rtx_timer.is_none() || force_set_rtx_timer {
            self.set_rtx_timer();
        }
    }

    /// `maxseq_` and RTT-timing bookkeeping of `output`.
    pub(crate) fn note_sent(&mut self, seqno: i64) {
        if seqno > self.maxseq {
            self.maxseq = seqno;
            if !self.rtt_active {
                self.rtt_active = true;
                if seqno > self.rtt_seq {
                    self.rtt_seq = seqno;
                    self.rtt_ts = self.clock();
                }
            }
        }
    }

    /// Vegas builds packets like everyone else.
    pub(crate) fn emit_packet(&mut self, seqno: i64) {
        self.emit(seqno);
    }

    // --- windows -----------------------------------------------------------------------

    /// Simulation time in seconds.
    #[inline]
    pub(crate) fn clock(&self) -> f64 {
        self.now.ns() as f64 * 1e-9
    }

    /// `window()`: packets allowed beyond `highest_ack_`.
    pub(crate) fn window(&self) -> i64 {
        let wnd = self.cfg.window_pkts;
        match self.kind {
            Ns2Kind::Reno | Ns2Kind::NewReno => {
                let win = self.cwnd as i64 + self.reno.dupwnd;
                win.min(wnd as i64)
            }
            Ns2Kind::Fack => (self.cwnd.min(wnd) + self.fack.wintrim) as i64,
            _ => {
                if self.cwnd < wnd {
                    self.cwnd as i64
                } else {
                    wnd as i64
                }
            }
        }
    }

    /// `windowd()`: the window as a float (used by `slowdown`).
    pub(crate) fn windowd(&self) -> f64 {
        let wnd = self.cfg.window_pkts;
        match self.kind {
            Ns2Kind::Reno | Ns2Kind::NewReno => (self.cwnd + self.reno.dupwnd as f64).min(wnd),
            _ => self.cwnd.min(wnd),
        }
    }

    /// `initial_window()` (`windowInitOption_` 1).
    pub(crate) fn initial_window(&self) -> f64 {
        self.wnd_init
    }

    /// `opencwnd()` with `windowOption_` 1: +1 per ACK below ssthresh, else +1/cwnd.
    pub(crate) fn opencwnd(&mut self) {
        if self.cwnd < self.ssthresh as f64 {
            self.cwnd += 1.0;
        } else {
            self.cwnd += 1.0 / self.cwnd;
        }
    }

    /// `slowdown(how)` with `precisionReduce_` true and `decrease_num_` 0.5.
    pub(crate) fn slowdown(&mut self, flags: u32) {
        let halfwin = self.windowd() / 2.0;
        if flags & how::SSTHRESH_HALF != 0 {
            self.ssthresh = halfwin as i64;
        }
        if flags & how::CWND_HALF != 0 {
            self.cwnd = halfwin;
        } else if flags & how::CWND_RESTART != 0 {
            // int(wnd_restart_) with wnd_restart_ = 1.
            self.cwnd = 1.0;
        } else if flags & how::CWND_INIT != 0 {
            self.cwnd = self.wnd_init.trunc();
        } else if flags & how::CWND_ONE != 0 {
            self.cwnd = 1.0;
        }
        if self.ssthresh < 2 {
            self.ssthresh = 2;
        }
    }

    // --- sending -------------------------------------------------------------------------

    /// `send_much(0, 0, maxburst)` of the agent.
    pub(crate) fn send_much(&mut self, maxburst: i64) {
        match self.kind {
            Ns2Kind::Sack1 => self.sack1_send_much(maxburst),
            Ns2Kind::Fack => self.fack_send_much(maxburst),
            _ => self.base_send_much(maxburst),
        }
    }

    /// `TcpAgent::send_much`: new packets while `t_seqno_` ≤ `highest_ack_` + window.
    pub(crate) fn base_send_much(&mut self, maxburst: i64) {
        let mut win = self.window();
        if self.t_seqno == 0 {
            self.firstsent = self.clock();
        }
        let mut npackets = 0;
        while self.t_seqno <= self.highest_ack + win && self.t_seqno < self.send_limit() {
            self.output(self.t_seqno);
            npackets += 1;
            self.t_seqno += 1;
            win = self.window();
            if maxburst > 0 && npackets == maxburst {
                break;
            }
        }
    }

    /// `send_one()`: limited transmit on dupACKs 1 and 2 (`singledup_`).
    pub(crate) fn send_one(&mut self) {
        let t = self.t_seqno as f64;
        let ha = self.highest_ack as f64;
        if t <= ha + self.cfg.window_pkts
            && self.t_seqno < self.send_limit()
            && t <= ha + self.cwnd + self.dupacks as f64
        {
            self.output(self.t_seqno);
            self.t_seqno += 1;
        }
    }

    // --- ACKs ----------------------------------------------------------------------------

    /// Entry point for an ACK: the variant's `recv`, then bookkeeping.
    pub(crate) fn recv(&mut self, a: &AckInfo) {
        if a.seqno >= self.tx_base {
            self.log_ack(a.seqno);
        }
        match self.kind {
            Ns2Kind::Tahoe => self.tahoe_recv(a),
            Ns2Kind::Reno => self.reno_recv(a),
            Ns2Kind::NewReno => self.newreno_recv(a),
            Ns2Kind::Sack1 => self.sack1_recv(a),
            Ns2Kind::Fack => self.fack_recv(a),
            Ns2Kind::Vegas => self.vegas_recv(a),
        }
        self.after_event();
    }

    /// A finished file transfer needs no timer (ns-2 keeps restarting it while idle, which
    /// only shrinks cwnd of a connection that will send nothing more).
    fn after_event(&mut self) {
        if self.finished() {
            self.rtx_timer = None;
        }
    }

    /// `newack()`: a packet ACKs new data (with `timerfix_`: timer after the RTT update).
    pub(crate) fn newack(&mut self, a: &AckInfo) {
        let now = self.clock();
        self.dupacks = 0;
        self.last_ack = a.seqno;
        self.prev_highest_ack = self.highest_ack;
        self.highest_ack = self.last_ack;
        if self.t_seqno < self.last_ack + 1 {
            self.t_seqno = self.last_ack + 1;
        }
        if self.cfg.timestamps {
            self.rtt.update(now - a.ts_echo, now, true);
        }
        if self.rtt_active && a.seqno >= self.rtt_seq {
            self.rtt.t_backoff = 1;
            self.rtt_active = false;
            if !self.cfg.timestamps {
                self.rtt.update(now - self.rtt_ts, now, false);
            }
        }
        self.newtimer(a.seqno);
    }

    /// `recv_newack_helper()`: `newack`, then open the window.
    pub(crate) fn recv_newack_helper(&mut self, a: &AckInfo) {
        self.newack(a);
        self.opencwnd();
        self.check_closed();
    }

    /// `closed_`: everything the application gave has been ACKed.
    pub(crate) fn check_closed(&mut self) {
        if self.highest_ack >= self.curseq - 1 && !self.closed {
            self.closed = true;
        }
    }

    // --- timers --------------------------------------------------------------------------

    /// `set_rtx_timer()`: (re)start the timer with the current RTO.
    pub(crate) fn set_rtx_timer(&mut self) {
        let secs = self.rtt.timeout();
        self.rtx_timer = Some(self.now + SimDuration((secs * 1e9).round() as u64));
    }

    /// `newtimer()`: restart the timer if data is outstanding, else cancel it.
    pub(crate) fn newtimer(&mut self, ack: i64) {
        if self.t_seqno > ack || ack < self.maxseq || self.cwnd < 1.0 {
            self.set_rtx_timer();
        } else {
            self.rtx_timer = None;
        }
    }

    /// `reset_rtx_timer(mild, backoff)`: restart the timer (backed off); unless `mild`,
    /// resume sending from the first unacknowledged packet (go-back-N).
    pub(crate) fn reset_rtx_timer(&mut self, mild: bool, backoff: bool) {
        if backoff {
            self.rtt.backoff();
        }
        self.set_rtx_timer();
        if !mild {
            self.t_seqno = self.highest_ack + 1;
        }
        self.rtt_active = false;
    }

    fn timeout(&mut self) {
        match self.kind {
            Ns2Kind::Tahoe => self.base_timeout(),
            Ns2Kind::Reno | Ns2Kind::NewReno => self.reno_timeout(),
            Ns2Kind::Sack1 => self.sack1_timeout(),
            Ns2Kind::Fack => self.fack_timeout(),
            Ns2Kind::Vegas => self.vegas_timeout(),
        }
    }

    /// `TcpAgent::timeout(TCP_TIMER_RTX)`.
    pub(crate) fn base_timeout(&mut self) {
        if self.cwnd < 1.0 {
            self.cwnd = 1.0;
        }
        let idle = self.highest_ack == self.maxseq;
        if !idle || SLOW_START_RESTART {
            self.recover = self.maxseq;
            if self.highest_ack == -1 && self.wnd_init > 1.0 && BUGFIX_SS {
                // The SYN was lost: no larger initial window.
                self.wnd_init = 1.0;
            }
            if idle && RESTART_BUGFIX {
                self.slowdown(how::CWND_ONE);
            } else {
                self.stats.rto_count += 1;
                self.last_cwnd_action = CwndAction::Timeout;
                self.slowdown(how::SSTHRESH_HALF | how::CWND_RESTART);
            }
        }
        self.reset_rtx_timer(false, !(idle && RESTART_BUGFIX));
        self.last_cwnd_action = CwndAction::Timeout;
        self.send_much(self.cfg.max_burst);
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Fixtures: an agent driven by hand, packet numbers in and out.
    use super::*;
    use crate::tcp::ns2::{build, FlowTcp};
    use std::collections::BTreeMap;

    pub const MSS: u32 = 1000;

    /// An agent of `kind` with window_ `wnd` packets and windowInit_ 2, its SYN sent at 0
    /// and ACKed at 100 ms (the first two data packets then leave).
    pub fn established(kind: Ns2Kind, wnd: u64, params: &[(&str, f64)]) -> Ns2Sender {
        let given: BTreeMap<String, f64> =
            params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let tcp = FlowTcp {
            mss: MSS,
            initial_window: 2,
            rwnd_bytes: wnd * MSS as u64,
            timestamps: false,
            app: AppConfig::Bulk,
            relay: false,
            peer_window: false,
        };
        let mut s = build(kind, 0, &given, &tcp, 0.0).unwrap();
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, PacketKind::Syn);
        let synack = Packet {
            kind: PacketKind::SynAck,
            ..Default::default()
        };
        out.clear();
        s.on_packet(SimTime(100_000_000), &synack, &mut out);
        s
    }

    /// Feed an ACK of packet `seqno` with SACK blocks (packet numbers) at `t_ms`; returns
    /// the packet numbers sent in response.
    pub fn ack(s: &mut Ns2Sender, t_ms: u64, seqno: i64, sacks: &[(i64, i64)]) -> Vec<i64> {
        s.set_now(SimTime(t_ms * 1_000_000));
        let a = AckInfo::new(seqno, sacks, 0.0);
        s.recv(&a);
        sent(s)
    }

    /// Packet numbers of the data packets produced so far (drained).
    pub fn sent(s: &mut Ns2Sender) -> Vec<i64> {
        s.take_pending()
            .iter()
            .filter(|p| p.kind == PacketKind::Data)
            .map(|p| (p.seq / MSS as u64) as i64 + 1)
            .collect()
    }

    /// Fire the retransmission timer at `t_ms`.
    pub fn fire_rto(s: &mut Ns2Sender, t_ms: u64) -> Vec<i64> {
        let mut out = Vec::new();
        s.rtx_timer = Some(SimTime(t_ms * 1_000_000));
        s.on_timer(SimTime(t_ms * 1_000_000), TimerSlot::Retransmit, &mut out);
        out.iter()
            .filter(|p| p.kind == PacketKind::Data)
            .map(|p| (p.seq / MSS as u64) as i64 + 1)
            .collect()
    }

    /// Grow the window: ACK every outstanding packet in order, one ACK each, until cwnd
    /// reaches `target` packets (slow start from 2). Returns the time used.
    pub fn grow_to(s: &mut Ns2Sender, target: f64) -> u64 {
        let mut t = 200;
        let mut next = 1;
        sent(s);
        while s.cwnd < target {
            ack(s, t, next, &[]);
            next += 1;
            t += 1;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn handshake_syn_is_packet_zero_then_window_init_packets() {
        let mut s = established(Ns2Kind::Tahoe, 20, &[]);
        // SYN ACKed: cwnd 1 → 2 by opencwnd, then delay_growth sets windowInit_ = 2.
        assert_eq!(s.cwnd, 2.0);
        assert_eq!(s.ssthresh, 20, "ssthresh_ starts at window_");
        assert_eq!(
            sent(&mut s),
            Vec::<i64>::new(),
            "already drained by the fixture"
        );
        assert_eq!((s.t_seqno, s.maxseq, s.highest_ack), (3, 2, 0));
    }

    #[test]
    fn slow_start_adds_one_per_ack_and_avoidance_one_over_cwnd() {
        let mut s = established(Ns2Kind::Tahoe, 100, &[]);
        sent(&mut s);
        s.ssthresh = 4;
        // ACK 1: 2 → 3; ACK 2: 3 → 4 (slow start, +1 per ACK).
        assert_eq!(ack(&mut s, 200, 1, &[]), vec![3, 4]);
        ack(&mut s, 201, 2, &[]);
        assert_eq!(s.cwnd, 4.0);
        // cwnd ≥ ssthresh: +1/4, then +1/4.25.
        ack(&mut s, 202, 3, &[]);
        assert_eq!(s.cwnd, 4.25);
        ack(&mut s, 203, 4, &[]);
        assert!((s.cwnd - (4.25 + 1.0 / 4.25)).abs() < 1e-12);
    }

    #[test]
    fn rto_halves_ssthresh_and_goes_back_n_from_one_packet() {
        let mut s = established(Ns2Kind::Tahoe, 100, &[]);
        let t = grow_to(&mut s, 10.0);
        sent(&mut s);
        // cwnd 10, packets 9..=18 outstanding (ACK 8): ssthresh = ⌊10/2⌋ = 5, cwnd = 1,
        // resend the first unACKed packet only.
        assert_eq!((s.highest_ack, s.maxseq), (8, 18));
        assert_eq!(fire_rto(&mut s, t + 3000), vec![9]);
        assert_eq!((s.cwnd, s.ssthresh), (1.0, 5));
        assert_eq!(s.rtt.t_backoff, 2);
        assert_eq!(s.stats.rto_count, 1);
    }

    /// An ACK packet as the relay's receiver sends it: cumulative byte ACK and window.
    fn wire_ack(ack_bytes: u64, wnd_bytes: u64) -> Packet {
        Packet {
            kind: PacketKind::Ack,
            ack: ack_bytes,
            wnd: wnd_bytes,
            ..Default::default()
        }
    }

    #[test]
    fn behind_a_relay_the_advertised_window_limits_sending_and_a_probe_reopens_it() {
        let mut s = established(Ns2Kind::Reno, 100, &[]);
        s.cfg.peer_window = true;
        sent(&mut s);
        let mut out = Vec::new();
        // Packets 1, 2 are out (cwnd 2). ACK 1 raises cwnd to 3 and advertises 3000 bytes:
        // the right edge is byte 4000, so packets 3 and 4 (ending at 3000, 4000) fit.
        s.on_packet(SimTime(200_000_000), &wire_ack(1000, 3000), &mut out);
        let nums = |o: &Vec<Packet>| -> Vec<u64> { o.iter().map(|p| p.seq / 1000 + 1).collect() };
        assert_eq!(nums(&out), vec![3, 4]);
        assert_eq!(s.peer_edge, 4);
        out.clear();
        // Everything ACKed, window closed (the relay is full): nothing to send, the persist
        // timer runs instead of the retransmission timer.
        s.on_packet(SimTime(210_000_000), &wire_ack(4000, 0), &mut out);
        assert!(out.is_empty());
        assert_eq!(s.highest_ack, s.maxseq);
        let t = s
            .timer_deadline(TimerSlot::Handshake)
            .expect("persist timer armed");
        assert!(s.cwnd > 2.0, "a closed window is not congestion");
        // The window update is lost; the probe is an empty segment at snd_una.
        s.on_timer(t, TimerSlot::Handshake, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].kind, out[0].seq, out[0].len),
            (PacketKind::Data, 4000, 0)
        );
        out.clear();
        let backoff = s.timer_deadline(TimerSlot::Handshake).unwrap().since(t);
        assert!(backoff.ns() > 0);
        // The answer reopens the window: same cumulative ACK, so a window update and no
        // dupACK; new data leaves at once and the persist timer stops.
        let cwnd = s.cwnd;
        s.on_packet(t + SimDuration(20_000_000), &wire_ack(4000, 2000), &mut out);
        assert_eq!(nums(&out), vec![5, 6]);
        assert_eq!((s.dupacks, s.cwnd), (0, cwnd));
        assert!(s.timer_deadline(TimerSlot::Handshake).is_none());
        // Three window-update ACKs with the same cumulative ACK never trigger a fast
        // retransmit (each moves the edge).
        out.clear();
        for (k, w) in [3000u64, 4000, 5000].iter().enumerate() {
            s.on_packet(
                t + SimDuration(30_000_000 + k as u64),
                &wire_ack(4000, *w),
                &mut out,
            );
        }
        assert_eq!(s.dupacks, 0);
        assert!(out.iter().all(|p| p.flags & flags::RETRANS == 0));
    }
}
