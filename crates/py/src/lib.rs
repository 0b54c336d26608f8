//! Thin PyO3 binding over `tcplab-core`.
//!
//! The boundary is deliberately narrow: one normalized scenario (JSON text) goes in,
//! one result (JSON text) comes out, once per run (its series either inside it or streamed
//! by the core to a file). The GIL is released for the whole run, so sweeps can use
//! threads; it is taken back only briefly, every few milliseconds at most, to let Python's
//! signal handlers run (Ctrl-C) and to report progress when asked (`Watch`).
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tcplab_core::api::SeriesRequest;
use tcplab_core::sim::control::Progress;

/// A flag that stops the runs it is given (`Cancel.set()`), shared by every thread that
/// runs one: a sweep hands one to all its runs and sets it on Ctrl-C.
#[pyclass(frozen, module = "tcplab._core")]
struct Cancel {
    flag: Arc<AtomicBool>,
}

#[pymethods]
impl Cancel {
    #[new]
    fn new() -> Self {
        Cancel {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Stop every run given this flag at its next check (within milliseconds).
    fn set(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

create_exception!(
    _core,
    Cancelled,
    PyException,
    "A run stopped by its `Cancel` flag before its end."
);

/// How often a run on Python's main thread lets Python's signal handlers run (Ctrl-C).
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// What a run does when the core asks whether to go on: stop when its `Cancel` flag is set;
/// on the main thread, let Python's signal handlers run now and then (taking the GIL
/// briefly), so Ctrl-C raises `KeyboardInterrupt` out of the run; call `progress(now_ns,
/// end_ns, events)` every `progress_every_s` seconds of wall time.
struct Watch {
    cancel: Option<Arc<AtomicBool>>,
    main_thread: bool,
    progress: Option<(Py<PyAny>, Duration)>,
    last_signals: Instant,
    last_progress: Instant,
    /// What stopped the run: a Python exception (a signal handler's or the progress
    /// callback's), or the flag (`Cancelled`).
    stop: Option<PyErr>,
}

impl Watch {
    fn new(
        py: Python<'_>,
        cancel: Option<&Bound<'_, Cancel>>,
        progress: Option<Py<PyAny>>,
        progress_every_s: f64,
    ) -> PyResult<Watch> {
        let threading = py.import("threading")?;
        let main_thread = threading
            .call_method0("current_thread")?
            .is(&threading.call_method0("main_thread")?);
        let every = Duration::try_from_secs_f64(progress_every_s).map_err(|_| {
            PyValueError::new_err(format!(
                "progress_every_s = {progress_every_s}: allowed: a positive number of seconds"
            ))
        })?;
        let now = Instant::now();
        Ok(Watch {
            cancel: cancel.map(|c| c.get().flag.clone()),
            main_thread,
            progress: progress.map(|p| (p, every)),
            last_signals: now,
            last_progress: now,
            stop: None,
        })
    }

    fn go_on(&mut self, p: &Progress) -> bool {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            self.stop = Some(Cancelled::new_err("run cancelled"));
            return false;
        }
        let now = Instant::now();
        if self.main_thread && now.duration_since(self.last_signals) >= SIGNAL_CHECK {
            self.last_signals = now;
            if let Err(e) = Python::attach(|py| py.check_signals()) {
                self.stop = Some(e);
                return false;
            }
        }
        if let Some((callback, every)) = &self.progress {
            if now.duration_since(self.last_progress) >= *every {
                self.last_progress = now;
                let called = Python::attach(|py| {
                    callback.call1(py, (p.now_ns, p.end_ns, p.events)).map(drop)
                });
                if let Err(e) = called {
                    self.stop = Some(e);
                    return false;
                }
            }
        }
        true
    }

    /// The run's outcome as Python sees it: what stopped it wins over the core's message.
    fn outcome<T>(self, r: Result<T, String>) -> PyResult<T> {
        match (r, self.stop) {
            (Ok(v), _) => Ok(v),
            (Err(_), Some(stop)) => Err(stop),
            (Err(e), None) => Err(PyValueError::new_err(e)),
        }
    }
}

/// Run one simulation, released from the GIL, with the series where `series` says, traced
/// when `trace` (a trace specification as JSON text) is given, and watched (`Watch`).
fn run_watched(
    py: Python<'_>,
    text: &str,
    series: SeriesRequest<'_>,
    trace: Option<&str>,
    watch: Watch,
) -> PyResult<(String, Option<String>)> {
    let mut watch = watch;
    let r = py.detach(|| {
        tcplab_core::api::run_json_watched(text, series, trace, &mut |p| watch.go_on(p))
    });
    watch.outcome(r)
}

/// Run one simulation. `scenario_json` is the normalized scenario (see
/// `docs/interface.md`); returns the result as JSON text. Invalid input raises
/// `ValueError` with a one-line message naming the field. The run stops early when
/// `cancel` is set (`Cancelled`), when a signal handler raises (Ctrl-C on the main
/// thread: `KeyboardInterrupt`) or when `progress(now_ns, end_ns, events)`, called every
/// `progress_every_s` seconds of wall time, raises.
#[pyfunction]
#[pyo3(signature = (scenario_json, cancel=None, progress=None, progress_every_s=2.0))]
fn run_json(
    py: Python<'_>,
    scenario_json: &str,
    cancel: Option<&Bound<'_, Cancel>>,
    progress: Option<Py<PyAny>>,
    progress_every_s: f64,
) -> PyResult<String> {
    let watch = Watch::new(py, cancel, progress, progress_every_s)?;
    Ok(run_watched(py, scenario_json, SeriesRequest::Memory, None, watch)?.0)
}

/// Run one simulation without keeping its series in memory: they are streamed to the
/// series file `series_path` in chunks (`tcplab_core::series_file`), or not kept at all
/// when it is `None`. Returns the result JSON, whose `series` says how many intervals went
/// where. Invalid input or an unwritable file raises `ValueError` (one line); stopping
/// is as in `run_json`.
#[pyfunction]
#[pyo3(signature = (scenario_json, series_path=None, cancel=None, progress=None, progress_every_s=2.0))]
fn run_json_series(
    py: Python<'_>,
    scenario_json: &str,
    series_path: Option<&str>,
    cancel: Option<&Bound<'_, Cancel>>,
    progress: Option<Py<PyAny>>,
    progress_every_s: f64,
) -> PyResult<String> {
    let watch = Watch::new(py, cancel, progress, progress_every_s)?;
    Ok(run_watched(py, scenario_json, series_request(series_path), None, watch)?.0)
}

/// A series file path, or `None` for no series kept.
fn series_request(path: Option<&str>) -> SeriesRequest<'_> {
    path.map_or(SeriesRequest::Discard, SeriesRequest::File)
}

/// Run one simulation observed by packet captures and an event log: `trace_json` is the
/// trace specification (see `docs/interface.md`). The series stay in the result when
/// `keep_series` is true; otherwise they go to the series file `series_path` or are not
/// kept (as in `run_json_series`). Returns the result JSON and the JSON report of what was
/// written. Invalid input or an unwritable file raises `ValueError` with a one-line
/// message; stopping is as in `run_json`.
#[pyfunction]
#[pyo3(signature = (scenario_json, trace_json, keep_series=true, series_path=None, cancel=None, progress=None, progress_every_s=2.0))]
#[allow(clippy::too_many_arguments)]
fn run_traced_json(
    py: Python<'_>,
    scenario_json: &str,
    trace_json: &str,
    keep_series: bool,
    series_path: Option<&str>,
    cancel: Option<&Bound<'_, Cancel>>,
    progress: Option<Py<PyAny>>,
    progress_every_s: f64,
) -> PyResult<(String, String)> {
    let watch = Watch::new(py, cancel, progress, progress_every_s)?;
    let series = if keep_series {
        SeriesRequest::Memory
    } else {
        series_request(series_path)
    };
    let (result, report) = run_watched(py, scenario_json, series, Some(trace_json), watch)?;
    Ok((result, report.expect("a traced run reports what it wrote")))
}

/// The resource budget of a normalized scenario whose series go where `series` says
/// (`"none"`, `"file"`, `"memory"`): estimated events and memory, the limits, and the
/// one-line `refusal` when an estimate exceeds its limit (else null), as JSON text.
/// Malformed input raises `ValueError`.
#[pyfunction]
fn budget_json(scenario_json: &str, series: &str) -> PyResult<String> {
    tcplab_core::api::budget_json(scenario_json, series).map_err(PyValueError::new_err)
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
    m.add_function(wrap_pyfunction!(budget_json, m)?)?;
    m.add_class::<Cancel>()?;
    m.add("Cancelled", m.py().get_type::<Cancelled>())?;
    m.add_function(wrap_pyfunction!(trace_format_json, m)?)?;
    m.add_function(wrap_pyfunction!(pcap_to_pcapng, m)?)?;
    m.add_function(wrap_pyfunction!(ccas_json, m)?)?;
    m.add_function(wrap_pyfunction!(limits_json, m)?)?;
    m.add_function(wrap_pyfunction!(path_json, m)?)?;
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(model_version, m)?)?;
    Ok(())
}
