//! TCP endpoints: a Linux-like sender (sans-IO: it reacts to packets and timers at a
//! given `now` and appends packets to an output buffer) and a receiver.
pub mod ack;
pub mod ca_state;
pub mod ns2;
pub mod rate;
pub mod rcvbuf;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;

pub use receiver::Receiver;
pub use sender::Sender;
