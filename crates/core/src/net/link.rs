//! A one-way link: a FIFO transmitter of fixed rate, a propagation delay, a DropTail queue
//! and a random packet-error model — optionally with outages, a Gilbert–Elliott loss
//! model, a rate/delay trace or a Mahimahi delivery trace, and RED or CoDel.
//!
//! For DropTail the link is solved analytically instead of with a "transmission done"
//! event per packet: when a packet is admitted, its start of service is
//! `max(now, busy_until)` and its arrival at the far end is `start + size/rate + delay`.
//! Packets waiting for service are remembered only by their start times, so the queue
//! length at any instant is the number of remembered starts still in the future. One heap
//! event per packet per hop (the arrival) remains, and arrivals on a link are in FIFO
//! order, so only the head of each link's pipeline sits in the event heap.
//!
//! A plain DropTail link (`model == None`) takes exactly that path. The other models live
//! in a boxed `LinkModel` and come in two flavours:
//!
//! - **Analytic** (DropTail or RED, with any of outages, Gilbert–Elliott, rate trace,
//!   delivery trace): every decision is taken at admission. FIFO service depends only on
//!   the packets ahead, so the service model (`trace::Service`) can plan the packet's
//!   start, departure and arrival then: a rate trace serializes at the rate in force at the
//!   start and propagates with the delay in force at the end (arrivals kept in FIFO
//!   order); a delivery trace picks the opportunity that will carry it. A packet whose
//!   service would start in an outage is lost there and then (`OutageDrop`), which also
//!   flushes the packets queued behind it, since their service would start in the outage
//!   too. RED decides on arrival (`red`).
//! - **Event-driven** (CoDel): CoDel drops at dequeue, from the time a packet waited, so
//!   the link keeps a real FIFO of packet handles (`codel::PacketQueue`). `offer` answers
//!   `Queued`; the simulation calls `arm_wakeup` and schedules a `LinkWake` event at the
//!   instant the transmitter becomes free; `on_wake` dequeues through CoDel and reports
//!   the packets that entered the wire and those dropped (`LinkOutput`). A packet that
//!   finds the link idle is served at once (`Arrives`), as in the analytic model.
//!
//! A token-bucket policer (`policer`), when configured, sits in front of either flavour: a
//! packet beyond the policed rate and burst is dropped on arrival, before it could queue.
//!
//! Loss (per/ber or Gilbert–Elliott) applies to packets that enter service; counters
//! separate tail drops (`queue_drops`), the discipline's own drops (`aqm_drops`: RED early
//! and forced drops, CoDel dequeue drops, policer drops), outage losses (`outage_drops`)
//! and errors (`error_drops`).
use crate::engine::rng::SimRng;
use crate::engine::stats::TimeWeighted;
use crate::engine::time::{remembered_serialization, serialization_time, SimDuration, SimTime};
use crate::limits::MTU_BYTES;
use crate::net::aqm::codel::{Codel, PacketQueue, Queued};
use crate::net::aqm::red::{Red, RedVerdict};
use crate::net::loss::GilbertElliott;
use crate::net::policer::TokenBucket;
use crate::net::trace::{DeliveryTrace, Outages, Plan, RateTrace, Service};
use crate::scenario::{DirConfig, LossConfig};
use std::collections::VecDeque;

/// Queue size limit (the packet in service is not counted, as in ns-3 and Linux qdiscs).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u64),
    Bytes(u64),
    /// A sending host's own interface: Linux never drops a socket's packets there (TCP
    /// Small Queues back-pressure the socket), so the queue is unbounded.
    Unlimited,
}

/// Loss model of a link direction.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct ErrorModel {
    /// Packet error rate (Bernoulli per packet).
    pub per: f64,
    /// Bit error rate, turned into a per-packet probability from the wire size.
    pub ber: f64,
}

impl ErrorModel {
    /// Probability that a packet of `wire_bytes` is corrupted: 1 − (1 − per)(1 − ber)^bits.
    #[inline]
    pub fn packet_error_prob(&self, wire_bytes: u32) -> f64 {
        if self.ber == 0.0 {
            self.per
        } else {
            let bits = 8.0 * wire_bytes as f64;
            1.0 - (1.0 - self.per) * (1.0 - self.ber).powf(bits)
        }
    }
    pub fn is_lossless(&self) -> bool {
        self.per == 0.0 && self.ber == 0.0
    }
}

/// Counters of a link (`repr(C)`: the two every packet updates come first, see `Link`).
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct LinkStats {
    /// Packets and bytes that entered service (errored ones included: they use the link).
    pub packets_tx: u64,
    pub bytes_tx: u64,
    /// Tail drops: the queue was full.
    pub queue_drops: u64,
    pub error_drops: u64,
    /// CE marks (threshold, RED or CoDel) of packets that entered service.
    pub ecn_marks: u64,
    /// Packets lost because their service would have started during an outage.
    pub outage_drops: u64,
    /// RED early/forced drops, CoDel dequeue drops and policer drops.
    pub aqm_drops: u64,
    /// Time-weighted queue length (packets waiting, not in service) and bytes.
    pub q_pkts: TimeWeighted,
    pub q_bytes: TimeWeighted,
}

/// Outcome of offering a packet to a link.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The packet will arrive at the far end at `at`; `ce`: mark it Congestion Experienced.
    Arrives { at: SimTime, ce: bool },
    /// The link keeps the packet in its queue (event-driven links): call `arm_wakeup`.
    Queued,
    /// The queue was full (DropTail).
    QueueDrop,
    /// The packet used the link but was corrupted (error model).
    ErrorDrop,
    /// Its service would have started during an outage.
    OutageDrop,
    /// RED, or the policer, dropped it on arrival.
    AqmDrop,
}

/// What an event-driven link did at a wake-up.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LinkOutput {
    /// `pkt` entered the wire and arrives at the far end at `at`: push it into the
    /// pipeline (`Link::push`); `ce`: set Congestion Experienced.
    Sent { pkt: u32, at: SimTime, ce: bool },
    /// `pkt` was dropped (AQM, outage or error): free it.
    Dropped { pkt: u32, why: Admission },
}

/// Handle passed by `admit`, which offers a packet the caller does not track.
const NO_PACKET: u32 = u32::MAX;

/// Queue management of a modelled link.
#[derive(Clone, Debug)]
enum Aqm {
    DropTail,
    Red(Box<Red>),
    Codel(Box<Codel>),
}

/// Everything a plain DropTail link does not need.
#[derive(Clone, Debug)]
struct LinkModel {
    outages: Outages,
    /// Gilbert–Elliott; `None`: the link's `errors` (per/ber).
    loss: Option<GilbertElliott>,
    service: Service,
    aqm: Aqm,
    /// Arrival time of the last packet put on the wire (FIFO under a delay trace).
    last_arrival: SimTime,
    /// Event-driven links: the waiting packets, and whether a wake-up is scheduled.
    queue: PacketQueue,
    wake_pending: bool,
    /// Time 0 of the outage and trace schedules (`set_origin`).
    origin: SimTime,
    /// Token-bucket policer in front of the queue.
    policer: Option<TokenBucket>,
}

/// One direction of a link.
///
/// The fields are laid out by hand (`repr(C)`), in the order a packet's hop reads them, and
/// the struct starts on a cache line: with thousands of flows the per-flow access links are
/// cold whenever a packet reaches one, so the hop costs one line fetched from memory per 64
/// bytes it reads. A plain DropTail hop reads the first three lines (up to `stats`' packet
/// and byte counters); the queue statistics, the random stream and the name come after.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Link {
    /// Outages, traces, loss model, AQM; `None` for a plain DropTail link (the fast path).
    model: Option<Box<LinkModel>>,
    busy_until: SimTime,
    /// Nominal rate (the initial rate of a rate trace; unused by a delivery trace).
    pub rate_bps: u64,
    /// Nominal delay (the initial delay of a rate trace).
    pub delay: SimDuration,
    waiting_bytes: u64,
    pub limit: QueueLimit,
    pub errors: ErrorModel,
    /// ECN marking threshold (packets waiting), if the queue marks.
    pub ecn_threshold_pkts: Option<u64>,
    /// The size of the last packet served and its serialization time at `rate_bps`
    /// (`remembered_serialization`).
    last_wire_bytes: u32,
    last_serialization: SimDuration,
    /// Start-of-service times (and sizes) of packets waiting in the queue, oldest first.
    waiting: VecDeque<(SimTime, u32)>,
    /// Packets propagating or in service, with their arrival times (non-decreasing).
    pipeline: VecDeque<(SimTime, u32)>,
    pub stats: LinkStats,
    rng: SimRng,
    pub name: String,
}

/// Name of the random substream `what` (`errors`, `loss`, `red`) of link direction `link`.
/// The real-stack emulator draws from the same streams, so with the same seed it drops the
/// packets the simulator would drop at the same positions (common random numbers).
pub fn stream_name(link: &str, what: &str) -> String {
    format!("link/{link}/{what}")
}

impl Link {
    pub fn new(
        name: impl Into<String>,
        rate_bps: u64,
        delay: SimDuration,
        limit: QueueLimit,
        errors: ErrorModel,
        rng: SimRng,
    ) -> Link {
        Link {
            name: name.into(),
            rate_bps,
            delay,
            limit,
            errors,
            ecn_threshold_pkts: None,
            last_wire_bytes: 0,
            last_serialization: SimDuration::ZERO,
            rng,
            busy_until: SimTime::ZERO,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            pipeline: VecDeque::new(),
            stats: LinkStats::default(),
            model: None,
        }
    }

    /// Build a link direction from its (validated) configuration. Random streams are
    /// substreams of `seed` named after the link: `link/<name>/errors` (per/ber),
    /// `link/<name>/loss` (Gilbert–Elliott), `link/<name>/red`.
    pub fn from_config(name: &str, d: &DirConfig, seed: u64) -> Link {
        let limit = match (d.queue.limit_pkts, d.queue.limit_bytes) {
            (_, Some(b)) => QueueLimit::Bytes(b),
            (Some(p), None) => QueueLimit::Packets(p),
            (None, None) => QueueLimit::Packets(1000),
        };
        let stream = |what: &str| SimRng::substream(seed, &stream_name(name, what));
        let mut l = Link::new(
            name,
            d.rate_bps,
            SimDuration::from_ns(d.delay_ns),
            limit,
            ErrorModel {
                per: d.per,
                ber: d.ber,
            },
            stream("errors"),
        );
        l.ecn_threshold_pkts = d.ecn_threshold_pkts;
        let aqm = match d.queue.kind.as_str() {
            "red" => Aqm::Red(Box::new(Red::new(
                d.queue.red.unwrap_or_default(),
                stream("red"),
            ))),
            "codel" => Aqm::Codel(Box::new(Codel::new(&d.queue.codel.unwrap_or_default()))),
            _ => Aqm::DropTail,
        };
        let loss = d.loss.map(|l| match l {
            LossConfig::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => GilbertElliott::new(p_gb, p_bg, loss_good, loss_bad, stream("loss")),
        });
        let service = match (&d.rate_trace, &d.delivery_trace) {
            (Some(r), _) => Service::Rate(RateTrace::new(r, l.delay)),
            (None, Some(t)) => Service::Delivery(DeliveryTrace::new(t)),
            (None, None) => Service::Fixed,
        };
        let policer = d
            .policer
            .map(|p| TokenBucket::new(p.rate_bps, p.burst_bytes));
        let plain = matches!(aqm, Aqm::DropTail)
            && loss.is_none()
            && d.outages.is_empty()
            && matches!(service, Service::Fixed)
            && policer.is_none();
        if !plain {
            l.model = Some(Box::new(LinkModel {
                outages: Outages::new(&d.outages),
                loss,
                service,
                aqm,
                last_arrival: SimTime::ZERO,
                queue: PacketQueue::default(),
                wake_pending: false,
                origin: SimTime::ZERO,
                policer,
            }));
        }
        l
    }

    /// Count the outages and the rate or delivery trace from `origin` instead of from 0
    /// (the emulator's measurement starts when the traffic does); never earlier than a
    /// previous origin. The simulator's links keep origin 0.
    pub fn set_origin(&mut self, origin: SimTime) {
        if let Some(m) = self.model.as_deref_mut() {
            let by = origin.since(m.origin);
            m.outages.delay_by(by);
            m.service.delay_by(by);
            m.origin = origin;
        }
    }

    /// The link keeps packets in a real queue (CoDel) and needs `LinkWake` events.
    pub fn is_event_driven(&self) -> bool {
        self.model
            .as_ref()
            .is_some_and(|m| matches!(m.aqm, Aqm::Codel(_)))
    }

    /// RED's average queue (packets), if the link runs RED.
    pub fn red_avg_pkts(&self) -> Option<f64> {
        match &self.model.as_ref()?.aqm {
            Aqm::Red(r) => Some(r.avg()),
            _ => None,
        }
    }

    /// Forget waiting packets whose service has started by `now`, keeping the
    /// time-weighted queue statistics exact at each start instant.
    #[inline]
    fn purge(&mut self, now: SimTime) {
        while let Some(&(start, bytes)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= bytes as u64;
            self.stats.q_pkts.set(start.ns(), self.waiting.len() as u64);
            self.stats.q_bytes.set(start.ns(), self.waiting_bytes);
        }
    }

    /// Offer a packet of `wire_bytes` at `now`; `ect`: it is ECN-capable. For links that
    /// decide at admission (everything but CoDel); the tests' entry point.
    #[inline]
    pub fn admit(&mut self, now: SimTime, wire_bytes: u32, ect: bool) -> Admission {
        self.offer(now, NO_PACKET, wire_bytes, ect)
    }

    /// Offer packet `pkt` (a pool handle) of `wire_bytes` at `now`; `ect`: it is
    /// ECN-capable. `Queued` means the link now holds the packet (event-driven links).
    #[inline]
    pub fn offer(&mut self, now: SimTime, pkt: u32, wire_bytes: u32, ect: bool) -> Admission {
        if self.model.is_some() {
            return self.offer_model(now, pkt, wire_bytes, ect);
        }
        self.purge(now);
        let ce = ect
            && self
                .ecn_threshold_pkts
                .is_some_and(|k| self.waiting.len() as u64 >= k);
        let full = match self.limit {
            QueueLimit::Packets(n) => self.waiting.len() as u64 >= n && self.busy_until > now,
            QueueLimit::Bytes(b) => {
                self.waiting_bytes + wire_bytes as u64 > b && self.busy_until > now
            }
            QueueLimit::Unlimited => false,
        };
        if full {
            self.stats.queue_drops += 1;
            return Admission::QueueDrop;
        }
        let start = if self.busy_until > now {
            self.busy_until
        } else {
            now
        };
        // the nominal rate is fixed once the link is built
        let end = start
            + remembered_serialization(
                &mut self.last_wire_bytes,
                &mut self.last_serialization,
                wire_bytes,
                self.rate_bps,
            );
        self.busy_until = end;
        self.enter_service(now, start, wire_bytes, ce);
        if !self.errors.is_lossless() {
            let p = self.errors.packet_error_prob(wire_bytes);
            if self.rng.bernoulli(p) {
                self.stats.error_drops += 1;
                return Admission::ErrorDrop;
            }
        }
        Admission::Arrives {
            at: end + self.delay,
            ce,
        }
    }

    /// An analytic link admitted a packet of `wire_bytes` at `now` whose service starts at
    /// `start`: it waits until then, and it counts as transmitted (and CE-marked: marks
    /// count only for packets that enter the queue; a full queue drops instead).
    #[inline]
    fn enter_service(&mut self, now: SimTime, start: SimTime, wire_bytes: u32, ce: bool) {
        if start > now {
            self.waiting.push_back((start, wire_bytes));
            self.waiting_bytes += wire_bytes as u64;
            self.stats.q_pkts.set(now.ns(), self.waiting.len() as u64);
            self.stats.q_bytes.set(now.ns(), self.waiting_bytes);
        }
        self.stats.packets_tx += 1;
        self.stats.bytes_tx += wire_bytes as u64;
        if ce {
            self.stats.ecn_marks += 1;
        }
    }

    /// The queue is full for a packet of `wire_bytes` (`waiting`/`bytes` in the queue;
    /// `idle`: nothing waits and the transmitter is free, so the packet never waits).
    #[inline]
    fn full(&self, waiting: usize, bytes: u64, wire_bytes: u32, idle: bool) -> bool {
        !idle
            && match self.limit {
                QueueLimit::Packets(n) => waiting as u64 >= n,
                QueueLimit::Bytes(b) => bytes + wire_bytes as u64 > b,
                QueueLimit::Unlimited => false,
            }
    }

    /// RED's idle correction: full-size (`MTU_BYTES`) packet times since the link went idle at
    /// `busy_until`, if it is idle at `now` with nothing waiting.
    fn idle_slots(&mut self, now: SimTime, waiting: usize) -> Option<f64> {
        if waiting > 0 || self.busy_until > now {
            return None;
        }
        let m = self.model.as_mut()?;
        let rate = m.service.rate_at(self.busy_until, self.rate_bps);
        let s = serialization_time(MTU_BYTES, rate).ns();
        Some(now.since(self.busy_until).ns() as f64 / s as f64)
    }

    /// Loss after entering service: Gilbert–Elliott if configured, else per/ber.
    #[inline]
    fn lost(
        loss: &mut Option<GilbertElliott>,
        errors: &ErrorModel,
        rng: &mut SimRng,
        wire_bytes: u32,
    ) -> bool {
        match loss {
            Some(ge) => ge.lose(),
            None => !errors.is_lossless() && rng.bernoulli(errors.packet_error_prob(wire_bytes)),
        }
    }

    /// Admission to a modelled link.
    #[inline(never)]
    fn offer_model(&mut self, now: SimTime, pkt: u32, wire_bytes: u32, ect: bool) -> Admission {
        let m = self.model.as_deref_mut().expect("modelled link");
        if let Some(bucket) = &mut m.policer {
            if !bucket.conforms(now.ns(), wire_bytes) {
                self.stats.aqm_drops += 1;
                return Admission::AqmDrop;
            }
        }
        if self.is_event_driven() {
            return self.enqueue(now, pkt, wire_bytes, ect);
        }
        self.purge(now);
        let waiting = self.waiting.len();
        let mut ce = ect && self.ecn_threshold_pkts.is_some_and(|k| waiting as u64 >= k);
        let idle_slots = self.idle_slots(now, waiting);
        let m = self.model.as_deref_mut().expect("modelled link");
        if let Aqm::Red(red) = &mut m.aqm {
            match red.on_arrival(waiting, idle_slots, ect) {
                RedVerdict::Accept => {}
                RedVerdict::Mark => ce = true,
                RedVerdict::Drop => {
                    self.stats.aqm_drops += 1;
                    return Admission::AqmDrop;
                }
            }
        }
        let idle = self.busy_until <= now && waiting == 0;
        if self.full(waiting, self.waiting_bytes, wire_bytes, idle) {
            self.stats.queue_drops += 1;
            return Admission::QueueDrop;
        }
        let m = self.model.as_deref_mut().expect("modelled link");
        let start = self.busy_until.max(now);
        let plan = m
            .service
            .plan(start, wire_bytes, self.rate_bps, self.delay, m.last_arrival);
        if m.outages.contains(plan.start) {
            self.stats.outage_drops += 1;
            return Admission::OutageDrop;
        }
        Self::commit(m, &plan, &mut self.busy_until);
        self.enter_service(now, plan.start, wire_bytes, ce);
        let m = self.model.as_deref_mut().expect("modelled link");
        if Self::lost(&mut m.loss, &self.errors, &mut self.rng, wire_bytes) {
            self.stats.error_drops += 1;
            return Admission::ErrorDrop;
        }
        Admission::Arrives {
            at: plan.arrive,
            ce,
        }
    }

    #[inline]
    fn commit(m: &mut LinkModel, plan: &Plan, busy_until: &mut SimTime) {
        m.service.commit(plan);
        m.last_arrival = plan.arrive;
        *busy_until = plan.free_at;
    }

    /// Event-driven links: queue the packet, serving it at once if the link is idle.
    fn enqueue(&mut self, now: SimTime, pkt: u32, wire_bytes: u32, ect: bool) -> Admission {
        let m = self.model.as_deref().expect("modelled link");
        let (waiting, bytes) = (m.queue.len(), m.queue.bytes());
        let idle = waiting == 0 && self.busy_until <= now;
        if self.full(waiting, bytes, wire_bytes, idle) {
            self.stats.queue_drops += 1;
            return Admission::QueueDrop;
        }
        let ce = ect && self.ecn_threshold_pkts.is_some_and(|k| waiting as u64 >= k);
        let m = self.model.as_deref_mut().expect("modelled link");
        m.queue.push(Queued {
            pkt,
            bytes: wire_bytes,
            enq: now,
            ect,
            ce,
        });
        if !idle {
            self.set_queue_stats(now);
            return Admission::Queued;
        }
        // Idle: CoDel sees a sojourn time of 0 and passes the packet (updating its state).
        let mut result = Admission::Queued;
        self.serve(now, |o| {
            result = match o {
                LinkOutput::Sent { at, ce, .. } => Admission::Arrives { at, ce },
                LinkOutput::Dropped { why, .. } => why,
            }
        });
        debug_assert!(result != Admission::Queued, "an idle link serves at once");
        result
    }

    fn set_queue_stats(&mut self, now: SimTime) {
        if let Some(m) = self.model.as_deref() {
            self.stats.q_pkts.set(now.ns(), m.queue.len() as u64);
            self.stats.q_bytes.set(now.ns(), m.queue.bytes());
        }
    }

    /// Event-driven links: dequeue while the transmitter is free at `now`, reporting each
    /// packet that enters the wire or is dropped.
    fn serve(&mut self, now: SimTime, mut emit: impl FnMut(LinkOutput)) {
        let Link {
            model,
            stats,
            busy_until,
            rate_bps,
            delay,
            errors,
            rng,
            ..
        } = self;
        let m = model.as_deref_mut().expect("modelled link");
        while *busy_until <= now && !m.queue.is_empty() {
            let next = match &mut m.aqm {
                Aqm::Codel(c) => c.dequeue(now, &mut m.queue, |d| {
                    stats.aqm_drops += 1;
                    emit(LinkOutput::Dropped {
                        pkt: d.pkt,
                        why: Admission::AqmDrop,
                    });
                }),
                _ => m.queue.pop(),
            };
            let Some(p) = next else { break };
            let plan = m
                .service
                .plan(now, p.bytes, *rate_bps, *delay, m.last_arrival);
            if m.outages.contains(plan.start) {
                stats.outage_drops += 1;
                emit(LinkOutput::Dropped {
                    pkt: p.pkt,
                    why: Admission::OutageDrop,
                });
                continue;
            }
            Self::commit(m, &plan, busy_until);
            stats.packets_tx += 1;
            stats.bytes_tx += p.bytes as u64;
            if p.ce {
                stats.ecn_marks += 1;
            }
            if Self::lost(&mut m.loss, errors, rng, p.bytes) {
                stats.error_drops += 1;
                emit(LinkOutput::Dropped {
                    pkt: p.pkt,
                    why: Admission::ErrorDrop,
                });
                continue;
            }
            emit(LinkOutput::Sent {
                pkt: p.pkt,
                at: plan.arrive,
                ce: p.ce,
            });
        }
        self.set_queue_stats(now);
    }

    /// Event-driven links: the instant a `LinkWake` event is needed (the transmitter
    /// becomes free with packets waiting), if none is pending; it is then pending until
    /// `on_wake`. Always `None` for analytic links.
    #[inline]
    pub fn arm_wakeup(&mut self) -> Option<SimTime> {
        let m = self.model.as_deref_mut()?;
        if m.wake_pending || m.queue.is_empty() {
            return None;
        }
        m.wake_pending = true;
        Some(self.busy_until)
    }

    /// Event-driven links: the `LinkWake` event at `now`. Appends what happened to `out`;
    /// the caller then pushes `Sent` packets into the pipeline, frees `Dropped` ones and
    /// calls `arm_wakeup` again.
    pub fn on_wake(&mut self, now: SimTime, out: &mut Vec<LinkOutput>) {
        if let Some(m) = self.model.as_deref_mut() {
            m.wake_pending = false;
            self.serve(now, |o| out.push(o));
        }
    }

    /// Put an admitted packet on the wire. Returns true if it became the pipeline head
    /// (the caller must then schedule a delivery event at `arrive`).
    #[inline]
    pub fn push(&mut self, arrive: SimTime, pkt: u32) -> bool {
        let was_empty = self.pipeline.is_empty();
        // FIFO service with a fixed delay keeps arrivals ordered; assert it in tests.
        debug_assert!(self.pipeline.back().is_none_or(|&(t, _)| t <= arrive));
        self.pipeline.push_back((arrive, pkt));
        was_empty
    }

    /// Take the pipeline head (it arrives now) and return it with the next head's time.
    #[inline]
    pub fn pop(&mut self) -> (u32, Option<SimTime>) {
        let (_, pkt) = self
            .pipeline
            .pop_front()
            .expect("delivery from an empty link");
        (pkt, self.pipeline.front().map(|&(t, _)| t))
    }

    /// Bring the queue statistics up to `now` (for interval sampling and the final report).
    pub fn sample(&mut self, now: SimTime) {
        self.purge(now);
        self.stats.q_pkts.advance(now.ns());
        self.stats.q_bytes.advance(now.ns());
    }

    /// Packets waiting for service at `now`.
    pub fn queue_len(&mut self, now: SimTime) -> usize {
        self.purge(now);
        match self.model.as_deref() {
            Some(m) if matches!(m.aqm, Aqm::Codel(_)) => m.queue.len(),
            _ => self.waiting.len(),
        }
    }

    /// Handles of packets still on the link (on the wire or, for event-driven links,
    /// waiting), for the final accounting.
    pub fn in_flight(&self) -> impl Iterator<Item = u32> + '_ {
        let queued = self
            .model
            .as_deref()
            .into_iter()
            .flat_map(|m| m.queue.iter());
        self.pipeline
            .iter()
            .map(|&(_, p)| p)
            .chain(queued.map(|q| q.pkt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(limit: QueueLimit) -> Link {
        Link::new(
            "t",
            4_000_000,
            SimDuration::from_ms(250),
            limit,
            ErrorModel::default(),
            SimRng::substream(1, "t"),
        )
    }

    #[test]
    fn back_to_back_packets_are_spaced_by_serialization_time() {
        let mut l = link(QueueLimit::Packets(10));
        // 1500 B at 4 Mbit/s = 3 ms; delay 250 ms.
        assert_eq!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives {
                at: SimTime(253_000_000),
                ce: false
            }
        );
        assert_eq!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives {
                at: SimTime(256_000_000),
                ce: false
            }
        );
        assert_eq!(
            l.admit(SimTime(1_000_000), 1500, false),
            Admission::Arrives {
                at: SimTime(259_000_000),
                ce: false
            }
        );
    }

    #[test]
    fn droptail_counts_waiting_packets_only() {
        let mut l = link(QueueLimit::Packets(2));
        // First goes into service, two wait, the fourth is dropped.
        for _ in 0..3 {
            assert!(matches!(
                l.admit(SimTime::ZERO, 1500, false),
                Admission::Arrives { .. }
            ));
        }
        assert_eq!(l.admit(SimTime::ZERO, 1500, false), Admission::QueueDrop);
        // After 3 ms the second packet is in service: one waits, one slot is free.
        assert!(matches!(
            l.admit(SimTime(3_000_000), 1500, false),
            Admission::Arrives { .. }
        ));
        assert_eq!(
            l.admit(SimTime(3_000_000), 1500, false),
            Admission::QueueDrop
        );
        assert_eq!(l.stats.queue_drops, 2);
    }

    #[test]
    fn byte_limit_applies_to_waiting_bytes() {
        let mut l = link(QueueLimit::Bytes(3000));
        assert!(matches!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives { .. }
        )); // in service
        assert!(matches!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives { .. }
        )); // 1500 waiting
        assert!(matches!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives { .. }
        )); // 3000 waiting
        assert_eq!(l.admit(SimTime::ZERO, 40, false), Admission::QueueDrop);
    }

    #[test]
    fn queue_time_average_is_exact() {
        let mut l = link(QueueLimit::Packets(10));
        // Three packets at t=0: queue 2 during [0,3ms), 1 during [3,6ms), 0 after.
        for _ in 0..3 {
            l.admit(SimTime::ZERO, 1500, false);
        }
        l.sample(SimTime(9_000_000));
        // area = 2*3ms + 1*3ms = 9e6 pkt*ns; over 9 ms the mean is 1 packet.
        assert_eq!(l.stats.q_pkts.area, 9_000_000);
        assert_eq!(l.stats.q_pkts.max, 2);
    }

    #[test]
    fn ecn_marks_ect_packets_when_queue_reaches_threshold() {
        let mut l = link(QueueLimit::Packets(100));
        l.ecn_threshold_pkts = Some(2);
        // In service, then 1 waiting, then 2 waiting: the 4th arrival sees 2 waiting.
        let marks: Vec<bool> = (0..4)
            .map(|_| {
                matches!(
                    l.admit(SimTime::ZERO, 1500, true),
                    Admission::Arrives { ce: true, .. }
                )
            })
            .collect();
        assert_eq!(marks, vec![false, false, false, true]);
        // Not ECN-capable: never marked.
        assert!(matches!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives { ce: false, .. }
        ));
    }

    #[test]
    fn ber_converts_by_packet_size() {
        let e = ErrorModel {
            per: 0.0,
            ber: 1e-6,
        };
        // 1500 B = 12000 bits: 1 - (1-1e-6)^12000 = 0.011928...
        let p = e.packet_error_prob(1500);
        assert!((p - 0.011_928_5).abs() < 1e-6, "{p}");
    }

    #[test]
    fn error_rate_matches_per() {
        let mut l = Link::new(
            "e",
            1_000_000_000,
            SimDuration::ZERO,
            QueueLimit::Packets(1_000_000),
            ErrorModel {
                per: 0.05,
                ber: 0.0,
            },
            SimRng::substream(9, "e"),
        );
        let n = 200_000u64;
        for i in 0..n {
            l.admit(SimTime(i * 1_000_000), 1500, false);
        }
        // mean 10000, sd = sqrt(n p (1-p)) = 97.5; 5 sd.
        let d = l.stats.error_drops as i64 - 10_000;
        assert!(d.abs() < 490, "{}", l.stats.error_drops);
    }
}

#[cfg(test)]
mod model_tests {
    use super::*;
    use crate::scenario::{CodelConfig, DeliveryTraceConfig, RatePoint, RedConfig};

    const MS: u64 = 1_000_000;

    fn dir(kind: &str) -> DirConfig {
        let mut d = DirConfig::droptail(4_000_000, 250 * MS, 1000);
        d.queue.kind = kind.into();
        d
    }

    fn arrives(a: Admission) -> Option<u64> {
        match a {
            Admission::Arrives { at, .. } => Some(at.ns()),
            _ => None,
        }
    }

    /// Run an event-driven link: offers at the given instants (handle = index), wake-ups
    /// as the link asks. Returns (instant, handle, outcome) for every packet.
    fn drive(l: &mut Link, offers: &[(u64, bool)]) -> Vec<(u64, u32, Admission)> {
        let mut log = Vec::new();
        let mut wake: Option<SimTime> = None;
        let mut out = Vec::new();
        let mut wake_until =
            |l: &mut Link, wake: &mut Option<SimTime>, t: u64, log: &mut Vec<_>| {
                while let Some(w) = *wake {
                    if w.ns() > t {
                        break;
                    }
                    l.on_wake(w, &mut out);
                    for o in out.drain(..) {
                        log.push(match o {
                            LinkOutput::Sent { pkt, at, ce } => {
                                (w.ns(), pkt, Admission::Arrives { at, ce })
                            }
                            LinkOutput::Dropped { pkt, why } => (w.ns(), pkt, why),
                        });
                    }
                    *wake = l.arm_wakeup();
                }
            };
        for (i, &(t, ect)) in offers.iter().enumerate() {
            wake_until(l, &mut wake, t, &mut log);
            let a = l.offer(SimTime(t), i as u32, 1500, ect);
            if a == Admission::Queued {
                if let Some(w) = l.arm_wakeup() {
                    wake = Some(w);
                }
            } else {
                log.push((t, i as u32, a));
            }
        }
        wake_until(l, &mut wake, u64::MAX, &mut log);
        log
    }

    #[test]
    fn policer_drops_beyond_rate_and_burst_before_the_queue() {
        use crate::scenario::PolicerConfig;
        // A 100 Mbit/s line policed to 1 Mbit/s with a 3000 B bucket, offered a 1500 B
        // packet every ms (12 Mbit/s) for 120 ms. By the last offer (119 ms) the bucket has
        // granted 3000 + 1e6·0.119/8 = 17 875 B: 11 packets pass, 109 are dropped.
        let mut d = DirConfig::droptail(100_000_000, 10 * MS, 10);
        d.policer = Some(PolicerConfig {
            rate_bps: 1_000_000,
            burst_bytes: 3_000,
        });
        let mut l = Link::from_config("x", &d, 1);
        let passed: Vec<u64> = (0..120u64)
            .filter_map(|i| arrives(l.admit(SimTime(i * MS), 1500, false)).map(|_| i))
            .collect();
        // 1 Mbit/s refills 125 B per ms. Offer 0 leaves 1500 B; offer 1 finds 1625 B and
        // leaves 125 B; 1500 B are there again at 12 ms (125 + 11·125), leaving 0; then
        // every 12 ms: 24, 36, ..., 108 ms.
        let want: Vec<u64> = [0, 1].into_iter().chain((1..=9).map(|k| 12 * k)).collect();
        assert_eq!(passed, want);
        assert_eq!((l.stats.aqm_drops, l.stats.queue_drops), (109, 0));
        assert_eq!(l.stats.packets_tx, 11);
        // The line serializes 1500 B in 120 us, so nothing ever waits.
        assert_eq!(l.stats.q_pkts.max, 0);
        // Off by default: the same link without a policer carries all 120.
        let mut plain = Link::from_config("y", &DirConfig::droptail(100_000_000, 10 * MS, 10), 1);
        let all = (0..120u64)
            .filter(|&i| arrives(plain.admit(SimTime(i * MS), 1500, false)).is_some())
            .count();
        assert_eq!(all, 120);
    }

    #[test]
    fn plain_config_takes_the_droptail_fast_path() {
        let l = Link::from_config("x", &dir("droptail"), 1);
        assert!(l.model.is_none());
        assert!(!l.is_event_driven());
        assert!(Link::from_config("x", &dir("codel"), 1).is_event_driven());
    }

    #[test]
    fn outage_loses_packets_whose_service_would_start_in_it_and_flushes_the_queue() {
        let mut d = dir("droptail");
        d.outages = vec![(2_000 * MS, 4_000 * MS)];
        let mut l = Link::from_config("x", &d, 1);
        // Ten packets at 1.985 s: services start every 3 ms, five before 2 s.
        let res: Vec<Option<u64>> = (0..10)
            .map(|_| arrives(l.admit(SimTime(1_985 * MS), 1500, false)))
            .collect();
        // The fifth is being serialized when the outage starts: it still arrives.
        let want: Vec<Option<u64>> = (1..=5)
            .map(|k| Some(1_985 * MS + 3 * k * MS + 250 * MS))
            .chain([None; 5])
            .collect();
        assert_eq!(res, want);
        assert_eq!(l.stats.outage_drops, 5);
        assert_eq!(l.queue_len(SimTime(2_001 * MS)), 0);
        // Everything offered during the outage is lost; service resumes at its end.
        assert_eq!(
            l.admit(SimTime(3_999 * MS), 1500, false),
            Admission::OutageDrop
        );
        assert_eq!(
            arrives(l.admit(SimTime(4_000 * MS), 1500, false)),
            Some(4_253 * MS)
        );
        assert_eq!(l.stats.outage_drops, 6);
        assert_eq!(l.stats.packets_tx, 6);
    }

    #[test]
    fn rate_trace_serializes_at_the_start_rate_and_keeps_fifo_when_delay_drops() {
        let mut d = dir("droptail");
        d.rate_trace = Some(vec![
            RatePoint {
                t_ns: 0,
                rate_bps: 4_000_000,
                delay_ns: None,
            },
            RatePoint {
                t_ns: 1_000 * MS,
                rate_bps: 2_000_000,
                delay_ns: Some(10 * MS),
            },
        ]);
        let mut l = Link::from_config("x", &d, 1);
        // Starts at 0.994 and 0.997 s (3 ms at 4 Mbit/s), then 1.000 s at 2 Mbit/s (6 ms).
        let at: Vec<u64> = (0..4)
            .map(|_| arrives(l.admit(SimTime(994 * MS), 1500, false)).unwrap())
            .collect();
        // The first ends at 0.997 s: + 250 ms = 1.247 s. The second ends at 1.000 s, when
        // the delay is already 10 ms: 1.010 s would overtake the first, so it is held to
        // 1.247 s (FIFO); so are the third (1.006 + 0.010) and fourth (1.012 + 0.010).
        assert_eq!(at, vec![1_247 * MS; 4]);
        // Later, back-to-back packets leave every 6 ms with the 10 ms delay.
        let a = arrives(l.admit(SimTime(2_000 * MS), 1500, false)).unwrap();
        let b = arrives(l.admit(SimTime(2_000 * MS), 1500, false)).unwrap();
        assert_eq!((a, b), (2_016 * MS, 2_022 * MS));
    }

    #[test]
    fn delivery_trace_carries_one_budget_per_opportunity() {
        let mut d = dir("droptail");
        d.delivery_trace = Some(DeliveryTraceConfig {
            opportunities_ns: vec![MS],
            period_ns: MS,
            bytes_per_opportunity: 1500,
        });
        let mut l = Link::from_config("x", &d, 1);
        // Five full packets at t = 0.5 ms leave at 1, 2, 3, 4, 5 ms (+250 ms).
        let at: Vec<u64> = (0..5)
            .map(|_| arrives(l.admit(SimTime(MS / 2), 1500, false)).unwrap() - 250 * MS)
            .collect();
        assert_eq!(at, vec![MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]);
        assert_eq!(l.queue_len(SimTime(MS / 2)), 5);
        // 37 ACKs of 40 B share the 6 ms opportunity (1480 B); the 38th waits for 7 ms.
        let acks: Vec<u64> = (0..38)
            .map(|_| arrives(l.admit(SimTime(5 * MS), 40, false)).unwrap() - 250 * MS)
            .collect();
        assert!(acks[..37].iter().all(|&t| t == 6 * MS));
        assert_eq!(acks[37], 7 * MS);
    }

    #[test]
    fn red_marks_ect_and_drops_others_in_the_forced_region() {
        // w_q = 1: the average is the instantaneous queue. min 2, max 3, not gentle: the
        // arrivals that find 0, 1, 2 waiting pass (p_b = 0 at 2), from 3 on all are hit.
        let red = RedConfig {
            min_th_pkts: 2.0,
            max_th_pkts: 3.0,
            max_p: 0.5,
            w_q: 1.0,
            gentle: false,
            ecn: true,
        };
        let mut d = dir("red");
        d.queue.red = Some(red);
        let mut l = Link::from_config("x", &d, 1);
        let ce: Vec<bool> = (0..8)
            .map(|_| match l.admit(SimTime::ZERO, 1500, true) {
                Admission::Arrives { ce, .. } => ce,
                a => panic!("{a:?}"),
            })
            .collect();
        // The first goes into service at once (0 waiting); marked ones still queue.
        assert_eq!(ce, vec![false, false, false, false, true, true, true, true]);
        assert_eq!(l.stats.ecn_marks, 4);
        let mut l = Link::from_config("y", &d, 1);
        let res: Vec<Admission> = (0..6)
            .map(|_| l.admit(SimTime::ZERO, 1500, false))
            .collect();
        assert!(res[..4]
            .iter()
            .all(|a| matches!(a, Admission::Arrives { .. })));
        assert_eq!(&res[4..], &[Admission::AqmDrop, Admission::AqmDrop]);
        assert_eq!((l.stats.aqm_drops, l.stats.queue_drops), (2, 0));
    }

    #[test]
    fn red_average_ages_over_idle_time() {
        let red = RedConfig {
            w_q: 0.5,
            ..RedConfig::default()
        };
        let mut d = dir("red");
        d.queue.red = Some(red);
        let mut l = Link::from_config("x", &d, 1);
        // Arrivals at 0 find 0 (idle link: no change), 0, 1, 2 waiting:
        // avg = 0 → 0 → 0.5 → 0.5·0.5 + 0.5·2 = 1.25.
        for _ in 0..4 {
            l.admit(SimTime::ZERO, 1500, false);
        }
        assert_eq!(l.red_avg_pkts(), Some(1.25));
        // The link drains at 12 ms; an arrival at 42 ms finds it idle for 30 ms, i.e. ten
        // 3 ms packet times: avg = 1.25 · 0.5^10 = 0.001220703125.
        l.admit(SimTime(42 * MS), 1500, false);
        assert_eq!(l.red_avg_pkts(), Some(0.001_220_703_125));
    }

    #[test]
    fn codel_link_serves_idle_arrivals_at_once_and_queues_the_rest() {
        let mut l = Link::from_config("x", &dir("codel"), 1);
        assert_eq!(
            l.offer(SimTime::ZERO, 7, 1500, false),
            Admission::Arrives {
                at: SimTime(253 * MS),
                ce: false
            }
        );
        assert_eq!(l.offer(SimTime::ZERO, 8, 1500, false), Admission::Queued);
        assert_eq!(l.arm_wakeup(), Some(SimTime(3 * MS)));
        assert_eq!(l.arm_wakeup(), None, "already pending");
        assert_eq!(l.queue_len(SimTime::ZERO), 1);
        assert_eq!(
            l.in_flight().count(),
            1,
            "only the queued handle (nothing pushed)"
        );
        let mut out = Vec::new();
        l.on_wake(SimTime(3 * MS), &mut out);
        assert_eq!(
            out,
            vec![LinkOutput::Sent {
                pkt: 8,
                at: SimTime(256 * MS),
                ce: false
            }]
        );
        assert_eq!(l.arm_wakeup(), None);
        assert_eq!(l.queue_len(SimTime(3 * MS)), 0);
    }

    #[test]
    fn codel_drop_spacing_follows_interval_over_sqrt_count() {
        // 4 Mbit/s (3 ms per packet) offered a packet every 2 ms: the sojourn time grows
        // without bound, so CoDel stays in its dropping state. Sojourn first exceeds 5 ms at
        // the dequeue at t1 − 100 ms; drop n happens at the first dequeue (every 3 ms) at or
        // after t1 + Σ_{j<n} 100 ms/√j.
        let mut d = dir("codel");
        d.queue.codel = Some(CodelConfig {
            ecn: false,
            ..CodelConfig::default()
        });
        let mut l = Link::from_config("x", &d, 1);
        let offers: Vec<(u64, bool)> = (0..1500).map(|i| (2 * i * MS, false)).collect();
        let log = drive(&mut l, &offers);
        let drops: Vec<u64> = log
            .iter()
            .filter(|e| e.2 == Admission::AqmDrop)
            .map(|e| e.0)
            .collect();
        // Dequeues happen at 3k ms. Packet k is dequeued at 3k ms (before any drop),
        // having arrived at 2k ms: sojourn k ms, which reaches the 5 ms target (only
        // `sojourn < target` is "below") for k = 5, at 15 ms; dropping is allowed after
        // 115 ms, so the first drop is at the dequeue at 117 ms.
        assert_eq!(drops[0], 117 * MS);
        let mut next = drops[0] as f64;
        for (n, &t) in drops.iter().enumerate().skip(1) {
            next += 100e6 / (n as f64).sqrt();
            let lag = t as f64 - next;
            assert!(
                (0.0..3e6 + 1.0).contains(&lag),
                "drop {n} at {t}, due {next}"
            );
        }
        assert!(drops.len() >= 20, "{}", drops.len());
        assert_eq!(l.stats.aqm_drops, drops.len() as u64);
        // Every packet is accounted for once: sent, dropped or still queued.
        assert_eq!(log.len() + l.queue_len(SimTime(3_000 * MS)), 1500);
    }
}
