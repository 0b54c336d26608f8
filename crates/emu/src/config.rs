//! The emulator's input: a list of links, each joining two TUN devices (possibly in two
//! network namespaces), with one normalized `DirConfig` per direction (docs/interface.md).
//!
//! The direction model is parsed leniently on purpose: the scenario's `DirConfig` grows
//! with the simulator, and a key the emulator does not know must not stop it from running
//! the keys it does. Keys that change the link's behaviour and are not emulated
//! (`delivery_trace`, RED/CoDel queues) are refused with a one-line error instead, so an
//! emulation never silently differs from the simulation it is compared with.
use serde::Deserialize;
use std::fmt;

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

/// The queue of one direction (`limit_pkts` or `limit_bytes`; DropTail only).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct QueueConfig {
    #[serde(default = "droptail")]
    pub kind: String,
    #[serde(default)]
    pub limit_pkts: Option<u64>,
    #[serde(default)]
    pub limit_bytes: Option<u64>,
}

fn droptail() -> String {
    "droptail".into()
}

/// Two-state Markov loss (Gilbert-Elliott), stepped per packet that enters service.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliott {
    pub kind: String,
    /// Probability of moving from the good to the bad state at a packet.
    pub p_gb: f64,
    /// Probability of moving from the bad to the good state at a packet.
    pub p_bg: f64,
    #[serde(default)]
    pub loss_good: f64,
    pub loss_bad: f64,
}

/// One point of a rate trace: from `t_ns` on, `rate_bps` and (if given) `delay_ns`.
pub type RatePoint = (u64, u64, Option<u64>);

/// One direction of a link (the emulated subset of the scenario's `DirConfig`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct DirConfig {
    pub rate_bps: u64,
    pub delay_ns: u64,
    #[serde(default)]
    pub per: f64,
    #[serde(default)]
    pub ber: f64,
    pub queue: QueueConfig,
    #[serde(default)]
    pub ecn_threshold_pkts: Option<u64>,
    #[serde(default)]
    pub loss: Option<GilbertElliott>,
    /// `[start_ns, end_ns)` intervals (from the start of the measurement) when the link is down.
    #[serde(default)]
    pub outages: Vec<(u64, u64)>,
    #[serde(default)]
    pub rate_trace: Option<Vec<RatePoint>>,
    #[serde(default)]
    pub delivery_trace: Option<serde_json::Value>,
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
            link.forward.check(&format!("links[{i}].forward"))?;
            link.reverse.check(&format!("links[{i}].reverse"))?;
        }
        Ok(())
    }
}

impl DirConfig {
    fn check(&self, at: &str) -> Result<(), ConfigError> {
        if self.rate_bps < MIN_RATE_BPS {
            return Err(err(&format!("{at}.rate_bps"), "must be at least 1000"));
        }
        if self.delay_ns > MAX_DELAY_NS {
            return Err(err(&format!("{at}.delay_ns"), "must be at most 60 s"));
        }
        for (name, p) in [("per", self.per), ("ber", self.ber)] {
            if !(0.0..1.0).contains(&p) {
                return Err(err(&format!("{at}.{name}"), "must be in [0, 1)"));
            }
        }
        let q = &self.queue;
        if q.kind != "droptail" {
            return Err(err(
                &format!("{at}.queue.kind"),
                format!("{:?} is not emulated; allowed: droptail", q.kind),
            ));
        }
        match (q.limit_pkts, q.limit_bytes) {
            (Some(n), None) if n >= 1 => {}
            (None, Some(b)) if b >= 1 => {}
            _ => {
                return Err(err(
                    &format!("{at}.queue"),
                    "exactly one of limit_pkts / limit_bytes (>= 1)",
                ))
            }
        }
        if let Some(ge) = &self.loss {
            if ge.kind != "gilbert_elliott" {
                return Err(err(&format!("{at}.loss.kind"), "allowed: gilbert_elliott"));
            }
            for (name, p) in [
                ("p_gb", ge.p_gb),
                ("p_bg", ge.p_bg),
                ("loss_good", ge.loss_good),
                ("loss_bad", ge.loss_bad),
            ] {
                if !(0.0..=1.0).contains(&p) {
                    return Err(err(&format!("{at}.loss.{name}"), "must be in [0, 1]"));
                }
            }
        }
        for (k, &(start, end)) in self.outages.iter().enumerate() {
            if start >= end {
                return Err(err(
                    &format!("{at}.outages[{k}]"),
                    "start must be before end",
                ));
            }
        }
        if let Some(trace) = &self.rate_trace {
            if trace.first().map(|p| p.0) != Some(0) {
                return Err(err(&format!("{at}.rate_trace"), "must start at t_ns = 0"));
            }
            for (k, w) in trace.windows(2).enumerate() {
                if w[1].0 <= w[0].0 {
                    return Err(err(
                        &format!("{at}.rate_trace[{}]", k + 1),
                        "times must increase",
                    ));
                }
            }
            if trace.iter().any(|p| p.1 < MIN_RATE_BPS) {
                return Err(err(
                    &format!("{at}.rate_trace"),
                    "rates must be at least 1000",
                ));
            }
        }
        if self.delivery_trace.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(err(
                &format!("{at}.delivery_trace"),
                "Mahimahi delivery traces are not emulated (only simulated)",
            ));
        }
        Ok(())
    }
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
    fn unknown_simulator_keys_are_ignored_but_codel_is_refused() {
        let extra = GEO.replace("\"per\"", "\"future_key\": 3, \"per\"");
        assert!(EmuConfig::from_json(&config(&extra)).is_ok());
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
        assert_eq!(e.0, "links[0].forward.per: must be in [0, 1)");
    }

    #[test]
    fn rate_trace_must_start_at_zero() {
        let bad = GEO.replace("\"per\"", "\"rate_trace\": [[5, 1000000, null]], \"per\"");
        let e = EmuConfig::from_json(&config(&bad)).unwrap_err();
        assert!(e.0.contains("rate_trace"), "{e}");
    }
}
