//! What the emulator prints when it stops: per link direction, the simulator's link
//! counters in the result schema's `links[]` form (docs/interface.md), the emulator's own
//! timing accuracy, and the per-interval series.
use crate::model::DirModel;
use serde::Serialize;

/// One direction of one link.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DirReport {
    pub name: String,
    pub rate_bps: u64,
    pub packets_tx: u64,
    pub bytes_tx: u64,
    pub utilization: f64,
    pub queue_drops: u64,
    pub error_drops: u64,
    pub ecn_marks: u64,
    pub outage_drops: u64,
    pub queue_mean_pkts: f64,
    pub queue_max_pkts: u64,
    pub queue_mean_bytes: f64,
    pub queue_max_bytes: u64,
    /// Packets the far-end device refused.
    pub write_errors: u64,
    /// Packets still queued or propagating when the measurement ended.
    pub in_flight_at_end: u64,
    /// How late packets left compared with the model's departure instant (ns).
    pub late_count: u64,
    pub late_mean_ns: Option<f64>,
    pub late_p50_ns: Option<u64>,
    pub late_p99_ns: Option<u64>,
    pub late_max_ns: Option<u64>,
    pub series: SeriesReport,
}

/// Per-interval samples (the interval is the configuration's `interval_ns`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SeriesReport {
    pub queue_pkts: Vec<f64>,
    pub utilization: Vec<f64>,
}

impl DirReport {
    /// Summarize `model` over a measurement of `measured_ns`.
    pub fn new(model: &DirModel, measured_ns: u64) -> DirReport {
        let s = model.stats();
        let span = measured_ns.max(1) as f64;
        let late = &model.counters.lateness;
        DirReport {
            name: model.name.clone(),
            rate_bps: model.rate_bps,
            packets_tx: s.packets_tx,
            bytes_tx: s.bytes_tx,
            utilization: 8.0 * s.bytes_tx as f64 * 1e9 / (model.rate_bps as f64 * span),
            queue_drops: s.queue_drops,
            error_drops: s.error_drops,
            ecn_marks: s.ecn_marks,
            outage_drops: model.counters.outage_drops,
            queue_mean_pkts: s.q_pkts.area as f64 / span,
            queue_max_pkts: s.q_pkts.max,
            queue_mean_bytes: s.q_bytes.area as f64 / span,
            queue_max_bytes: s.q_bytes.max,
            write_errors: model.counters.write_errors,
            in_flight_at_end: model.counters.in_flight_at_end,
            late_count: late.count(),
            late_mean_ns: late.mean(),
            late_p50_ns: late.quantile(0.5),
            late_p99_ns: late.quantile(0.99),
            late_max_ns: late.max(),
            series: SeriesReport {
                queue_pkts: model.series.queue_pkts.clone(),
                utilization: model.series.utilization.clone(),
            },
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// `CLOCK_MONOTONIC` at the emulator's time zero and at the measurement's start.
    pub t0_mono_ns: u64,
    pub measure_start_mono_ns: u64,
    pub measured_ns: u64,
    pub links: Vec<DirReport>,
}
