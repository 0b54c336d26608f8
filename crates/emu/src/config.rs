//! The emulator's input: a list of links, each joining two TUN devices (possibly in two
//! network namespaces), with one normalized `DirConfig` per direction — the scenario's
//! own type (`tcplab_core::scenario::DirConfig`, docs/interface.md), checked by the core's
//! `validate::dir`.
//!
//! On top of the core's checks, what the emulator does not run is refused with a one-line
//! error (RED/CoDel queues, Mahimahi delivery traces, rates below 1 kbit/s, delays beyond
//! its delay line), so an emulation never silently differs from the simulation it is
//! compared with.
use serde::Deserialize;
use std::fmt;
use tcplab_core::scenario::{validate, DirConfig};

/// A one-line configuration error: `<field>: <problem>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

fn err(field: &str, problem: impl fmt::Display) -> ConfigError {
    ConfigError(format!("{field}: {problem}"))
}

/// One end of an emulated link: a TUN device, in a named network namespace or in the
/// emulator's own (`netns` = null).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    #[serde(default)]
    pub netns: Option<String>,
    pub dev: String,
}

/// A bidirectional link between TUN devices `a` and `b`: `forward` carries `a` → `b`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Result name prefix, e.g. `bottleneck` → `bottleneck.forward` / `bottleneck.reverse`.
    pub name: String,
    pub a: Endpoint,
    pub b: Endpoint,
    pub forward: DirConfig,
    pub reverse: DirConfig,
}

/// The whole emulator configuration.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EmuConfig {
    /// Master seed of the loss models (substreams per link direction, as in the simulator).
    #[serde(default)]
    pub seed: u64,
    /// Series interval (ns).
    #[serde(default = "default_interval")]
    pub interval_ns: u64,
    /// Length of the measurement window (ns) after its start (SIGUSR1, or the emulator's
    /// start); 0: until the emulator stops.
    #[serde(default)]
    pub measure_ns: u64,
    pub links: Vec<LinkConfig>,
}

fn default_interval() -> u64 {
    1_000_000_000
}

/// Lowest rate accepted: a 1500 B packet then takes 12 s to serialize.
const MIN_RATE_BPS: u64 = 1_000;
/// Longest one-way delay accepted (the delay line holds every packet for this long).
const MAX_DELAY_NS: u64 = 60_000_000_000;

impl EmuConfig {
    /// Parse and check a JSON configuration.
    pub fn from_json(text: &str) -> Result<EmuConfig, ConfigError> {
        let config: EmuConfig =
            serde_json::from_str(text).map_err(|e| ConfigError(format!("config: {e}")))?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), ConfigError> {
        if self.links.is_empty() {
            return Err(err("links", "at least one link is needed"));
        }
        if self.interval_ns < 1_000_000 {
            return Err(err("interval_ns", "must be at least 1 ms"));
        }
        for (i, link) in self.links.iter().enumerate() {
            for (end, ep) in [("a", &link.a), ("b", &link.b)] {
                let field = format!("links[{i}].{end}.dev");
                if ep.dev.is_empty() || ep.dev.len() > 15 || ep.dev.contains('/') {
                    return Err(err(&field, "an interface name of 1 to 15 characters"));
                }
            }
            check_dir(&format!("links[{i}].forward"), &link.forward)?;
            check_dir(&format!("links[{i}].reverse"), &link.reverse)?;
        }
        Ok(())
    }
}

/// The core's check of a link direction, then what the emulator adds.
fn check_dir(at: &str, d: &DirConfig) -> Result<(), ConfigError> {
    validate::dir(at, d).map_err(|e| ConfigError(e.0))?;
    if d.rate_bps < MIN_RATE_BPS
        || d.rate_trace
            .as_ref()
            .is_some_and(|t| t.iter().any(|p| p.rate_bps < MIN_RATE_BPS))
    {
        return Err(err(&format!("{at}.rate_bps"), "must be at least 1000"));
    }
    let longest = d
        .rate_trace
        .iter()
        .flatten()
        .filter_map(|p| p.delay_ns)
        .fold(d.delay_ns, u64::max);
    if longest > MAX_DELAY_NS {
        return Err(err(&format!("{at}.delay_ns"), "must be at most 60 s"));
    }
    if d.queue.kind != "droptail" {
        return Err(err(
            &format!("{at}.queue.kind"),
            format!("{:?} is not emulated; allowed: droptail", d.queue.kind),
        ));
    }
    if d.delivery_trace.is_some() {
        return Err(err(
            &format!("{at}.delivery_trace"),
            "Mahimahi delivery traces are not emulated (only simulated)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &str) -> String {
        format!(
            r#"{{"links": [{{"name": "bottleneck",
                "a": {{"netns": "tcplab-1-n0", "dev": "tcplab-e0a"}},
                "b": {{"netns": null, "dev": "tcplab-e0b"}},
                "forward": {dir}, "reverse": {dir}}}]}}"#
        )
    }

    const GEO: &str = r#"{"rate_bps": 4000000, "delay_ns": 250000000, "per": 1e-4,
        "queue": {"kind": "droptail", "limit_pkts": 334}, "ecn_threshold_pkts": null}"#;

    #[test]
    fn normalized_dir_config_parses() {
        let c = EmuConfig::from_json(&config(GEO)).unwrap();
        assert_eq!(c.links[0].forward.rate_bps, 4_000_000);
        assert_eq!(c.links[0].forward.queue.limit_pkts, Some(334));
        assert_eq!(c.links[0].a.netns.as_deref(), Some("tcplab-1-n0"));
        assert_eq!(c.interval_ns, 1_000_000_000);
    }

    #[test]
    fn a_key_the_scenario_does_not_have_is_refused_and_so_is_codel() {
        // The emulator reads the scenario's own DirConfig: what the simulator would refuse,
        // the emulator refuses too.
        let extra = GEO.replace("\"per\"", "\"future_key\": 3, \"per\"");
        let e = EmuConfig::from_json(&config(&extra)).unwrap_err();
        assert!(e.0.contains("future_key"), "{e}");
        let codel = GEO.replace("droptail", "codel");
        let e = EmuConfig::from_json(&config(&codel)).unwrap_err();
        assert!(e.0.contains("links[0].forward.queue.kind"), "{e}");
    }

    #[test]
    fn queue_needs_exactly_one_limit() {
        let both = GEO.replace(
            "\"limit_pkts\": 334",
            "\"limit_pkts\": 3, \"limit_bytes\": 9000",
        );
        let e = EmuConfig::from_json(&config(&both)).unwrap_err();
        assert!(e.0.contains("exactly one"), "{e}");
    }

    #[test]
    fn per_out_of_range_names_the_field() {
        let bad = GEO.replace("1e-4", "1.5");
        let e = EmuConfig::from_json(&config(&bad)).unwrap_err();
        assert_eq!(e.0, "links[0].forward.per: 1.5 must be in [0, 1)");
    }

    #[test]
    fn rate_trace_must_start_at_zero() {
        let bad = GEO.replace("\"per\"", "\"rate_trace\": [[5, 1000000, null]], \"per\"");
        let e = EmuConfig::from_json(&config(&bad)).unwrap_err();
        assert!(e.0.contains("rate_trace"), "{e}");
    }
}
