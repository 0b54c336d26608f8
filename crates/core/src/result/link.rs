//! A link direction's counters as results carry them: the simulator's and the emulator's
//! (which fingerprints this file, so it stays apart from the simulator's flow results).
use crate::net::link::Link;
use serde::Serialize;

/// Summary of one link direction.
#[derive(Debug, Clone, Serialize)]
pub struct LinkResult {
    pub name: String,
    pub rate_bps: u64,
    pub packets_tx: u64,
    pub bytes_tx: u64,
    pub utilization: f64,
    pub queue_drops: u64,
    pub error_drops: u64,
    pub ecn_marks: u64,
    /// Packets lost because their service would have started during an outage.
    pub outage_drops: u64,
    /// RED early/forced drops and CoDel dequeue drops (tail drops are `queue_drops`).
    pub aqm_drops: u64,
    pub queue_mean_pkts: f64,
    pub queue_max_pkts: u64,
    pub queue_mean_bytes: f64,
    pub queue_max_bytes: u64,
}

impl LinkResult {
    /// The counters of `link` over a measurement of `span_ns` (the run's duration in the
    /// simulator, the measured window in the emulator); time averages are over `span_ns`.
    pub fn from_link(link: &Link, span_ns: u64) -> LinkResult {
        let s = &link.stats;
        let span = span_ns as f64;
        LinkResult {
            name: link.name.clone(),
            rate_bps: link.rate_bps,
            packets_tx: s.packets_tx,
            bytes_tx: s.bytes_tx,
            utilization: (s.bytes_tx as f64 * 8.0 / (link.rate_bps as f64 * span / 1e9)).min(1.0),
            queue_drops: s.queue_drops,
            error_drops: s.error_drops,
            ecn_marks: s.ecn_marks,
            outage_drops: s.outage_drops,
            aqm_drops: s.aqm_drops,
            queue_mean_pkts: s.q_pkts.area as f64 / span,
            queue_max_pkts: s.q_pkts.max,
            queue_mean_bytes: s.q_bytes.area as f64 / span,
            queue_max_bytes: s.q_bytes.max,
        }
    }
}
