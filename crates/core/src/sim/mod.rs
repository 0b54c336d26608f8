//! The simulation: owns the clock, event queue, packet pool, topology, connections, user
//! flows and series. A run is a pure function of (scenario, seed): no global state, no
//! wall-clock time, no hash-ordered iteration.
//!
//! The event loop here moves packets between links and endpoints and keeps the endpoints'
//! timers in the event queue; `flow` plans the user flows and their connections, `relay`
//! joins the connections of a flow split by PEPs, `series` samples per-interval counters,
//! `trace` writes packet captures and event logs when a run asks for them; `control` is how
//! a caller watches a run and stops it early; `cross_tcp` runs the connections of TCP cross
//! traffic; `ahead` lets an endpoint handle a packet on its last hop as soon as its arrival
//! time is known; `hints` asks for cold state ahead of the deliveries and events that read
//! it.
mod ahead;
pub mod control;
pub mod cross_tcp;
pub mod flow;
mod hints;
pub mod relay;
pub mod series;
pub mod trace;

use crate::app::cross::CrossSource;
use crate::app::cross_tcp::TcpCross;
use crate::engine::event::{ArrivalRank, EventQueue};
use crate::engine::time::{SimDuration, SimTime};
use crate::net::access::OnAccess;
use crate::net::link::{Admission, LinkOutput};
use crate::net::packet::{flags as pflags, Packet, PacketKind, PacketPool};
use crate::net::topology::{Dest, Topology, NO_FEEDER, NO_MEDIUM};
use crate::net::wifi::WifiOutput;
use crate::scenario::{ConfigError, ScenarioConfig};
use crate::tcp::connection::{Connection, Side, TimerSlot};
use crate::tcp::ns2;
use control::{Progress, CHECK_EVERY_EVENTS};
use flow::{Flow, FlowKind};
use hints::HINT_EVENTS_AFTER_BYTES;
use relay::RelayIndex;
use series::{SeriesOut, SeriesRecorder};
use trace::Tracer;

/// Something that happens at an instant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The first packet in flight on `link` reaches the far end.
    LinkDeliver { link: u32 },
    /// An event-driven link's transmitter is free: dequeue (`Link::on_wake`).
    LinkWake { link: u32 },
    /// A Wi-Fi medium's next channel access or background arrival (`WifiMedium::on_wake`).
    WifiWake { medium: u32 },
    /// A timer of an endpoint of connection `conn`.
    Timer {
        conn: u32,
        side: Side,
        slot: TimerSlot,
    },
    /// A flow's application starts.
    FlowStart { flow: u32 },
    /// A constant-bit-rate source sends its next datagram(s).
    UdpSend { flow: u32 },
    /// A cross-traffic source starts bursts or sends packets.
    CrossSend { source: u32 },
    /// A timer of an endpoint of TCP cross-traffic slot `conn` (`Simulation::xconns`).
    CrossTimer {
        conn: u32,
        side: Side,
        slot: TimerSlot,
    },
    /// End of a series interval: sample the counters.
    Sample,
}

/// Packets from several links reaching a link in one nanosecond enter it in the order of
/// the links' numbers (`engine::event`); only deliveries are arrivals.
impl ArrivalRank for Event {
    #[inline]
    fn arrival_rank(&self) -> u32 {
        match *self {
            Event::LinkDeliver { link } => link,
            _ => u32::MAX,
        }
    }
}

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

/// Packet accounting for the conservation checks.
#[derive(Debug, Clone, Default)]
pub struct PacketCounters {
    pub created: u64,
    pub delivered: u64,
}

/// A running simulation.
pub struct Simulation {
    pub cfg: ScenarioConfig,
    pub(crate) queue: EventQueue<Event>,
    pub(crate) pool: PacketPool,
    pub topo: Topology,
    /// TCP connections (one per flow without PEPs, in flow order).
    pub conns: Vec<Connection>,
    /// User flows, in scenario order.
    pub flows: Vec<Flow>,
    /// Cross-traffic sources, in scenario order (not flows: reported on their own).
    pub cross: Vec<CrossSource>,
    /// The connection slots of TCP cross traffic, of all sources, in the order made.
    pub xconns: Vec<cross_tcp::XConn>,
    /// Which relay each connection feeds or is fed by.
    relays: RelayIndex,
    pub end: SimTime,
    out: Vec<Packet>,
    /// Scratch buffer for `Link::on_wake`.
    link_out: Vec<LinkOutput>,
    /// Scratch buffer for `WifiMedium::on_wake`.
    wifi_out: Vec<WifiOutput>,
    pub series: SeriesRecorder,
    pub counters: PacketCounters,
    /// Per packet handle: its place on the access link it is crossing (`net::access`).
    on_access: Vec<OnAccess>,
    finished: bool,
    /// A streamed series failed: the run stops at once (`api` reports why).
    halted: bool,
    /// Hand packets to the access link behind their link as they leave it (`on_wire`).
    hand_over: bool,
    /// Pass packets leaving a host on to the link behind its interface (`forward_access`).
    pass_on: bool,
    /// Per flow: its one TCP connection (`u32::MAX`: UDP, or split by PEPs).
    flow_conn: Vec<u32>,
    /// Ask for what the next event reads while handling one (`HINT_EVENTS_AFTER_BYTES`).
    hint_events: bool,
    /// Handle packets on their last hop at their endpoint ahead of time (`ahead`).
    ahead: bool,
    /// An endpoint is handling a packet ahead of time (`ahead`).
    in_ahead: bool,
    /// The end of the stretch of the run being run (`run_until`), at most `end`.
    until: SimTime,
    /// When the next series sample reads the bottleneck (`SimTime::MAX`: none is due).
    next_sample: SimTime,
    /// Packet captures and the event log, when asked for (`set_tracer`).
    tracer: Option<Box<Tracer>>,
}

impl Simulation {
    /// Build a simulation from a validated scenario; its series are kept in memory.
    pub fn new(cfg: ScenarioConfig) -> Result<Simulation, ConfigError> {
        Simulation::with_series(cfg, SeriesOut::Memory)
    }

    /// Build a simulation whose series go to `series` (kept, discarded or streamed).
    pub fn with_series(cfg: ScenarioConfig, series: SeriesOut) -> Result<Simulation, ConfigError> {
        cfg.validate()?;
        let plan = flow::plan(&cfg)?;
        let topo = Topology::build(&cfg, &plan.conn_plans, &plan.udp_flows);
        let relays = RelayIndex::new(&plan.flows, plan.conns.len());
        let end = SimTime(cfg.duration_ns);
        let interval = SimDuration(cfg.interval_ns);
        let mut queue = EventQueue::new();
        for (i, f) in plan.flows.iter().enumerate() {
            queue.schedule(f.start, Event::FlowStart { flow: i as u32 });
        }
        let next_sample = if interval < end.since(SimTime::ZERO) {
            queue.schedule(SimTime::ZERO + interval, Event::Sample);
            SimTime::ZERO + interval
        } else {
            SimTime::MAX
        };
        let cross: Vec<CrossSource> = cfg
            .cross
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut s = CrossSource::new(i as u32, c, cfg.seed);
                s.tcp = TcpCross::new(c, cfg.cross_rtt_ns(c)).map(Box::new);
                s
            })
            .collect();
        for c in &cross {
            let t = c.deadline();
            if t < end {
                queue.schedule(t, Event::CrossSend { source: c.index });
            }
        }
        let series = SeriesRecorder::new(plan.flows.len(), interval, series);
        let hint_events =
            plan.conns.len() * std::mem::size_of::<Connection>() > HINT_EVENTS_AFTER_BYTES;
        let flow_conn = plan
            .flows
            .iter()
            .map(|f| match &f.kind {
                FlowKind::Tcp { conns, .. } if conns.len() == 1 => conns[0],
                _ => u32::MAX,
            })
            .collect();
        let mut topo = topo;
        // Background stations of Wi-Fi media transmit from the start.
        for (m, medium) in topo.media.iter_mut().enumerate() {
            if let Some(t) = medium.arm_wakeup() {
                queue.schedule(t, Event::WifiWake { medium: m as u32 });
            }
        }
        Ok(Simulation {
            cfg,
            queue,
            pool: PacketPool::new(),
            topo,
            conns: plan.conns,
            flows: plan.flows,
            cross,
            xconns: Vec::new(),
            relays,
            end,
            out: Vec::with_capacity(64),
            link_out: Vec::new(),
            wifi_out: Vec::new(),
            series,
            counters: PacketCounters::default(),
            on_access: Vec::new(),
            finished: false,
            halted: false,
            hand_over: true,
            pass_on: true,
            hint_events,
            flow_conn,
            ahead: true,
            in_ahead: false,
            until: end,
            next_sample,
            tracer: None,
        })
    }

    /// Send the series to `out` instead (before the run starts).
    pub fn set_series(&mut self, out: SeriesOut) {
        assert_eq!(
            self.events(),
            0,
            "the series' destination is chosen before the run"
        );
        self.series = SeriesRecorder::new(self.flows.len(), self.series.interval, out);
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.queue.events_processed()
    }

    /// Packets alive in the pool (memory bound check).
    pub fn live_packets(&self) -> usize {
        self.pool.live()
    }

    /// Give every hop its own delivery event, as before packets were handed to the access
    /// link behind their link ahead of time (`on_wire`); the results are the same but for
    /// the order of two arrivals due in the same nanosecond and the event count. For
    /// checking exactly that.
    pub fn set_hand_over(&mut self, on: bool) {
        self.hand_over = on;
    }

    /// Pass packets leaving a host on to the link behind its interface at once (on by
    /// default; the tests compare runs without it).
    pub fn set_pass_on(&mut self, on: bool) {
        self.pass_on = on;
    }

    /// Observe this run with `tracer` (before it starts).
    pub fn set_tracer(&mut self, tracer: Tracer) {
        self.tracer = Some(Box::new(tracer));
    }

    /// The tracer, to finish its outputs after the run.
    pub fn take_tracer(&mut self) -> Option<Tracer> {
        self.tracer.take().map(|t| *t)
    }

    /// Run to the end of the scenario.
    pub fn run(&mut self) {
        self.run_until(self.end);
        self.finish();
    }

    /// Run to the end of the scenario, asking `go_on` after every `CHECK_EVERY_EVENTS`
    /// events whether to continue. Returns false when `go_on` stopped the run: it is then
    /// left unfinished (its statistics are not closed). Asking only reads the clock and the
    /// event count, so a run that is not stopped is bit-identical to `run`'s.
    pub fn run_controlled(&mut self, go_on: &mut dyn FnMut(&Progress) -> bool) -> bool {
        loop {
            let limit = self.events().saturating_add(CHECK_EVERY_EVENTS);
            if self.run_until_events(self.end, limit) {
                break;
            }
            let progress = Progress {
                now_ns: self.queue.now().ns(),
                end_ns: self.end.ns(),
                events: self.events(),
            };
            if !go_on(&progress) {
                return false;
            }
        }
        self.finish();
        true
    }

    /// Process every event strictly before `t` (never beyond the end).
    pub fn run_until(&mut self, t: SimTime) {
        self.run_until_events(t, u64::MAX);
    }

    /// Process every event strictly before `t` (never beyond the end), stopping early once
    /// `max_events` events have been processed in all. True when `t` was reached (or the
    /// run halted), false when the event count stopped it.
    fn run_until_events(&mut self, t: SimTime, max_events: u64) -> bool {
        let t = t.min(self.end);
        self.until = t;
        while let Some(next) = self.queue.peek_time() {
            if next >= t || self.halted {
                return true;
            }
            if self.queue.events_processed() >= max_events {
                return false;
            }
            let (now, ev) = self.queue.pop().expect("peeked");
            if self.hint_events {
                if let Some(&next) = self.queue.peek_hint() {
                    self.prefetch_event(next);
                }
            }
            self.dispatch(now, ev);
        }
        true
    }

    fn dispatch(&mut self, now: SimTime, ev: Event) {
        match ev {
            Event::LinkDeliver { link } => self.link_deliver(now, link),
            Event::LinkWake { link } => self.link_wake(now, link),
            Event::WifiWake { medium } => self.wifi_wake(now, medium),
            Event::Timer { conn, side, slot } => self.timer(now, conn, side, slot),
            Event::FlowStart { flow } => self.start_flow(now, flow),
            Event::UdpSend { flow } => self.udp_send(now, flow),
            Event::CrossSend { source } => self.cross_send(now, source),
            Event::CrossTimer { conn, side, slot } => self.cross_timer(now, conn, side, slot),
            Event::Sample => {
                self.sample(now);
                // the series cannot be delivered: the rest of the run would be wasted
                self.halted = self.series.failed().is_some();
                let next = now + self.series.interval;
                self.next_sample = SimTime::MAX;
                if next < self.end {
                    self.queue.schedule(next, Event::Sample);
                    self.next_sample = next;
                }
            }
        }
    }

    /// A user flow starts: its end hosts act (a PEP's own connections open when the SYN or
    /// the data reaches it).
    fn start_flow(&mut self, now: SimTime, flow: u32) {
        let conns: Vec<u32> = match &mut self.flows[flow as usize].kind {
            FlowKind::Tcp { conns, .. } => conns.clone(),
            FlowKind::Udp { source, .. } => {
                source.start(now);
                if let Some(t) = source.deadline() {
                    self.queue.schedule(t, Event::UdpSend { flow });
                }
                return;
            }
        };
        let (first, last) = (
            conns[0],
            *conns.last().expect("a TCP flow has a connection"),
        );
        self.conns[first as usize].sender.start(now, &mut self.out);
        self.emit(now, first, Side::Sender);
        self.conns[last as usize].receiver.start(now, &mut self.out);
        self.emit(now, last, Side::Receiver);
    }

    fn udp_send(&mut self, now: SimTime, flow: u32) {
        let FlowKind::Udp { source, route, .. } = &mut self.flows[flow as usize].kind else {
            return;
        };
        source.on_timer(now, &mut self.out);
        let next = source.deadline();
        let route = self.topo.udp_route(*route);
        if let Some(t) = next.filter(|&t| t < self.end) {
            self.queue.schedule(t, Event::UdpSend { flow });
        }
        self.inject(now, route);
    }

    fn cross_send(&mut self, now: SimTime, source: u32) {
        let c = &mut self.cross[source as usize];
        c.on_timer(now, &mut self.out);
        let next = c.deadline();
        if next < self.end {
            self.queue.schedule(next, Event::CrossSend { source });
        }
        let route = self.topo.cross_routes[source as usize];
        self.inject(now, route);
        if !self.cross[source as usize].arrived.is_empty() {
            self.cross_open(now, source);
        }
    }

    fn timer(&mut self, now: SimTime, conn: u32, side: Side, slot: TimerSlot) {
        fire_timer(
            &mut self.conns[conn as usize],
            now,
            side,
            slot,
            &mut self.out,
        );
        self.emit(now, conn, side);
    }

    /// Put the packets in `self.out` on `route`.
    fn inject(&mut self, now: SimTime, route: u32) {
        let mut out = std::mem::take(&mut self.out);
        for mut p in out.drain(..) {
            p.route = route;
            p.hop = 0;
            self.counters.created += 1;
            let idx = self.pool.insert(p);
            self.forward(now, idx);
        }
        self.out = out;
    }

    /// Send what an endpoint produced and (re)arm its timers.
    fn emit(&mut self, now: SimTime, conn: u32, side: Side) {
        let route = match side {
            Side::Sender => Topology::data_route(conn),
            Side::Receiver => Topology::ack_route(conn),
        };
        if side == Side::Receiver && self.conns[conn as usize].ns2_sink {
            self.out.iter_mut().for_each(ns2::sink::rewrite);
        }
        if let Some(t) = self.tracer.as_deref_mut() {
            if side == Side::Sender {
                let seen = self.queue.now();
                t.after_sender(now, seen, conn, &self.conns[conn as usize], &self.out);
            }
        }
        self.inject(now, route);
        self.sync_timers(conn, side);
    }

    fn sync_timers(&mut self, conn: u32, side: Side) {
        let f = &mut self.conns[conn as usize];
        arm_timers(&mut self.queue, f, side, |slot| Event::Timer {
            conn,
            side,
            slot,
        });
    }

    /// Offer packet `idx` to the link of its current hop.
    #[inline]
    fn forward(&mut self, now: SimTime, idx: u32) {
        let (route, hop, wire, ect) = {
            let p = self.pool.get(idx);
            (p.route, p.hop, p.wire_bytes, p.has(pflags::ECT))
        };
        let link_id = self.topo.route_link(route, hop);
        if let Some(t) = self.tracer.as_deref_mut() {
            t.ingress(now, link_id, idx, &self.pool);
        }
        if let Some(a) = self.topo.access_index(link_id) {
            self.forward_access(now, link_id, a, idx, wire);
            return;
        }
        if !self.topo.media.is_empty() && self.topo.medium_of[link_id as usize] != NO_MEDIUM {
            self.wifi_offer(now, link_id, idx, wire);
            return;
        }
        let link = &mut self.topo.links[link_id as usize];
        match link.offer(now, idx, wire, ect) {
            Admission::Arrives { at, ce } => {
                if ce {
                    self.pool.get_mut(idx).flags |= pflags::CE;
                }
                self.on_wire(link_id, at, idx);
            }
            Admission::Queued => {
                if let Some(t) = link.arm_wakeup() {
                    self.queue.schedule(t, Event::LinkWake { link: link_id });
                }
            }
            Admission::QueueDrop
            | Admission::ErrorDrop
            | Admission::OutageDrop
            | Admission::AqmDrop => self.drop_packet(idx),
        }
    }

    /// Packet `idx` has left (wired) link `link_id` and reaches its far end at `at`. When
    /// the next hop is an access link this link alone feeds (`Topology::access_feeder`), it
    /// is offered to that access link now, for `at`: the access link sees exactly the offers
    /// it would see at their times (this link delivers in order and nothing else offers to
    /// it), and the packet needs one event for the two hops instead of two. A packet the
    /// access link refuses stays on this link, marked, and is dropped when it arrives; one
    /// that arrives at or after the end stays on this link too, as it would.
    #[inline]
    fn on_wire(&mut self, link_id: u32, at: SimTime, idx: u32) {
        let p = self.pool.get(idx);
        let (route, hop) = (p.route, p.hop + 1);
        if self.hand_over && at < self.end && (hop as u32) < self.topo.routes[route as usize].len {
            let next = self.topo.route_link(route, hop);
            if let Some(a) = self.topo.access_index(next) {
                if self.topo.access_feeder[a] == link_id
                    && self.hand_over(link_id, at, idx, next, a)
                {
                    return;
                }
            }
        }
        if self.topo.links[link_id as usize].push(at, idx) {
            self.queue
                .schedule_arrival(at, Event::LinkDeliver { link: link_id });
        }
    }

    /// `on_wire`'s hand-over: offer packet `idx`, arriving at `at`, to access link `next`
    /// (`access[a]`). False if it refused the packet (marked to be dropped on arrival).
    #[inline]
    fn hand_over(&mut self, link_id: u32, at: SimTime, idx: u32, next: u32, a: usize) -> bool {
        if self.ahead
            && self.topo.access[a].idle_at(at)
            && self.hand_over_ahead(link_id, at, idx, a)
        {
            return true;
        }
        self.keep_on_access(idx);
        let wire = self.pool.get(idx).wire_bytes;
        match self.topo.access[a].offer(at, idx, wire, &mut self.on_access) {
            Some((arrive, first)) => {
                if let Some(t) = self.tracer.as_deref_mut() {
                    t.egress_ahead(at, link_id, idx, &self.pool);
                    t.ingress(at, next, idx, &self.pool);
                }
                self.pool.get_mut(idx).hop += 1;
                if first {
                    self.queue
                        .schedule_arrival(arrive, Event::LinkDeliver { link: next });
                }
                true
            }
            None => {
                self.pool.get_mut(idx).flags |= pflags::REFUSED;
                false
            }
        }
    }

    /// Make room for packet `idx`'s record on an access link (`on_access` grows with the pool).
    #[inline]
    fn keep_on_access(&mut self, idx: u32) {
        if idx as usize >= self.on_access.len() {
            self.on_access.resize(
                self.pool.capacity().max(idx as usize + 1),
                OnAccess::default(),
            );
        }
    }

    /// Offer packet `idx` to access link `link_id` (`Topology::access[a]`): what `forward`
    /// does with a plain DropTail `Link`, on the compact state. When the access link is a
    /// host's interface that alone feeds the next link (`Topology::access_feeds`) and holds
    /// no packet, the packet is offered to that link at once, for the time it reaches it:
    /// the link decides from that time alone and sees its offers in the same order, so the
    /// two hops need no event. Not when it would reach the link at or after the next series
    /// sample, which reads the bottleneck's queue as of its own time, or the end; a tracer
    /// sees it enter the link ahead of time (`Tracer::set_passing`).
    #[inline]
    fn forward_access(&mut self, now: SimTime, link_id: u32, a: usize, idx: u32, wire: u32) {
        let feeds = self.topo.access_feeds[a];
        if feeds != NO_FEEDER && self.pass_on && self.topo.access[a].is_empty() {
            let p = self.pool.get(idx);
            let (route, hop) = (p.route, p.hop + 1);
            if (hop as u32) < self.topo.routes[route as usize].len
                && self.topo.route_link(route, hop) == feeds
            {
                let before = self.ahead_bound();
                if let Some(at) = self.topo.access[a].pass(now, wire, before) {
                    self.pool.get_mut(idx).hop = hop;
                    if let Some(t) = self.tracer.as_deref_mut() {
                        t.set_passing(Some(self.queue.now()));
                    }
                    self.forward(at, idx);
                    if let Some(t) = self.tracer.as_deref_mut() {
                        t.set_passing(None);
                    }
                    return;
                }
            }
        }
        self.keep_on_access(idx);
        match self.topo.access[a].offer(now, idx, wire, &mut self.on_access) {
            Some((at, first)) => {
                if first {
                    self.queue
                        .schedule_arrival(at, Event::LinkDeliver { link: link_id });
                }
            }
            None => self.drop_packet(idx),
        }
    }

    /// An event-driven link dequeues: put what it sent on the wire, free what it dropped.
    fn link_wake(&mut self, now: SimTime, link_id: u32) {
        let mut outs = std::mem::take(&mut self.link_out);
        self.topo.links[link_id as usize].on_wake(now, &mut outs);
        for o in outs.drain(..) {
            match o {
                LinkOutput::Sent { pkt, at, ce } => {
                    if ce {
                        self.pool.get_mut(pkt).flags |= pflags::CE;
                    }
                    self.on_wire(link_id, at, pkt);
                }
                LinkOutput::Dropped { pkt, .. } => self.drop_packet(pkt),
            }
        }
        if let Some(t) = self.topo.links[link_id as usize].arm_wakeup() {
            self.queue.schedule(t, Event::LinkWake { link: link_id });
        }
        self.link_out = outs;
    }

    /// Offer packet `idx` to the Wi-Fi medium of `link_id`: the forward link is the AP's
    /// downlink to the packet's flow's station, the reverse link that station's uplink.
    fn wifi_offer(&mut self, now: SimTime, link_id: u32, idx: u32, wire: u32) {
        let m = self.topo.medium_of[link_id as usize];
        let forward = link_id.is_multiple_of(2);
        let (station, ect) = {
            let p = self.pool.get(idx);
            (p.flow as usize, p.has(pflags::ECT))
        };
        let medium = &mut self.topo.media[m as usize];
        if medium.enqueue(now, forward, station, idx, wire, ect) {
            let link = &mut self.topo.links[link_id as usize];
            link.stats.packets_tx += 1;
            link.stats.bytes_tx += wire as u64;
            self.wifi_queue_stats(now, m);
            if let Some(t) = self.topo.media[m as usize].arm_wakeup() {
                self.queue.schedule(t, Event::WifiWake { medium: m });
            }
        } else {
            self.topo.links[link_id as usize].stats.queue_drops += 1;
            self.drop_packet(idx);
        }
    }

    /// The queue statistics of a medium's two links follow its AP and station backlogs.
    fn wifi_queue_stats(&mut self, now: SimTime, m: u32) {
        let (_, f, r) = self.topo.segments[self.topo.medium_segment(m)];
        for (link, forward) in [(f, true), (r, false)] {
            let (pkts, bytes) = self.topo.media[m as usize].backlog(forward);
            let s = &mut self.topo.links[link as usize].stats;
            s.q_pkts.set(now.ns(), pkts);
            s.q_bytes.set(now.ns(), bytes);
        }
    }

    /// A Wi-Fi medium's channel access: deliver what got through, free what was dropped.
    fn wifi_wake(&mut self, now: SimTime, m: u32) {
        let mut outs = std::mem::take(&mut self.wifi_out);
        self.topo.media[m as usize].on_wake(now, &mut outs);
        let (_, f, r) = self.topo.segments[self.topo.medium_segment(m)];
        for o in outs.drain(..) {
            match o {
                WifiOutput::Deliver { forward, pkt, at } => {
                    let link_id = if forward { f } else { r };
                    if self.topo.links[link_id as usize].push(at, pkt) {
                        self.queue
                            .schedule_arrival(at, Event::LinkDeliver { link: link_id });
                    }
                }
                WifiOutput::Dropped { forward, pkt } => {
                    let link_id = if forward { f } else { r };
                    self.topo.links[link_id as usize].stats.error_drops += 1;
                    self.drop_packet(pkt);
                }
                WifiOutput::Refused { forward, pkt } => {
                    let link_id = if forward { f } else { r };
                    self.topo.links[link_id as usize].stats.queue_drops += 1;
                    self.drop_packet(pkt);
                }
                WifiOutput::AqmDropped { pkt } => {
                    self.topo.links[f as usize].stats.aqm_drops += 1;
                    self.drop_packet(pkt);
                }
                WifiOutput::Marked { pkt } => {
                    self.topo.links[f as usize].stats.ecn_marks += 1;
                    self.pool.get_mut(pkt).flags |= pflags::CE;
                }
            }
        }
        self.wifi_out = outs;
        self.wifi_queue_stats(now, m);
        if let Some(t) = self.topo.media[m as usize].arm_wakeup() {
            self.queue.schedule(t, Event::WifiWake { medium: m });
        }
    }

    /// A link dropped packet `idx`: free it, and count it against its UDP flow or
    /// cross-traffic source if any.
    fn drop_packet(&mut self, idx: u32) {
        let p = self.pool.take(idx);
        match self.topo.routes[p.route as usize].dest {
            Dest::Cross { source } => {
                self.cross[source as usize].counters.packets_dropped += 1;
                return;
            }
            // the source's counters follow its data direction
            Dest::CrossConn { conn, side } => {
                if side == Side::Receiver {
                    let source = self.xconns[conn as usize].source;
                    self.cross[source as usize].counters.packets_dropped += 1;
                }
                return;
            }
            _ => {}
        }
        if p.kind == PacketKind::Udp {
            if let FlowKind::Udp { sink, .. } = &mut self.flows[p.flow as usize].kind {
                sink.packets_dropped += 1;
            }
        }
    }

    fn link_deliver(&mut self, now: SimTime, link_id: u32) {
        let access = self.topo.access_index(link_id);
        let (idx, next) = match access {
            Some(a) => self.topo.access[a].pop(&self.on_access),
            None => self.topo.links[link_id as usize].pop(),
        };
        // the packets behind a packet reaching its endpoint may go ahead once it is handled
        let mut drain = None;
        if let Some(t) = next {
            self.prefetch_ahead(link_id);
            self.prefetch_sender_segments(link_id, idx);
            let last_hop = {
                let p = self.pool.get(idx);
                p.hop as u32 + 1 == self.topo.routes[p.route as usize].len
            };
            match access {
                Some(a) if self.ahead && last_hop => drain = Some(a),
                _ => self
                    .queue
                    .schedule_arrival(t, Event::LinkDeliver { link: link_id }),
            }
        }
        if let Some(t) = self.tracer.as_deref_mut() {
            t.egress(now, link_id, idx, &self.pool);
        }
        let (route, hop, refused) = {
            let p = self.pool.get_mut(idx);
            p.hop += 1;
            (p.route, p.hop, p.has(pflags::REFUSED))
        };
        if refused {
            debug_assert!(
                drain.is_none(),
                "an access link refuses none of its packets"
            );
            self.drop_packet(idx);
            return;
        }
        let r = &self.topo.routes[route as usize];
        if (hop as u32) < r.len {
            debug_assert!(drain.is_none());
            self.forward(now, idx);
            return;
        }
        let dest = r.dest;
        let p = self.pool.take(idx);
        self.counters.delivered += 1;
        match dest {
            Dest::Conn { conn, side } => {
                self.endpoint_on_packet(now, conn, side, &p);
                self.relay_after(now, conn, side, p.kind);
            }
            Dest::Udp { flow } => {
                if let FlowKind::Udp { sink, .. } = &mut self.flows[flow as usize].kind {
                    sink.on_packet(now, &p);
                }
            }
            Dest::Cross { source } => self.cross[source as usize].on_delivered(&p),
            Dest::CrossConn { conn, side } => self.cross_deliver(now, conn, side, &p),
        }
        if let Some(a) = drain {
            self.drain_ahead(link_id, a);
        }
    }

    /// Endpoint `side` of connection `conn` handles packet `p` at `now` and sends what it
    /// produced.
    #[inline]
    fn endpoint_on_packet(&mut self, now: SimTime, conn: u32, side: Side, p: &Packet) {
        let f = &mut self.conns[conn as usize];
        match side {
            Side::Sender => f.sender.on_packet(now, p, &mut self.out),
            Side::Receiver => f.receiver.on_packet(now, p, &mut self.out),
        }
        self.emit(now, conn, side);
    }

    fn sample(&mut self, now: SimTime) {
        let fwd = self.topo.bottleneck_fwd as usize;
        self.topo.links[fwd].sample(now);
        self.series
            .sample(now, &self.flows, &self.conns, &self.topo.links[fwd]);
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
        for s in &mut self.flows {
            if let FlowKind::Tcp { relays, .. } = &mut s.kind {
                for r in relays {
                    r.occupancy.advance(end.ns());
                }
            }
        }
        if self.series.last_t() < end {
            self.sample(end);
        }
    }

    /// Packets still on links at the end (for conservation accounting).
    pub fn packets_on_links(&self) -> u64 {
        let wired: u64 = self
            .topo
            .links
            .iter()
            .map(|l| l.in_flight().count() as u64)
            .sum::<u64>()
            + self.topo.access.iter().map(|a| a.len() as u64).sum::<u64>();
        let wifi: u64 = self
            .topo
            .media
            .iter()
            .map(|m| m.in_flight().count() as u64)
            .sum();
        wired + wifi
    }
}

/// (Re)arm the timers of endpoint `side` of connection `f`: an event for each slot whose
/// deadline is earlier than the one already in the queue (later ones are found stale when
/// they fire).
fn arm_timers(
    queue: &mut EventQueue<Event>,
    f: &mut Connection,
    side: Side,
    event: impl Fn(TimerSlot) -> Event,
) {
    let sd = side as usize;
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
            queue.schedule(d, event(slot));
        }
    }
}

/// Fire timer `slot` of endpoint `side` of connection `f` (stale ones do nothing).
fn fire_timer(
    f: &mut Connection,
    now: SimTime,
    side: Side,
    slot: TimerSlot,
    out: &mut Vec<Packet>,
) {
    let (sd, si) = (side as usize, slot_index(slot));
    if f.scheduled[sd][si] == Some(now) {
        f.scheduled[sd][si] = None;
    }
    match side {
        Side::Sender => f.sender.on_timer(now, slot, out),
        Side::Receiver => f.receiver.on_timer(now, slot, out),
    }
}
