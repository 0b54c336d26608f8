//! TCP cross traffic: closed-loop background load. Connections arrive as a Poisson process
//! (`cross::CrossSource` draws when and how big, as for open-loop `flows`), and each is a
//! download over a connection of the core's own TCP (the Linux-like sender and receiver
//! with the core's default options and the source's congestion control), so the load backs
//! off on loss and leaves capacity others may take, as the light TCP competitors of shared
//! LANs and WANs do, where open-loop bursts keep sending into a full queue.
//!
//! A connection's data crosses one direction of the source's segment and its ACKs the other
//! (the queues the flows under test use), behind and before two delay links that bring its
//! round trip to the source's RTT; it has no access links of its own.
//!
//! Connections live in slots (`SlotPool`): a slot is made when an arrival finds none free
//! and is reused by later arrivals once its connection has closed (the client's FIN
//! acknowledged), so the state a source holds is bounded by the most connections it had
//! open at once, and that number by `max_connections`: an arrival that finds that many open
//! is refused and counted, as a server with a full accept queue would. A slot keeps its two
//! routes for the rest of the run; packets of an earlier connection of a slot (a late
//! duplicate) carry that connection's serial number and are recognised and discarded.
use crate::scenario::{CrossConfig, TcpConfig};
use serde::Serialize;
use std::collections::BTreeMap;

/// The TCP part of a `tcp_flows` source: its connections' configuration and slots.
#[derive(Debug, Clone)]
pub struct TcpCross {
    pub cca: String,
    pub cca_params: BTreeMap<String, f64>,
    pub tcp: TcpConfig,
    pub rtt_ns: u64,
    pub max_connections: u32,
    pub pool: SlotPool,
    /// The simulation's number (`Simulation::xconns`) of each slot, by local number.
    pub slots: Vec<u32>,
    pub stats: TcpCrossStats,
}

impl TcpCross {
    /// The TCP part of source `cfg` (None for open-loop kinds), with base RTT `rtt_ns`.
    pub fn new(cfg: &CrossConfig, rtt_ns: Option<u64>) -> Option<TcpCross> {
        let CrossConfig::TcpFlows {
            cca,
            cca_params,
            max_connections,
            tcp,
            ..
        } = cfg
        else {
            return None;
        };
        Some(TcpCross {
            cca: cca.clone(),
            cca_params: cca_params.clone(),
            tcp: tcp.clone().unwrap_or_default(),
            rtt_ns: rtt_ns.unwrap_or(0),
            max_connections: *max_connections,
            pool: SlotPool::new(*max_connections),
            slots: Vec::new(),
            stats: TcpCrossStats::default(),
        })
    }
}

/// The connection slots of one source: which are free, and how many are open.
#[derive(Debug, Clone)]
pub struct SlotPool {
    limit: u32,
    /// Slots made so far (local numbers `0..made`).
    made: u32,
    /// Free slots, the most recently freed last (reused first: its routes are warm).
    free: Vec<u32>,
}

/// What `SlotPool::acquire` gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// A new slot with this local number: the caller makes its routes.
    New(u32),
    /// A slot freed before.
    Reused(u32),
}

impl SlotPool {
    /// At most `limit` slots open at once.
    pub fn new(limit: u32) -> SlotPool {
        SlotPool {
            limit,
            made: 0,
            free: Vec::new(),
        }
    }

    /// Connections open now.
    pub fn open(&self) -> u32 {
        self.made - self.free.len() as u32
    }

    /// Slots made (the most ever open at once).
    pub fn made(&self) -> u32 {
        self.made
    }

    /// A slot for an arriving connection, or `None` when `limit` are open.
    pub fn acquire(&mut self) -> Option<Acquired> {
        if let Some(s) = self.free.pop() {
            return Some(Acquired::Reused(s));
        }
        if self.made >= self.limit {
            return None;
        }
        self.made += 1;
        Some(Acquired::New(self.made - 1))
    }

    /// Slot `slot`'s connection closed.
    pub fn release(&mut self, slot: u32) {
        debug_assert!(slot < self.made && !self.free.contains(&slot));
        self.free.push(slot);
    }
}

/// What a source's connections did, summed over the closed ones (the open ones are added
/// when the result is made).
#[derive(Debug, Clone, Default)]
pub struct TcpCrossStats {
    /// Arrivals refused because `max_connections` were open.
    pub refused: u64,
    pub started: u64,
    /// Connections closed (whole file received and the client's FIN acknowledged).
    pub completed: u64,
    /// Sum over the completed connections of arrival → last byte received.
    pub completion_total_ns: u128,
    /// Payload bytes the closed connections' receivers got in order.
    pub payload_bytes: u64,
    pub retransmits: u64,
    pub rto_count: u64,
}

/// The `cross` result entry's fields of TCP cross traffic (flattened into it).
#[derive(Debug, Clone, Serialize)]
pub struct TcpCrossResult {
    pub cca: String,
    /// Base round-trip time of its connections.
    pub rtt_ns: u64,
    pub max_connections: u32,
    pub connections_started: u64,
    pub connections_completed: u64,
    pub connections_refused: u64,
    /// Open at the end of the run.
    pub connections_open: u64,
    /// The most open at once.
    pub connections_peak: u32,
    /// Mean over the completed connections of arrival → whole file received (null: none).
    pub completion_mean_ns: Option<u64>,
    /// Payload bytes received in order, all connections.
    pub payload_bytes_delivered: u64,
    /// `payload_bytes_delivered` × 8 over the run's duration.
    pub goodput_bps: f64,
    /// Segments retransmitted, all connections.
    pub retransmits: u64,
    pub rto_count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_made_on_demand_up_to_the_limit_then_arrivals_are_refused() {
        let mut p = SlotPool::new(3);
        assert_eq!(p.acquire(), Some(Acquired::New(0)));
        assert_eq!(p.acquire(), Some(Acquired::New(1)));
        assert_eq!(p.acquire(), Some(Acquired::New(2)));
        assert_eq!(p.open(), 3);
        assert_eq!(p.acquire(), None);
        assert_eq!(p.acquire(), None);
        assert_eq!((p.open(), p.made()), (3, 3));
    }

    #[test]
    fn a_freed_slot_is_reused_before_a_new_one_is_made() {
        let mut p = SlotPool::new(10);
        for _ in 0..3 {
            p.acquire();
        }
        p.release(1);
        p.release(0);
        assert_eq!(p.open(), 1);
        // the most recently freed first, then the other, then a new one
        assert_eq!(p.acquire(), Some(Acquired::Reused(0)));
        assert_eq!(p.acquire(), Some(Acquired::Reused(1)));
        assert_eq!(p.acquire(), Some(Acquired::New(3)));
        assert_eq!((p.open(), p.made()), (4, 4));
    }

    #[test]
    fn sequential_transfers_need_one_slot() {
        // each transfer closes before the next arrives: one slot serves them all
        let mut p = SlotPool::new(5);
        for _ in 0..1000 {
            let slot = match p.acquire().expect("a slot") {
                Acquired::New(s) | Acquired::Reused(s) => s,
            };
            assert_eq!(slot, 0);
            p.release(slot);
        }
        assert_eq!((p.made(), p.open()), (1, 0));
    }
}
