//! Scenario builders shared by the integration tests.
#![allow(dead_code)]
use tcplab_core::api::{self, RunResult};
use tcplab_core::scenario::*;
use tcplab_core::sim::Simulation;

/// A dumbbell with the given round-trip propagation delay (access links 1 Gbit/s, 0.1 ms
/// each way are part of it), bottleneck rate and forward PER.
pub struct Spec {
    pub rtt_ms: f64,
    pub rate_bps: u64,
    pub return_rate_bps: u64,
    pub per: f64,
    pub queue_pkts: u64,
    pub duration_s: u64,
    pub seed: u64,
    pub cca: &'static str,
    pub app: AppConfig,
    pub tcp: TcpConfig,
    pub flows: usize,
    pub ecn_k: Option<u64>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            rtt_ms: 50.0,
            rate_bps: 100_000_000,
            return_rate_bps: 100_000_000,
            per: 0.0,
            queue_pkts: 100,
            duration_s: 60,
            seed: 1,
            cca: "reno",
            app: AppConfig::Bulk,
            tcp: TcpConfig::default(),
            flows: 1,
            ecn_k: None,
        }
    }
}

pub const ACCESS_DELAY_NS: u64 = 100_000;

impl Spec {
    /// The GEO path of the studies: 4 Mbit/s each way, RTT 500.4 ms, a 2×BDP DropTail
    /// buffer (BDP = 4e6 · 0.5004 / 12000 = 166.8 packets → 334).
    pub fn geo(cca: &'static str) -> Spec {
        Spec {
            rtt_ms: 500.4,
            rate_bps: 4_000_000,
            return_rate_bps: 4_000_000,
            queue_pkts: 334,
            cca,
            ..Default::default()
        }
    }
}

impl Spec {
    pub fn build(&self) -> ScenarioConfig {
        // One-way bottleneck delay so that 2 × (bottleneck + 2 × access) = RTT.
        let one_way_ns = (self.rtt_ms * 1e6 / 2.0) as u64 - 2 * ACCESS_DELAY_NS;
        let dir = |rate, per| DirConfig {
            per,
            ecn_threshold_pkts: self.ecn_k,
            ..DirConfig::droptail(rate, one_way_ns, self.queue_pkts)
        };
        ScenarioConfig {
            cross: Vec::new(),
            name: "test".into(),
            seed: self.seed,
            duration_ns: self.duration_s * 1_000_000_000,
            interval_ns: 1_000_000_000,
            bottleneck: Some(BottleneckConfig {
                forward: dir(self.rate_bps, self.per),
                reverse: dir(self.return_rate_bps, 0.0),
                wifi: None,
            }),
            path: None,
            access: AccessConfig {
                rate_bps: 1_000_000_000,
                delay_ns: ACCESS_DELAY_NS,
                queue_pkts: None,
            },
            flows: (0..self.flows)
                .map(|_| FlowConfig {
                    cca: self.cca.into(),
                    cca_params: Default::default(),
                    start_ns: 0,
                    app: self.app,
                    tcp: self.tcp.clone(),
                    access: None,
                    pep: None,
                })
                .collect(),
        }
    }
}

/// Mathis et al. (1997): BW = (MSS/RTT)·C/√p with C = √(3/2), in bit/s.
pub fn mathis_bps(mss: f64, rtt_s: f64, p: f64) -> f64 {
    mss * 8.0 / rtt_s * (1.5f64).sqrt() / p.sqrt()
}

/// Padhye et al. (1998) full model (window limit ignored), in bit/s.
pub fn padhye_bps(mss: f64, rtt_s: f64, p: f64, t0_s: f64, b: f64) -> f64 {
    let denom = rtt_s * (2.0 * b * p / 3.0).sqrt()
        + t0_s * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    mss * 8.0 / denom
}

/// Run the dumbbell of `spec`.
pub fn run(spec: &Spec) -> RunResult {
    run_config(spec.build())
}

/// Run a scenario (it must be valid).
pub fn run_config(cfg: ScenarioConfig) -> RunResult {
    api::run(cfg).expect("valid scenario")
}

/// A bulk flow of `cca` starting at `start_ns`, Linux defaults but `ecn`.
pub fn bulk_flow(cca: &str, ecn: bool, start_ns: u64) -> FlowConfig {
    FlowConfig {
        cca: cca.into(),
        cca_params: Default::default(),
        start_ns,
        app: AppConfig::Bulk,
        tcp: TcpConfig {
            ecn,
            ..TcpConfig::default()
        },
        access: None,
        pep: None,
    }
}

/// Every packet created was delivered, dropped (for whatever reason) or is still on a link.
pub fn assert_conservation(sim: &Simulation) {
    let drops: u64 = sim
        .topo
        .links
        .iter()
        .map(|l| {
            let s = &l.stats;
            s.queue_drops + s.error_drops + s.outage_drops + s.aqm_drops
        })
        .sum();
    assert_eq!(
        sim.counters.created,
        sim.counters.delivered + drops + sim.packets_on_links()
    );
}

/// A trace of the bottleneck's captures (128-byte frames) into `dir`, with the raw event log
/// `dir/events.bin` if `events`.
pub fn trace_spec(dir: &std::path::Path, events: bool) -> tcplab_core::sim::trace::TraceSpec {
    tcplab_core::sim::trace::TraceSpec {
        pcap_dir: Some(dir.display().to_string()),
        links: vec![],
        flows: None,
        from_ns: 0,
        to_ns: None,
        snaplen_bytes: 128,
        events_path: events.then(|| dir.join("events.bin").display().to_string()),
        comment: "test".into(),
    }
}

/// Every file in `dir`, by name, with its bytes (a traced run's captures and event log), and
/// `dir` removed.
pub fn take_files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    std::fs::remove_dir_all(dir).unwrap();
    files
}
