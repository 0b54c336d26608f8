//! The resource budget: what a run will cost, estimated from its normalized scenario
//! before it starts, so that a run that would take days or more memory than the machine
//! has is refused in one line instead of running for years or aborting.
//!
//! The estimates are upper bounds of the usual case, not predictions: events assume the
//! path is kept full by its TCP flows (bulk flows send for the whole run, a download at most
//! its file), every packet costs an event per hop and one more at its endpoint, and every
//! data packet is acknowledged; memory counts each flow's state, the packets the path's
//! queues and pipes can hold, and the series when the run keeps them. A run is refused when
//! either exceeds its limit (`limits::MAX_EVENTS`, `limits::MAX_MEMORY_BYTES`) unless the
//! caller forces it.
use crate::limits::{
    FLOW_STATE_BYTES, MAX_EVENTS, MAX_MEMORY_BYTES, MEMORY_SERIES_BYTES_PER_FLOW_INTERVAL,
};
use crate::net::packet::{Packet, BASE_HEADER_BYTES, TS_OPTION_BYTES, UDP_HEADER_BYTES};
use crate::scenario::{AppConfig, CrossConfig, DirConfig, PepMode, ScenarioConfig};
use serde::Serialize;

/// Where a run's series go, as far as its cost is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesCost {
    /// Not kept: an interval costs one event.
    None,
    /// Streamed to a file: an interval also reads every flow's counters.
    Streamed,
    /// Kept in the result: each flow-interval also stays in memory.
    Memory,
}

/// A run's estimated cost and the limits it is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Budget {
    pub events: u64,
    pub memory_bytes: u64,
    pub max_events: u64,
    pub max_memory_bytes: u64,
}

impl Budget {
    /// The one-line refusal when the estimate exceeds a limit (both named when both do).
    pub fn refusal(&self) -> Option<String> {
        let mut over = Vec::new();
        if self.events > self.max_events {
            over.push(format!(
                "about {} events (limit {})",
                sci(self.events),
                sci(self.max_events)
            ));
        }
        if self.memory_bytes > self.max_memory_bytes {
            over.push(format!(
                "about {} of memory (limit {})",
                gib(self.memory_bytes),
                gib(self.max_memory_bytes)
            ));
        }
        (!over.is_empty()).then(|| format!("resource budget exceeded: {}", over.join(" and ")))
    }
}

fn sci(n: u64) -> String {
    format!("{:.1e}", n as f64)
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// The highest rate a direction reaches (its rate trace's peak, or what its delivery
/// opportunities carry per period).
fn peak_rate_bps(d: &DirConfig) -> u128 {
    if let Some(t) = &d.delivery_trace {
        let per_period_bits =
            t.opportunities_ns.len() as u128 * u128::from(t.bytes_per_opportunity) * 8;
        return per_period_bits * 1_000_000_000 / u128::from(t.period_ns.max(1));
    }
    let traced = d.rate_trace.iter().flatten().map(|p| p.rate_bps).max();
    u128::from(traced.unwrap_or(0).max(d.rate_bps))
}

/// Packets a direction can hold: its queue plus what its pipe carries at the peak rate.
fn held_packets(d: &DirConfig, wire_bytes: u128) -> u128 {
    let queue = match (d.queue.limit_pkts, d.queue.limit_bytes) {
        (Some(p), _) => u128::from(p),
        (None, Some(b)) => u128::from(b) / wire_bytes,
        (None, None) => 0,
    };
    let pipe_bits = peak_rate_bps(d) * u128::from(d.delay_ns) / 1_000_000_000;
    queue + pipe_bits / (8 * wire_bytes)
}

/// Estimate what running `cfg` costs, its series going where `series` says.
pub fn estimate(cfg: &ScenarioConfig, series: SeriesCost) -> Budget {
    let (segments, pep) = cfg.segments();
    let duration_ns = u128::from(cfg.duration_ns);
    let flows = cfg.flows.len() as u128;
    // each packet: one event per link it crosses (two access links and the path) and one
    // where it arrives
    let hops = segments.len() as u128 + 3;
    let mut tcp_demand_bits: Option<u128> = Some(0);
    let mut min_tcp_wire = u128::MAX;
    let mut udp_packets: u128 = 0;
    for f in &cfg.flows {
        let active_ns = duration_ns.saturating_sub(u128::from(f.start_ns));
        match f.app {
            AppConfig::Bulk => tcp_demand_bits = None,
            AppConfig::File { size_bytes } => {
                tcp_demand_bits = tcp_demand_bits.map(|d| d + u128::from(size_bytes) * 8)
            }
            AppConfig::Cbr {
                rate_bps,
                packet_bytes,
            } => {
                let wire = u128::from(packet_bytes + UDP_HEADER_BYTES);
                udp_packets += u128::from(rate_bps) * active_ns / 1_000_000_000 / (8 * wire);
            }
        }
        if !matches!(f.app, AppConfig::Cbr { .. }) {
            let ts = if f.tcp.timestamps { TS_OPTION_BYTES } else { 0 };
            min_tcp_wire = min_tcp_wire.min(u128::from(f.tcp.mss_bytes + BASE_HEADER_BYTES + ts));
        }
    }
    let path_bits = segments
        .iter()
        .map(|s| peak_rate_bps(&s.forward))
        .min()
        .unwrap_or(0)
        * duration_ns
        / 1_000_000_000;
    let tcp_bits = tcp_demand_bits.map_or(path_bits, |d| d.min(path_bits));
    let data_packets = if min_tcp_wire == u128::MAX {
        0
    } else {
        tcp_bits / (8 * min_tcp_wire)
    };
    // data and one ACK per data packet, each over every hop
    let packet_events = (2 * data_packets + udp_packets) * hops;
    let intervals = duration_ns / u128::from(cfg.interval_ns.max(1)) + 1;
    let interval_events = match series {
        SeriesCost::None => intervals,
        SeriesCost::Streamed | SeriesCost::Memory => intervals * (flows + 1),
    };
    // a flow's start, handshake and teardown
    let flow_events = flows * 16;
    let (cross_events, cross_state) = tcp_cross_cost(cfg);
    let events = packet_events + interval_events + flow_events + cross_events;

    let conns_per_flow = match pep {
        PepMode::None => 1,
        PepMode::Gateway => 2,
        PepMode::Distributed => 3,
    };
    let state = flows * conns_per_flow * u128::from(FLOW_STATE_BYTES);
    let wire = min_tcp_wire.min(u128::from(crate::limits::MTU_BYTES));
    let packets: u128 = segments
        .iter()
        .map(|s| held_packets(&s.forward, wire) + held_packets(&s.reverse, wire))
        .sum();
    let packet_bytes = packets * std::mem::size_of::<Packet>() as u128;
    let series_bytes = match series {
        SeriesCost::Memory => intervals * flows * u128::from(MEMORY_SERIES_BYTES_PER_FLOW_INTERVAL),
        SeriesCost::None | SeriesCost::Streamed => 0,
    };
    let memory = state + cross_state + packet_bytes + series_bytes;
    let clamp = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
    Budget {
        events: clamp(events),
        memory_bytes: clamp(memory),
        max_events: MAX_EVENTS,
        max_memory_bytes: MAX_MEMORY_BYTES,
    }
}

/// Events and state of TCP cross traffic: each arrival's handshake and teardown (as a
/// flow's) and its offered load in full-size packets, each acknowledged, over its data and
/// ACK routes (a delay link, the segment, arrival: 3 events each way); its most open
/// connections' state. (Open-loop cross traffic is not counted: a burst costs no state, and
/// its packets are bounded by the link it crosses.)
fn tcp_cross_cost(cfg: &ScenarioConfig) -> (u128, u128) {
    let (mut events, mut state) = (0u128, 0u128);
    for c in &cfg.cross {
        let CrossConfig::TcpFlows {
            offered_bps,
            size,
            max_connections,
            ..
        } = c
        else {
            continue;
        };
        let bits = u128::from(*offered_bps) * u128::from(cfg.duration_ns) / 1_000_000_000;
        let mean_bytes = crate::app::cross::Dist::from_config(size).mean().max(1.0);
        let arrivals = (bits as f64 / (8.0 * mean_bytes)) as u128;
        let packets = bits / (8 * u128::from(crate::limits::MTU_BYTES));
        events += arrivals * 16 + 2 * packets * 3;
        state += u128::from(*max_connections) * u128::from(FLOW_STATE_BYTES);
    }
    (events, state)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(rate_bps: u64, duration_s: u64, flows: &str) -> ScenarioConfig {
        let dir = format!(
            r#"{{"rate_bps": {rate_bps}, "delay_ns": 10000000, "queue": {{"limit_pkts": 100}}}}"#
        );
        let text = format!(
            r#"{{"duration_ns": {}, "bottleneck": {{"forward": {dir}, "reverse": {dir}}},
                "access": {{"rate_bps": 1000000000, "delay_ns": 100000}}, "flows": [{flows}]}}"#,
            duration_s * 1_000_000_000
        );
        ScenarioConfig::from_json(&text).unwrap()
    }

    fn files(n: usize, size: u64) -> String {
        vec![format!(r#"{{"cca": "cubic", "app": {{"kind": "file", "size_bytes": {size}}}}}"#); n]
            .join(",")
    }

    const BULK: &str = r#"{"cca": "cubic", "app": {"kind": "bulk"}}"#;

    #[test]
    fn a_bulk_flow_fills_the_path_for_the_whole_run() {
        // 12 Mbit/s for 100 s of 1500-byte packets (MSS 1448 + 40 + 12): 100,000 data
        // packets and as many ACKs, each over 4 hops (two access links, the bottleneck,
        // arrival); 101 intervals; one flow's 16
        let b = estimate(&scenario(12_000_000, 100, BULK), SeriesCost::None);
        assert_eq!(b.events, 200_000 * 4 + 101 + 16);
        // the same with series kept: every interval also reads the flow
        let kept = estimate(&scenario(12_000_000, 100, BULK), SeriesCost::Streamed);
        assert_eq!(kept.events, b.events + 101);
    }

    #[test]
    fn a_download_costs_its_file_not_the_run() {
        // 1,500,000 bytes / 1,500 bytes a packet = 1,000 packets (the bound counts the file
        // in whole packets: 1,036 of 1,448 payload bytes are really sent)
        let b = estimate(
            &scenario(12_000_000, 100, &files(1, 1_500_000)),
            SeriesCost::None,
        );
        assert_eq!(b.events, 2_000 * 4 + 101 + 16);
    }

    #[test]
    fn idle_downloads_for_a_day_fit_unless_their_series_stay_in_memory() {
        let day = scenario(10_000_000, 86_400, &files(1000, 10_000));
        let streamed = estimate(&day, SeriesCost::Streamed);
        assert_eq!(streamed.refusal(), None, "{streamed:?}");
        // 1,000 flows x 86,401 intervals x 200 bytes = 17.3e9 bytes = 16.1 GiB
        let kept = estimate(&day, SeriesCost::Memory);
        assert!(kept.memory_bytes > 86_401 * 1000 * 200, "{kept:?}");
        let why = kept.refusal().unwrap();
        assert!(why.contains("16.1 GiB of memory (limit 4.0 GiB)"), "{why}");
        assert!(!why.contains("events"), "{why}");
    }

    #[test]
    fn tcp_cross_traffic_costs_its_arrivals_and_packets() {
        // 3 Mbit/s of 50 kB downloads for 100 s: 3e8 bits = 750 arrivals (x 16 events) and
        // 25,000 packets of 1500 B, each with an ACK, 3 events each way
        let mut cfg = scenario(12_000_000, 100, BULK);
        let alone = estimate(&cfg, SeriesCost::None);
        cfg.cross = vec![CrossConfig::TcpFlows {
            segment: None,
            reverse: false,
            offered_bps: 3_000_000,
            size: crate::scenario::DistConfig::Constant { mean: 50_000.0 },
            cca: "cubic".into(),
            cca_params: Default::default(),
            max_connections: 100,
            rtt_ns: None,
            tcp: None,
        }];
        let b = estimate(&cfg, SeriesCost::None);
        assert_eq!(b.events - alone.events, 750 * 16 + 25_000 * 2 * 3);
        assert_eq!(b.memory_bytes - alone.memory_bytes, 100 * 6 * 1024);
    }

    #[test]
    fn ten_terabits_for_a_week_is_refused_for_its_events() {
        // 1e13 bit/s x 604,800 s / 12,000 bit = 5.04e14 data packets, x 2 x 4 = 4.0e15
        let b = estimate(
            &scenario(10_000_000_000_000, 604_800, BULK),
            SeriesCost::None,
        );
        let why = b.refusal().unwrap();
        assert!(
            why.starts_with("resource budget exceeded: about 4.0e15 events (limit 5.0e10)"),
            "{why}"
        );
    }
}
