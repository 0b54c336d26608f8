//! The network: packets, links with rate/delay/queue/errors, and the topology that joins
//! the TCP endpoints. `link` is the transmitter; `aqm` its queue disciplines (RED, CoDel),
//! `loss` the burst-loss model and `trace` outages and time-varying service.
pub mod aqm;
pub mod link;
pub mod loss;
pub mod packet;
pub mod topology;
pub mod trace;
