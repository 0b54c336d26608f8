//! BBR: v1 (`v1`, Linux `tcp_bbr.c`) and v3 (`v3`, Google's v3 branch), sharing the units,
//! pacing, BDP, ACK-aggregation and PROBE_RTT arithmetic of `common`.
pub mod common;
pub mod v1;
pub mod v3;
