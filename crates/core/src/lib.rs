//! tcplab-core: a deterministic packet-level discrete-event simulator for TCP congestion
//! control.
//!
//! Layout: `time`/`rng`/`event` are the engine; `net` the links and topology; `tcp` the
//! Linux-like endpoints; `cc` the congestion controllers; `recovery` loss detection and
//! PRR; `sim` the event loop; `api` JSON in/out. No global state: each `Simulation` owns
//! everything, so runs can execute in parallel threads.
pub mod api;
pub mod app;
pub mod cc;
pub mod config;
pub mod conn;
pub mod event;
pub mod limits;
pub mod model;
pub mod net;
pub mod recovery;
pub mod rng;
pub mod series;
pub mod session;
pub mod sim;
pub mod stats;
pub mod tcp;
pub mod time;

/// Version of the simulation core crate (stored with every result). What identifies the
/// numbers is `MODEL_VERSION`, not this.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub use model::MODEL_VERSION;
