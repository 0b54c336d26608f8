//! Handing a packet to its endpoint ahead of time.
//!
//! A packet on the last hop of its route, a flow's access link into a host, reaches an
//! endpoint that nothing else reaches: its packets come over that one link, in order, and
//! what it sends leaves on the host's own interface, which it alone feeds. So the endpoint
//! may handle the packet as soon as its arrival time is known, when the packet leaves the
//! link before (`Simulation::hand_over`) or when the packet ahead of it is delivered
//! (`Simulation::drain_ahead`), instead of in an event at that time: it sees the same
//! packets at the same times in the same order, and what it sends enters its interface at
//! the same times in the same order. That holds while nothing else would change the
//! endpoint first, which `may_deliver_ahead` checks:
//!
//! - none of its timers is due at or before the arrival (a timer due in the nanosecond a
//!   packet arrives runs first, by the event queue's rule); a timer event already in the
//!   queue for an earlier deadline that has since moved finds nothing due when it fires,
//!   however far ahead the endpoint has run;
//! - the arrival comes before the next series sample, which reads the endpoints as of its
//!   own time, and before the end of the run or of the stretch being run (`run_until`);
//! - no PEP relay acts on what it handles (a relay moves bytes to another connection);
//! - it is not an ns-2 agent (its timers keep the time they fired at);
//! - it is not handling another packet ahead of time: what it sends goes on in events,
//!   which bounds the recursion (a single flow's ACK and the next segment would otherwise
//!   chain without end).
//!
//! A tracer sees the packet leave the link before (`Tracer::egress_ahead`; access links are
//! never capture points), and what the endpoint logs or passes on ahead of time waits in
//! the tracer until the run reaches its time, so captures and the event log stay in time
//! order.
//!
//! A packet that cannot go ahead stays on the access link and has its delivery event; the
//! packets behind it wait on the link until it is delivered, and then go ahead in turn if
//! they may. Only the number of events changes.
use super::{Event, Simulation, RECEIVER_SLOTS, SENDER_SLOTS};
use crate::engine::time::SimTime;
use crate::net::topology::Dest;
use crate::tcp::connection::Side;

impl Simulation {
    /// Handle packets on their last hop ahead of time (on by default; the tests compare runs
    /// without it).
    pub fn set_deliver_ahead(&mut self, on: bool) {
        self.ahead = on;
    }

    /// Packets may be handled ahead of time only when they arrive before this: the next
    /// series sample, the end of the stretch being run and of the run.
    #[inline]
    pub(super) fn ahead_bound(&self) -> SimTime {
        self.until.min(self.next_sample)
    }

    /// May endpoint `side` of connection `conn` handle a packet that reaches it at
    /// `arrive` now (the module note's conditions)?
    #[inline]
    fn may_deliver_ahead(&self, conn: u32, side: Side, arrive: SimTime) -> bool {
        if self.in_ahead || arrive >= self.ahead_bound() || self.relays.relayed(conn, side) {
            return false;
        }
        let c = &self.conns[conn as usize];
        let later = |d: Option<SimTime>| d.is_none_or(|d| d > arrive);
        match side {
            Side::Receiver => RECEIVER_SLOTS
                .iter()
                .all(|&s| later(c.receiver.timer_deadline(s))),
            Side::Sender => {
                c.sender.linux().is_some()
                    && SENDER_SLOTS
                        .iter()
                        .all(|&s| later(c.sender.timer_deadline(s)))
            }
        }
    }

    /// Endpoint `side` of `conn` handles packet `idx`, which reaches it at `arrive`.
    fn deliver_ahead(&mut self, arrive: SimTime, idx: u32, conn: u32, side: Side) {
        let p = self.pool.take(idx);
        self.counters.delivered += 1;
        self.in_ahead = true;
        self.endpoint_on_packet(arrive, conn, side, &p);
        self.in_ahead = false;
    }

    /// Packet `idx` leaves link `link_id` at `at` for access link `a`, idle then, which is
    /// its last hop: handle it at its endpoint now if it may. False if it must go on the
    /// access link.
    #[inline]
    pub(super) fn hand_over_ahead(
        &mut self,
        link_id: u32,
        at: SimTime,
        idx: u32,
        a: usize,
    ) -> bool {
        let p = self.pool.get(idx);
        let r = &self.topo.routes[p.route as usize];
        let Dest::Conn { conn, side } = r.dest else {
            return false;
        };
        if p.hop as u32 + 2 != r.len {
            return false;
        }
        let wire = p.wire_bytes;
        let arrive = self.topo.access[a].arrival_if_sent(at, wire);
        if !self.may_deliver_ahead(conn, side, arrive) {
            return false;
        }
        self.topo.access[a].sent(arrive);
        if let Some(t) = self.tracer.as_deref_mut() {
            // access links are never capture points: only the link it leaves is seen
            t.egress_ahead(at, link_id, idx, &self.pool);
        }
        self.deliver_ahead(arrive, idx, conn, side);
        true
    }

    /// Access link `link_id` (`access[a]`), the last hop of what it carries, delivered its
    /// first packet: handle the packets behind it ahead of time while they may, and give
    /// the first that may not its delivery event.
    pub(super) fn drain_ahead(&mut self, link_id: u32, a: usize) {
        while let Some(pkt) = self.topo.access[a].first() {
            let arrive = self.topo.access[a].arrival_of(pkt, &self.on_access);
            let route = self.pool.get(pkt).route;
            let deliver = match self.topo.routes[route as usize].dest {
                Dest::Conn { conn, side }
                    if self.topo.access[a].first_may_leave_early()
                        && self.may_deliver_ahead(conn, side, arrive) =>
                {
                    Some((conn, side))
                }
                _ => None,
            };
            let Some((conn, side)) = deliver else {
                self.queue
                    .schedule_arrival(arrive, Event::LinkDeliver { link: link_id });
                return;
            };
            self.topo.access[a].pop(&self.on_access);
            self.deliver_ahead(arrive, pkt, conn, side);
        }
    }
}
