//! The Linux-like data sender, split the way the kernel splits it:
//!
//! - `sender`: connection set-up, output (`tcp_write_xmit`, pacing, TSO bursts) and timers;
//! - `ack`: the flow of one ACK (`tcp_ack`): SACK tagging, RTT, rate sample, cwnd update;
//! - `ca_state`: the congestion-avoidance state machine (`tcp_fastretrans_alert`), undo,
//!   F-RTO and the retransmission-slot timers (RTO, TLP, RACK reorder timer);
//! - `scoreboard` (per-segment SACK/lost/retransmitted state), `rtt` (Linux's RTO
//!   estimator), `rate` (delivery-rate sampling, `tcp_rate.c`).
//!
//! Loss recovery is written once for every congestion controller, with two concerns
//! separated as in Linux:
//! - *detection* — which segments are lost: RACK (`rack`, the Linux default, RFC 8985),
//!   the RFC 6675 DupThresh rule (`rack = false`), or NewReno head marking without SACK;
//!   the sender drives these against its scoreboard;
//! - *reduction* — how cwnd moves while recovering: Proportional Rate Reduction
//!   (`prr`, RFC 6937 as Linux's `tcp_cwnd_reduction`).
pub mod ack;
pub mod ca_state;
pub mod prr;
pub mod rack;
pub mod rate;
pub mod rtt;
pub mod scoreboard;
pub mod sender;

pub use prr::Prr;
pub use rack::Rack;
pub use sender::Sender;
