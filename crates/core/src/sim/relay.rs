//! Split-TCP PEP relays: the glue between the connections of a flow split by PEPs.
//!
//! A relay at a PEP node joins an upstream connection (whose receiver sits at the PEP) to a
//! downstream one (whose sender sits there). Bytes the upstream receiver delivers in order
//! are handed to the downstream sender; the relay buffer holds them until the downstream
//! side has them acknowledged, and the upstream receiver's advertised window shrinks as the
//! buffer fills (backpressure: no byte is ever dropped by the PEP, memory stays bounded).
//!
//! After an endpoint at a PEP handled a packet, the event loop calls `relay_after`: it opens
//! the connection on the other side (SYN spoofing), forwards the client's request, hands
//! delivered bytes downstream, returns buffer space upstream and passes the client's close
//! upstream (RFC 3135 §2.2, PEPsal-style).
use super::flow::{Flow, FlowKind};
use super::Simulation;
use crate::engine::stats::TimeWeighted;
use crate::engine::time::SimTime;
use crate::net::packet::PacketKind;
use crate::scenario::AppConfig;
use crate::tcp::connection::Side;

/// A PEP relay between two connections of a flow.
#[derive(Debug, Clone)]
pub struct Relay {
    /// Upstream connection (its receiver is at the PEP) and downstream one (its sender).
    pub up: u32,
    pub down: u32,
    pub name: String,
    pub limit_bytes: u64,
    /// Bytes handed to the downstream sender so far.
    pub supplied: u64,
    /// Bytes held (received upstream, not yet acknowledged downstream), time-weighted.
    pub occupancy: TimeWeighted,
    /// The PEP opened its own connection on the other side (SYN spoofing done).
    pub opened: bool,
    /// The client's request reached the PEP and was released upstream.
    pub released: bool,
}

impl Relay {
    /// A relay named `name` from connection `up` to `down` with a buffer of `limit_bytes`.
    pub fn new(up: u32, down: u32, name: String, limit_bytes: u64) -> Relay {
        Relay {
            up,
            down,
            name,
            limit_bytes,
            supplied: 0,
            occupancy: TimeWeighted::default(),
            opened: false,
            released: false,
        }
    }
}

/// Which relay each connection feeds (it is upstream of) or is fed by: (flow, relay). Empty
/// when no flow has a PEP, so the check after every delivery reads no per-connection entry.
#[derive(Debug, Default)]
pub struct RelayIndex {
    up: Vec<Option<(u32, u16)>>,
    down: Vec<Option<(u32, u16)>>,
}

impl RelayIndex {
    pub fn new(flows: &[Flow], n_conns: usize) -> RelayIndex {
        let relayed = flows
            .iter()
            .any(|f| matches!(&f.kind, FlowKind::Tcp { relays, .. } if !relays.is_empty()));
        if !relayed {
            return RelayIndex::default();
        }
        let mut ix = RelayIndex {
            up: vec![None; n_conns],
            down: vec![None; n_conns],
        };
        for (f, flow) in flows.iter().enumerate() {
            if let FlowKind::Tcp { relays, .. } = &flow.kind {
                for (r, relay) in relays.iter().enumerate() {
                    ix.up[relay.up as usize] = Some((f as u32, r as u16));
                    ix.down[relay.down as usize] = Some((f as u32, r as u16));
                }
            }
        }
        ix
    }

    /// Endpoint `side` of connection `conn` sits at a PEP: a relay acts after it handles a
    /// packet.
    #[inline]
    pub fn relayed(&self, conn: u32, side: Side) -> bool {
        let at = match side {
            Side::Receiver => &self.up,
            Side::Sender => &self.down,
        };
        at.get(conn as usize).is_some_and(Option::is_some)
    }
}

impl Simulation {
    /// Relay `r` of flow `f`.
    fn relay_mut(&mut self, f: u32, r: usize) -> &mut Relay {
        match &mut self.flows[f as usize].kind {
            FlowKind::Tcp { relays, .. } => &mut relays[r],
            FlowKind::Udp { .. } => unreachable!("a relay belongs to a TCP flow"),
        }
    }

    /// After endpoint `side` of connection `conn` handled a packet of kind `kind`: if it
    /// sits at a PEP, let the relay act.
    pub(super) fn relay_after(&mut self, now: SimTime, conn: u32, side: Side, kind: PacketKind) {
        let c = conn as usize;
        match side {
            Side::Receiver => {
                if let Some(&Some((f, r))) = self.relays.up.get(c) {
                    self.relay_upstream_event(now, f, r as usize, kind);
                }
            }
            Side::Sender => {
                if let Some(&Some((f, r))) = self.relays.down.get(c) {
                    self.relay_downstream_event(now, f, r as usize, kind);
                }
            }
        }
    }

    /// The PEP's receiver (end of the upstream connection) handled a packet.
    fn relay_upstream_event(&mut self, now: SimTime, f: u32, r: usize, kind: PacketKind) {
        let bulk = matches!(self.flows[f as usize].app, AppConfig::Bulk);
        let relay = self.relay_mut(f, r);
        let (up, down) = (relay.up, relay.down);
        // SYN spoofing (sender-initiated flows): the PEP answered the SYN itself and opens
        // its own connection downstream at once.
        if bulk && kind == PacketKind::Syn && !relay.opened {
            relay.opened = true;
            self.conns[down as usize].sender.start(now, &mut self.out);
            self.emit(now, down, Side::Sender);
        }
        let delivered = self.conns[up as usize].receiver.stats.bytes_delivered;
        let relay = self.relay_mut(f, r);
        if delivered > relay.supplied {
            let bytes = delivered - relay.supplied;
            relay.supplied = delivered;
            self.conns[down as usize]
                .sender
                .supply(now, bytes, &mut self.out);
            self.emit(now, down, Side::Sender);
            self.update_occupancy(now, f, r);
        }
    }

    /// The PEP's sender (start of the downstream connection) handled a packet.
    fn relay_downstream_event(&mut self, now: SimTime, f: u32, r: usize, kind: PacketKind) {
        let file = matches!(self.flows[f as usize].app, AppConfig::File { .. });
        let relay = self.relay_mut(f, r);
        let (up, down) = (relay.up, relay.down);
        if file {
            // The client's SYN reached the PEP, which answered it: open upstream now, holding
            // the request until the client's request arrives.
            if kind == PacketKind::Syn && !relay.opened {
                relay.opened = true;
                let rx = &mut self.conns[up as usize].receiver;
                rx.hold_request = true;
                rx.start(now, &mut self.out);
                self.emit(now, up, Side::Receiver);
            }
            let established = self.conns[down as usize].sender.established();
            let relay = self.relay_mut(f, r);
            if !relay.released && established {
                relay.released = true;
                self.conns[up as usize]
                    .receiver
                    .release_request(now, &mut self.out);
                self.emit(now, up, Side::Receiver);
            }
        }
        // Data acknowledged downstream leaves the buffer: the window reopens upstream.
        let una = self.conns[down as usize].sender.snd_una();
        let rx = &mut self.conns[up as usize].receiver;
        rx.drain(now, una, &mut self.out);
        if kind == PacketKind::Fin {
            // The client closed its side: the PEP closes the connection it holds upstream
            // (PEPsal-style close propagation; the server has long had its FIN acknowledged).
            rx.close(now, &mut self.out);
        }
        self.emit(now, up, Side::Receiver);
        self.update_occupancy(now, f, r);
    }

    /// Bytes the relay holds: received upstream, not yet acknowledged downstream.
    fn update_occupancy(&mut self, now: SimTime, f: u32, r: usize) {
        let relay = self.relay_mut(f, r);
        let (up, down) = (relay.up, relay.down);
        let held = self.conns[up as usize]
            .receiver
            .rcv_nxt
            .saturating_sub(self.conns[down as usize].sender.snd_una());
        self.relay_mut(f, r).occupancy.set(now.ns(), held);
    }
}
