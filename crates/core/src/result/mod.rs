//! The result of a run: per flow (and per leg of a flow split by PEPs), per link direction
//! and per interval, as the result JSON carries it (`docs/interface.md`). The emulator's
//! report uses `LinkResult` (`link.rs`) too, so a link's counters have one shape whoever
//! measured them.
use crate::app::cross::CrossCounters;
use crate::app::cross_tcp::{TcpCross, TcpCrossResult};
use crate::app::udp::{UdpSink, UdpSource};
use crate::engine::stats::LogHistogram;
use crate::scenario::AppConfig;
use crate::sim::cross_tcp::add_counters;
use crate::sim::flow::{Flow, FlowKind};
use crate::sim::relay::Relay;
use crate::sim::series::FlowSeries;
use crate::sim::Simulation;
use crate::tcp::linux::sender::SenderStats;
use serde::Serialize;

mod link;
pub use link::LinkResult;

/// RTT statistics of a flow (ns).
#[derive(Debug, Clone, Serialize)]
pub struct RttResult {
    pub count: u64,
    pub mean_ns: Option<f64>,
    pub min_ns: Option<u64>,
    pub p50_ns: Option<u64>,
    pub p95_ns: Option<u64>,
    pub max_ns: Option<u64>,
    /// Time average of the sender's smoothed RTT from its first sample to the end of the
    /// flow: what `TCP_INFO`/`ss` read at regular instants gives (the kernel side of
    /// `tcplab validate`). `None` for one-way delays and flows without samples.
    pub srtt_time_mean_ns: Option<f64>,
}

/// Summary of one flow.
#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    pub id: u32,
    pub cca: String,
    pub start_ns: u64,
    pub app: &'static str,
    pub bytes_delivered: u64,
    pub bytes_sent: u64,
    pub segments_sent: u64,
    pub retransmits: u64,
    pub goodput_bps: f64,
    pub throughput_bps: f64,
    pub active_ns: u64,
    pub completion_ns: Option<u64>,
    /// File downloads: time from the start until the server's FIN (on the last byte) was
    /// acknowledged — by the client end to end, by the first PEP when the path is split.
    pub server_done_ns: Option<u64>,
    /// File downloads: time from the start until the client's connection closed (its FIN
    /// acknowledged — by the server, or by the nearest PEP).
    pub closed_ns: Option<u64>,
    pub rtt: RttResult,
    pub rto_count: u64,
    pub fast_recoveries: u64,
    pub spurious_undos: u64,
    pub tlp_probes: u64,
    pub final_cwnd_bytes: u64,
    pub final_ssthresh_bytes: u64,
    pub dup_bytes_received: u64,
    pub acks_sent: u64,
    /// "tcp" or "cbr".
    pub kind: &'static str,
    /// Connections of a flow split by PEPs, from the server side.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub legs: Vec<LegResult>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pep_buffer: Vec<PepBufferResult>,
    /// CBR flows only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets_sent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets_received: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owd: Option<RttResult>,
}

/// One connection of a flow split by PEPs.
#[derive(Debug, Clone, Serialize)]
pub struct LegResult {
    pub from: String,
    pub to: String,
    pub cca: String,
    pub bytes_delivered: u64,
    pub goodput_bps: f64,
    pub retransmits: u64,
    pub rto_count: u64,
    pub rtt: RttResult,
    /// File downloads: this leg's sender had its FIN acknowledged / its receiver's FIN was
    /// acknowledged (times from the flow's start).
    pub sender_done_ns: Option<u64>,
    pub closed_ns: Option<u64>,
}

/// Occupancy of a PEP's relay buffer for one flow.
#[derive(Debug, Clone, Serialize)]
pub struct PepBufferResult {
    pub node: String,
    pub mean_bytes: f64,
    pub max_bytes: u64,
    pub limit_bytes: u64,
}

/// Per-interval series: the samples themselves (`SeriesOut::Memory`), or how many intervals
/// went elsewhere (`streamed`: to a sink, or nowhere).
#[derive(Debug, Clone)]
pub struct SeriesResult {
    pub interval_ns: u64,
    pub t_ns: Vec<u64>,
    pub flows: Vec<FlowSeries>,
    pub bottleneck_queue_pkts: Vec<f64>,
    pub bottleneck_utilization: Vec<f64>,
    pub streamed: Option<StreamedSeries>,
}

/// A run whose samples were not kept in memory.
#[derive(Debug, Clone, Serialize)]
pub struct StreamedSeries {
    /// Intervals closed (each one a sample of every flow).
    pub intervals: u64,
    /// The file the samples were streamed to (`None`: they were not kept).
    pub file: Option<String>,
}

/// The JSON of a `SeriesResult`: the samples, or `{interval_ns, intervals, file}`.
#[derive(Serialize)]
#[serde(untagged)]
enum SeriesJson<'a> {
    Samples {
        interval_ns: u64,
        t_ns: &'a [u64],
        flows: &'a [FlowSeries],
        bottleneck_queue_pkts: &'a [f64],
        bottleneck_utilization: &'a [f64],
    },
    Streamed {
        interval_ns: u64,
        intervals: u64,
        file: Option<&'a str>,
    },
}

impl Serialize for SeriesResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.streamed {
            None => SeriesJson::Samples {
                interval_ns: self.interval_ns,
                t_ns: &self.t_ns,
                flows: &self.flows,
                bottleneck_queue_pkts: &self.bottleneck_queue_pkts,
                bottleneck_utilization: &self.bottleneck_utilization,
            },
            Some(st) => SeriesJson::Streamed {
                interval_ns: self.interval_ns,
                intervals: st.intervals,
                file: st.file.as_deref(),
            },
        }
        .serialize(s)
    }
}

/// One cross-traffic source (`app::cross`): what it offered and what its link carried.
#[derive(Debug, Clone, Serialize)]
pub struct CrossResult {
    pub id: u32,
    /// `"flows"`, `"on_off"` or `"tcp_flows"`.
    pub kind: &'static str,
    /// The link direction it crossed (`<segment>.forward` or `.reverse`).
    pub link: String,
    /// What the source offered and what its link carried and dropped.
    #[serde(flatten)]
    pub counters: CrossCounters,
    /// `bytes_sent` × 8 over the run's duration: the load it realised.
    pub sent_bps: f64,
    /// `bytes_delivered` × 8 over the run's duration.
    pub delivered_bps: f64,
    /// TCP cross traffic's connections (`kind = "tcp_flows"` only).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpCrossResult>,
}

/// The result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub name: String,
    pub seed: u64,
    pub duration_ns: u64,
    pub events: u64,
    pub core_version: &'static str,
    /// `crate::MODEL_VERSION`: the version of the numbers (see `model.rs`).
    pub model_version: u32,
    pub flows: Vec<FlowResult>,
    pub links: Vec<LinkResult>,
    /// One entry per Wi-Fi medium (absent when the scenario has none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub wifi: Vec<WifiResult>,
    pub series: SeriesResult,
    /// Cross-traffic sources (left out when the scenario has none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cross: Vec<CrossResult>,
}

/// A Wi-Fi medium's contention counters (`net::wifi`).
#[derive(Debug, Clone, Serialize)]
pub struct WifiResult {
    /// The segment it carries.
    pub name: String,
    pub standard: String,
    /// Data rate (bit/s) of each rate index (MCS) of the PHY.
    pub mode_rates_bps: Vec<u64>,
    pub stations: Vec<WifiStationResult>,
}

/// One contender: `ap`, `flowN` (flow N's station) or `backgroundN`.
#[derive(Debug, Clone, Serialize)]
pub struct WifiStationResult {
    pub name: String,
    /// Fraction of the run's time the medium carried this contender's exchanges.
    pub airtime_ratio: f64,
    pub ppdus: u64,
    pub collisions: u64,
    pub mpdus: u64,
    /// MPDU retransmissions (MAC retries).
    pub retries: u64,
    pub delivered: u64,
    /// MPDUs discarded at the retry limit.
    pub drops: u64,
    /// PPDUs per A-MPDU size: entry k counts PPDUs of k + 1 MPDUs.
    pub aggregation_hist: Vec<u64>,
    /// PPDUs per rate index (see `mode_rates_bps`).
    pub mcs_hist: Vec<u64>,
}

fn wifi_result(m: &crate::net::wifi::WifiMedium, end_ns: u64) -> WifiResult {
    use crate::net::wifi::Role;
    let stations = m
        .contenders()
        .map(|(role, st)| WifiStationResult {
            name: match role {
                Role::AccessPoint => "ap".into(),
                Role::Station(i) => format!("flow{i}"),
                Role::Server => "server".into(),
                Role::Background(i) => format!("background{i}"),
            },
            airtime_ratio: st.airtime_ns as f64 / end_ns.max(1) as f64,
            ppdus: st.ppdus,
            collisions: st.collisions,
            mpdus: st.mpdus,
            retries: st.retries,
            delivered: st.delivered,
            drops: st.drops,
            aggregation_hist: st.aggregation.clone(),
            mcs_hist: st.modes.clone(),
        })
        .collect();
    WifiResult {
        name: m.name.clone(),
        standard: format!("{:?}", m.phy.standard).to_lowercase(),
        mode_rates_bps: m.phy.modes().iter().map(|x| x.rate_bps).collect(),
        stations,
    }
}

fn rtt_result(h: &LogHistogram) -> RttResult {
    RttResult {
        count: h.count(),
        mean_ns: h.mean(),
        min_ns: h.min(),
        p50_ns: h.quantile(0.5),
        p95_ns: h.quantile(0.95),
        max_ns: h.max(),
        srtt_time_mean_ns: None,
    }
}

/// RTT statistics of a sender whose flow ends at `end_ns`.
fn sender_rtt(st: &SenderStats, end_ns: u64) -> RttResult {
    RttResult {
        srtt_time_mean_ns: st.srtt_time_mean_ns(end_ns),
        ..rtt_result(&st.rtt)
    }
}

fn app_name(app: AppConfig) -> &'static str {
    match app {
        AppConfig::Bulk => "bulk",
        AppConfig::File { .. } => "file",
        AppConfig::Cbr { .. } => "cbr",
    }
}

/// Result of a TCP flow (one connection, or a chain of them through PEPs).
fn tcp_flow(sim: &Simulation, i: usize, flow: &Flow, ids: &[u32], relays: &[Relay]) -> FlowResult {
    let end = sim.end.ns();
    let first = &sim.conns[ids[0] as usize];
    let last = &sim.conns[*ids.last().expect("a TCP flow has a connection") as usize];
    let st = first.sender.stats();
    let rx = &last.receiver.stats;
    let start = flow.start.ns();
    let completion = last.receiver.completion.map(|t| t.ns() - start);
    let active = completion.unwrap_or(end - start).max(1);
    let names: Vec<String> = std::iter::once("server".to_string())
        .chain(relays.iter().map(|r| r.name.clone()))
        .chain(std::iter::once("client".to_string()))
        .collect();
    let legs = if ids.len() > 1 {
        ids.iter()
            .enumerate()
            .map(|(l, &c)| {
                let f = &sim.conns[c as usize];
                let done = f.receiver.completion.map(|t| t.ns() - start);
                let span = done.unwrap_or(end - start).max(1);
                LegResult {
                    from: names[l].clone(),
                    to: names[l + 1].clone(),
                    cca: f.cca.clone(),
                    bytes_delivered: f.receiver.stats.bytes_delivered,
                    goodput_bps: f.receiver.stats.bytes_delivered as f64 * 8e9 / span as f64,
                    retransmits: f.sender.stats().retrans_segs,
                    rto_count: f.sender.stats().rto_count,
                    rtt: sender_rtt(f.sender.stats(), start + span),
                    sender_done_ns: f.sender.fin_acked_at().map(|t| t.ns() - start),
                    closed_ns: f.receiver.closed_at.map(|t| t.ns() - start),
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let pep_buffer = relays
        .iter()
        .map(|r| PepBufferResult {
            node: r.name.clone(),
            mean_bytes: r.occupancy.area as f64 / (end - start).max(1) as f64,
            max_bytes: r.occupancy.max,
            limit_bytes: r.limit_bytes,
        })
        .collect();
    FlowResult {
        id: i as u32,
        cca: flow.cca.clone(),
        start_ns: start,
        app: app_name(flow.app),
        bytes_delivered: rx.bytes_delivered,
        bytes_sent: st.bytes_sent,
        segments_sent: st.segments_sent,
        retransmits: st.retrans_segs,
        goodput_bps: rx.bytes_delivered as f64 * 8e9 / active as f64,
        throughput_bps: st.bytes_sent as f64 * 8e9 / active as f64,
        active_ns: active,
        completion_ns: completion,
        server_done_ns: first.sender.fin_acked_at().map(|t| t.ns() - start),
        closed_ns: last.receiver.closed_at.map(|t| t.ns() - start),
        rtt: sender_rtt(st, start + active),
        rto_count: st.rto_count,
        fast_recoveries: st.fast_recoveries,
        spurious_undos: st.undos,
        tlp_probes: st.tlp_probes,
        final_cwnd_bytes: first.sender.cwnd_bytes(),
        final_ssthresh_bytes: first
            .sender
            .ssthresh_bytes()
            .min(u32::MAX as u64 * first.sender.mss() as u64),
        dup_bytes_received: rx.dup_bytes,
        acks_sent: rx.acks_sent,
        kind: "tcp",
        legs,
        pep_buffer,
        packets_sent: None,
        packets_received: None,
        loss_ratio: None,
        owd: None,
    }
}

/// Result of a CBR flow.
fn cbr_flow(
    sim: &Simulation,
    i: usize,
    flow: &Flow,
    source: &UdpSource,
    sink: &UdpSink,
) -> FlowResult {
    let start = flow.start.ns();
    let active = (sim.end.ns() - start).max(1);
    let sent = source.packets_sent * source.packet_bytes() as u64;
    FlowResult {
        id: i as u32,
        cca: flow.cca.clone(),
        start_ns: start,
        app: "cbr",
        bytes_delivered: sink.bytes_received,
        bytes_sent: sent,
        segments_sent: source.packets_sent,
        retransmits: 0,
        goodput_bps: sink.bytes_received as f64 * 8e9 / active as f64,
        throughput_bps: sent as f64 * 8e9 / active as f64,
        active_ns: active,
        completion_ns: None,
        server_done_ns: None,
        closed_ns: None,
        rtt: rtt_result(&LogHistogram::default()),
        rto_count: 0,
        fast_recoveries: 0,
        spurious_undos: 0,
        tlp_probes: 0,
        final_cwnd_bytes: 0,
        final_ssthresh_bytes: 0,
        dup_bytes_received: 0,
        acks_sent: 0,
        kind: "cbr",
        legs: Vec::new(),
        pep_buffer: Vec::new(),
        packets_sent: Some(source.packets_sent),
        packets_received: Some(sink.packets_received),
        loss_ratio: Some(sink.loss_ratio()),
        owd: Some(rtt_result(&sink.owd)),
    }
}

/// Summarize a finished simulation.
pub fn summarize(sim: &Simulation) -> RunResult {
    let end = sim.end.ns();
    let flows = sim
        .flows
        .iter()
        .enumerate()
        .map(|(i, flow)| match &flow.kind {
            FlowKind::Tcp { conns, relays } => tcp_flow(sim, i, flow, conns, relays),
            FlowKind::Udp { source, sink, .. } => cbr_flow(sim, i, flow, source, sink),
        })
        .collect();
    let links = sim
        .topo
        .segments
        .iter()
        .flat_map(|(_, f, r)| [*f, *r])
        .collect::<Vec<u32>>()
        .iter()
        .map(|&id| LinkResult::from_link(&sim.topo.links[id as usize], end))
        .collect();
    RunResult {
        name: sim.cfg.name.clone(),
        seed: sim.cfg.seed,
        duration_ns: end,
        events: sim.events(),
        core_version: crate::VERSION,
        model_version: crate::MODEL_VERSION,
        flows,
        links,
        wifi: sim.topo.media.iter().map(|m| wifi_result(m, end)).collect(),
        series: series_result(sim),
        cross: cross_result(sim),
    }
}

fn cross_result(sim: &Simulation) -> Vec<CrossResult> {
    let secs = sim.end.ns() as f64 / 1e9;
    sim.cross
        .iter()
        .zip(&sim.cfg.cross)
        .map(|(src, cfg)| {
            let c = &src.counters;
            let route = sim.topo.cross_routes[src.index as usize];
            let link = sim.topo.route_links(route)[0];
            CrossResult {
                id: src.index,
                kind: cfg.kind_name(),
                link: sim.topo.links[link as usize].name.clone(),
                counters: c.clone(),
                sent_bps: c.bytes_sent as f64 * 8.0 / secs,
                delivered_bps: c.bytes_delivered as f64 * 8.0 / secs,
                tcp: src
                    .tcp
                    .as_deref()
                    .map(|t| tcp_cross_result(sim, src.index, t)),
            }
        })
        .collect()
}

/// The connections of TCP cross source `source`: the closed ones' sums and the open ones'
/// counters so far.
fn tcp_cross_result(sim: &Simulation, source: u32, t: &TcpCross) -> TcpCrossResult {
    let secs = sim.end.ns() as f64 / 1e9;
    let mut s = t.stats.clone();
    let mut open = 0;
    for &g in &t.slots {
        if let Some(c) = &sim.xconns[g as usize].conn {
            add_counters(&mut s, c);
            open += 1;
        }
    }
    debug_assert_eq!(
        sim.xconns.iter().filter(|x| x.source == source).count(),
        t.slots.len()
    );
    TcpCrossResult {
        cca: t.cca.clone(),
        rtt_ns: t.rtt_ns,
        max_connections: t.max_connections,
        connections_started: s.started,
        connections_completed: s.completed,
        connections_refused: s.refused,
        connections_open: open,
        connections_peak: t.pool.made(),
        completion_mean_ns: (s.completed > 0)
            .then(|| (s.completion_total_ns / s.completed as u128) as u64),
        payload_bytes_delivered: s.payload_bytes,
        goodput_bps: s.payload_bytes as f64 * 8.0 / secs,
        retransmits: s.retransmits,
        rto_count: s.rto_count,
    }
}

/// The series part of `summarize`: a copy of the samples a memory-mode run kept.
fn series_result(sim: &Simulation) -> SeriesResult {
    let sr = &sim.series;
    let held = &sr.held;
    let kept = sr.in_memory();
    SeriesResult {
        interval_ns: sr.interval.ns(),
        t_ns: if kept { held.t_ns.clone() } else { Vec::new() },
        flows: if kept { held.flows.clone() } else { Vec::new() },
        bottleneck_queue_pkts: if kept {
            held.bottleneck_queue_pkts.clone()
        } else {
            Vec::new()
        },
        bottleneck_utilization: if kept {
            held.bottleneck_utilization.clone()
        } else {
            Vec::new()
        },
        streamed: (!kept).then_some(StreamedSeries {
            intervals: sr.intervals,
            file: None,
        }),
    }
}
