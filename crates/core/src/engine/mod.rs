//! The discrete-event engine, with nothing TCP in it: integer-nanosecond time (`time`),
//! seeded random substreams (`rng`), the event queue ordered by (time, sequence) (`event`),
//! bounded-memory statistics (`stats`), the windowed min/max filter (`minmax`) and cache
//! prefetch hints (`cache`).
pub mod cache;
pub mod event;
pub mod minmax;
pub mod rng;
pub mod stats;
pub mod time;
