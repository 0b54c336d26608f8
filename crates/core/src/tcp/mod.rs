//! TCP endpoints, sans-IO: each reacts to packets and timers at a given `now` and appends
//! the packets it sends to an output buffer; timers are deadlines the event loop polls.
//!
//! - `connection`: one TCP connection (a sender and a receiver) and how it is built from a
//!   flow's configuration;
//! - `intervals`: merged byte or segment ranges (out-of-order data, SACKed segments);
//! - `linux`: the Linux-like sender (`tcp_output`, `tcp_ack`, `tcp_fastretrans_alert`);
//! - `ns2`: the classic ns-2 agents, a sender of their own;
//! - `receiver`: the receiver (delayed and quick ACKs, SACK/D-SACK, receive window).
pub mod connection;
#[cfg(test)]
pub(crate) mod harness;
pub mod intervals;
pub mod linux;
pub mod ns2;
pub mod rcvbuf;
pub mod receiver;

pub use receiver::Receiver;
