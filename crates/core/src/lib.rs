//! tcplab-core: a deterministic packet-level discrete-event simulator for TCP congestion
//! control.
pub mod api;
pub mod app;
pub mod cc;
pub mod engine;
pub mod model;
pub mod net;
pub mod result;
pub mod scenario;
pub mod sim;
pub mod tcp;

/// Version of the simulation core crate (stored with every result). What identifies the
/// numbers is `MODEL_VERSION`, not this.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub use model::MODEL_VERSION;
