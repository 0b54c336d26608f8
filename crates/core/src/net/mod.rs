//! The network: packets, links with rate/delay/queue/errors, and the topology that joins
//! the TCP endpoints. `link` is the transmitter; `aqm` its queue disciplines (RED, CoDel),
//! `loss` the burst-loss model, `policer` a token-bucket rate limit in front of the queue and
//! `trace` outages and time-varying service; `wifi` a shared 802.11 medium (DCF/EDCA);
//! `access` the compact form of a flow's access links that the event loop forwards over.
pub mod access;
pub mod aqm;
pub mod link;
pub mod loss;
pub mod packet;
pub mod policer;
pub mod topology;
pub mod trace;
pub mod wifi;
