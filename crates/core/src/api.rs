//! The run-level API: scenario JSON in, result JSON out (see `docs/interface.md`).
//! Used by the Python binding and the `tcplab-sim` binary. Never panics on input: invalid
//! scenarios are errors, and an internal panic is caught and reported as an error.
use crate::cc;
use crate::scenario::{ConfigError, ScenarioConfig};
use crate::sim::Simulation;
use serde::Serialize;

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

#[derive(Serialize)]
struct ParamOut {
    name: &'static str,
    default: f64,
    unit: &'static str,
    help: &'static str,
}

#[derive(Serialize)]
struct CcOut {
    name: &'static str,
    summary: &'static str,
    feedback: &'static str,
    reference: &'static str,
    params: Vec<ParamOut>,
}

/// The algorithm catalogue as JSON text.
pub fn ccas_json() -> String {
    let v: Vec<CcOut> = cc::catalogue()
        .iter()
        .map(|c| CcOut {
            name: c.name,
            summary: c.summary,
            feedback: c.feedback,
            reference: c.reference,
            params: c
                .params
                .iter()
                .map(|p| ParamOut {
                    name: p.name,
                    default: p.default,
                    unit: p.unit,
                    help: p.help,
                })
                .collect(),
        })
        .collect();
    serde_json::to_string(&v).expect("catalogue serializes")
}
