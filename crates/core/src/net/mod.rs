//! The network: packets, links with rate/delay/queue/errors, and the topology that joins
//! the TCP endpoints. `link` is the transmitter; `red`/`codel` its queue disciplines,
//! `loss` the burst-loss model and `trace` outages and time-varying service.
pub mod codel;
pub mod link;
pub mod loss;
pub mod packet;
pub mod red;
pub mod topology;
pub mod trace;
