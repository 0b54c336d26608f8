//! Applications other than the flows' own: constant-bit-rate UDP traffic and cross traffic
//! (open loop, and TCP downloads that the simulation runs).
pub mod cross;
pub mod cross_tcp;
pub mod udp;
