//! The run-level API: scenario JSON in, result JSON out (see `docs/interface.md`; the
//! result types are `result`'s). Used by the Python binding and the `tcplab-sim` binary.
//! Never panics on input: invalid scenarios are errors, and an internal panic is caught
//! and reported as an error.
use crate::cc;
use crate::scenario::{ConfigError, ScenarioConfig};
use crate::series_file::SeriesFile;
use crate::sim::control::Progress;
use crate::sim::series::SeriesOut;
use crate::sim::trace::{TraceReport, TraceSpec, Tracer};
use crate::sim::Simulation;
use std::path::Path;

pub use crate::result::{
    summarize, FlowResult, LegResult, LinkResult, PepBufferResult, RttResult, RunResult,
    SeriesResult, StreamedSeries,
};

/// Run a scenario given as a config.
pub fn run(cfg: ScenarioConfig) -> Result<RunResult, ConfigError> {
    let mut sim = Simulation::new(cfg)?;
    sim.run();
    Ok(summarize(&sim))
}

/// Where a run's per-interval series go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesRequest<'a> {
    /// Kept in the result (memory grows with flows x intervals).
    Memory,
    /// Not kept at all.
    Discard,
    /// Streamed in chunks to the series file at this path (`series_file`), so memory does
    /// not grow with the run's duration; the result's `series` is then
    /// `{interval_ns, intervals, file}`.
    File(&'a str),
}

/// Run a scenario observed by the packet captures and event log `spec` asks for; the
/// result is bit-identical to `run`'s.
pub fn run_traced(
    cfg: ScenarioConfig,
    spec: &TraceSpec,
) -> Result<(RunResult, TraceReport), String> {
    let (result, report) = run_with(cfg, SeriesRequest::Memory, Some(spec))?;
    Ok((result, report.expect("the tracer was set before the run")))
}

/// The one way a run goes: its series where `series` says, traced when `trace` is given.
/// A series file or trace output that cannot be written ends the run with a one-line
/// error naming it; files are made only for a valid scenario.
fn run_with(
    cfg: ScenarioConfig,
    series: SeriesRequest<'_>,
    trace: Option<&TraceSpec>,
) -> Result<(RunResult, Option<TraceReport>), String> {
    run_watched(cfg, series, trace, &mut |_| true)
}

/// `run_with`, asking `go_on` along the way whether to continue (`Simulation::run_controlled`).
/// A run it stops ends in the error `cancelled at <t> s of <end> s`; what it had written
/// (series file, captures) is incomplete and the caller's to remove.
fn run_watched(
    cfg: ScenarioConfig,
    series: SeriesRequest<'_>,
    trace: Option<&TraceSpec>,
    go_on: &mut dyn FnMut(&Progress) -> bool,
) -> Result<(RunResult, Option<TraceReport>), String> {
    let mut sim = Simulation::with_series(cfg, SeriesOut::Discard).map_err(|e| e.0)?;
    let file = match series {
        SeriesRequest::Memory => {
            sim.set_series(SeriesOut::Memory);
            None
        }
        SeriesRequest::Discard => None,
        SeriesRequest::File(p) => {
            let out = SeriesFile::create(Path::new(p), sim.cfg.flows.len(), sim.cfg.interval_ns)?;
            sim.set_series(SeriesOut::Sink(Box::new(out)));
            Some(p.to_string())
        }
    };
    if let Some(spec) = trace {
        let tracer = Tracer::new(spec, &sim)?;
        sim.set_tracer(tracer);
    }
    if !sim.run_controlled(go_on) {
        return Err(format!(
            "cancelled at {:.3} s of {:.3} s",
            sim.queue.now().ns() as f64 * 1e-9,
            sim.end.ns() as f64 * 1e-9
        ));
    }
    sim.series.finish()?;
    let report = sim.take_tracer().map(Tracer::finish).transpose()?;
    let mut r = summarize(&sim);
    if let Some(st) = r.series.streamed.as_mut() {
        st.file = file;
    }
    Ok((r, report))
}

/// `f` with its panics caught: an internal error is reported in one line, never propagated.
fn catching<T>(
    f: impl FnOnce() -> Result<T, String> + std::panic::UnwindSafe,
) -> Result<T, String> {
    match std::panic::catch_unwind(f) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            Err(format!("internal error in the simulation core: {msg}"))
        }
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, String> {
    serde_json::to_string(v).map_err(|e| format!("internal error: {e}"))
}

/// Run a normalized scenario (JSON text) and return the result as JSON text. Errors are
/// one-line messages; internal panics are caught and reported, never propagated.
pub fn run_json(text: &str) -> Result<String, String> {
    run_json_series(text, SeriesRequest::Memory)
}

/// `run_json` with the series where `series` says (`SeriesRequest`).
pub fn run_json_series(text: &str, series: SeriesRequest<'_>) -> Result<String, String> {
    let cfg = ScenarioConfig::from_json(text).map_err(|e| e.0)?;
    catching(move || run_with(cfg, series, None).and_then(|(r, _)| to_json(&r)))
}

/// `run_json_series` with packet captures and an event log: `trace` is a `TraceSpec` as
/// JSON text. Returns the result JSON and what was written (a `TraceReport` as JSON).
pub fn run_traced_json(
    text: &str,
    trace: &str,
    series: SeriesRequest<'_>,
) -> Result<(String, String), String> {
    let cfg = ScenarioConfig::from_json(text).map_err(|e| e.0)?;
    let spec: TraceSpec = serde_json::from_str(trace).map_err(|e| format!("trace: {e}"))?;
    catching(move || {
        let (result, report) = run_with(cfg, series, Some(&spec))?;
        let report = report.expect("the tracer was set before the run");
        Ok((to_json(&result)?, to_json(&report)?))
    })
}

/// Run a normalized scenario (JSON text), its series where `series` says, with packet
/// captures and an event log when `trace` (a `TraceSpec` as JSON text) is given, asking
/// `go_on` every `sim::control::CHECK_EVERY_EVENTS` events whether to continue. Returns the
/// result JSON and, when traced, the JSON report of what was written. A run `go_on`
/// stopped is the error `cancelled at ...`; internal panics are caught and reported.
pub fn run_json_watched(
    text: &str,
    series: SeriesRequest<'_>,
    trace: Option<&str>,
    go_on: &mut dyn FnMut(&Progress) -> bool,
) -> Result<(String, Option<String>), String> {
    let cfg = ScenarioConfig::from_json(text).map_err(|e| e.0)?;
    let spec: Option<TraceSpec> = trace
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| format!("trace: {e}"))?;
    let go_on = std::panic::AssertUnwindSafe(go_on);
    catching(move || {
        let go_on = go_on;
        let (result, report) = run_watched(cfg, series, spec.as_ref(), go_on.0)?;
        let report = report.as_ref().map(to_json).transpose()?;
        Ok((to_json(&result)?, report))
    })
}

/// The resource budget of a normalized scenario (JSON text) whose series go where `series`
/// says (`"none"`, `"file"` or `"memory"`): the estimated events and memory, the limits,
/// and the one-line refusal when an estimate exceeds its limit (`null` otherwise), as JSON.
pub fn budget_json(text: &str, series: &str) -> Result<String, String> {
    use crate::budget::{estimate, SeriesCost};
    let cfg = ScenarioConfig::from_json(text).map_err(|e| e.0)?;
    let cost = match series {
        "none" => SeriesCost::None,
        "file" => SeriesCost::Streamed,
        "memory" => SeriesCost::Memory,
        other => return Err(format!("series = {other:?}: allowed: none, file, memory")),
    };
    let budget = estimate(&cfg, cost);
    let mut v = serde_json::to_value(budget).map_err(|e| format!("internal error: {e}"))?;
    v["refusal"] = serde_json::to_value(budget.refusal()).expect("a string serializes");
    Ok(v.to_string())
}

/// Rewrite a real-stack capture (classic pcap, as `tcpdump -w` writes it) as pcapng named
/// like the simulator's, its times measured from `t0_ns` (ns since the epoch); returns the
/// number of frames written (those outside `[from_ns, to_ns)` of that time are left out).
#[allow(clippy::too_many_arguments)]
pub fn pcap_to_pcapng(
    src: &str,
    dst: &str,
    t0_ns: u64,
    from_ns: u64,
    to_ns: u64,
    if_name: &str,
    if_description: &str,
    comment: &str,
) -> Result<u64, String> {
    let application = format!("tcplab-core {} (tcpdump capture)", crate::VERSION);
    let naming = crate::sim::trace::convert::Naming {
        if_name,
        if_description,
        comment,
        application: &application,
    };
    crate::sim::trace::convert::pcap_to_pcapng(
        std::path::Path::new(src),
        std::path::Path::new(dst),
        t0_ns,
        (from_ns, to_ns),
        &naming,
    )
}

/// The formats of trace outputs as JSON: the event log's record layout and names
/// (`sim::trace::events::format_json`), the capture's snap-length default and maximum, the
/// capture points' names (`sides`) and the file name pattern (`capture_file`).
pub fn trace_format_json() -> String {
    use crate::sim::trace::{capture_file_name, DEFAULT_SNAPLEN_BYTES, MAX_SNAPLEN_BYTES, SIDES};
    serde_json::json!({
        "events": crate::sim::trace::events::format_json(),
        "default_snaplen_bytes": DEFAULT_SNAPLEN_BYTES,
        "max_snaplen_bytes": MAX_SNAPLEN_BYTES,
        "sides": SIDES,
        "capture_file": capture_file_name("{segment}", "{side}"),
    })
    .to_string()
}

/// The algorithm catalogue as JSON text: each entry's name, summary, feedback, reference
/// and parameters (name, default, unit, help), in the registry's order.
pub fn ccas_json() -> String {
    // `ns2_params`: what `reno` and `vegas` accept on `tcp.stack = "ns2"`, where they run
    // ns-2's agents instead of the Linux modules.
    let v: Vec<serde_json::Value> = cc::catalogue()
        .map(|info| {
            let mut entry = serde_json::to_value(info).expect("catalogue serializes");
            if let Some(p) = cc::registry::ns2_stack_params(info.name) {
                entry["ns2_params"] = serde_json::to_value(p).expect("catalogue serializes");
            }
            entry
        })
        .collect();
    serde_json::to_string(&v).expect("catalogue serializes")
}

/// The ranges and defaults the Python layer validates and fills a scenario with, read from
/// the constants the core itself uses (`limits`, `scenario`, `net::packet`, `tcp::rtt`), so
/// the two languages never hold two copies of a number. Ranges are `[low, high]`, inclusive.
pub fn limits_json() -> String {
    use crate::limits::*;
    use crate::net::packet::{BASE_HEADER_BYTES, TS_OPTION_BYTES};
    use crate::scenario::{CodelConfig, RedConfig, TcpConfig};
    let v = serde_json::json!({
        "max_duration_ns": MAX_DURATION_NS,
        "max_rate_bps": MAX_RATE_BPS,
        "max_delay_ns": MAX_DELAY_NS,
        "min_interval_ns": MIN_INTERVAL_NS,
        "default_interval_ns": DEFAULT_INTERVAL_NS,
        "max_intervals": MAX_INTERVALS,
        "max_trace_len": MAX_TRACE_LEN,
        "min_queue_bytes": MIN_QUEUE_BYTES,
        "mtu_bytes": MTU_BYTES,
        "max_segments": MAX_SEGMENTS,
        "max_flows": MAX_FLOWS,
        "max_runs": MAX_RUNS,
        "max_events": MAX_EVENTS,
        "max_memory_bytes": MAX_MEMORY_BYTES,
        "max_seed": u64::MAX,
        "mss_bytes": [MSS_BYTES.start(), MSS_BYTES.end()],
        "initial_window_pkts": [INITIAL_WINDOW_PKTS.start(), INITIAL_WINDOW_PKTS.end()],
        "max_rwnd_bytes": MAX_RWND_BYTES,
        "no_wscale_max_rwnd_bytes": NO_WSCALE_MAX_RWND_BYTES,
        "max_file_bytes": MAX_FILE_BYTES,
        "cbr_packet_bytes": [CBR_PACKET_BYTES.start(), CBR_PACKET_BYTES.end()],
        "default_pep_buffer_bytes": DEFAULT_PEP_BUFFER_BYTES,
        "min_pep_buffer_segments": MIN_PEP_BUFFER_SEGMENTS,
        "max_pep_buffer_bytes": MAX_PEP_BUFFER_BYTES,
        "policer_burst_bytes": [POLICER_BURST_BYTES.start(), POLICER_BURST_BYTES.end()],
        "cross_packet_bytes": [CROSS_PACKET_BYTES.start(), CROSS_PACKET_BYTES.end()],
        "cross_connections": [CROSS_CONNECTIONS.start(), CROSS_CONNECTIONS.end()],
        "default_cross_connections": DEFAULT_CROSS_CONNECTIONS,
        "default_cross_cca": DEFAULT_CROSS_CCA,
        "header_bytes": BASE_HEADER_BYTES,
        "timestamp_option_bytes": TS_OPTION_BYTES,
        "rto_min_ns": crate::tcp::linux::rtt::RTO_MIN.ns(),
        "tcp_defaults": TcpConfig::default(),
        "red_defaults": RedConfig::default(),
        "codel_defaults": CodelConfig::default(),
    });
    v.to_string()
}

/// What the core makes of a normalized scenario's path, so that no other code decides it
/// again: the base (propagation) RTT of the default path (top-level access links: what
/// `"<k>bdp"` queues are sized for) and of each flow, the bottleneck segment (lowest
/// forward rate) and the satellite segment (named `satellite`, else the longest forward
/// delay: where PEPs sit). Queue limits are not looked at, so a scenario whose `"bdp"`
/// queues are not sized yet can ask; nothing else is validated either (sums saturate).
pub fn path_json(text: &str) -> Result<String, String> {
    use crate::scenario::{bottleneck_segment, satellite_segment};
    let cfg: ScenarioConfig = serde_json::from_str(text).map_err(|e| format!("scenario: {e}"))?;
    let (segs, _) = cfg.segments();
    let flows: Vec<u64> = cfg
        .flows
        .iter()
        .map(|f| cfg.base_rtt_ns(f.access.unwrap_or(cfg.access).delay_ns))
        .collect();
    let v = serde_json::json!({
        "base_rtt_ns": cfg.base_rtt_ns(cfg.access.delay_ns),
        "flow_base_rtt_ns": flows,
        "bottleneck_segment": bottleneck_segment(&segs),
        "satellite_segment": satellite_segment(&segs),
        "segments": segs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
    });
    Ok(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_json_reports_the_constants_validation_uses() {
        let v: serde_json::Value = serde_json::from_str(&limits_json()).unwrap();
        assert_eq!(v["max_delay_ns"], 3_600_000_000_000u64);
        assert_eq!(v["max_duration_ns"], 30 * 86_400 * 1_000_000_000u64);
        assert_eq!(v["mss_bytes"], serde_json::json!([64, 65_495]));
        assert_eq!(v["tcp_defaults"]["mss_bytes"], 1448);
        assert_eq!(v["tcp_defaults"]["stack"], "linux");
        assert_eq!(v["default_pep_buffer_bytes"], 4 * 1024 * 1024);
        assert_eq!(v["rto_min_ns"], 200_000_000);
    }

    #[test]
    fn path_json_sums_delays_and_names_bottleneck_and_satellite() {
        let dir = |rate: u64, delay: u64| serde_json::json!({"rate_bps": rate, "delay_ns": delay, "queue": {}});
        let seg = |name: &str, rate: u64, delay: u64| serde_json::json!({"name": name, "forward": dir(rate, delay), "reverse": dir(rate, delay)});
        let scenario = serde_json::json!({
            "duration_ns": 1,
            "access": {"rate_bps": 1, "delay_ns": 100},
            "path": {"segments": [seg("internet", 100, 10), seg("geo", 10, 250), seg("lan", 5, 2)]},
            "flows": [
                {"cca": "", "app": {"kind": "bulk"}, "access": null},
                {"cca": "", "app": {"kind": "bulk"}, "access": {"rate_bps": 1, "delay_ns": 1000}}
            ]
        });
        let v: serde_json::Value =
            serde_json::from_str(&path_json(&scenario.to_string()).unwrap()).unwrap();
        // 2 x (10 + 250 + 2) + 4 x 100; the second flow's access links: 4 x 1000
        assert_eq!(v["base_rtt_ns"], 924);
        assert_eq!(v["flow_base_rtt_ns"], serde_json::json!([924, 4524]));
        assert_eq!(v["bottleneck_segment"], 2); // lowest forward rate
        assert_eq!(v["satellite_segment"], 1); // no "satellite": the longest forward delay
        assert!(path_json("{").is_err());
    }
}
