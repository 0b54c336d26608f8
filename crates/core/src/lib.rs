//! tcplab-core: a deterministic packet-level discrete-event simulator for TCP congestion
//! control. Pure Rust, no I/O and no global state: each `Simulation` owns everything, so
//! runs can execute in parallel threads, and a run is a function of (scenario, seed). The
//! one exception is at the edge: `series_file`, where `api` streams a run's series.
//!
//! # Layers, from the bottom
//!
//! - `engine`: integer-nanosecond time, seeded random substreams, the event queue ordered
//!   by (time, scheduling order) (a radix heap), bounded-memory statistics, the windowed min/max filter. Nothing
//!   in it knows about networks or TCP.
//! - `net`: packets and their pool, one-way links (rate, delay, DropTail solved
//!   analytically; RED and CoDel in `aqm`; loss models, outages, traces), and the topology
//!   that routes a connection's data and ACKs over them.
//! - `tcp`: the endpoints, sans-IO — `connection` (a sender and a receiver, their timer
//!   slots), the Linux-like sender in `linux` (output, ACK processing, the CA-state machine,
//!   SACK scoreboard, RTT, delivery rate, PRR, RACK), the ns-2 agents in `ns2`, and the
//!   `receiver`.
//! - `cc`: the `CongestionControl` trait (Linux's `tcp_congestion_ops` hook for hook) and
//!   its `Window`, one file per algorithm, and the registry table they are listed in.
//! - `app`: non-TCP traffic (constant-bit-rate UDP).
//! - `sim`: the event loop (`Simulation`), the user flows and their connections (`flow`),
//!   the split-TCP PEP relays joining them (`relay`), and per-interval series (`series`).
//! - `scenario`: the normalized scenario (serde types) and its validation; `result`: what a
//!   run reports; `api`: JSON in, JSON out, for Python and the `tcplab-sim` binary;
//!   `series_file`: the binary file a run can stream its series to; `model`: the version
//!   of the numbers.
//!
//! # The path of a packet
//!
//! An endpoint reacts to a packet or a timer by appending packets to an output buffer
//! (`Sender::on_packet`, `Receiver::on_timer`, ...). The event loop stamps each with its
//! connection's data or ACK route, puts it in the packet pool and offers it to the route's
//! first link (`Link::offer`). The link decides at once — a queue, error, outage or AQM
//! drop, or the instant the packet reaches the far end — and the loop schedules a
//! `LinkDeliver` event for the head of the link's pipeline only (CoDel links queue real
//! packets and ask for `LinkWake` events). At the far end the packet goes on to the next
//! link of its route, or is delivered to the endpoint at the route's end; what that
//! endpoint sends in return starts the same way. After every endpoint action the loop
//! re-reads the endpoint's timer deadlines and schedules those that moved earlier (stale
//! timer events are ignored when they fire). At a PEP node, `relay` then hands delivered
//! bytes to the next connection of the flow.
pub mod api;
pub mod app;
pub mod budget;
pub mod cc;
pub mod engine;
pub mod limits;
pub mod model;
pub mod net;
pub mod result;
pub mod scenario;
pub mod series_file;
pub mod sim;
pub mod tcp;

/// Version of the simulation core crate (stored with every result). What identifies the
/// numbers is `MODEL_VERSION`, not this.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub use model::MODEL_VERSION;
