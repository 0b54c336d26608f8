//! The normalized scenario the core runs (see `docs/interface.md`): serde types, tagged
//! enums where a value has variants, defaults where Linux has them.
//!
//! Python turns the user's TOML into this form (integer ns, bps, bytes). `validate` checks
//! it once, when a simulation is built from it; every problem becomes a one-line
//! `ConfigError` naming the field.
pub mod validate;

use crate::limits::{
    DEFAULT_CROSS_CCA, DEFAULT_CROSS_CONNECTIONS, DEFAULT_INTERVAL_NS, DEFAULT_PEP_BUFFER_BYTES,
    MTU_BYTES,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A one-line input error: `<field>: <problem>`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl ConfigError {
    pub fn new(field: &str, problem: impl fmt::Display) -> Self {
        ConfigError(format!("{field}: {problem}"))
    }
}

/// Queue discipline and its size limit.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// `"droptail"` | `"red"` | `"codel"`.
    #[serde(default = "default_queue_kind")]
    pub kind: String,
    #[serde(default)]
    pub limit_pkts: Option<u64>,
    #[serde(default)]
    pub limit_bytes: Option<u64>,
    /// RED parameters (only with `kind = "red"`; `None`: all defaults).
    #[serde(default)]
    pub red: Option<RedConfig>,
    /// CoDel parameters (only with `kind = "codel"`; `None`: all defaults).
    #[serde(default)]
    pub codel: Option<CodelConfig>,
}

fn default_queue_kind() -> String {
    "droptail".into()
}

/// RED (Floyd & Jacobson 1993) parameters; the average queue is in packets.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RedConfig {
    /// Average queue below which nothing is marked.
    pub min_th_pkts: f64,
    /// Average queue at which the marking probability reaches `max_p`.
    pub max_th_pkts: f64,
    /// Marking probability at `max_th_pkts`, in (0, 1].
    pub max_p: f64,
    /// EWMA weight of the average queue, in (0, 1].
    pub w_q: f64,
    /// Gentle RED: the probability rises from `max_p` to 1 between `max_th` and `2·max_th`.
    pub gentle: bool,
    /// CE-mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
}

impl Default for RedConfig {
    fn default() -> Self {
        RedConfig {
            min_th_pkts: 5.0,
            max_th_pkts: 15.0,
            max_p: 0.1,
            w_q: 0.002,
            gentle: true,
            ecn: true,
        }
    }
}

/// CoDel (RFC 8289) parameters.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CodelConfig {
    /// Acceptable standing queue delay.
    pub target_ns: u64,
    /// Window over which the queue delay must stay above target before dropping starts.
    pub interval_ns: u64,
    /// CE-mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            ecn: true,
        }
    }
}

/// A loss model that replaces the Bernoulli `per`/`ber`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossConfig {
    /// Two-state Markov chain stepped per packet (Gilbert 1960, Elliott 1963).
    GilbertElliott {
        /// Probability of moving good → bad at a packet.
        p_gb: f64,
        /// Probability of moving bad → good at a packet (mean burst length 1/p_bg).
        p_bg: f64,
        /// Loss probability in the good state.
        #[serde(default)]
        loss_good: f64,
        /// Loss probability in the bad state.
        #[serde(default = "default_loss_bad")]
        loss_bad: f64,
    },
}

fn default_loss_bad() -> f64 {
    1.0
}

/// A step of a rate trace: from `t_ns` on, the link runs at `rate_bps` with `delay_ns`
/// (`None`: keep the previous delay). JSON: `[t_ns, rate_bps, delay_ns | null]`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(from = "(u64, u64, Option<u64>)")]
pub struct RatePoint {
    pub t_ns: u64,
    pub rate_bps: u64,
    pub delay_ns: Option<u64>,
}

impl From<(u64, u64, Option<u64>)> for RatePoint {
    fn from((t_ns, rate_bps, delay_ns): (u64, u64, Option<u64>)) -> Self {
        RatePoint {
            t_ns,
            rate_bps,
            delay_ns,
        }
    }
}

/// Mahimahi-style delivery opportunities, repeating every `period_ns`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeliveryTraceConfig {
    /// Instants within a period (sorted, each in `0 ..= period_ns`).
    pub opportunities_ns: Vec<u64>,
    pub period_ns: u64,
    /// Bytes the link can deliver at each opportunity.
    #[serde(default = "default_bytes_per_opportunity")]
    pub bytes_per_opportunity: u32,
}

fn default_bytes_per_opportunity() -> u32 {
    MTU_BYTES as u32
}

/// A token-bucket policer in front of a link's queue (`net::policer`): packets beyond
/// `rate_bps` plus a burst of `burst_bytes` are dropped on arrival.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicerConfig {
    pub rate_bps: u64,
    pub burst_bytes: u64,
}

/// One direction of a link.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DirConfig {
    pub rate_bps: u64,
    pub delay_ns: u64,
    #[serde(default)]
    pub per: f64,
    #[serde(default)]
    pub ber: f64,
    pub queue: QueueConfig,
    /// ECN marking threshold K: CE-mark ECN-capable packets arriving to a queue of ≥ K
    /// packets (DCTCP-style instantaneous marking). `None`: no marking.
    #[serde(default)]
    pub ecn_threshold_pkts: Option<u64>,
    /// Loss model replacing `per`/`ber`; `None`: Bernoulli `per`/`ber`.
    #[serde(default)]
    pub loss: Option<LossConfig>,
    /// `[start_ns, end_ns)` intervals during which the link is down (sorted, disjoint).
    #[serde(default)]
    pub outages: Vec<(u64, u64)>,
    /// Piecewise-constant rate and delay (sorted, first at 0); replaces `rate_bps`/`delay_ns`.
    #[serde(default)]
    pub rate_trace: Option<Vec<RatePoint>>,
    /// Delivery opportunities (Mahimahi); `rate_bps` is then ignored.
    #[serde(default)]
    pub delivery_trace: Option<DeliveryTraceConfig>,
    /// Token-bucket policer checked before the queue; `None`: no policing.
    #[serde(default)]
    pub policer: Option<PolicerConfig>,
}

impl DirConfig {
    /// A direction of `rate_bps` and `delay_ns` with a DropTail queue of `limit_pkts` and
    /// nothing else (no loss, marking, outage or trace).
    pub fn droptail(rate_bps: u64, delay_ns: u64, limit_pkts: u64) -> DirConfig {
        DirConfig {
            rate_bps,
            delay_ns,
            per: 0.0,
            ber: 0.0,
            queue: QueueConfig {
                kind: "droptail".into(),
                limit_pkts: Some(limit_pkts),
                limit_bytes: None,
                red: None,
                codel: None,
            },
            ecn_threshold_pkts: None,
            loss: None,
            outages: Vec::new(),
            rate_trace: None,
            delivery_trace: None,
            policer: None,
        }
    }
}

/// The bottleneck link: forward (data) and reverse (ACK) directions.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BottleneckConfig {
    pub forward: DirConfig,
    pub reverse: DirConfig,
    /// A Wi-Fi hop instead of a wire (`net::wifi`): the forward direction is the access
    /// point's downlink, the reverse the stations' uplink, sharing one medium.
    #[serde(default)]
    pub wifi: Option<WifiConfig>,
}

/// A Wi-Fi link (`net::wifi`): the access point on the server side, one station per flow
/// on the client side, and optional background stations contending for the same channel.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WifiConfig {
    /// `"b" | "a" | "g" | "n" | "ac"`.
    pub standard: String,
    /// `"2.4" | "5"` (GHz).
    pub band: String,
    #[serde(default = "default_width")]
    pub width_mhz: u32,
    #[serde(default = "default_streams")]
    pub streams: u32,
    #[serde(default)]
    pub short_gi: bool,
    /// Transmission attempts of a frame before it is discarded (dot11ShortRetryLimit).
    #[serde(default = "default_retry_limit")]
    pub retry_limit: u32,
    /// Most MPDUs per A-MPDU (n/ac; `None`: the BlockAck window, 64); 1 turns
    /// aggregation off.
    #[serde(default)]
    pub max_ampdu_mpdus: Option<u32>,
    /// Fixed rate index (MCS) for every transmitter instead of the SNR rate rule.
    #[serde(default)]
    pub mcs: Option<u32>,
    /// Frame errors from the SNR; false: only collisions lose frames.
    #[serde(default = "default_true")]
    pub frame_errors: bool,
    /// Receiver noise figure (dB).
    #[serde(default = "default_noise_figure")]
    pub noise_figure_db: f64,
    pub ap_tx_power_dbm: f64,
    /// Default transmit power and distance to the AP of the flows' stations.
    pub tx_power_dbm: f64,
    pub distance_m: f64,
    /// Per-flow overrides (entry i: flow i's station).
    #[serde(default)]
    pub stations: Vec<StationConfig>,
    /// Stations that only take airtime (neighbours, other clients).
    #[serde(default)]
    pub background: Vec<BackgroundConfig>,
    /// How the access point orders its frames for the stations.
    #[serde(default)]
    pub ap_queue: ApQueue,
    /// The flows' sender is a station on this medium too (one server on Wi-Fi): its packets
    /// take two exchanges, up to the AP and down to the receiver.
    #[serde(default)]
    pub server_on_wifi: bool,
}

/// The access point's service order among its stations' frames.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ApQueue {
    /// Per-station queues served round-robin (mac80211's per-station TXQs): each backlogged
    /// station gets the same number of transmission opportunities.
    #[default]
    PerStation,
    /// One FIFO in arrival order (a qdisc in front of a driver without per-station
    /// queueing): the next A-MPDU goes to the station whose frame waited longest, so a
    /// flow's share follows its share of the queue.
    Fifo,
    /// Per-station queues in turn, each managed by CoDel as Linux's mac80211 does with its
    /// FQ-CoDel intermediate queues (target 20 ms, interval 100 ms, ECN-capable packets
    /// marked instead of dropped); one flow per station, so the flow queueing within a
    /// station's queue has one flow to serve.
    FqCodel,
}

/// A flow's station, where it differs from the link's defaults.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct StationConfig {
    #[serde(default)]
    pub tx_power_dbm: Option<f64>,
    #[serde(default)]
    pub distance_m: Option<f64>,
}

/// `count` background stations, each offering `load_bps` of `frame_bytes` frames (Poisson
/// arrivals) to its own receiver at `distance_m`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BackgroundConfig {
    #[serde(default = "default_count")]
    pub count: u32,
    pub load_bps: u64,
    #[serde(default = "default_frame_bytes")]
    pub frame_bytes: u32,
    pub tx_power_dbm: f64,
    pub distance_m: f64,
}

fn default_width() -> u32 {
    20
}
fn default_streams() -> u32 {
    1
}
fn default_retry_limit() -> u32 {
    7
}
fn default_true() -> bool {
    true
}
fn default_noise_figure() -> f64 {
    7.0
}
fn default_count() -> u32 {
    1
}
fn default_frame_bytes() -> u32 {
    MTU_BYTES as u32
}

/// An access link (same in both directions, no loss, effectively unlimited queue).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccessConfig {
    pub rate_bps: u64,
    pub delay_ns: u64,
    /// DropTail limit of every access interface, host side included (ns-2 puts a queue on
    /// every link). `None`: routers keep 1000 packets and hosts never drop their own
    /// packets (Linux TCP Small Queues).
    #[serde(default)]
    pub queue_pkts: Option<u64>,
}

/// What the application does.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum AppConfig {
    /// Send for the whole run (iperf-like).
    Bulk,
    /// Download `size_bytes` (curl-like); completion time is reported.
    File { size_bytes: u64 },
    /// Constant-bit-rate UDP (real-time traffic): `packet_bytes` of payload at `rate_bps`.
    Cbr { rate_bps: u64, packet_bytes: u32 },
}

/// TCP options of one flow (Linux-like defaults).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    pub mss_bytes: u32,
    pub sack: bool,
    pub dsack: bool,
    pub timestamps: bool,
    pub initial_window_pkts: u32,
    pub rwnd_bytes: u64,
    pub window_scaling: bool,
    pub delayed_ack: bool,
    pub frto: bool,
    pub rack: bool,
    pub tlp: bool,
    pub pacing: bool,
    /// TCP segmentation offload: a paced sender emits bursts of `tcp_tso_autosize`
    /// segments (Linux with TSO/GSO, the default); false: one segment per pacing slot
    /// (`ethtool -K dev tso off gso off`).
    pub tso: bool,
    pub slow_start_after_idle: bool,
    /// Negotiate ECN (RFC 3168); DCTCP turns it on itself.
    pub ecn: bool,
    /// Proportional Rate Reduction during recovery (Linux); false: RFC 6675 halving.
    pub prr: bool,
    /// Forward-acknowledgement loss marking (Linux < 4.15 `tcp_fack`).
    pub fack: bool,
    /// Which TCP implementation the flow models.
    pub stack: Stack,
    /// Random per-connection timestamp offsets (Linux ≥ 4.10 default, `tcp_timestamps = 1`).
    pub random_ts_offset: bool,
}

/// TCP implementation profile.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Stack {
    /// Linux 4.x–6.x behaviour (default).
    #[default]
    Linux,
    /// ns-2's TCP agents (Tahoe/Reno/NewReno/Sack1/FACK/Vegas semantics, ns-2 timers).
    Ns2,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1448,
            sack: true,
            dsack: true,
            timestamps: true,
            initial_window_pkts: 10,
            rwnd_bytes: crate::tcp::rcvbuf::TCP_RMEM_MAX_BYTES,
            window_scaling: true,
            delayed_ack: true,
            frto: true,
            rack: true,
            tlp: true,
            pacing: false,
            tso: true,
            slow_start_after_idle: true,
            ecn: false,
            prr: true,
            fack: false,
            stack: Stack::Linux,
            random_ts_offset: true,
        }
    }
}

/// One TCP flow.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    pub cca: String,
    #[serde(default)]
    pub cca_params: BTreeMap<String, f64>,
    #[serde(default)]
    pub start_ns: u64,
    pub app: AppConfig,
    #[serde(default)]
    pub tcp: TcpConfig,
    #[serde(default)]
    pub access: Option<AccessConfig>,
    /// The TCP a split-TCP PEP uses on the satellite leg (when the path has PEPs).
    #[serde(default)]
    pub pep: Option<PepConfig>,
}

/// A PEP's TCP on the satellite leg and its relay buffer.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PepConfig {
    pub cca: String,
    #[serde(default)]
    pub cca_params: BTreeMap<String, f64>,
    #[serde(default)]
    pub tcp: TcpConfig,
    #[serde(default = "default_pep_buffer")]
    pub buffer_bytes: u64,
}

fn default_pep_buffer() -> u64 {
    DEFAULT_PEP_BUFFER_BYTES
}

/// Where split-TCP PEPs sit on the path.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum PepMode {
    /// End to end: no PEP.
    #[default]
    None,
    /// One PEP at the satellite gateway (the node before the satellite segment).
    Gateway,
    /// PEP1 at the gateway and PEP2 at the satellite terminal (the node after it).
    Distributed,
}

/// One segment of a path: a link between two nodes.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SegmentConfig {
    pub name: String,
    pub forward: DirConfig,
    pub reverse: DirConfig,
    /// A Wi-Fi hop (see `BottleneckConfig::wifi`).
    #[serde(default)]
    pub wifi: Option<WifiConfig>,
}

/// A chain of segments from the server side to the client side.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PathConfig {
    #[serde(default)]
    pub pep: PepMode,
    pub segments: Vec<SegmentConfig>,
}

/// A positive random variable by its mean (bytes for sizes, ns for periods): JSON
/// `{"dist": "pareto", "mean": 50000, "shape": 1.5}`.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub enum DistConfig {
    /// Always `mean`.
    Constant { mean: f64 },
    /// Exponential.
    Exponential { mean: f64 },
    /// Pareto of `shape` a > 1 (heavy-tailed; infinite variance for a ≤ 2).
    Pareto { mean: f64, shape: f64 },
    /// Lognormal whose logarithm has standard deviation `sigma`.
    Lognormal { mean: f64, sigma: f64 },
}

/// A cross-traffic source on one link direction (`app::cross`): open-loop load that shares
/// the link with the flows under test and is reported apart from them.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CrossConfig {
    /// Poisson arrivals of bursts ("flows") of `size` bytes, each sent at `peak_bps`, at
    /// an offered load of `offered_bps`.
    Flows {
        /// The path segment it crosses (`None`: the bottleneck segment).
        #[serde(default)]
        segment: Option<String>,
        /// On the segment's reverse direction instead of its forward one.
        #[serde(default)]
        reverse: bool,
        offered_bps: u64,
        peak_bps: u64,
        /// Wire bytes of a full packet.
        packet_bytes: u32,
        size: DistConfig,
    },
    /// One on/off source sending at `peak_bps` while on (ns durations).
    OnOff {
        #[serde(default)]
        segment: Option<String>,
        #[serde(default)]
        reverse: bool,
        peak_bps: u64,
        packet_bytes: u32,
        on: DistConfig,
        off: DistConfig,
    },
    /// Poisson arrivals of TCP connections (`app::cross_tcp`), each downloading `size`
    /// bytes with congestion control `cca` and the core's Linux defaults, at an offered load
    /// of `offered_bps`: closed-loop load that backs off on loss.
    TcpFlows {
        #[serde(default)]
        segment: Option<String>,
        #[serde(default)]
        reverse: bool,
        offered_bps: u64,
        size: DistConfig,
        #[serde(default = "default_cross_cca")]
        cca: String,
        #[serde(default)]
        cca_params: BTreeMap<String, f64>,
        /// Connections open at once; an arrival beyond them is refused (and counted).
        #[serde(default = "default_cross_connections")]
        max_connections: u32,
        /// Base round-trip time of the connections (`None`: the flows' default base RTT).
        #[serde(default)]
        rtt_ns: Option<u64>,
        /// The connections' TCP options (`None`: the core's Linux defaults).
        #[serde(default)]
        tcp: Option<TcpConfig>,
    },
}

fn default_cross_cca() -> String {
    DEFAULT_CROSS_CCA.to_string()
}

fn default_cross_connections() -> u32 {
    DEFAULT_CROSS_CONNECTIONS
}

impl CrossConfig {
    /// The segment named (`None`: the bottleneck) and whether it is the reverse direction.
    pub fn place(&self) -> (Option<&str>, bool) {
        match self {
            CrossConfig::Flows {
                segment, reverse, ..
            }
            | CrossConfig::OnOff {
                segment, reverse, ..
            }
            | CrossConfig::TcpFlows {
                segment, reverse, ..
            } => (segment.as_deref(), *reverse),
        }
    }

    /// Index in `segs` of the segment it crosses: the one named, else the bottleneck.
    pub fn segment_index(&self, segs: &[SegmentConfig]) -> usize {
        self.place()
            .0
            .and_then(|n| segs.iter().position(|s| s.name == n))
            .unwrap_or_else(|| bottleneck_segment(segs))
    }

    /// `"flows"`, `"on_off"` or `"tcp_flows"`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            CrossConfig::Flows { .. } => "flows",
            CrossConfig::OnOff { .. } => "on_off",
            CrossConfig::TcpFlows { .. } => "tcp_flows",
        }
    }
}

/// A complete normalized scenario.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScenarioConfig {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub seed: u64,
    pub duration_ns: u64,
    #[serde(default = "default_interval")]
    pub interval_ns: u64,
    /// The dumbbell's bottleneck (a one-segment path named `bottleneck`), or …
    #[serde(default)]
    pub bottleneck: Option<BottleneckConfig>,
    /// … a chain of segments, possibly with PEPs.
    #[serde(default)]
    pub path: Option<PathConfig>,
    pub access: AccessConfig,
    pub flows: Vec<FlowConfig>,
    /// Cross traffic (none by default).
    #[serde(default)]
    pub cross: Vec<CrossConfig>,
}

fn default_interval() -> u64 {
    DEFAULT_INTERVAL_NS
}

/// Index of the satellite segment: the one named `satellite`, else the largest forward delay.
pub fn satellite_segment(segments: &[SegmentConfig]) -> usize {
    if let Some(i) = segments.iter().position(|s| s.name == "satellite") {
        return i;
    }
    let mut best = 0;
    for (i, s) in segments.iter().enumerate() {
        if s.forward.delay_ns > segments[best].forward.delay_ns {
            best = i;
        }
    }
    best
}

/// Index of the bottleneck segment: the lowest forward rate, the first of equals.
pub fn bottleneck_segment(segments: &[SegmentConfig]) -> usize {
    (0..segments.len())
        .min_by_key(|&s| (segments[s].forward.rate_bps, s))
        .unwrap_or(0)
}

impl ScenarioConfig {
    /// Round-trip propagation delay of a flow with access links of `access_delay_ns`: every
    /// segment's forward and reverse delay, plus the access link twice in each direction
    /// (sender side and receiver side). No serialization, no queueing.
    pub fn base_rtt_ns(&self, access_delay_ns: u64) -> u64 {
        let (segs, _) = self.segments();
        segs.iter()
            .fold(access_delay_ns.saturating_mul(4), |total, s| {
                total
                    .saturating_add(s.forward.delay_ns)
                    .saturating_add(s.reverse.delay_ns)
            })
    }

    /// Base RTT of TCP cross traffic `c`: its `rtt_ns`, else the flows' default base RTT
    /// (`None` for open-loop kinds).
    pub fn cross_rtt_ns(&self, c: &CrossConfig) -> Option<u64> {
        match c {
            CrossConfig::TcpFlows { rtt_ns, .. } => {
                Some(rtt_ns.unwrap_or_else(|| self.base_rtt_ns(self.access.delay_ns)))
            }
            _ => None,
        }
    }

    /// The path as segments (a dumbbell is the one segment `bottleneck`) and its PEP mode.
    pub fn segments(&self) -> (Vec<SegmentConfig>, PepMode) {
        match (&self.path, &self.bottleneck) {
            (Some(p), _) => (p.segments.clone(), p.pep),
            (None, Some(b)) => (
                vec![SegmentConfig {
                    name: "bottleneck".into(),
                    forward: b.forward.clone(),
                    reverse: b.reverse.clone(),
                    wifi: b.wifi.clone(),
                }],
                PepMode::None,
            ),
            (None, None) => (Vec::new(), PepMode::None),
        }
    }

    /// Parse a normalized scenario (unknown keys and wrong types are errors). Its ranges
    /// are checked once, when a simulation is built from it (`validate`).
    pub fn from_json(text: &str) -> Result<ScenarioConfig, ConfigError> {
        serde_json::from_str(text).map_err(|e| ConfigError(format!("scenario: {e}")))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal valid scenario (the validation tests' and the run control's too).
    pub(crate) fn base() -> String {
        r#"{"duration_ns": 1000000000,
            "bottleneck": {
              "forward": {"rate_bps": 4000000, "delay_ns": 1000, "queue": {"limit_pkts": 10}},
              "reverse": {"rate_bps": 4000000, "delay_ns": 1000, "queue": {"limit_pkts": 10}}},
            "access": {"rate_bps": 1000000000, "delay_ns": 100000},
            "flows": [{"cca": "reno", "app": {"kind": "bulk"}}]}"#
            .to_string()
    }

    #[test]
    fn minimal_scenario_parses_with_linux_defaults() {
        let c = ScenarioConfig::from_json(&base()).unwrap();
        assert_eq!(c.flows[0].tcp.mss_bytes, 1448);
        assert_eq!(c.flows[0].tcp.initial_window_pkts, 10);
        assert_eq!(c.interval_ns, 1_000_000_000);
    }

    #[test]
    fn unknown_key_is_rejected() {
        let s = base()
            .replace(r#""seed""#, r#""sed""#)
            .replace(r#"{"duration_ns""#, r#"{"bogus": 1, "duration_ns""#);
        let e = ScenarioConfig::from_json(&s).unwrap_err();
        assert!(e.0.contains("bogus"), "{e}");
    }
}
