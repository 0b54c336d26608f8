//! The network: packets, links with rate/delay/queue/errors, and the topology that joins
//! the TCP endpoints.
pub mod link;
pub mod packet;
pub mod topology;
