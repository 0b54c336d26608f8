//! Loss recovery, written once for every congestion controller.
//!
//! Two concerns are separated, as in Linux:
//! - *detection* — which segments are lost: RACK (`rack.rs`, the Linux default, RFC 8985),
//!   the RFC 6675 DupThresh rule (`rack = false`), or NewReno head marking without SACK;
//!   the sender drives these against its scoreboard;
//! - *reduction* — how cwnd moves while recovering: Proportional Rate Reduction
//!   (`prr.rs`, RFC 6937 as Linux's `tcp_cwnd_reduction`).
pub mod prr;
pub mod rack;

pub use prr::Prr;
pub use rack::Rack;
