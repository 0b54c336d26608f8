//! The connections of TCP cross traffic (`app::cross_tcp`) in the event loop: opened when
//! their source's arrivals are due, driven by packets and timers like the flows'
//! connections, and closed into their source's counters. They are not in
//! `Simulation::conns`, so nothing that reports the flows (results, series, traces) sees
//! them.
use super::{arm_timers, fire_timer, Event, Simulation};
use crate::app::cross_tcp::{Acquired, TcpCross};
use crate::engine::time::SimTime;
use crate::net::packet::Packet;
use crate::net::topology::Dest;
use crate::scenario::AppConfig;
use crate::tcp::connection::{self, ConnSpec, Connection, Side, TimerSlot};

/// One connection slot of a TCP cross-traffic source.
pub struct XConn {
    /// The source (index among the scenario's `cross`) and the slot's number in it.
    pub source: u32,
    pub local: u32,
    /// Routes of its data (server → client) and its ACKs.
    data_route: u32,
    ack_route: u32,
    /// The running connection's number among its source's (`None`: the slot is free).
    serial: u32,
    /// When it arrived.
    start: SimTime,
    pub conn: Option<Connection>,
}

impl Simulation {
    /// Open the connections that arrived at source `source` (refusing those beyond its
    /// limit).
    pub(super) fn cross_open(&mut self, now: SimTime, source: u32) {
        let arrived = std::mem::take(&mut self.cross[source as usize].arrived);
        for &(_, size_bytes) in &arrived {
            self.cross_open_one(now, source, size_bytes);
        }
        let mut arrived = arrived;
        arrived.clear();
        self.cross[source as usize].arrived = arrived;
    }

    fn cross_open_one(&mut self, now: SimTime, source: u32, size_bytes: u64) {
        let tcp = self.cross[source as usize]
            .tcp
            .as_deref_mut()
            .expect("arrivals come from a tcp_flows source");
        let g = match tcp.pool.acquire() {
            None => {
                tcp.stats.refused += 1;
                return;
            }
            Some(Acquired::Reused(local)) => tcp.slots[local as usize],
            Some(Acquired::New(local)) => {
                let g = self.xconns.len() as u32;
                let (data, ack) = self.topo.cross_tcp_links[source as usize]
                    .clone()
                    .expect("a tcp_flows source has its links");
                let data_route = self.topo.add_route(
                    &data,
                    Dest::CrossConn {
                        conn: g,
                        side: Side::Receiver,
                    },
                );
                let ack_route = self.topo.add_route(
                    &ack,
                    Dest::CrossConn {
                        conn: g,
                        side: Side::Sender,
                    },
                );
                self.xconns.push(XConn {
                    source,
                    local,
                    data_route,
                    ack_route,
                    serial: 0,
                    start: now,
                    conn: None,
                });
                tcp.slots.push(g);
                g
            }
        };
        let serial = tcp.stats.started as u32;
        tcp.stats.started += 1;
        let conn = build(self.cfg.seed, source, serial, tcp, size_bytes, now);
        let x = &mut self.xconns[g as usize];
        x.serial = serial;
        x.start = now;
        x.conn = Some(conn);
        // as a user flow starts: the server listens, the client sends its SYN
        let c = x.conn.as_mut().expect("just opened");
        c.sender.start(now, &mut self.out);
        self.cross_emit(now, g, Side::Sender);
        if let Some(c) = self.xconns[g as usize].conn.as_mut() {
            c.receiver.start(now, &mut self.out);
            self.cross_emit(now, g, Side::Receiver);
        }
    }

    /// A packet reached an endpoint of slot `g`.
    pub(super) fn cross_deliver(&mut self, now: SimTime, g: u32, side: Side, p: &Packet) {
        let x = &mut self.xconns[g as usize];
        if side == Side::Receiver {
            self.cross[x.source as usize].on_delivered(p);
        }
        let Some(c) = x.conn.as_mut().filter(|_| p.flow == x.serial) else {
            return; // a late copy from an earlier connection of the slot: nobody wants it
        };
        match side {
            Side::Sender => c.sender.on_packet(now, p, &mut self.out),
            Side::Receiver => c.receiver.on_packet(now, p, &mut self.out),
        }
        self.cross_emit(now, g, side);
    }

    /// A timer of slot `g` fired (a stale one, of a closed connection, does nothing).
    pub(super) fn cross_timer(&mut self, now: SimTime, g: u32, side: Side, slot: TimerSlot) {
        let Some(c) = self.xconns[g as usize].conn.as_mut() else {
            return;
        };
        fire_timer(c, now, side, slot, &mut self.out);
        self.cross_emit(now, g, side);
    }

    /// Send what endpoint `side` of slot `g` produced, (re)arm its timers, and close the
    /// connection once the client's FIN is acknowledged.
    fn cross_emit(&mut self, now: SimTime, g: u32, side: Side) {
        let x = &mut self.xconns[g as usize];
        let src = &mut self.cross[x.source as usize];
        for p in &mut self.out {
            p.flow = x.serial;
            if side == Side::Sender {
                src.counters.packets_sent += 1;
                src.counters.bytes_sent += p.wire_bytes as u64;
            }
        }
        let route = match side {
            Side::Sender => x.data_route,
            Side::Receiver => x.ack_route,
        };
        let c = x.conn.as_mut().expect("an open connection emits");
        arm_timers(&mut self.queue, c, side, |slot| Event::CrossTimer {
            conn: g,
            side,
            slot,
        });
        if c.receiver.closed_at.is_some() {
            let c = x.conn.take().expect("open");
            let tcp = src.tcp.as_deref_mut().expect("a tcp_flows source");
            let s = &mut tcp.stats;
            s.completed += 1;
            let done = c.receiver.completion.unwrap_or(now);
            s.completion_total_ns += done.since(x.start).ns() as u128;
            add_counters(s, &c);
            tcp.pool.release(x.local);
        }
        self.inject(now, route);
    }
}

/// Add connection `c`'s counters to its source's.
pub(crate) fn add_counters(s: &mut crate::app::cross_tcp::TcpCrossStats, c: &Connection) {
    s.payload_bytes += c.receiver.stats.bytes_delivered;
    s.retransmits += c.sender.stats().retrans_segs;
    s.rto_count += c.sender.stats().rto_count;
}

/// Connection number `serial` of source `source`: a download of `size_bytes` with the
/// source's algorithm and TCP options, its random substreams named after it.
fn build(
    seed: u64,
    source: u32,
    serial: u32,
    tcp: &TcpCross,
    size_bytes: u64,
    now: SimTime,
) -> Connection {
    let spec = ConnSpec {
        flow: source as usize,
        leg: 0,
        field: format!("cross[{source}]"),
        cca: &tcp.cca,
        cca_params: &tcp.cca_params,
        tcp: &tcp.tcp,
        app: AppConfig::File { size_bytes },
        start: now,
        relay_sender: false,
        relay_limit: None,
        streams: Some(format!("cross{source}/conn{serial}")),
    };
    // validation built this algorithm with these parameters (`validate::cross_cca`)
    connection::build(seed, &spec).expect("a validated cross-traffic algorithm")
}
