//! The normalized scenario the core runs (see `docs/interface.md`).
//!
//! Python turns the user's TOML into this form (integer ns, bps, bytes). The core checks it
//! again, because it is also reachable from the `tcplab-sim` binary and must never panic on
//! input: every problem becomes a one-line `ConfigError` naming the field.
use serde::Deserialize;
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
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
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
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
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
    1500
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
}

/// The bottleneck link: forward (data) and reverse (ACK) directions.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BottleneckConfig {
    pub forward: DirConfig,
    pub reverse: DirConfig,
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
#[derive(Debug, Clone, Deserialize, PartialEq)]
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
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
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
            rwnd_bytes: 6 * 1024 * 1024,
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
    4 * 1024 * 1024
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
}

/// A chain of segments from the server side to the client side.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PathConfig {
    #[serde(default)]
    pub pep: PepMode,
    pub segments: Vec<SegmentConfig>,
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
}

fn default_interval() -> u64 {
    1_000_000_000
}

/// Longest run accepted: 30 simulated days (time is u64 ns, so this is far from overflow).
const MAX_DURATION_NS: u64 = 30 * 86_400 * 1_000_000_000;
const MAX_RATE_BPS: u64 = 10_000_000_000_000; // 10 Tbit/s
const MAX_DELAY_NS: u64 = 3_600 * 1_000_000_000;

fn check_dir(path: &str, d: &DirConfig) -> Result<(), ConfigError> {
    if d.rate_bps == 0 || d.rate_bps > MAX_RATE_BPS {
        return Err(ConfigError::new(
            &format!("{path}.rate_bps"),
            format_args!(
                "{} is out of range; allowed: 1 ..= {MAX_RATE_BPS}",
                d.rate_bps
            ),
        ));
    }
    if d.delay_ns > MAX_DELAY_NS {
        return Err(ConfigError::new(
            &format!("{path}.delay_ns"),
            format_args!(
                "{} is out of range; allowed: 0 ..= {MAX_DELAY_NS}",
                d.delay_ns
            ),
        ));
    }
    for (name, v) in [("per", d.per), ("ber", d.ber)] {
        if !(0.0..1.0).contains(&v) {
            return Err(ConfigError::new(
                &format!("{path}.{name}"),
                format_args!("{v} must be in [0, 1)"),
            ));
        }
    }
    let q = &d.queue;
    if !["droptail", "red", "codel"].contains(&q.kind.as_str()) {
        return Err(ConfigError::new(
            &format!("{path}.queue.kind"),
            format_args!(
                "unknown queue discipline {:?}; allowed: droptail, red, codel",
                q.kind
            ),
        ));
    }
    match (q.limit_pkts, q.limit_bytes) {
        (Some(p), None) if p >= 1 => {}
        (None, Some(b)) if b >= 1600 => {}
        _ => {
            return Err(ConfigError::new(
                &format!("{path}.queue"),
                "give exactly one of limit_pkts (>= 1) or limit_bytes (>= 1600)",
            ))
        }
    }
    if q.red.is_some() && q.kind != "red" {
        return Err(ConfigError::new(
            &format!("{path}.queue.red"),
            format_args!("only allowed with kind \"red\" (kind is {:?})", q.kind),
        ));
    }
    if q.codel.is_some() && q.kind != "codel" {
        return Err(ConfigError::new(
            &format!("{path}.queue.codel"),
            format_args!("only allowed with kind \"codel\" (kind is {:?})", q.kind),
        ));
    }
    if let Some(r) = &q.red {
        check_red(&format!("{path}.queue.red"), r)?;
    }
    if let Some(c) = &q.codel {
        for (name, v) in [("target_ns", c.target_ns), ("interval_ns", c.interval_ns)] {
            if v == 0 || v > MAX_DELAY_NS {
                return Err(ConfigError::new(
                    &format!("{path}.queue.codel.{name}"),
                    format_args!("{v} is out of range; allowed: 1 ..= {MAX_DELAY_NS}"),
                ));
            }
        }
    }
    if let Some(LossConfig::GilbertElliott {
        p_gb,
        p_bg,
        loss_good,
        loss_bad,
    }) = d.loss
    {
        for (name, v) in [
            ("p_gb", p_gb),
            ("p_bg", p_bg),
            ("loss_good", loss_good),
            ("loss_bad", loss_bad),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(ConfigError::new(
                    &format!("{path}.loss.{name}"),
                    format_args!("{v} must be in [0, 1]"),
                ));
            }
        }
    }
    check_outages(path, &d.outages)?;
    if d.rate_trace.is_some() && d.delivery_trace.is_some() {
        return Err(ConfigError::new(
            path,
            "give at most one of rate_trace and delivery_trace",
        ));
    }
    if let Some(t) = &d.rate_trace {
        check_rate_trace(&format!("{path}.rate_trace"), t)?;
    }
    if let Some(t) = &d.delivery_trace {
        check_delivery_trace(&format!("{path}.delivery_trace"), t)?;
    }
    Ok(())
}

/// Longest accepted trace or outage list (entries).
const MAX_TRACE_LEN: usize = 10_000_000;

fn check_red(path: &str, r: &RedConfig) -> Result<(), ConfigError> {
    if !(r.min_th_pkts.is_finite() && r.min_th_pkts >= 0.0) {
        return Err(ConfigError::new(
            &format!("{path}.min_th_pkts"),
            format_args!("{} must be a finite number >= 0", r.min_th_pkts),
        ));
    }
    if !(r.max_th_pkts.is_finite() && r.max_th_pkts > r.min_th_pkts) {
        return Err(ConfigError::new(
            &format!("{path}.max_th_pkts"),
            format_args!(
                "{} must be a finite number > min_th_pkts ({})",
                r.max_th_pkts, r.min_th_pkts
            ),
        ));
    }
    for (name, v) in [("max_p", r.max_p), ("w_q", r.w_q)] {
        if !(v > 0.0 && v <= 1.0) {
            return Err(ConfigError::new(
                &format!("{path}.{name}"),
                format_args!("{v} must be in (0, 1]"),
            ));
        }
    }
    Ok(())
}

fn check_outages(path: &str, outages: &[(u64, u64)]) -> Result<(), ConfigError> {
    if outages.len() > MAX_TRACE_LEN {
        return Err(ConfigError::new(
            &format!("{path}.outages"),
            format_args!("more than {MAX_TRACE_LEN} intervals"),
        ));
    }
    for (i, &(start, end)) in outages.iter().enumerate() {
        let field = format!("{path}.outages[{i}]");
        if end < start {
            return Err(ConfigError::new(
                &field,
                format_args!("end before start ({end} < {start})"),
            ));
        }
        if end == start {
            return Err(ConfigError::new(
                &field,
                format_args!("empty interval (start = end = {start})"),
            ));
        }
        if i > 0 && start < outages[i - 1].1 {
            return Err(ConfigError::new(
                &field,
                format_args!(
                    "starts at {start}, before the end of outages[{}] ({}); intervals must be sorted and disjoint",
                    i - 1,
                    outages[i - 1].1
                ),
            ));
        }
    }
    Ok(())
}

fn check_rate_trace(path: &str, t: &[RatePoint]) -> Result<(), ConfigError> {
    if t.is_empty() || t.len() > MAX_TRACE_LEN {
        return Err(ConfigError::new(
            path,
            format_args!("needs 1 ..= {MAX_TRACE_LEN} points"),
        ));
    }
    for (i, p) in t.iter().enumerate() {
        if i == 0 && p.t_ns != 0 {
            return Err(ConfigError::new(
                &format!("{path}[0]"),
                format_args!("the first point must be at t_ns = 0 (got {})", p.t_ns),
            ));
        }
        if i > 0 && p.t_ns <= t[i - 1].t_ns {
            return Err(ConfigError::new(
                &format!("{path}[{i}]"),
                format_args!(
                    "t_ns {} is not after the previous point's {}; points must be sorted",
                    p.t_ns,
                    t[i - 1].t_ns
                ),
            ));
        }
        if p.rate_bps == 0 || p.rate_bps > MAX_RATE_BPS {
            return Err(ConfigError::new(
                &format!("{path}[{i}]"),
                format_args!(
                    "rate_bps {} is out of range; allowed: 1 ..= {MAX_RATE_BPS}",
                    p.rate_bps
                ),
            ));
        }
        if p.delay_ns.is_some_and(|d| d > MAX_DELAY_NS) {
            return Err(ConfigError::new(
                &format!("{path}[{i}]"),
                format_args!(
                    "delay_ns {} is out of range; allowed: 0 ..= {MAX_DELAY_NS}",
                    p.delay_ns.unwrap_or_default()
                ),
            ));
        }
    }
    Ok(())
}

fn check_delivery_trace(path: &str, t: &DeliveryTraceConfig) -> Result<(), ConfigError> {
    if t.period_ns == 0 || t.period_ns > MAX_DURATION_NS {
        return Err(ConfigError::new(
            &format!("{path}.period_ns"),
            format_args!(
                "{} is out of range; allowed: 1 ..= {MAX_DURATION_NS}",
                t.period_ns
            ),
        ));
    }
    if t.bytes_per_opportunity == 0 {
        return Err(ConfigError::new(
            &format!("{path}.bytes_per_opportunity"),
            "must be at least 1",
        ));
    }
    let o = &t.opportunities_ns;
    if o.is_empty() || o.len() > MAX_TRACE_LEN {
        return Err(ConfigError::new(
            &format!("{path}.opportunities_ns"),
            format_args!("needs 1 ..= {MAX_TRACE_LEN} instants"),
        ));
    }
    for (i, &x) in o.iter().enumerate() {
        if x > t.period_ns {
            return Err(ConfigError::new(
                &format!("{path}.opportunities_ns[{i}]"),
                format_args!("{x} is after period_ns ({})", t.period_ns),
            ));
        }
        if i > 0 && x < o[i - 1] {
            return Err(ConfigError::new(
                &format!("{path}.opportunities_ns[{i}]"),
                format_args!(
                    "{x} is before the previous instant {}; instants must be sorted",
                    o[i - 1]
                ),
            ));
        }
    }
    Ok(())
}

fn check_access(path: &str, a: &AccessConfig) -> Result<(), ConfigError> {
    if a.rate_bps == 0 || a.rate_bps > MAX_RATE_BPS {
        return Err(ConfigError::new(
            &format!("{path}.rate_bps"),
            format_args!(
                "{} is out of range; allowed: 1 ..= {MAX_RATE_BPS}",
                a.rate_bps
            ),
        ));
    }
    if a.delay_ns > MAX_DELAY_NS {
        return Err(ConfigError::new(
            &format!("{path}.delay_ns"),
            format_args!(
                "{} is out of range; allowed: 0 ..= {MAX_DELAY_NS}",
                a.delay_ns
            ),
        ));
    }
    Ok(())
}

fn check_tcp(path: &str, t: &TcpConfig) -> Result<(), ConfigError> {
    if !(64..=65_495).contains(&t.mss_bytes) {
        return Err(ConfigError::new(
            &format!("{path}.mss_bytes"),
            format_args!("{} is out of range; allowed: 64 ..= 65495", t.mss_bytes),
        ));
    }
    if !(1..=100_000).contains(&t.initial_window_pkts) {
        return Err(ConfigError::new(
            &format!("{path}.initial_window_pkts"),
            format_args!(
                "{} is out of range; allowed: 1 ..= 100000",
                t.initial_window_pkts
            ),
        ));
    }
    if t.rwnd_bytes < t.mss_bytes as u64 || t.rwnd_bytes > (1 << 30) {
        return Err(ConfigError::new(
            &format!("{path}.rwnd_bytes"),
            format_args!("{} is out of range; allowed: mss ..= 1 GiB", t.rwnd_bytes),
        ));
    }
    Ok(())
}

/// Check a path: segment names, link directions, and room for the PEPs.
fn check_path(p: &PathConfig) -> Result<(), ConfigError> {
    if p.segments.is_empty() || p.segments.len() > 64 {
        return Err(ConfigError::new("path.segments", "give 1 ..= 64 segments"));
    }
    for (i, s) in p.segments.iter().enumerate() {
        if s.name.is_empty() || p.segments[..i].iter().any(|o| o.name == s.name) {
            return Err(ConfigError::new(
                &format!("path.segments[{i}].name"),
                format_args!("{:?}: segment names must be non-empty and unique", s.name),
            ));
        }
        check_dir(&format!("path.segments[{i}].forward"), &s.forward)?;
        check_dir(&format!("path.segments[{i}].reverse"), &s.reverse)?;
    }
    let sat = satellite_segment(&p.segments);
    match p.pep {
        PepMode::None => {}
        PepMode::Gateway if sat == 0 => return Err(ConfigError::new(
            "path.pep",
            "\"gateway\" needs a segment before the satellite segment (the PEP sits between them)",
        )),
        PepMode::Distributed if sat == 0 || sat + 1 >= p.segments.len() => {
            return Err(ConfigError::new(
                "path.pep",
                "\"distributed\" needs segments before and after the satellite segment",
            ))
        }
        _ => {}
    }
    Ok(())
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

impl ScenarioConfig {
    /// The path as segments (a dumbbell is the one segment `bottleneck`) and its PEP mode.
    pub fn segments(&self) -> (Vec<SegmentConfig>, PepMode) {
        match (&self.path, &self.bottleneck) {
            (Some(p), _) => (p.segments.clone(), p.pep),
            (None, Some(b)) => (
                vec![SegmentConfig {
                    name: "bottleneck".into(),
                    forward: b.forward.clone(),
                    reverse: b.reverse.clone(),
                }],
                PepMode::None,
            ),
            (None, None) => (Vec::new(), PepMode::None),
        }
    }

    /// Parse and check a normalized scenario.
    pub fn from_json(text: &str) -> Result<ScenarioConfig, ConfigError> {
        let cfg: ScenarioConfig =
            serde_json::from_str(text).map_err(|e| ConfigError(format!("scenario: {e}")))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Check ranges and cross-field constraints.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.duration_ns == 0 || self.duration_ns > MAX_DURATION_NS {
            return Err(ConfigError::new(
                "duration_ns",
                format_args!(
                    "{} is out of range; allowed: 1 ..= {MAX_DURATION_NS}",
                    self.duration_ns
                ),
            ));
        }
        if self.interval_ns < 1_000_000 || self.interval_ns > self.duration_ns {
            return Err(ConfigError::new(
                "interval_ns",
                format_args!(
                    "{} is out of range; allowed: 1 ms ..= duration",
                    self.interval_ns
                ),
            ));
        }
        if self.duration_ns / self.interval_ns > 10_000_000 {
            return Err(ConfigError::new(
                "interval_ns",
                "more than 10 million intervals",
            ));
        }
        match (&self.bottleneck, &self.path) {
            (Some(b), None) => {
                check_dir("bottleneck.forward", &b.forward)?;
                check_dir("bottleneck.reverse", &b.reverse)?;
            }
            (None, Some(p)) => check_path(p)?,
            _ => {
                return Err(ConfigError::new(
                    "bottleneck",
                    "give exactly one of bottleneck (dumbbell) or path (segments)",
                ))
            }
        }
        check_access("access", &self.access)?;
        if self.flows.is_empty() {
            return Err(ConfigError::new("flows", "at least one flow is needed"));
        }
        if self.flows.len() > 100_000 {
            return Err(ConfigError::new("flows", "more than 100000 flows"));
        }
        for (i, f) in self.flows.iter().enumerate() {
            let p = format!("flows[{i}]");
            if f.start_ns >= self.duration_ns {
                return Err(ConfigError::new(
                    &format!("{p}.start_ns"),
                    format_args!(
                        "{} must be before the end of the run ({})",
                        f.start_ns, self.duration_ns
                    ),
                ));
            }
            if let AppConfig::File { size_bytes } = f.app {
                if size_bytes == 0 || size_bytes > (1u64 << 50) {
                    return Err(ConfigError::new(
                        &format!("{p}.app.size_bytes"),
                        format_args!("{size_bytes} is out of range; allowed: 1 ..= 2^50"),
                    ));
                }
            }
            if let AppConfig::Cbr {
                rate_bps,
                packet_bytes,
            } = f.app
            {
                if rate_bps == 0 || rate_bps > MAX_RATE_BPS {
                    return Err(ConfigError::new(
                        &format!("{p}.app.rate_bps"),
                        format_args!("{rate_bps} is out of range; allowed: 1 ..= {MAX_RATE_BPS}"),
                    ));
                }
                if !(1..=65_507).contains(&packet_bytes) {
                    return Err(ConfigError::new(
                        &format!("{p}.app.packet_bytes"),
                        format_args!("{packet_bytes} is out of range; allowed: 1 ..= 65507"),
                    ));
                }
            }
            if let Some(pep) = &f.pep {
                check_tcp(&format!("{p}.pep.tcp"), &pep.tcp)?;
                if pep.buffer_bytes < 2 * pep.tcp.mss_bytes as u64 || pep.buffer_bytes > 1 << 34 {
                    return Err(ConfigError::new(
                        &format!("{p}.pep.buffer_bytes"),
                        format_args!(
                            "{} is out of range; allowed: 2 MSS ..= 16 GiB",
                            pep.buffer_bytes
                        ),
                    ));
                }
            }
            check_tcp(&format!("{p}.tcp"), &f.tcp)?;
            if let Some(a) = &f.access {
                check_access(&format!("{p}.access"), a)?;
            }
            for (k, v) in &f.cca_params {
                if !v.is_finite() {
                    return Err(ConfigError::new(
                        &format!("{p}.cca_params.{k}"),
                        format_args!("{v} is not a finite number"),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> String {
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
    fn per_out_of_range_names_the_field() {
        let s = base().replace(
            r#""delay_ns": 1000, "queue""#,
            r#""delay_ns": 1000, "per": 1.5, "queue""#,
        );
        let e = ScenarioConfig::from_json(&s).unwrap_err();
        assert!(e.0.starts_with("bottleneck.forward.per"), "{e}");
    }

    #[test]
    fn unknown_key_is_rejected() {
        let s = base()
            .replace(r#""seed""#, r#""sed""#)
            .replace(r#"{"duration_ns""#, r#"{"bogus": 1, "duration_ns""#);
        let e = ScenarioConfig::from_json(&s).unwrap_err();
        assert!(e.0.contains("bogus"), "{e}");
    }

    #[test]
    fn zero_rate_is_rejected() {
        let s = base().replacen("\"rate_bps\": 4000000", "\"rate_bps\": 0", 1);
        let e = ScenarioConfig::from_json(&s).unwrap_err();
        assert!(e.0.starts_with("bottleneck.forward.rate_bps"), "{e}");
    }
}
