//! Non-TCP applications: constant-bit-rate UDP traffic and cross traffic.
pub mod cross;
pub mod udp;
