//! Non-TCP applications: constant-bit-rate UDP traffic.
pub mod udp;
