//! The run-level API: scenario JSON in, result JSON out (see `docs/interface.md`; the
//! result types are `result`'s). Used by the Python binding and the `tcplab-sim` binary.
//! Never panics on input: invalid scenarios are errors, and an internal panic is caught
//! and reported as an error.
use crate::cc;
use crate::scenario::{ConfigError, ScenarioConfig};
use crate::sim::Simulation;

pub use crate::result::{
    summarize, FlowResult, LegResult, LinkResult, PepBufferResult, RttResult, RunResult,
    SeriesResult,
};

/// Run a scenario given as a config.
pub fn run(cfg: ScenarioConfig) -> Result<RunResult, ConfigError> {
    let mut sim = Simulation::new(cfg)?;
    sim.run();
    Ok(summarize(&sim))
}

/// Run a normalized scenario (JSON text) and return the result as JSON text. Errors are
/// one-line messages; internal panics are caught and reported, never propagated.
pub fn run_json(text: &str) -> Result<String, String> {
    let cfg = ScenarioConfig::from_json(text).map_err(|e| e.0)?;
    let outcome = std::panic::catch_unwind(move || run(cfg));
    match outcome {
        Ok(Ok(r)) => serde_json::to_string(&r).map_err(|e| format!("internal error: {e}")),
        Ok(Err(e)) => Err(e.0),
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

/// The algorithm catalogue as JSON text: each entry's name, summary, feedback, reference
/// and parameters (name, default, unit, help), in the registry's order.
pub fn ccas_json() -> String {
    let v: Vec<cc::CcInfo> = cc::catalogue().collect();
    serde_json::to_string(&v).expect("catalogue serializes")
}
