//! What the emulator prints when it stops: per link direction, the simulator's link
//! counters in the result schema's `links[]` form (docs/interface.md), the emulator's own
//! timing accuracy, and the per-interval series.
use crate::model::DirModel;
use serde::Serialize;
use tcplab_core::result::LinkResult;

/// One direction of one link: the simulator's result shape for a link (`LinkResult`,
/// flattened), then the emulator's own timing accuracy and the per-interval series.
#[derive(Debug, Clone, Serialize)]
pub struct DirReport {
    #[serde(flatten)]
    pub link: LinkResult,
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
        let late = &model.counters.lateness;
        DirReport {
            link: LinkResult::from_link(model.link(), measured_ns.max(1)),
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
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `CLOCK_MONOTONIC` at the emulator's time zero and at the measurement's start.
    pub t0_mono_ns: u64,
    pub measure_start_mono_ns: u64,
    pub measured_ns: u64,
    pub links: Vec<DirReport>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tcplab_core::engine::time::SimTime;
    use tcplab_core::scenario::DirConfig;

    #[test]
    fn a_direction_has_the_simulators_link_fields_then_the_emulators() {
        let dir: DirConfig = serde_json::from_str(
            r#"{"rate_bps": 12000000, "delay_ns": 0, "queue": {"limit_pkts": 10}}"#,
        )
        .unwrap();
        let mut m = DirModel::new("bottleneck.forward", &dir, 1, 10_000_000);
        for _ in 0..3 {
            m.offer(SimTime(0), 1500, false);
        }
        m.finish(SimTime(10_000_000));
        let text = serde_json::to_string(&DirReport::new(&m, 10_000_000)).unwrap();
        let sim = serde_json::to_string(&LinkResult::from_link(m.link(), 10_000_000)).unwrap();
        assert!(text.starts_with(sim.trim_end_matches('}')), "{text}");
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(report["name"], "bottleneck.forward");
        // 3 × 1500 B at 12 Mbit/s = 3 ms of 10 ms busy; two packets waited 1 and 2 ms.
        assert_eq!(report["utilization"], 0.3);
        assert_eq!(report["queue_mean_pkts"], 0.3);
        assert!(report.get("late_p99_ns").is_some());
    }
}
