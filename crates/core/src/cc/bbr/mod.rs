//! BBR: v1 (`v1`, Linux `tcp_bbr.c`) and v3 (`v3`, Google's v3 branch).
pub mod v1;
pub mod v3;
