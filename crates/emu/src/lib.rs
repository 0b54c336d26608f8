//! tcplab-emu: a user-space link emulator that applies tcplab's link model to real packets.
//!
//! The kernel routes packets into TUN devices; the emulator reads them, asks the
//! simulator's own `net::link::Link`, built from the scenario's `DirConfig` (rate, DropTail
//! queue, PER/BER or Gilbert-Elliott loss, ECN marking, outages, rate traces), when each
//! packet would leave the far end of the link, and writes it into the TUN device at that
//! end at that instant. So the emulated link is the simulated link, run on the wall clock,
//! and its report has the simulator's `LinkResult` shape.
//!
//! Modules: `config` (JSON input), `model` (one direction, pure), `engine` (the timing
//! loop over all links), `report` (the JSON printed at exit), `probe` (UDP probes that
//! measure the emulator's accuracy), `sys` (Linux calls).
pub mod config;
pub mod engine;
pub mod model;
pub mod probe;
pub mod report;
pub mod sys;
