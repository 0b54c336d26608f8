//! Cache hints: what the event loop asks for ahead of the deliveries and events that will
//! read it (`engine::cache`). A hint never changes what is computed; these say when asking
//! pays, as measured on dumbbells of one to 10,000 flows.
use super::{Event, Simulation};
use crate::engine::cache::{prefetch, prefetch_bytes};
use crate::engine::time::SimDuration;
use crate::net::access::AccessLink;
use crate::net::link::Link;
use crate::net::topology::{access_flow_end, Dest, Topology, NO_FEEDER};
use crate::tcp::connection::Side;

/// Up to this many links, the event loop takes them to be in the CPU's caches and asks
/// for no link ahead of a delivery (`Simulation::prefetch_ahead`): 64 link directions of
/// 384 bytes fill most of a 32 KiB first-level cache.
const LINKS_KEPT_IN_CACHE: usize = 64;

/// Links at least this long (propagation delay) get hints ahead of their deliveries
/// (`Simulation::prefetch_ahead`): what a shorter one delivers, such as an access link of
/// 0.1 ms, was handled a few events earlier and is still cached, and hints there would only
/// add instructions. On a long link the packet was handled thousands of events earlier.
const COLD_AFTER: SimDuration = SimDuration(1_000_000);

/// With more connection state than this (the `Connection`s alone, without what they hold on
/// the heap), the event loop asks for what the next event will read while it handles one
/// (`Simulation::prefetch_event`). Measured on the scaling dumbbell (`tcplab-sim`, 20 s,
/// alternating copies of both builds): 100 flows (0.2 MB) 4 % slower with the hints, 1,000
/// (1.9 MB) the same, 10,000 (19 MB) 6 % faster by the median, 13 % by the mean; so from
/// twice what 1,000 flows hold.
pub(super) const HINT_EVENTS_AFTER_BYTES: usize = 4 << 20;

/// Bytes of a `Link` that a plain DropTail hop reads, as its layout documents: everything
/// up to the packet and byte counters of its statistics.
const LINK_HOT_BYTES: usize = std::mem::offset_of!(Link, stats) + 2 * std::mem::size_of::<u64>();
// They are three whole cache lines (the struct starts on one).
const _: () = assert!(std::mem::align_of::<Link>() == 64 && LINK_HOT_BYTES <= 3 * 64);

impl Simulation {
    /// Warm the caches for the next deliveries of `link_id` (`engine::cache`), if it is a
    /// long link (`COLD_AFTER`). With few links (a handful of flows) the links stay in the
    /// caches, and only the head of the packet delivered next is asked for. With many, the
    /// head of the packet after next is, and the link the next packet goes on to: its head
    /// was asked for one delivery ago, so reading where it goes costs no wait. When that link
    /// is the packet's last, also what the endpoint it reaches reads next: its sender or
    /// receiver (every ACK touches most of a sender's 18 cache lines) and the access link it
    /// answers on. (The second form costs more instructions, which a dumbbell of a few flows
    /// does not win back; with 1,000 flows the link alone took 7-23 % off a run. Going two
    /// deliveries ahead instead of one made no measurable difference, and asking for the
    /// whole connection, 31 lines, stalled on the hints themselves.)
    #[inline]
    pub(super) fn prefetch_ahead(&self, link_id: u32) {
        if self.link_delay(link_id) < COLD_AFTER && !self.sent_ahead(link_id) {
            return;
        }
        // the pipeline first, in arrival order
        let (next, after) = match self.topo.access_index(link_id) {
            Some(a) => {
                let Some(next) = self.topo.access[a].first() else {
                    return;
                };
                let after = AccessLink::behind(next, &self.on_access);
                // the next delivery reads when the packet after next arrives
                if let Some(after) = after {
                    prefetch(&self.on_access[after as usize]);
                }
                (next, after)
            }
            None => {
                let mut ahead = self.topo.links[link_id as usize].in_flight();
                let Some(next) = ahead.next() else { return };
                (next, ahead.next())
            }
        };
        if self.topo.links.len() <= LINKS_KEPT_IN_CACHE {
            self.pool.prefetch(next);
            return;
        }
        let p = self.pool.get(next);
        let hop = p.hop + 1;
        let r = &self.topo.routes[p.route as usize];
        if (hop as u32) < r.len {
            self.prefetch_link(self.topo.route_link(p.route, hop));
            // its last hop: the endpoint it reaches answers on its own access link
            if hop as u32 + 1 == r.len {
                self.prefetch_endpoint(r.dest, false);
            }
        } else {
            // it reaches its endpoint with this delivery (an access link handed the packet
            // ahead of time, `on_wire`): that endpoint, and for an ACK the scoreboard
            self.prefetch_endpoint(r.dest, true);
        }
        if let Some(after) = after {
            self.pool.prefetch(after);
        }
    }

    /// Ask for what event `ev`, likely the next, will read first of what is cold: the
    /// endpoint a packet on a flow's access link travels to, or a timer's endpoint. It is
    /// known from the link's number (`access_flow_end`) without reading the link or the
    /// packet, whose fetches would wait on each other.
    #[inline]
    pub(super) fn prefetch_event(&self, ev: Event) {
        match ev {
            Event::LinkDeliver { link } => {
                let Some(a) = self.topo.access_index(link) else {
                    return;
                };
                let (flow, side) = access_flow_end(a);
                let Some(&conn) = self.flow_conn.get(flow) else {
                    return;
                };
                if conn == u32::MAX {
                    return;
                }
                self.prefetch_endpoint(Dest::Conn { conn, side }, side == Side::Sender);
            }
            Event::Timer { conn, side, .. } => {
                prefetch(&self.conns[conn as usize].scheduled);
                self.prefetch_endpoint(Dest::Conn { conn, side }, false);
            }
            _ => {}
        }
    }

    /// Ask for what endpoint `dest` reads when a packet reaches it: its sender or receiver
    /// (every ACK touches most of a sender's 18 cache lines) and the access link it answers
    /// on; with `segments`, for an ACK also the scoreboard's first segments, which it will
    /// take off and which were last touched a round trip ago.
    #[inline]
    fn prefetch_endpoint(&self, dest: Dest, segments: bool) {
        let Dest::Conn { conn, side } = dest else {
            return;
        };
        let c = &self.conns[conn as usize];
        let back = match side {
            Side::Sender => {
                prefetch(&c.sender);
                if let (true, Some(s)) = (segments, c.sender.linux()) {
                    s.sb.prefetch_front(3);
                }
                Topology::data_route(conn)
            }
            Side::Receiver => {
                prefetch(&c.receiver);
                Topology::ack_route(conn)
            }
        };
        self.prefetch_link(self.topo.route_link(back, 0));
    }

    /// Packet `idx` leaves long link `link_id` for the last hop to a Linux sender, which was
    /// asked for one delivery ago (`prefetch_ahead`): ask for the scoreboard's first segments,
    /// which the ACK will take off when it arrives (after that hop) and which were last
    /// touched a round trip ago.
    #[inline]
    pub(super) fn prefetch_sender_segments(&self, link_id: u32, idx: u32) {
        if self.topo.links.len() <= LINKS_KEPT_IN_CACHE {
            return;
        }
        let p = self.pool.get(idx);
        let r = &self.topo.routes[p.route as usize];
        if p.hop as u32 + 2 != r.len {
            return;
        }
        let Dest::Conn {
            conn,
            side: Side::Sender,
        } = r.dest
        else {
            return;
        };
        let long = self.link_delay(link_id) >= COLD_AFTER;
        if let (true, Some(s)) = (long, self.conns[conn as usize].sender.linux()) {
            s.sb.prefetch_front(3);
        }
    }

    /// Link `link_id` is a host's interface whose host may handle packets ahead of time
    /// (`ahead`): what it sends then waits on the interface until its time, up to a round
    /// trip later, and is cold when it leaves, however short the link.
    #[inline]
    fn sent_ahead(&self, link_id: u32) -> bool {
        self.ahead
            && self
                .topo
                .access_index(link_id)
                .is_some_and(|a| self.topo.access_feeder[a] == NO_FEEDER)
    }

    /// The propagation delay of link `link_id`, from the state its hops read.
    #[inline]
    fn link_delay(&self, link_id: u32) -> SimDuration {
        match self.topo.access_index(link_id) {
            // packets handed over ahead of time wait on it for their feeder's delay too
            Some(a) => match self.topo.access_feeder[a] {
                NO_FEEDER => self.topo.access[a].delay(),
                f => self.topo.access[a].delay() + self.topo.links[f as usize].delay,
            },
            None => self.topo.links[link_id as usize].delay,
        }
    }

    /// Ask for what a hop over `link_id` reads: an access link's line, or a `Link`'s first
    /// three (`LINK_HOT_BYTES`).
    #[inline]
    fn prefetch_link(&self, link_id: u32) {
        match self.topo.access_index(link_id) {
            Some(a) => prefetch(&self.topo.access[a]),
            None => prefetch_bytes(&self.topo.links[link_id as usize], LINK_HOT_BYTES),
        }
    }
}
