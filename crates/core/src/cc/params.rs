//! What describes an algorithm: its catalogue entry (`CcInfo`: name, summary, reference,
//! tunable parameters with defaults) and the scenario's values of those parameters
//! (`Params`), checked against the entry with errors naming the parameter.
use crate::scenario::ConfigError;
use serde::Serialize;
use std::collections::BTreeMap;

/// Facts available when a controller is built.
#[derive(Copy, Clone, Debug)]
pub struct FlowInit {
    pub mss: u32,
    pub initial_window: u32,
}

/// One tunable parameter of an algorithm (for `tcplab ccas` and validation).
#[derive(Copy, Clone, Debug, Serialize)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: f64,
    pub unit: &'static str,
    pub help: &'static str,
}

/// Catalogue entry of an algorithm (serialized as `api::ccas_json` gives it).
#[derive(Copy, Clone, Debug, Serialize)]
pub struct CcInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub feedback: &'static str,
    pub reference: &'static str,
    pub params: &'static [ParamSpec],
    /// Built-in TCP option overrides (e.g. ns-2 `sack` runs with SACK, `tahoe` without).
    #[serde(skip)]
    pub sack: Option<bool>,
    /// Needs ECN with per-packet CE echo (DCTCP): the flow negotiates ECN, marks even
    /// retransmissions ECT, and its receiver mirrors CE on every ACK.
    #[serde(skip)]
    pub ecn: bool,
}

/// Parameters given in a scenario, checked against an algorithm's `ParamSpec`s.
#[derive(Debug, Clone)]
pub struct Params<'a> {
    cca: &'a str,
    given: &'a BTreeMap<String, f64>,
    specs: &'static [ParamSpec],
}

impl<'a> Params<'a> {
    pub fn new(
        cca: &'a str,
        given: &'a BTreeMap<String, f64>,
        specs: &'static [ParamSpec],
    ) -> Result<Self, ConfigError> {
        for k in given.keys() {
            if !specs.iter().any(|s| s.name == k) {
                let allowed: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(ConfigError(format!(
                    "cca_params.{k}: unknown parameter for {cca}; allowed: {}",
                    if allowed.is_empty() {
                        "none".to_string()
                    } else {
                        allowed.join(", ")
                    }
                )));
            }
        }
        Ok(Params { cca, given, specs })
    }

    /// Value of parameter `name` (given or default).
    pub fn get(&self, name: &str) -> f64 {
        self.given.get(name).copied().unwrap_or_else(|| {
            self.specs
                .iter()
                .find(|s| s.name == name)
                .map_or(0.0, |s| s.default)
        })
    }

    /// Integer value in `[lo, hi]`, or an error naming the parameter.
    pub fn int(&self, name: &str, lo: i64, hi: i64) -> Result<i64, ConfigError> {
        let v = self.get(name);
        if v.fract() != 0.0 || v < lo as f64 || v > hi as f64 {
            return Err(ConfigError(format!(
                "cca_params.{name}: {v} is invalid for {}; allowed: integers {lo} ..= {hi}",
                self.cca
            )));
        }
        Ok(v as i64)
    }

    /// Real value in `[lo, hi]`.
    pub fn real(&self, name: &str, lo: f64, hi: f64) -> Result<f64, ConfigError> {
        let v = self.get(name);
        if !(lo..=hi).contains(&v) {
            return Err(ConfigError(format!(
                "cca_params.{name}: {v} is invalid for {}; allowed: {lo} ..= {hi}",
                self.cca
            )));
        }
        Ok(v)
    }

    pub fn flag(&self, name: &str) -> Result<bool, ConfigError> {
        Ok(self.int(name, 0, 1)? == 1)
    }
}
