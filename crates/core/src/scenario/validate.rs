//! Validation of a normalized scenario: ranges and cross-field constraints, checked once,
//! when a simulation is built from the scenario (`Simulation::new`).
//!
//! Python checks the user's file first and names the user's keys; the core checks again
//! because it is also reachable from the `tcplab-sim` binary and the emulator, and must
//! never panic on input. Every problem is a one-line `ConfigError` naming the field of the
//! normalized scenario, built by the range helpers below so that a limit and its message
//! cannot disagree. The algorithms' own parameters are checked by their constructors when
//! the connections are built (`cc::Params`), with the same message shape.
use super::*;
use std::fmt::Display;

pub use crate::limits::{
    CBR_PACKET_BYTES, CROSS_CONNECTIONS, CROSS_PACKET_BYTES, INITIAL_WINDOW_PKTS, MAX_DELAY_NS,
    MAX_DURATION_NS, MAX_FILE_BYTES, MAX_FLOWS, MAX_INTERVALS, MAX_PEP_BUFFER_BYTES, MAX_RATE_BPS,
    MAX_RWND_BYTES, MAX_SEGMENTS, MAX_TRACE_LEN, MIN_INTERVAL_NS, MIN_PEP_BUFFER_SEGMENTS,
    MIN_QUEUE_BYTES, MSS_BYTES, POLICER_BURST_BYTES, WIFI_BACKGROUND_MAX, WIFI_DISTANCE_M,
    WIFI_MSDU_MAX_BYTES, WIFI_RETRY_LIMIT_MAX, WIFI_TX_POWER_DBM,
};

// --- range helpers --------------------------------------------------------------------

/// `v` must lie in `lo ..= hi`: "<field>: <v> is out of range; allowed: <lo> ..= <hi>".
pub fn in_range<T: PartialOrd + Display>(
    field: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<(), ConfigError> {
    if v < lo || v > hi {
        return Err(ConfigError::new(
            field,
            format_args!("{v} is out of range; allowed: {lo} ..= {hi}"),
        ));
    }
    Ok(())
}

/// Which ends of [0, 1] a probability-like value may take.
#[derive(Copy, Clone, Debug)]
pub enum Unit {
    /// [0, 1): a per-packet error rate (1 would lose everything).
    ClosedOpen,
    /// [0, 1].
    Closed,
    /// (0, 1].
    OpenClosed,
}

/// `v` must lie in the unit interval `unit`: "<field>: <v> must be in [0, 1)".
pub fn in_unit(field: &str, v: f64, unit: Unit) -> Result<(), ConfigError> {
    let (ok, text) = match unit {
        Unit::ClosedOpen => ((0.0..1.0).contains(&v), "[0, 1)"),
        Unit::Closed => ((0.0..=1.0).contains(&v), "[0, 1]"),
        Unit::OpenClosed => (v > 0.0 && v <= 1.0, "(0, 1]"),
    };
    if !ok {
        return Err(ConfigError::new(
            field,
            format_args!("{v} must be in {text}"),
        ));
    }
    Ok(())
}

/// A rate in bit/s: 1 ..= `MAX_RATE_BPS`.
pub fn rate(field: &str, bps: u64) -> Result<(), ConfigError> {
    in_range(field, bps, 1, MAX_RATE_BPS)
}

/// A one-way delay in ns: 0 ..= `MAX_DELAY_NS`.
pub fn delay(field: &str, ns: u64) -> Result<(), ConfigError> {
    in_range(field, ns, 0, MAX_DELAY_NS)
}

// --- the scenario ---------------------------------------------------------------------

impl ScenarioConfig {
    /// Check ranges and cross-field constraints (the module note).
    pub fn validate(&self) -> Result<(), ConfigError> {
        in_range("duration_ns", self.duration_ns, 1, MAX_DURATION_NS)?;
        if self.interval_ns < MIN_INTERVAL_NS || self.interval_ns > self.duration_ns {
            return Err(ConfigError::new(
                "interval_ns",
                format_args!(
                    "{} is out of range; allowed: 1 ms ..= duration",
                    self.interval_ns
                ),
            ));
        }
        if self.duration_ns / self.interval_ns > MAX_INTERVALS {
            return Err(ConfigError::new(
                "interval_ns",
                format_args!("more than {MAX_INTERVALS} intervals"),
            ));
        }
        match (&self.bottleneck, &self.path) {
            (Some(b), None) => {
                dir("bottleneck.forward", &b.forward)?;
                dir("bottleneck.reverse", &b.reverse)?;
                if let Some(w) = &b.wifi {
                    wifi("bottleneck", w, [&b.forward, &b.reverse], self.flows.len())?;
                }
            }
            (None, Some(p)) => path(p)?,
            _ => {
                return Err(ConfigError::new(
                    "bottleneck",
                    "give exactly one of bottleneck (dumbbell) or path (segments)",
                ))
            }
        }
        access("access", &self.access)?;
        if self.flows.is_empty() {
            return Err(ConfigError::new("flows", "at least one flow is needed"));
        }
        if self.flows.len() > MAX_FLOWS {
            return Err(ConfigError::new(
                "flows",
                format!(
                    "{} flows; allowed: at most {MAX_FLOWS} (the flow limit)",
                    self.flows.len()
                ),
            ));
        }
        for (i, f) in self.flows.iter().enumerate() {
            flow(&format!("flows[{i}]"), f, self.duration_ns)?;
        }
        let (segs, _) = self.segments();
        for (i, c) in self.cross.iter().enumerate() {
            cross(&format!("cross[{i}]"), c, &segs)?;
        }
        Ok(())
    }
}

/// A cross-traffic source: its rates, packet size and laws, on a segment that exists.
fn cross(p: &str, c: &CrossConfig, segs: &[SegmentConfig]) -> Result<(), ConfigError> {
    // a cross source has no station on a Wi-Fi medium; neighbours' load is `wifi.background`
    if let Some(s) = segs.iter().find(|s| s.wifi.is_some()) {
        return Err(ConfigError::new(
            p,
            format_args!(
                "cross traffic is not modelled with a Wi-Fi segment ({:?}); allowed: the Wi-Fi \
                 link's `background` stations for other traffic on the medium",
                s.name
            ),
        ));
    }
    if let (Some(name), _) = c.place() {
        if !segs.iter().any(|s| s.name == name) {
            let names: Vec<&str> = segs.iter().map(|s| s.name.as_str()).collect();
            return Err(ConfigError::new(
                &format!("{p}.segment"),
                format_args!("no segment {name:?}; allowed: {}", names.join(", ")),
            ));
        }
    }
    match c {
        CrossConfig::Flows {
            offered_bps,
            peak_bps,
            packet_bytes,
            size,
            ..
        } => {
            rate(&format!("{p}.offered_bps"), *offered_bps)?;
            rate(&format!("{p}.peak_bps"), *peak_bps)?;
            packet(&format!("{p}.packet_bytes"), *packet_bytes)?;
            dist(&format!("{p}.size"), size, 1.0)
        }
        CrossConfig::OnOff {
            peak_bps,
            packet_bytes,
            on,
            off,
            ..
        } => {
            rate(&format!("{p}.peak_bps"), *peak_bps)?;
            packet(&format!("{p}.packet_bytes"), *packet_bytes)?;
            // periods of at least 1 µs: shorter ones are below the simulator's packet times
            dist(&format!("{p}.on"), on, 1e3)?;
            dist(&format!("{p}.off"), off, 1e3)
        }
        CrossConfig::TcpFlows {
            offered_bps,
            size,
            cca,
            cca_params,
            max_connections,
            rtt_ns,
            tcp: options,
            ..
        } => {
            rate(&format!("{p}.offered_bps"), *offered_bps)?;
            dist(&format!("{p}.size"), size, 1.0)?;
            let r = CROSS_CONNECTIONS;
            in_range(
                &format!("{p}.max_connections"),
                *max_connections,
                *r.start(),
                *r.end(),
            )?;
            if let Some(rtt) = *rtt_ns {
                let s = &segs[c.segment_index(segs)];
                let min = s.forward.delay_ns.saturating_add(s.reverse.delay_ns);
                in_range(&format!("{p}.rtt_ns"), rtt, min, 2 * MAX_DELAY_NS)?;
            }
            let defaults = TcpConfig::default();
            let options = match options {
                Some(t) => {
                    let q = format!("{p}.tcp");
                    tcp(&q, t)?;
                    // the connections run the Linux-like sender, as the algorithm must be a
                    // Linux module
                    if t.stack != Stack::Linux {
                        return Err(ConfigError::new(
                            &format!("{q}.stack"),
                            "cross traffic runs the Linux stack; allowed: linux",
                        ));
                    }
                    t
                }
                None => &defaults,
            };
            cross_cca(p, cca, cca_params, options)
        }
    }
}

/// The algorithm of TCP cross traffic: a Linux module (its connections run the Linux-like
/// sender), with parameters it accepts — checked by building it once, so that no
/// connection opened during the run can fail.
fn cross_cca(
    p: &str,
    cca: &str,
    params: &BTreeMap<String, f64>,
    options: &TcpConfig,
) -> Result<(), ConfigError> {
    if crate::cc::registry::ns2_agent(cca, Stack::Linux).is_some() {
        let linux: Vec<&str> = crate::cc::catalogue()
            .map(|i| i.name)
            .filter(|n| crate::cc::registry::ns2_agent(n, Stack::Linux).is_none())
            .collect();
        return Err(ConfigError::new(
            &format!("{p}.cca"),
            format_args!(
                "{cca:?} is an ns-2 agent; allowed: a Linux module ({})",
                linux.join(", ")
            ),
        ));
    }
    let init = crate::cc::FlowInit {
        mss: options.mss_bytes,
        initial_window: options.initial_window_pkts,
    };
    let mut rng = crate::engine::rng::SimRng::substream(0, "validate");
    crate::cc::build(cca, params, &init, &mut rng)
        .map(|_| ())
        .map_err(|e| ConfigError(format!("{p}.{}", e.0)))
}

fn packet(field: &str, bytes: u32) -> Result<(), ConfigError> {
    let r = CROSS_PACKET_BYTES;
    in_range(field, bytes, *r.start(), *r.end())
}

/// A law's mean in `min_mean ..= 1e15` and its shape in range.
fn dist(p: &str, d: &DistConfig, min_mean: f64) -> Result<(), ConfigError> {
    let mean = match *d {
        DistConfig::Constant { mean } | DistConfig::Exponential { mean } => mean,
        DistConfig::Pareto { mean, shape } => {
            // a <= 1 has no mean: the offered load would be undefined
            if !(shape > 1.0 && shape <= 100.0) {
                return Err(ConfigError::new(
                    &format!("{p}.shape"),
                    format_args!("{shape} is out of range; allowed: > 1 ..= 100"),
                ));
            }
            mean
        }
        DistConfig::Lognormal { mean, sigma } => {
            in_range(&format!("{p}.sigma"), sigma, 0.0, 10.0)?;
            mean
        }
    };
    in_range(&format!("{p}.mean"), mean, min_mean, 1e15)
}

fn flow(p: &str, f: &FlowConfig, duration_ns: u64) -> Result<(), ConfigError> {
    if f.start_ns >= duration_ns {
        return Err(ConfigError::new(
            &format!("{p}.start_ns"),
            format_args!(
                "{} must be before the end of the run ({duration_ns})",
                f.start_ns
            ),
        ));
    }
    match f.app {
        AppConfig::Bulk => {}
        AppConfig::File { size_bytes } => {
            if size_bytes == 0 || size_bytes > MAX_FILE_BYTES {
                return Err(ConfigError::new(
                    &format!("{p}.app.size_bytes"),
                    format_args!("{size_bytes} is out of range; allowed: 1 ..= {MAX_FILE_BYTES}"),
                ));
            }
        }
        AppConfig::Cbr {
            rate_bps,
            packet_bytes,
        } => {
            rate(&format!("{p}.app.rate_bps"), rate_bps)?;
            in_range(
                &format!("{p}.app.packet_bytes"),
                packet_bytes,
                *CBR_PACKET_BYTES.start(),
                *CBR_PACKET_BYTES.end(),
            )?;
        }
    }
    if let Some(pep) = &f.pep {
        tcp(&format!("{p}.pep.tcp"), &pep.tcp)?;
        if pep.buffer_bytes < MIN_PEP_BUFFER_SEGMENTS * pep.tcp.mss_bytes as u64
            || pep.buffer_bytes > MAX_PEP_BUFFER_BYTES
        {
            return Err(ConfigError::new(
                &format!("{p}.pep.buffer_bytes"),
                format_args!(
                    "{} is out of range; allowed: 2 MSS ..= 16 GiB",
                    pep.buffer_bytes
                ),
            ));
        }
    }
    tcp(&format!("{p}.tcp"), &f.tcp)?;
    if let Some(a) = &f.access {
        access(&format!("{p}.access"), a)?;
    }
    for (k, v) in &f.cca_params {
        if !v.is_finite() {
            return Err(ConfigError::new(
                &format!("{p}.cca_params.{k}"),
                format_args!("{v} is not a finite number"),
            ));
        }
    }
    Ok(())
}

fn access(p: &str, a: &AccessConfig) -> Result<(), ConfigError> {
    rate(&format!("{p}.rate_bps"), a.rate_bps)?;
    delay(&format!("{p}.delay_ns"), a.delay_ns)
}

fn tcp(p: &str, t: &TcpConfig) -> Result<(), ConfigError> {
    in_range(
        &format!("{p}.mss_bytes"),
        t.mss_bytes,
        *MSS_BYTES.start(),
        *MSS_BYTES.end(),
    )?;
    in_range(
        &format!("{p}.initial_window_pkts"),
        t.initial_window_pkts,
        *INITIAL_WINDOW_PKTS.start(),
        *INITIAL_WINDOW_PKTS.end(),
    )?;
    if t.rwnd_bytes < t.mss_bytes as u64 || t.rwnd_bytes > MAX_RWND_BYTES {
        return Err(ConfigError::new(
            &format!("{p}.rwnd_bytes"),
            format_args!("{} is out of range; allowed: mss ..= 1 GiB", t.rwnd_bytes),
        ));
    }
    Ok(())
}

/// A path: segment names, link directions, and room for the PEPs.
fn path(p: &PathConfig) -> Result<(), ConfigError> {
    if p.segments.is_empty() || p.segments.len() > MAX_SEGMENTS {
        return Err(ConfigError::new("path.segments", "give 1 ..= 64 segments"));
    }
    for (i, s) in p.segments.iter().enumerate() {
        if s.name.is_empty() || p.segments[..i].iter().any(|o| o.name == s.name) {
            return Err(ConfigError::new(
                &format!("path.segments[{i}].name"),
                format_args!("{:?}: segment names must be non-empty and unique", s.name),
            ));
        }
        dir(&format!("path.segments[{i}].forward"), &s.forward)?;
        dir(&format!("path.segments[{i}].reverse"), &s.reverse)?;
        if let Some(w) = &s.wifi {
            // the flows are not known here: the station list is checked against them later
            wifi(
                &format!("path.segments[{i}]"),
                w,
                [&s.forward, &s.reverse],
                usize::MAX,
            )?;
        }
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

// --- one link direction (also the emulator's check) -------------------------------------

/// Check the Wi-Fi hop of link `p` (its directions `dirs`; `n_flows` stations).
fn wifi(p: &str, w: &WifiConfig, dirs: [&DirConfig; 2], n_flows: usize) -> Result<(), ConfigError> {
    use crate::net::wifi::phy::{Phy, Standard};
    let f = |k: &str| format!("{p}.wifi.{k}");
    let Some(standard) = Standard::parse(&w.standard) else {
        return Err(ConfigError::new(
            &f("standard"),
            format_args!(
                "{:?} is not one of \"b\", \"a\", \"g\", \"n\", \"ac\"",
                w.standard
            ),
        ));
    };
    let Some(band) = crate::net::wifi::parse_band(&w.band) else {
        return Err(ConfigError::new(
            &f("band"),
            format_args!("{:?} is not one of \"2.4\", \"5\" (GHz)", w.band),
        ));
    };
    Phy::check(standard, band, w.width_mhz, w.streams)
        .map_err(|e| ConfigError::new(&f("standard"), format_args!("802.11{}: {e}", w.standard)))?;
    let phy = Phy::new(standard, band, w.width_mhz, w.streams, w.short_gi);
    in_range(&f("retry_limit"), w.retry_limit, 1, WIFI_RETRY_LIMIT_MAX)?;
    if let Some(m) = w.max_ampdu_mpdus {
        in_range(
            &f("max_ampdu_mpdus"),
            m,
            1,
            crate::net::wifi::phy::BA_WINDOW_MPDUS,
        )?;
    }
    if let Some(m) = w.mcs {
        in_range(&f("mcs"), m, 0, phy.modes().len() as u32 - 1)?;
    }
    in_range(&f("noise_figure_db"), w.noise_figure_db, 0.0, 30.0)?;
    let power = |k: &str, v: f64| in_range(&f(k), v, WIFI_TX_POWER_DBM.0, WIFI_TX_POWER_DBM.1);
    let distance = |k: &str, v: f64| in_range(&f(k), v, WIFI_DISTANCE_M.0, WIFI_DISTANCE_M.1);
    power("ap_tx_power_dbm", w.ap_tx_power_dbm)?;
    power("tx_power_dbm", w.tx_power_dbm)?;
    distance("distance_m", w.distance_m)?;
    if n_flows != usize::MAX && w.stations.len() > n_flows {
        return Err(ConfigError::new(
            &f("stations"),
            format_args!(
                "{} stations for {n_flows} flows; one per flow at most",
                w.stations.len()
            ),
        ));
    }
    for (i, s) in w.stations.iter().enumerate() {
        if let Some(v) = s.tx_power_dbm {
            power(&format!("stations[{i}].tx_power_dbm"), v)?;
        }
        if let Some(v) = s.distance_m {
            distance(&format!("stations[{i}].distance_m"), v)?;
        }
    }
    for (i, b) in w.background.iter().enumerate() {
        let k = |x: &str| format!("background[{i}].{x}");
        in_range(&f(&k("count")), b.count, 1, WIFI_BACKGROUND_MAX)?;
        rate(&f(&k("load_bps")), b.load_bps)?;
        in_range(
            &f(&k("frame_bytes")),
            b.frame_bytes,
            64,
            WIFI_MSDU_MAX_BYTES,
        )?;
        power(&k("tx_power_dbm"), b.tx_power_dbm)?;
        distance(&k("distance_m"), b.distance_m)?;
    }
    for (d, name) in dirs.iter().zip(["forward", "reverse"]) {
        let plain = d.queue.kind == "droptail"
            && d.per == 0.0
            && d.ber == 0.0
            && d.loss.is_none()
            && d.outages.is_empty()
            && d.rate_trace.is_none()
            && d.delivery_trace.is_none()
            && d.policer.is_none()
            && d.ecn_threshold_pkts.is_none();
        if !plain {
            return Err(ConfigError::new(
                &format!("{p}.{name}"),
                "a Wi-Fi link takes only a DropTail queue (losses come from its radio model; no traces, outages, policer or ECN threshold)",
            ));
        }
    }
    Ok(())
}

/// Check one link direction named `p` (e.g. `bottleneck.forward`).
pub fn dir(p: &str, d: &DirConfig) -> Result<(), ConfigError> {
    rate(&format!("{p}.rate_bps"), d.rate_bps)?;
    delay(&format!("{p}.delay_ns"), d.delay_ns)?;
    in_unit(&format!("{p}.per"), d.per, Unit::ClosedOpen)?;
    in_unit(&format!("{p}.ber"), d.ber, Unit::ClosedOpen)?;
    queue(&format!("{p}.queue"), &d.queue)?;
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
            in_unit(&format!("{p}.loss.{name}"), v, Unit::Closed)?;
        }
    }
    outages(p, &d.outages)?;
    if d.rate_trace.is_some() && d.delivery_trace.is_some() {
        return Err(ConfigError::new(
            p,
            "give at most one of rate_trace and delivery_trace",
        ));
    }
    if let Some(t) = &d.rate_trace {
        rate_trace(&format!("{p}.rate_trace"), t)?;
    }
    if let Some(t) = &d.delivery_trace {
        delivery_trace(&format!("{p}.delivery_trace"), t)?;
    }
    if let Some(pol) = &d.policer {
        rate(&format!("{p}.policer.rate_bps"), pol.rate_bps)?;
        in_range(
            &format!("{p}.policer.burst_bytes"),
            pol.burst_bytes,
            *POLICER_BURST_BYTES.start(),
            *POLICER_BURST_BYTES.end(),
        )?;
    }
    Ok(())
}

fn queue(p: &str, q: &QueueConfig) -> Result<(), ConfigError> {
    if !["droptail", "red", "codel"].contains(&q.kind.as_str()) {
        return Err(ConfigError::new(
            &format!("{p}.kind"),
            format_args!(
                "unknown queue discipline {:?}; allowed: droptail, red, codel",
                q.kind
            ),
        ));
    }
    match (q.limit_pkts, q.limit_bytes) {
        (Some(n), None) if n >= 1 => {}
        (None, Some(b)) if b >= MIN_QUEUE_BYTES => {}
        _ => {
            return Err(ConfigError::new(
                p,
                format_args!(
                    "give exactly one of limit_pkts (>= 1) or limit_bytes (>= {MIN_QUEUE_BYTES})"
                ),
            ))
        }
    }
    for (name, given, kind) in [
        ("red", q.red.is_some(), "red"),
        ("codel", q.codel.is_some(), "codel"),
    ] {
        if given && q.kind != kind {
            return Err(ConfigError::new(
                &format!("{p}.{name}"),
                format_args!("only allowed with kind \"{kind}\" (kind is {:?})", q.kind),
            ));
        }
    }
    if let Some(r) = &q.red {
        red(&format!("{p}.red"), r)?;
    }
    if let Some(c) = &q.codel {
        for (name, v) in [("target_ns", c.target_ns), ("interval_ns", c.interval_ns)] {
            in_range(&format!("{p}.codel.{name}"), v, 1, MAX_DELAY_NS)?;
        }
    }
    Ok(())
}

fn red(p: &str, r: &RedConfig) -> Result<(), ConfigError> {
    if !(r.min_th_pkts.is_finite() && r.min_th_pkts >= 0.0) {
        return Err(ConfigError::new(
            &format!("{p}.min_th_pkts"),
            format_args!("{} must be a finite number >= 0", r.min_th_pkts),
        ));
    }
    if !(r.max_th_pkts.is_finite() && r.max_th_pkts > r.min_th_pkts) {
        return Err(ConfigError::new(
            &format!("{p}.max_th_pkts"),
            format_args!(
                "{} must be a finite number > min_th_pkts ({})",
                r.max_th_pkts, r.min_th_pkts
            ),
        ));
    }
    in_unit(&format!("{p}.max_p"), r.max_p, Unit::OpenClosed)?;
    in_unit(&format!("{p}.w_q"), r.w_q, Unit::OpenClosed)
}

fn outages(p: &str, outages: &[(u64, u64)]) -> Result<(), ConfigError> {
    if outages.len() > MAX_TRACE_LEN {
        return Err(ConfigError::new(
            &format!("{p}.outages"),
            format_args!("more than {MAX_TRACE_LEN} intervals"),
        ));
    }
    for (i, &(start, end)) in outages.iter().enumerate() {
        let field = format!("{p}.outages[{i}]");
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

fn rate_trace(p: &str, t: &[RatePoint]) -> Result<(), ConfigError> {
    if t.is_empty() || t.len() > MAX_TRACE_LEN {
        return Err(ConfigError::new(
            p,
            format_args!("needs 1 ..= {MAX_TRACE_LEN} points"),
        ));
    }
    for (i, pt) in t.iter().enumerate() {
        let field = format!("{p}[{i}]");
        if i == 0 && pt.t_ns != 0 {
            return Err(ConfigError::new(
                &field,
                format_args!("the first point must be at t_ns = 0 (got {})", pt.t_ns),
            ));
        }
        if i > 0 && pt.t_ns <= t[i - 1].t_ns {
            return Err(ConfigError::new(
                &field,
                format_args!(
                    "t_ns {} is not after the previous point's {}; points must be sorted",
                    pt.t_ns,
                    t[i - 1].t_ns
                ),
            ));
        }
        if pt.rate_bps == 0 || pt.rate_bps > MAX_RATE_BPS {
            return Err(ConfigError::new(
                &field,
                format_args!(
                    "rate_bps {} is out of range; allowed: 1 ..= {MAX_RATE_BPS}",
                    pt.rate_bps
                ),
            ));
        }
        if let Some(d) = pt.delay_ns.filter(|&d| d > MAX_DELAY_NS) {
            return Err(ConfigError::new(
                &field,
                format_args!("delay_ns {d} is out of range; allowed: 0 ..= {MAX_DELAY_NS}"),
            ));
        }
    }
    Ok(())
}

fn delivery_trace(p: &str, t: &DeliveryTraceConfig) -> Result<(), ConfigError> {
    in_range(&format!("{p}.period_ns"), t.period_ns, 1, MAX_DURATION_NS)?;
    if t.bytes_per_opportunity == 0 {
        return Err(ConfigError::new(
            &format!("{p}.bytes_per_opportunity"),
            "must be at least 1",
        ));
    }
    let o = &t.opportunities_ns;
    if o.is_empty() || o.len() > MAX_TRACE_LEN {
        return Err(ConfigError::new(
            &format!("{p}.opportunities_ns"),
            format_args!("needs 1 ..= {MAX_TRACE_LEN} instants"),
        ));
    }
    for (i, &x) in o.iter().enumerate() {
        let field = format!("{p}.opportunities_ns[{i}]");
        if x > t.period_ns {
            return Err(ConfigError::new(
                &field,
                format_args!("{x} is after period_ns ({})", t.period_ns),
            ));
        }
        if i > 0 && x < o[i - 1] {
            return Err(ConfigError::new(
                &field,
                format_args!(
                    "{x} is before the previous instant {}; instants must be sorted",
                    o[i - 1]
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::base;
    use super::*;

    fn check(text: &str) -> Result<ScenarioConfig, ConfigError> {
        let c = ScenarioConfig::from_json(text)?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn minimal_scenario_is_valid() {
        assert!(check(&base()).is_ok());
    }

    #[test]
    fn per_out_of_range_names_the_field() {
        let s = base().replace(
            r#""delay_ns": 1000, "queue""#,
            r#""delay_ns": 1000, "per": 1.5, "queue""#,
        );
        let e = check(&s).unwrap_err();
        assert_eq!(e.0, "bottleneck.forward.per: 1.5 must be in [0, 1)");
    }

    #[test]
    fn zero_rate_is_rejected_with_the_allowed_range() {
        let s = base().replacen("\"rate_bps\": 4000000", "\"rate_bps\": 0", 1);
        let e = check(&s).unwrap_err();
        assert_eq!(
            e.0,
            "bottleneck.forward.rate_bps: 0 is out of range; allowed: 1 ..= 10000000000000"
        );
    }

    #[test]
    fn in_range_and_in_unit_state_the_limits() {
        assert_eq!(
            in_range("x", 0u32, 1, 9).unwrap_err().0,
            "x: 0 is out of range; allowed: 1 ..= 9"
        );
        assert!(in_range("x", 9u32, 1, 9).is_ok());
        assert_eq!(
            in_unit("p", 0.0, Unit::OpenClosed).unwrap_err().0,
            "p: 0 must be in (0, 1]"
        );
        assert!(in_unit("p", 1.0, Unit::Closed).is_ok());
        assert!(in_unit("p", 1.0, Unit::ClosedOpen).is_err());
    }

    #[test]
    fn a_codel_key_on_a_red_queue_is_refused() {
        let s = base().replacen(
            r#""queue": {"limit_pkts": 10}"#,
            r#""queue": {"kind": "red", "limit_pkts": 10, "codel": {}}"#,
            1,
        );
        let e = check(&s).unwrap_err();
        assert_eq!(
            e.0,
            "bottleneck.forward.queue.codel: only allowed with kind \"codel\" (kind is \"red\")"
        );
    }
}
