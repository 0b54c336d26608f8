//! Thin PyO3 binding over `tcplab-core`.
//!
//! The boundary is deliberately narrow: one normalized scenario (JSON text) goes in,
//! one result (JSON text) comes out, once per run (its series either inside it or streamed
//! by the core to a file). No Python object is touched while
//! the simulation runs, so the GIL is released for the whole run and sweeps can use
//! threads.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tcplab_core::api::SeriesRequest;

/// Run one simulation. `scenario_json` is the normalized scenario (see
/// `docs/interface.md`); returns the result as JSON text. Invalid input raises
/// `ValueError` with a one-line message naming the field.
#[pyfunction]
fn run_json(py: Python<'_>, scenario_json: &str) -> PyResult<String> {
    let text = scenario_json.to_owned();
    py.detach(move || tcplab_core::api::run_json(&text))
        .map_err(PyValueError::new_err)
}

/// Run one simulation without keeping its series in memory: they are streamed to the
/// series file `series_path` in chunks (`tcplab_core::series_file`), or not kept at all
/// when it is `None`. Returns the result JSON, whose `series` says how many intervals went
/// where. Invalid input or an unwritable file raises `ValueError` (one line).
#[pyfunction]
#[pyo3(signature = (scenario_json, series_path=None))]
fn run_json_series(
    py: Python<'_>,
    scenario_json: &str,
    series_path: Option<&str>,
) -> PyResult<String> {
    let text = scenario_json.to_owned();
    let path = series_path.map(str::to_owned);
    py.detach(move || tcplab_core::api::run_json_series(&text, series_request(path.as_deref())))
        .map_err(PyValueError::new_err)
}

/// A series file path, or `None` for no series kept.
fn series_request(path: Option<&str>) -> SeriesRequest<'_> {
    path.map_or(SeriesRequest::Discard, SeriesRequest::File)
}

/// Run one simulation observed by packet captures and an event log: `trace_json` is the
/// trace specification (see `docs/interface.md`). The series stay in the result when
/// `keep_series` is true; otherwise they go to the series file `series_path` or are not
/// kept (as in `run_json_series`). Returns the result JSON and the JSON report of what was
/// written. Invalid input or an unwritable file raises `ValueError` with a one-line message.
#[pyfunction]
#[pyo3(signature = (scenario_json, trace_json, keep_series=true, series_path=None))]
fn run_traced_json(
    py: Python<'_>,
    scenario_json: &str,
    trace_json: &str,
    keep_series: bool,
    series_path: Option<&str>,
) -> PyResult<(String, String)> {
    let (text, trace) = (scenario_json.to_owned(), trace_json.to_owned());
    let path = series_path.map(str::to_owned);
    py.detach(move || {
        let series = if keep_series {
            SeriesRequest::Memory
        } else {
            series_request(path.as_deref())
        };
        tcplab_core::api::run_traced_json(&text, &trace, series)
    })
    .map_err(PyValueError::new_err)
}

/// The formats of the trace outputs (event-log record layout and names, snap lengths) as
/// JSON text.
#[pyfunction]
fn trace_format_json() -> String {
    tcplab_core::api::trace_format_json()
}

/// Rewrite a classic pcap capture (tcpdump's) as pcapng with times from `t0_ns` (ns since
/// the epoch), the frames in `[from_ns, to_ns)` of that time, and the capture point's name;
/// returns the frames written. An unreadable or unwritable file raises `ValueError` with a
/// one-line message.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn pcap_to_pcapng(
    py: Python<'_>,
    src: &str,
    dst: &str,
    t0_ns: u64,
    from_ns: u64,
    to_ns: u64,
    if_name: &str,
    if_description: &str,
    comment: &str,
) -> PyResult<u64> {
    py.detach(|| {
        tcplab_core::api::pcap_to_pcapng(
            src,
            dst,
            t0_ns,
            from_ns,
            to_ns,
            if_name,
            if_description,
            comment,
        )
    })
    .map_err(PyValueError::new_err)
}

/// Catalogue of the built-in congestion-control algorithms as JSON text.
#[pyfunction]
fn ccas_json() -> String {
    tcplab_core::api::ccas_json()
}

/// The ranges and defaults a scenario is validated and filled with, as JSON text (the
/// core's own constants; see `tcplab_core::api::limits_json`).
#[pyfunction]
fn limits_json() -> String {
    tcplab_core::api::limits_json()
}

/// The core's view of a normalized scenario's path (base RTTs, bottleneck and satellite
/// segments) as JSON text. Malformed input raises `ValueError`.
#[pyfunction]
fn path_json(scenario_json: &str) -> PyResult<String> {
    tcplab_core::api::path_json(scenario_json).map_err(PyValueError::new_err)
}

/// Version of the simulation core.
#[pyfunction]
fn core_version() -> &'static str {
    tcplab_core::VERSION
}

/// Version of the simulation model: bumped by any change that alters results, so stored
/// runs of another model version are never reused.
#[pyfunction]
fn model_version() -> u32 {
    tcplab_core::MODEL_VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(run_json_series, m)?)?;
    m.add_function(wrap_pyfunction!(run_traced_json, m)?)?;
    m.add_function(wrap_pyfunction!(trace_format_json, m)?)?;
    m.add_function(wrap_pyfunction!(pcap_to_pcapng, m)?)?;
    m.add_function(wrap_pyfunction!(ccas_json, m)?)?;
    m.add_function(wrap_pyfunction!(limits_json, m)?)?;
    m.add_function(wrap_pyfunction!(path_json, m)?)?;
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(model_version, m)?)?;
    Ok(())
}
