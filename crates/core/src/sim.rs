//! The simulation: owns the clock, event queue, packet pool, topology, flows and series.
//! A run is a pure function of (scenario, seed): no global state, no wall-clock time, no
//! hash-ordered iteration.
use crate::cc::{self, FlowInit};
use crate::config::{AppConfig, ConfigError, ScenarioConfig};
use crate::event::{Event, EventQueue, Side, TimerSlot};
use crate::net::link::{Admission, LinkOutput};
use crate::net::packet::{flags as pflags, Packet, PacketPool};
use crate::net::topology::Topology;
use crate::rng::SimRng;
use crate::series::SeriesRecorder;
use crate::tcp::ns2::{self, Ns2Sender};
use crate::tcp::receiver::{EcnEcho, Receiver, ReceiverConfig};
use crate::tcp::sender::{Sender, SenderConfig, SenderStats};
use crate::time::{SimDuration, SimTime};

const SENDER_SLOTS: [TimerSlot; 3] = [
    TimerSlot::Retransmit,
    TimerSlot::Pacing,
    TimerSlot::Handshake,
];
const RECEIVER_SLOTS: [TimerSlot; 2] = [TimerSlot::Ack, TimerSlot::Handshake];

fn slot_index(slot: TimerSlot) -> usize {
    match slot {
        TimerSlot::Retransmit => 0,
        TimerSlot::Pacing => 1,
        TimerSlot::Ack => 2,
        TimerSlot::Handshake => 3,
    }
}

/// The data sender of a flow: the Linux-like sender, or one of ns-2's agents (selected by
/// (cca, stack), see `tcp::ns2::agent_for`). Enum dispatch: the Linux path stays inline.
pub enum FlowSender {
    Linux(Sender),
    Ns2(Ns2Sender),
}

impl FlowSender {
    #[inline]
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        match self {
            FlowSender::Linux(s) => s.start(now, out),
            FlowSender::Ns2(s) => s.start(now, out),
        }
    }

    #[inline]
    pub fn on_packet(&mut self, now: SimTime, p: &Packet, out: &mut Vec<Packet>) {
        match self {
            FlowSender::Linux(s) => s.on_packet(now, p, out),
            FlowSender::Ns2(s) => s.on_packet(now, p, out),
        }
    }

    #[inline]
    pub fn on_timer(&mut self, now: SimTime, slot: TimerSlot, out: &mut Vec<Packet>) {
        match self {
            FlowSender::Linux(s) => s.on_timer(now, slot, out),
            FlowSender::Ns2(s) => s.on_timer(now, slot, out),
        }
    }

    #[inline]
    pub fn timer_deadline(&self, slot: TimerSlot) -> Option<SimTime> {
        match self {
            FlowSender::Linux(s) => s.timer_deadline(slot),
            FlowSender::Ns2(s) => s.timer_deadline(slot),
        }
    }

    /// Counters of the sender.
    pub fn stats(&self) -> &SenderStats {
        match self {
            FlowSender::Linux(s) => &s.stats,
            FlowSender::Ns2(s) => &s.stats,
        }
    }

    pub fn stats_mut(&mut self) -> &mut SenderStats {
        match self {
            FlowSender::Linux(s) => &mut s.stats,
            FlowSender::Ns2(s) => &mut s.stats,
        }
    }

    pub fn cwnd_bytes(&self) -> u64 {
        match self {
            FlowSender::Linux(s) => s.cwnd_bytes(),
            FlowSender::Ns2(s) => s.cwnd_bytes(),
        }
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        match self {
            FlowSender::Linux(s) => s.ssthresh_bytes(),
            FlowSender::Ns2(s) => s.ssthresh_bytes(),
        }
    }

    /// Payload bytes per full segment.
    pub fn mss(&self) -> u32 {
        match self {
            FlowSender::Linux(s) => s.cfg.mss,
            FlowSender::Ns2(s) => s.mss(),
        }
    }

    /// First unacknowledged byte.
    pub fn snd_una(&self) -> u64 {
        match self {
            FlowSender::Linux(s) => s.snd_una,
            FlowSender::Ns2(s) => s.snd_una(),
        }
    }

    /// One past the highest byte sent.
    pub fn snd_nxt(&self) -> u64 {
        match self {
            FlowSender::Linux(s) => s.snd_nxt,
            FlowSender::Ns2(s) => s.snd_nxt(),
        }
    }

    /// All of the application's data has been acknowledged.
    pub fn finished(&self) -> bool {
        match self {
            FlowSender::Linux(s) => s.finished(),
            FlowSender::Ns2(s) => s.finished(),
        }
    }

    /// The Linux sender, if this flow runs one.
    pub fn linux(&self) -> Option<&Sender> {
        match self {
            FlowSender::Linux(s) => Some(s),
            FlowSender::Ns2(_) => None,
        }
    }

    /// The ns-2 agent, if this flow runs one.
    pub fn ns2(&self) -> Option<&Ns2Sender> {
        match self {
            FlowSender::Linux(_) => None,
            FlowSender::Ns2(s) => Some(s),
        }
    }
}

/// One TCP flow: both endpoints and the earliest pending heap event per timer slot.
pub struct Flow {
    pub cca: String,
    pub start: SimTime,
    pub app: AppConfig,
    pub sender: FlowSender,
    pub receiver: Receiver,
    /// ACKs are rewritten to ns-2 `TCPSink` sizes (`tcp::ns2::sink`).
    ns2_sink: bool,
    scheduled: [[Option<SimTime>; 4]; 2],
}

/// Packet accounting for the conservation checks.
#[derive(Debug, Clone, Default)]
pub struct PacketCounters {
    pub created: u64,
    pub delivered: u64,
}

/// A running simulation.
pub struct Simulation {
    pub cfg: ScenarioConfig,
    pub(crate) queue: EventQueue,
    pub(crate) pool: PacketPool,
    pub topo: Topology,
    pub flows: Vec<Flow>,
    pub end: SimTime,
    out: Vec<Packet>,
    /// Scratch buffer for `Link::on_wake`.
    link_out: Vec<LinkOutput>,
    pub series: SeriesRecorder,
    pub counters: PacketCounters,
    finished: bool,
}

impl Simulation {
    /// Build a simulation from a validated scenario.
    pub fn new(cfg: ScenarioConfig) -> Result<Simulation, ConfigError> {
        cfg.validate()?;
        let topo = Topology::dumbbell(&cfg);
        let mut flows = Vec::with_capacity(cfg.flows.len());
        for (i, f) in cfg.flows.iter().enumerate() {
            let rwnd = if f.tcp.window_scaling {
                f.tcp.rwnd_bytes
            } else {
                f.tcp.rwnd_bytes.min(65_535)
            };
            if let Some(kind) = ns2::agent_for(&f.cca, f.tcp.stack) {
                flows.push(Self::ns2_flow(&cfg, i, f, kind, rwnd)?);
                continue;
            }
            let info = cc::info(&f.cca);
            let sack = info.and_then(|ci| ci.sack).unwrap_or(f.tcp.sack);
            let cc_needs_ecn = info.is_some_and(|ci| ci.ecn);
            let ecn = f.tcp.ecn || cc_needs_ecn;
            let init = FlowInit {
                mss: f.tcp.mss_bytes,
                initial_window: f.tcp.initial_window_pkts,
            };
            let mut rng = SimRng::substream(cfg.seed, &format!("flow/{i}/cca"));
            let cc = cc::build(&f.cca, &f.cca_params, &init, &mut rng)
                .map_err(|e| ConfigError(format!("flows[{i}].{}", e.0)))?;
            let scfg = SenderConfig {
                mss: f.tcp.mss_bytes,
                sack,
                dsack: f.tcp.dsack && sack,
                timestamps: f.tcp.timestamps,
                initial_window: f.tcp.initial_window_pkts,
                frto: f.tcp.frto,
                rack: f.tcp.rack && sack,
                tlp: f.tcp.tlp && sack,
                pacing: f.tcp.pacing,
                slow_start_after_idle: f.tcp.slow_start_after_idle,
                app: f.app,
                ecn,
                ecn_always_ect: cc_needs_ecn,
                prr: f.tcp.prr,
                fack: f.tcp.fack && sack,
            };
            let rcfg = ReceiverConfig {
                mss: f.tcp.mss_bytes,
                sack,
                dsack: f.tcp.dsack && sack,
                timestamps: f.tcp.timestamps,
                delayed_ack: f.tcp.delayed_ack,
                rwnd_bytes: rwnd,
                app: f.app,
                ecn: match (ecn, cc_needs_ecn) {
                    (false, _) => EcnEcho::Off,
                    (true, false) => EcnEcho::Classic,
                    (true, true) => EcnEcho::Dctcp,
                },
            };
            let mut sender = Sender::new(i as u32, scfg, cc);
            let mut receiver = Receiver::new(i as u32, rcfg);
            if f.tcp.random_ts_offset {
                // Linux draws a 32-bit offset in timestamp ticks (1 ms).
                let mut ts_rng = SimRng::substream(cfg.seed, &format!("flow/{i}/tsoffset"));
                sender.ts_offset = ts_rng.below(1 << 32) * 1_000_000;
                receiver.ts_offset = ts_rng.below(1 << 32) * 1_000_000;
            }
            flows.push(Flow {
                cca: f.cca.clone(),
                start: SimTime(f.start_ns),
                app: f.app,
                sender: FlowSender::Linux(sender),
                receiver,
                ns2_sink: false,
                scheduled: [[None; 4]; 2],
            });
        }
        let end = SimTime(cfg.duration_ns);
        let interval = SimDuration(cfg.interval_ns);
        let mut queue = EventQueue::new();
        for (i, f) in flows.iter().enumerate() {
            queue.schedule(f.start, Event::FlowStart { flow: i as u32 });
        }
        if interval < end.since(SimTime::ZERO) {
            queue.schedule(SimTime::ZERO + interval, Event::Sample);
        }
        let series = SeriesRecorder::new(flows.len(), interval);
        Ok(Simulation {
            cfg,
            queue,
            pool: PacketPool::new(),
            topo,
            flows,
            end,
            out: Vec::with_capacity(64),
            link_out: Vec::new(),
            series,
            counters: PacketCounters::default(),
            finished: false,
        })
    }

    /// A flow running an ns-2 agent, with a receiver that behaves as ns-2's `TCPSink`
    /// (`TCPSink/Sack1` for sack/fack): every packet ACKed at once (unless the scenario
    /// asks for delayed ACKs), SACK only for the SACK agents, no D-SACK, the sender's
    /// timestamp always echoed (ns-2 sinks do), ECN off.
    fn ns2_flow(
        cfg: &ScenarioConfig,
        i: usize,
        f: &crate::config::FlowConfig,
        kind: ns2::Ns2Kind,
        rwnd: u64,
    ) -> Result<Flow, ConfigError> {
        let mut rng = SimRng::substream(cfg.seed, &format!("flow/{i}/ns2"));
        let tcp = ns2::FlowTcp {
            mss: f.tcp.mss_bytes,
            initial_window: f.tcp.initial_window_pkts,
            rwnd_bytes: rwnd,
            timestamps: f.tcp.timestamps,
            app: f.app,
        };
        let agent = ns2::build(kind, i as u32, &f.cca_params, &tcp, rng.next_f64())
            .map_err(|e| ConfigError(format!("flows[{i}].{}", e.0)))?;
        let rcfg = ReceiverConfig {
            mss: f.tcp.mss_bytes,
            sack: kind.uses_sack(),
            dsack: false,
            timestamps: true,
            delayed_ack: f.tcp.delayed_ack,
            rwnd_bytes: rwnd,
            app: f.app,
            ecn: EcnEcho::Off,
        };
        Ok(Flow {
            cca: f.cca.clone(),
            start: SimTime(f.start_ns),
            app: f.app,
            sender: FlowSender::Ns2(agent),
            receiver: Receiver::new(i as u32, rcfg),
            ns2_sink: true,
            scheduled: [[None; 4]; 2],
        })
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.queue.events_processed()
    }

    /// Packets alive in the pool (memory bound check).
    pub fn live_packets(&self) -> usize {
        self.pool.live()
    }

    /// Run to the end of the scenario.
    pub fn run(&mut self) {
        self.run_until(self.end);
        self.finish();
    }

    /// Process every event strictly before `t` (never beyond the end).
    pub fn run_until(&mut self, t: SimTime) {
        let t = t.min(self.end);
        while let Some(next) = self.queue.peek_time() {
            if next >= t {
                break;
            }
            let (now, ev) = self.queue.pop().expect("peeked");
            self.dispatch(now, ev);
        }
    }

    fn dispatch(&mut self, now: SimTime, ev: Event) {
        match ev {
            Event::LinkDeliver { link } => self.link_deliver(now, link),
            Event::LinkWake { link } => self.link_wake(now, link),
            Event::Timer { flow, side, slot } => self.timer(now, flow, side, slot),
            Event::FlowStart { flow } => {
                let f = &mut self.flows[flow as usize];
                f.sender.start(now, &mut self.out);
                self.emit(now, flow, Side::Sender);
                let f = &mut self.flows[flow as usize];
                f.receiver.start(now, &mut self.out);
                self.emit(now, flow, Side::Receiver);
            }
            Event::Sample => {
                self.sample(now);
                let next = now + self.series.interval;
                if next < self.end {
                    self.queue.schedule(next, Event::Sample);
                }
            }
        }
    }

    fn timer(&mut self, now: SimTime, flow: u32, side: Side, slot: TimerSlot) {
        let si = slot_index(slot);
        let sd = side as usize;
        let f = &mut self.flows[flow as usize];
        if f.scheduled[sd][si] == Some(now) {
            f.scheduled[sd][si] = None;
        }
        match side {
            Side::Sender => f.sender.on_timer(now, slot, &mut self.out),
            Side::Receiver => f.receiver.on_timer(now, slot, &mut self.out),
        }
        self.emit(now, flow, side);
    }

    /// Send what an endpoint produced and (re)arm its timers.
    fn emit(&mut self, now: SimTime, flow: u32, side: Side) {
        let route = match side {
            Side::Sender => Topology::data_route(flow),
            Side::Receiver => Topology::ack_route(flow),
        };
        let mut out = std::mem::take(&mut self.out);
        if side == Side::Receiver && self.flows[flow as usize].ns2_sink {
            out.iter_mut().for_each(ns2::sink::rewrite);
        }
        for mut p in out.drain(..) {
            p.route = route;
            p.hop = 0;
            self.counters.created += 1;
            let idx = self.pool.insert(p);
            self.forward(now, idx);
        }
        self.out = out;
        self.sync_timers(flow, side);
    }

    fn sync_timers(&mut self, flow: u32, side: Side) {
        let sd = side as usize;
        let f = &mut self.flows[flow as usize];
        let slots: &[TimerSlot] = match side {
            Side::Sender => &SENDER_SLOTS,
            Side::Receiver => &RECEIVER_SLOTS,
        };
        for &slot in slots {
            let deadline = match side {
                Side::Sender => f.sender.timer_deadline(slot),
                Side::Receiver => f.receiver.timer_deadline(slot),
            };
            let Some(d) = deadline else { continue };
            let si = slot_index(slot);
            let sched = &mut f.scheduled[sd][si];
            if sched.is_none_or(|s| d < s) {
                *sched = Some(d);
                self.queue.schedule(d, Event::Timer { flow, side, slot });
            }
        }
    }

    /// Offer packet `idx` to the link of its current hop.
    #[inline]
    fn forward(&mut self, now: SimTime, idx: u32) {
        let (route, hop, wire, ect) = {
            let p = self.pool.get(idx);
            (p.route, p.hop, p.wire_bytes, p.has(pflags::ECT))
        };
        let link_id = self.topo.routes[route as usize].links[hop as usize];
        let link = &mut self.topo.links[link_id as usize];
        match link.offer(now, idx, wire, ect) {
            Admission::Arrives { at, ce } => {
                if link.push(at, idx) {
                    self.queue
                        .schedule(at, Event::LinkDeliver { link: link_id });
                }
                if ce {
                    self.pool.get_mut(idx).flags |= pflags::CE;
                }
            }
            Admission::Queued => {
                if let Some(t) = link.arm_wakeup() {
                    self.queue.schedule(t, Event::LinkWake { link: link_id });
                }
            }
            Admission::QueueDrop
            | Admission::ErrorDrop
            | Admission::OutageDrop
            | Admission::AqmDrop => {
                self.pool.take(idx);
            }
        }
    }

    /// An event-driven link dequeues: put what it sent on the wire, free what it dropped.
    fn link_wake(&mut self, now: SimTime, link_id: u32) {
        let mut outs = std::mem::take(&mut self.link_out);
        let link = &mut self.topo.links[link_id as usize];
        link.on_wake(now, &mut outs);
        for o in outs.drain(..) {
            match o {
                LinkOutput::Sent { pkt, at, ce } => {
                    if link.push(at, pkt) {
                        self.queue
                            .schedule(at, Event::LinkDeliver { link: link_id });
                    }
                    if ce {
                        self.pool.get_mut(pkt).flags |= pflags::CE;
                    }
                }
                LinkOutput::Dropped { pkt, .. } => {
                    self.pool.take(pkt);
                }
            }
        }
        if let Some(t) = link.arm_wakeup() {
            self.queue.schedule(t, Event::LinkWake { link: link_id });
        }
        self.link_out = outs;
    }

    fn link_deliver(&mut self, now: SimTime, link_id: u32) {
        let (idx, next) = self.topo.links[link_id as usize].pop();
        if let Some(t) = next {
            self.queue.schedule(t, Event::LinkDeliver { link: link_id });
        }
        let (route, hop) = {
            let p = self.pool.get_mut(idx);
            p.hop += 1;
            (p.route, p.hop)
        };
        let r = &self.topo.routes[route as usize];
        if (hop as usize) < r.links.len() {
            self.forward(now, idx);
            return;
        }
        let (flow, side) = (r.dest_flow, r.dest_side);
        let p = self.pool.take(idx);
        self.counters.delivered += 1;
        let f = &mut self.flows[flow as usize];
        match side {
            Side::Sender => f.sender.on_packet(now, &p, &mut self.out),
            Side::Receiver => f.receiver.on_packet(now, &p, &mut self.out),
        }
        self.emit(now, flow, side);
    }

    fn sample(&mut self, now: SimTime) {
        let fwd = self.topo.bottleneck_fwd as usize;
        self.topo.links[fwd].sample(now);
        self.series
            .sample(now, &mut self.flows, &self.topo.links[fwd]);
    }

    /// Close the last (possibly partial) interval and the statistics at the end time.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let end = self.end;
        for l in &mut self.topo.links {
            l.sample(end);
        }
        if self.series.last_t() < end {
            self.sample(end);
        }
    }

    /// Packets still on links at the end (for conservation accounting).
    pub fn packets_on_links(&self) -> u64 {
        self.topo
            .links
            .iter()
            .map(|l| l.in_flight().count() as u64)
            .sum()
    }
}
