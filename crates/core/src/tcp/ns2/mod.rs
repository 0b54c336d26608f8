//! The classic TCP senders of ns-2 (`tcp.cc`, `tcp-reno.cc`, `tcp-newreno.cc`,
//! `tcp-sack1.cc`, `tcp-fack.cc`, `tcp-vegas.cc`; defaults from `tcl/lib/ns-default.tcl`),
//! re-implemented as a sender of their own next to the Linux one.
//!
//! The ns-2 agents differ from Linux in kind, not in degree, so they are not congestion
//! modules plugged into `tcp::linux::sender`:
//! - the window `cwnd_` is a float in packets: +1 per new ACK in slow start, +1/cwnd per new
//!   ACK in congestion avoidance (`windowOption_` 1), whatever the ACK covers;
//! - the sequence space is counted in packets; the handshake is packet 0 (`syn_` true), data
//!   packets are 1, 2, … and ACKs carry the highest in-order packet;
//! - loss is detected by counting dupACKs (Tahoe, Reno, NewReno, Vegas), by the Sack1 `pipe`
//!   estimate (Fall & Floyd 1996) or by the FACK `awnd` (Mathis & Mahdavi 1996), with the
//!   per-variant quirks (`bugFix_`, window inflation, go-back-N, limited transmit
//!   `singledup_`, `maxburst_`);
//! - one RTT sample per window (`rtt_active_`), measured in 10 ms ticks (`tcpTick_`) with
//!   BSD-style integer smoothing, RTO ≥ `minrto_` 0.2 s, ≤ `maxrto_` 60 s, 3 s initially;
//! - no timestamps, delayed ACKs, TLP, RACK, PRR, F-RTO or undo.
//!
//! Which flows run here: `tahoe`, `newreno`, `sack`, `fack` always; `reno` and `vegas` when the
//! flow's `tcp.stack` is `ns2` (`cc::registry::ns2_agent`). Everything else uses the Linux
//! sender.
//!
//! The agents read from the scenario's `tcp` table only: `mss_bytes` (`packetSize_`),
//! `initial_window_pkts` (`windowInit_`), `rwnd_bytes` / MSS (`window_`, kept at the sender
//! as in ns-2), `timestamps` (`timestamps_`) and, for the receiver, `delayed_ack`. The
//! ns-2 defaults (`ns-default.tcl`) are therefore for the scenario layer to apply: MSS
//! 1000, no timestamps (40-byte headers), `windowInit_` 2, `window_` 20 packets, no delayed
//! ACK. SACK at the receiver follows the agent (on for sack/fack only), D-SACK and ECN are
//! off, and the RTO settings are the agent's own (`tick_ns`, `min_rto_ns`, …).
//!
//! Layout: `agent` (the `TcpAgent` base: output, windows, slow-down, timers, handshake glue),
//! `rtt` (the RTO estimator), one module per variant (`tahoe`, `reno` with NewReno, `sack1`,
//! `fack`, `vegas`), `scoreboard` (the two SACK scoreboards) and `sink` (ACK rewriting so the
//! Linux receiver looks like ns-2's `TCPSink`).
pub mod agent;
pub mod fack;
#[cfg(test)]
mod multiple_drops;
pub mod reno;
pub mod rtt;
pub mod sack1;
pub mod scoreboard;
pub mod sink;
pub mod tahoe;
pub mod vegas;

pub use agent::{Ns2Config, Ns2Sender};

use crate::cc::{CcInfo, ParamSpec, Params};
use crate::scenario::{AppConfig, ConfigError};
use std::collections::BTreeMap;

/// The ns-2 agent a flow runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ns2Kind {
    /// `Agent/TCP`: Tahoe (fast retransmit, then slow start from one packet, go-back-N).
    Tahoe,
    /// `Agent/TCP/Reno`: fast recovery with window inflation; a partial ACK ends it.
    Reno,
    /// `Agent/TCP/Newreno`: partial ACKs retransmit the next hole (RFC 6582).
    NewReno,
    /// `Agent/TCP/Sack1`: SACK scoreboard with the `pipe` estimate.
    Sack1,
    /// `Agent/TCP/Fack`: forward acknowledgement, `awnd` = snd.nxt − snd.fack + retran_data.
    Fack,
    /// `Agent/TCP/Vegas`: Brakmo's Vegas with ns-2's α = 1, β = 3, γ = 1.
    Vegas,
}

impl Ns2Kind {
    /// The ns-2 sink is `TCPSink/Sack1` for the SACK agents, a plain `TCPSink` otherwise.
    pub fn uses_sack(self) -> bool {
        matches!(self, Ns2Kind::Sack1 | Ns2Kind::Fack)
    }

    /// Scenario name of the agent (`tcp.stack = "ns2"` for `reno` and `vegas`).
    pub fn name(self) -> &'static str {
        match self {
            Ns2Kind::Tahoe => "tahoe",
            Ns2Kind::Reno => "reno",
            Ns2Kind::NewReno => "newreno",
            Ns2Kind::Sack1 => "sack",
            Ns2Kind::Fack => "fack",
            Ns2Kind::Vegas => "vegas",
        }
    }
}

/// Parameters shared by every ns-2 agent, then the agent's own (ns-2 names in the help).
macro_rules! ns2_params {
    ($($extra:expr),* $(,)?) => {
        &[
            ParamSpec {
                name: "max_burst",
                default: 0.0,
                unit: "pkts",
                help: "maxburst_: most packets sent back to back per send_much (0: no limit)",
            },
            ParamSpec {
                name: "numdupacks",
                default: 3.0,
                unit: "pkts",
                help: "numdupacks_: dupACKs that trigger a fast retransmit",
            },
            ParamSpec {
                name: "singledup",
                default: 1.0,
                unit: "bool",
                help: "singledup_: limited transmit, one new packet on dupACKs 1 and 2",
            },
            ParamSpec {
                name: "bug_fix",
                default: 1.0,
                unit: "bool",
                help: "bugFix_: no second fast retransmit before the ACK passes recover_",
            },
            ParamSpec {
                name: "tick_ns",
                default: 10_000_000.0,
                unit: "ns",
                help: "tcpTick_: granularity of the RTT measurement",
            },
            ParamSpec {
                name: "min_rto_ns",
                default: 200_000_000.0,
                unit: "ns",
                help: "minrto_: lower bound of the RTO",
            },
            ParamSpec {
                name: "max_rto_ns",
                default: 60_000_000_000.0,
                unit: "ns",
                help: "maxrto_: upper bound of the (backed-off) RTO",
            },
            ParamSpec {
                name: "init_rto_ns",
                default: 3_000_000_000.0,
                unit: "ns",
                help: "rtxcur_init_: RTO before the first RTT sample",
            },
            $($extra),*
        ]
    };
}

/// Catalogue entry of `tahoe`.
pub const TAHOE_INFO: CcInfo = CcInfo {
    name: "tahoe",
    summary: "ns-2 Agent/TCP: fast retransmit then cwnd = 1, slow start, go-back-N",
    feedback: "loss",
    reference: "ns-2 tcp/tcp.cc (Agent/TCP); Jacobson 1988; Fall & Floyd 1996",
    params: TAHOE_PARAMS,
    sack: Some(false),
    ecn: false,
};

/// Catalogue entry of `newreno` (ns-2's; Linux Reno without SACK is `reno` + `tcp.sack`
/// false).
pub const NEWRENO_INFO: CcInfo = CcInfo {
    name: "newreno",
    summary: "ns-2 Agent/TCP/Newreno: Reno whose partial ACKs retransmit the next hole",
    feedback: "loss",
    reference: "RFC 6582; ns-2 tcp/tcp-newreno.cc; Fall & Floyd 1996",
    params: NEWRENO_PARAMS,
    sack: Some(false),
    ecn: false,
};

/// Catalogue entry of `sack` (ns-2 Sack1).
pub const SACK_INFO: CcInfo = CcInfo {
    name: "sack",
    summary: "ns-2 Agent/TCP/Sack1: SACK scoreboard, send while pipe < cwnd in recovery",
    feedback: "loss",
    reference: "Fall & Floyd 1996 (CCR 26(3)); ns-2 tcp/tcp-sack1.cc",
    params: SACK_PARAMS,
    sack: Some(true),
    ecn: false,
};

/// Catalogue entry of `fack`.
pub const FACK_INFO: CcInfo = CcInfo {
    name: "fack",
    summary: "ns-2 Agent/TCP/Fack: forward ACK, send while snd.nxt-fack+retran_data < cwnd",
    feedback: "loss",
    reference: "Mathis & Mahdavi 1996 (SIGCOMM); ns-2 tcp/tcp-fack.cc",
    params: FACK_PARAMS,
    sack: Some(true),
    ecn: false,
};

/// Parameters of `tahoe`.
pub const TAHOE_PARAMS: &[ParamSpec] = ns2_params!();
/// Parameters of `reno` on the ns-2 stack.
pub const RENO_PARAMS: &[ParamSpec] = ns2_params!();
/// Parameters of `newreno`.
pub const NEWRENO_PARAMS: &[ParamSpec] = ns2_params!(
    ParamSpec {
        name: "partial_window_deflation",
        default: 1.0,
        unit: "bool",
        help: "partial_window_deflation_: deflate the window by the data a partial ACK covers",
    },
    ParamSpec {
        name: "newreno_changes1",
        default: 1.0,
        unit: "bool",
        help: "newreno_changes1_: restart the RTO only on the first partial ACK",
    },
);
/// Parameters of `sack`.
pub const SACK_PARAMS: &[ParamSpec] = ns2_params!(ParamSpec {
    name: "partial_ack",
    default: 0.0,
    unit: "bool",
    help: "partial_ack_: send two packets on a partial ACK (pipe +1 instead of −1)",
});
/// Parameters of `fack`.
pub const FACK_PARAMS: &[ParamSpec] = ns2_params!(
    ParamSpec {
        name: "rampdown",
        default: 0.0,
        unit: "bool",
        help: "rampdown_: rate-halving, window trimmed by half the data beyond fack",
    },
    ParamSpec {
        name: "ss_div4",
        default: 0.0,
        unit: "bool",
        help: "ss-div4_: a loss in slow start cuts cwnd to a quarter",
    },
);
/// Parameters of `vegas` on the ns-2 stack.
pub const VEGAS_PARAMS: &[ParamSpec] = ns2_params!(
    ParamSpec {
        name: "alpha",
        default: 1.0,
        unit: "pkts",
        help: "v_alpha_: grow while fewer than alpha packets are queued",
    },
    ParamSpec {
        name: "beta",
        default: 3.0,
        unit: "pkts",
        help: "v_beta_: shrink while more than beta packets are queued",
    },
    ParamSpec {
        name: "gamma",
        default: 1.0,
        unit: "pkts",
        help: "v_gamma_: leave slow start above gamma queued packets",
    },
);

impl Ns2Kind {
    /// The parameters the agent accepts.
    pub fn params(self) -> &'static [ParamSpec] {
        match self {
            Ns2Kind::Tahoe => TAHOE_PARAMS,
            Ns2Kind::Reno => RENO_PARAMS,
            Ns2Kind::NewReno => NEWRENO_PARAMS,
            Ns2Kind::Sack1 => SACK_PARAMS,
            Ns2Kind::Fack => FACK_PARAMS,
            Ns2Kind::Vegas => VEGAS_PARAMS,
        }
    }
}

/// TCP facts of the flow the agent needs (from the scenario's `tcp` table).
#[derive(Copy, Clone, Debug)]
pub struct FlowTcp {
    /// `packetSize_` (payload bytes per packet).
    pub mss: u32,
    /// `windowInit_` (packets).
    pub initial_window: u32,
    /// `window_` in bytes (the receiver window; ns-2 keeps it at the sender).
    pub rwnd_bytes: u64,
    /// `timestamps_`: RTT from echoed timestamps on every new ACK, 10-byte option.
    pub timestamps: bool,
    pub app: AppConfig,
    /// The data comes from a split-TCP PEP relay, handed over as it arrives (`supply`).
    pub relay: bool,
    /// The receiver is a PEP relay whose advertised window carries its backpressure: obey
    /// it (ns-2 sinks never shrink their window, so plain ns-2 agents ignore it).
    pub peer_window: bool,
}

/// Build the agent `kind` for a flow, checking `params` against the agent's list.
/// `boot_u01` is a uniform draw in [0, 1) for the phase of the agent's clock (`boot_time_`).
pub fn build(
    kind: Ns2Kind,
    flow: u32,
    params: &BTreeMap<String, f64>,
    tcp: &FlowTcp,
    boot_u01: f64,
) -> Result<Ns2Sender, ConfigError> {
    let p = Params::new(kind.name(), params, kind.params())?;
    let ns = |name: &str, lo: i64| -> Result<f64, ConfigError> {
        Ok(p.int(name, lo, 3_600_000_000_000)? as f64 * 1e-9)
    };
    let tick_s = ns("tick_ns", 1_000)?;
    let min_rto_s = ns("min_rto_ns", 0)?;
    let max_rto_s = ns("max_rto_ns", 1_000_000)?;
    let init_rto_s = ns("init_rto_ns", 1_000_000)?;
    let flag = |name: &str| -> Result<bool, ConfigError> {
        if kind.params().iter().any(|s| s.name == name) {
            p.flag(name)
        } else {
            Ok(false)
        }
    };
    let int = |name: &str, lo: i64, hi: i64, dflt: i64| -> Result<i64, ConfigError> {
        if kind.params().iter().any(|s| s.name == name) {
            p.int(name, lo, hi)
        } else {
            Ok(dflt)
        }
    };
    let cfg = Ns2Config {
        mss: tcp.mss,
        peer_window: tcp.peer_window,
        window_pkts: (tcp.rwnd_bytes / tcp.mss as u64).max(1) as f64,
        window_init: tcp.initial_window as f64,
        max_burst: p.int("max_burst", 0, 1_000_000)?,
        numdupacks: p.int("numdupacks", 1, 1_000)?,
        singledup: p.flag("singledup")?,
        bug_fix: p.flag("bug_fix")?,
        tick_s,
        min_rto_s,
        max_rto_s,
        init_rto_s,
        timestamps: tcp.timestamps,
        app: tcp.app,
        relay: tcp.relay,
        partial_window_deflation: flag("partial_window_deflation")?,
        newreno_changes1: flag("newreno_changes1")?,
        partial_ack: flag("partial_ack")?,
        rampdown: flag("rampdown")?,
        ss_div4: flag("ss_div4")?,
        v_alpha: int("alpha", 0, 1_000, 1)?,
        v_beta: int("beta", 0, 1_000, 3)?,
        v_gamma: int("gamma", 0, 1_000, 1)?,
    };
    if cfg.v_alpha > cfg.v_beta {
        return Err(ConfigError(format!(
            "cca_params.alpha: {} is invalid for vegas; allowed: alpha <= beta ({})",
            cfg.v_alpha, cfg.v_beta
        )));
    }
    Ok(Ns2Sender::new(flow, kind, cfg, boot_u01))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_rejects_a_parameter_of_another_agent() {
        let mut given = BTreeMap::new();
        given.insert("rampdown".to_string(), 1.0);
        let tcp = FlowTcp {
            mss: 1000,
            initial_window: 2,
            rwnd_bytes: 20_000,
            timestamps: false,
            app: AppConfig::Bulk,
            relay: false,
            peer_window: false,
        };
        let e = build(Ns2Kind::Sack1, 0, &given, &tcp, 0.5).err().unwrap();
        assert!(
            e.0.starts_with("cca_params.rampdown: unknown parameter for sack"),
            "{e}"
        );
        assert!(build(Ns2Kind::Fack, 0, &given, &tcp, 0.5).is_ok());
    }
}
