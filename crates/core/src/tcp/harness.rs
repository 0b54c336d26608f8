//! A two-endpoint harness for any sender (tests only): one connection — the Linux sender or
//! an ns-2 agent, and the receiver — joined by a path of fixed one-way delay, optionally
//! serializing data at a rate, in virtual time. Tests step it event by event and script
//! what the path does: lose the k-th transmission of a segment, delay a segment (which
//! reorders it), delay the n-th ACK, or hand a relaying sender more data at an instant.
//!
//! Time jumps from event to event (quinn's `Pair`); events at one instant run in the order
//! they were scheduled (`engine::event`), so ACKs that arrive together are processed one by
//! one and a test can look at the sender after each.
use crate::engine::event::{ArrivalRank, EventQueue};
use crate::engine::time::{serialization_time, SimDuration, SimTime};
use crate::net::packet::{Packet, PacketKind};
use crate::scenario::{AppConfig, TcpConfig};
use crate::tcp::connection::{self, ConnSpec, Connection, Side, TimerSlot};
use crate::tcp::linux::Sender;
use crate::tcp::ns2;
use std::collections::BTreeMap;

/// What happens at an instant.
#[derive(Debug)]
enum Ev {
    ToReceiver(Packet),
    ToSender(Packet),
    Timer(Side, TimerSlot),
    Supply(u64),
}

/// The harness's packets travel over no links: arrivals of one nanosecond keep their
/// scheduling order.
impl ArrivalRank for Ev {
    fn arrival_rank(&self) -> u32 {
        0
    }
}

/// What a step did, as far as tests look.
#[derive(Debug, Clone)]
pub enum Step {
    /// The sender got (and reacted to) a packet.
    Acked(Packet),
    /// Anything else: the receiver got a packet, a timer fired, data was supplied.
    Other,
}

/// The scripted fate of a data segment's transmission or of an ACK.
#[derive(Copy, Clone, Debug)]
enum Rule {
    /// Lose transmission `tx` (1: the original) of segment `seg`.
    LoseData { seg: u64, tx: u32 },
    /// Delay transmission `tx` of segment `seg` by `by` on its way.
    DelayData { seg: u64, tx: u32, by: SimDuration },
    /// Delay the `nth` ACK the receiver sends (1: the first, handshake excluded) by `by`.
    DelayAck { nth: u64, by: SimDuration },
}

/// How to build a pair.
#[derive(Clone, Debug)]
pub struct PairSpec {
    pub cca: &'static str,
    pub tcp: TcpConfig,
    pub app: AppConfig,
    pub one_way: SimDuration,
    /// Serialization rate of data packets (bit/s); `None`: none. ACKs are never serialized.
    pub rate_bps: Option<u64>,
    /// The sender is fed by `supply` (a PEP relay's sender) instead of having its data.
    pub relay: bool,
}

impl Default for PairSpec {
    fn default() -> Self {
        PairSpec {
            cca: "reno",
            tcp: TcpConfig::default(),
            app: AppConfig::Bulk,
            one_way: SimDuration::from_ms(50),
            rate_bps: None,
            relay: false,
        }
    }
}

/// One connection in virtual time.
pub struct Pair {
    pub conn: Connection,
    pub now: SimTime,
    spec: PairSpec,
    queue: EventQueue<Ev>,
    /// Earliest scheduled event per (side, timer slot).
    scheduled: BTreeMap<(usize, usize), SimTime>,
    link_free: SimTime,
    rules: Vec<Rule>,
    /// Transmissions so far per data segment (by sequence number).
    tx_count: BTreeMap<u64, u32>,
    /// ACKs the receiver sent (handshake excluded).
    acks: u64,
    /// Every data segment the sender put on the path: (time, seq, retransmission).
    pub sent: Vec<(SimTime, u64, bool)>,
    out: Vec<Packet>,
}

impl Pair {
    pub fn new(spec: PairSpec) -> Pair {
        let params = BTreeMap::new();
        let conn = connection::build(
            1,
            &ConnSpec {
                flow: 0,
                leg: 0,
                field: "flows[0]".into(),
                cca: spec.cca,
                cca_params: &params,
                tcp: &spec.tcp,
                app: spec.app,
                start: SimTime::ZERO,
                relay_sender: spec.relay,
                relay_limit: None,
                streams: None,
            },
        )
        .expect("a valid connection");
        Pair {
            conn,
            now: SimTime::ZERO,
            spec,
            queue: EventQueue::new(),
            scheduled: BTreeMap::new(),
            link_free: SimTime::ZERO,
            rules: Vec::new(),
            tx_count: BTreeMap::new(),
            acks: 0,
            sent: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Lose transmission `tx` (1: the original) of segment number `seg` (from 0).
    pub fn lose(&mut self, seg: u64, tx: u32) -> &mut Self {
        self.rules.push(Rule::LoseData { seg, tx });
        self
    }

    /// Delay transmission `tx` of segment `seg` by `by` (it arrives after later ones).
    pub fn delay_data(&mut self, seg: u64, tx: u32, by: SimDuration) -> &mut Self {
        self.rules.push(Rule::DelayData { seg, tx, by });
        self
    }

    /// Delay the `nth` ACK (from 1, the handshake's not counted) by `by`.
    pub fn delay_ack(&mut self, nth: u64, by: SimDuration) -> &mut Self {
        self.rules.push(Rule::DelayAck { nth, by });
        self
    }

    /// Hand the (relaying) sender `bytes` more at `at`.
    pub fn supply_at(&mut self, at: SimTime, bytes: u64) -> &mut Self {
        self.queue.schedule(at, Ev::Supply(bytes));
        self
    }

    /// The Linux sender (panics for an ns-2 agent).
    pub fn linux(&self) -> &Sender {
        self.conn.sender.linux().expect("a Linux sender")
    }

    /// Both endpoints start at time 0 (the client opens the connection).
    pub fn start(&mut self) -> &mut Self {
        self.conn.sender.start(self.now, &mut self.out);
        self.emit(Side::Sender);
        self.conn.receiver.start(self.now, &mut self.out);
        self.emit(Side::Receiver);
        self
    }

    /// Process the next event; `None` when nothing is left.
    pub fn step(&mut self) -> Option<Step> {
        let (t, ev) = self.queue.pop()?;
        self.now = t;
        Some(match ev {
            Ev::ToReceiver(p) => {
                self.conn.receiver.on_packet(t, &p, &mut self.out);
                self.emit(Side::Receiver);
                Step::Other
            }
            Ev::ToSender(p) => {
                self.conn.sender.on_packet(t, &p, &mut self.out);
                self.emit(Side::Sender);
                Step::Acked(p)
            }
            Ev::Timer(side, slot) => {
                if self.scheduled.get(&key(side, slot)) == Some(&t) {
                    self.scheduled.remove(&key(side, slot));
                }
                match side {
                    Side::Sender => self.conn.sender.on_timer(t, slot, &mut self.out),
                    Side::Receiver => self.conn.receiver.on_timer(t, slot, &mut self.out),
                }
                self.emit(side);
                Step::Other
            }
            Ev::Supply(bytes) => {
                self.conn.sender.supply(t, bytes, &mut self.out);
                self.emit(Side::Sender);
                Step::Other
            }
        })
    }

    /// Process every event before `t`; the clock is then `t`.
    pub fn run_until(&mut self, t: SimTime) -> &mut Self {
        while self.queue.peek_time().is_some_and(|n| n < t) {
            self.step();
        }
        self.now = t;
        self
    }

    /// Step until the sender has processed the next data ACK (handshake packets skipped);
    /// returns it.
    pub fn next_ack(&mut self) -> Packet {
        loop {
            match self.step().expect("an ACK is coming") {
                Step::Acked(p) if p.kind == PacketKind::Ack => return p,
                _ => continue,
            }
        }
    }

    /// Run until the receiver has `bytes` in order or `limit` passes; returns when.
    pub fn run_until_delivered(&mut self, bytes: u64, limit: SimTime) -> Option<SimTime> {
        while self.conn.receiver.rcv_nxt < bytes {
            if self.queue.peek_time().is_none_or(|t| t > limit) {
                return None;
            }
            self.step();
        }
        Some(self.now)
    }

    /// Put what an endpoint produced on the path and (re)arm its timers.
    fn emit(&mut self, side: Side) {
        let mut out = std::mem::take(&mut self.out);
        if side == Side::Receiver && self.conn.ns2_sink {
            out.iter_mut().for_each(ns2::sink::rewrite);
        }
        for p in out.drain(..) {
            match side {
                Side::Sender => self.carry_data(p),
                Side::Receiver => self.carry_ack(p),
            }
        }
        self.out = out;
        self.sync_timers(side);
    }

    fn carry_data(&mut self, p: Packet) {
        let mut at = self.now;
        if let Some(rate) = self.spec.rate_bps {
            at = at.max(self.link_free) + serialization_time(p.wire_bytes as u64, rate);
            self.link_free = at;
        }
        at += self.spec.one_way;
        if p.kind == PacketKind::Data && p.len > 0 {
            let seg = p.seq / self.spec.tcp.mss_bytes as u64;
            let tx = self.tx_count.entry(p.seq).or_insert(0);
            *tx += 1;
            let tx = *tx;
            self.sent
                .push((self.now, p.seq, p.has(crate::net::packet::flags::RETRANS)));
            for r in &self.rules {
                match *r {
                    Rule::LoseData { seg: s, tx: n } if (s, n) == (seg, tx) => return,
                    Rule::DelayData { seg: s, tx: n, by } if (s, n) == (seg, tx) => at += by,
                    _ => {}
                }
            }
        }
        self.queue.schedule(at, Ev::ToReceiver(p));
    }

    fn carry_ack(&mut self, p: Packet) {
        let mut at = self.now + self.spec.one_way;
        if p.kind == PacketKind::Ack {
            self.acks += 1;
            for r in &self.rules {
                if let Rule::DelayAck { nth, by } = *r {
                    if nth == self.acks {
                        at += by;
                    }
                }
            }
        }
        self.queue.schedule(at, Ev::ToSender(p));
    }

    fn sync_timers(&mut self, side: Side) {
        for slot in [
            TimerSlot::Retransmit,
            TimerSlot::Pacing,
            TimerSlot::Ack,
            TimerSlot::Handshake,
        ] {
            let deadline = match side {
                Side::Sender => self.conn.sender.timer_deadline(slot),
                Side::Receiver => self.conn.receiver.timer_deadline(slot),
            };
            let Some(d) = deadline else { continue };
            let k = key(side, slot);
            if self.scheduled.get(&k).is_none_or(|&s| d < s) {
                self.scheduled.insert(k, d);
                self.queue.schedule(d, Ev::Timer(side, slot));
            }
        }
    }
}

fn key(side: Side, slot: TimerSlot) -> (usize, usize) {
    (side as usize, slot as usize)
}

/// The fixtures' TCP: 1000-byte segments, IW 10, SACK, every segment ACKed at once, and
/// none of the options that would mask the mechanism under test (RACK, TLP, F-RTO, D-SACK,
/// timestamps): tests turn on what they need.
pub fn plain_tcp() -> TcpConfig {
    TcpConfig {
        mss_bytes: 1000,
        initial_window_pkts: 10,
        delayed_ack: false,
        timestamps: false,
        random_ts_offset: false,
        rack: false,
        tlp: false,
        frto: false,
        dsack: false,
        ..TcpConfig::default()
    }
}

/// A started Linux Reno connection with `tcp` running `app` over a 100 ms round trip.
pub fn reno(tcp: TcpConfig, app: AppConfig) -> Pair {
    reno_with(PairSpec {
        tcp,
        app,
        ..PairSpec::default()
    })
}

/// A started Linux Reno connection as `spec` says.
pub fn reno_with(spec: PairSpec) -> Pair {
    let mut p = Pair::new(PairSpec {
        cca: "reno",
        ..spec
    });
    p.start();
    p
}

/// (cwnd, ssthresh, prr_delivered, prr_out, CA state) of a Linux sender.
pub fn window(p: &Pair) -> (u32, u32, u32, u32, crate::cc::CaState) {
    let s = p.linux();
    (
        s.w.cwnd,
        s.w.ssthresh,
        s.prr.prr_delivered,
        s.prr.prr_out,
        s.ca_state,
    )
}

/// `ms` milliseconds after time 0.
pub fn ms(ms: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_ms(ms)
}
