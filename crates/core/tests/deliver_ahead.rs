//! An endpoint handles a packet on its last hop as soon as its arrival time is known
//! (`sim::ahead`) whenever nothing else could reach it first. That may change nothing but
//! the number of events: these runs, with and without it, have the same results and the
//! same series to the last bit, with packets from different flows reaching the bottleneck
//! in the same nanosecond (their order is the links', not the order the simulation learned
//! of them), timers of every kind, a series sample every 10 ms, flows that end, ns-2 agents
//! and traffic beside the flows.
use serde_json::{json, Value};
use tcplab_core::api;
use tcplab_core::scenario::ScenarioConfig;
use tcplab_core::sim::Simulation;

/// The result without its event count, the series, and the event count.
fn run(cfg: &ScenarioConfig, ahead: bool) -> (Value, String, u64) {
    let mut sim = Simulation::new(cfg.clone()).unwrap();
    sim.set_deliver_ahead(ahead);
    sim.run();
    let mut v = serde_json::to_value(api::summarize(&sim)).unwrap();
    let events = v["events"].as_u64().unwrap();
    v.as_object_mut().unwrap().remove("events");
    (v, format!("{:?}", sim.series.held), events)
}

/// Same results and series both ways; the events with and without handing ahead.
fn same_both_ways(cfg: &ScenarioConfig) -> (u64, u64) {
    let (a, series_a, with) = run(cfg, true);
    let (b, series_b, without) = run(cfg, false);
    assert!(a == b, "results differ with and without handing ahead");
    assert!(series_a == series_b, "series differ");
    assert!(series_a.len() > 10_000, "the series were kept");
    (with, without)
}

fn dir(rate_bps: u64, delay_ns: u64, per: f64, limit_pkts: u64) -> Value {
    json!({"rate_bps": rate_bps, "delay_ns": delay_ns, "per": per,
           "queue": {"kind": "droptail", "limit_pkts": limit_pkts}})
}

/// 200 CUBIC flows starting 7.9 ms apart over a 1 Gbit/s, 20 ms bottleneck: segments
/// leave it back to back, whole serialization times apart, so one flow's delayed-ACK timer
/// sometimes falls due in the nanosecond another flow's segment arrives, and the two ACKs
/// reach the return link together (with arrivals of one nanosecond taken in scheduling
/// order, these runs differ from 1 s on).
#[test]
fn two_hundred_flows_are_the_same_with_half_the_events() {
    let flows: Vec<Value> = (0..200u64)
        .map(|i| json!({"cca": "cubic", "start_ns": i * 7_919_013, "app": {"kind": "bulk"}}))
        .collect();
    let link = dir(1_000_000_000, 20_000_000, 0.0, 3_400);
    let v = json!({"name": "many", "seed": 4, "duration_ns": 3_000_000_000u64,
        "interval_ns": 10_000_000u64,
        "bottleneck": {"forward": link, "reverse": link},
        "access": {"rate_bps": 1_000_000_000u64, "delay_ns": 100_000u64},
        "flows": flows});
    let cfg = ScenarioConfig::from_json(&v.to_string()).unwrap();
    let (with, without) = same_both_ways(&cfg);
    // without: a segment takes an event on each flow's two access links it is handed to
    // (its sender's interface, then the receiver's port), its ACK (one per two segments)
    // the same, 3 a segment; handed ahead, the receiver's port and the sender's take none
    // but at a series sample or a due timer: 1.5, and timers alike in both lift the ratio
    let ratio = with as f64 / without as f64;
    assert!((0.5..0.6).contains(&ratio), "{with} / {without} events");
}

/// Every kind of endpoint and traffic on one lossy path: a file download (its end and
/// FIN), BBR pacing its segments, Reno with ECN, an ns-2 agent (never handed ahead), a CBR
/// flow, and on/off cross traffic into the bottleneck; hosts with queue-limited ports.
#[test]
fn every_kind_of_flow_is_the_same() {
    let link = dir(20_000_000, 15_000_000, 2e-3, 120);
    let v = json!({"name": "mixed", "seed": 9, "duration_ns": 20_000_000_000u64,
        "interval_ns": 10_000_000u64,
        "bottleneck": {"forward": link, "reverse": dir(20_000_000, 15_000_000, 0.0, 120)},
        "access": {"rate_bps": 100_000_000u64, "delay_ns": 1_000_000u64, "queue_pkts": 20},
        "cross": [{"kind": "on_off", "peak_bps": 4_000_000u64, "packet_bytes": 1200,
                   "on": {"dist": "exponential", "mean": 2e8},
                   "off": {"dist": "exponential", "mean": 3e8}}],
        "flows": [
            {"cca": "cubic", "app": {"kind": "file", "size_bytes": 3_000_000u64}},
            {"cca": "bbr", "start_ns": 500_000_000u64, "app": {"kind": "bulk"},
             "tcp": {"pacing": true}},
            {"cca": "reno", "start_ns": 1_000_000_000u64, "app": {"kind": "bulk"},
             "tcp": {"ecn": true}},
            {"cca": "newreno", "start_ns": 1_500_000_000u64, "app": {"kind": "bulk"},
             "tcp": {"stack": "ns2", "timestamps": false, "sack": false}},
            {"cca": "cubic", "start_ns": 2_000_000_000u64,
             "app": {"kind": "cbr", "rate_bps": 1_000_000u64, "packet_bytes": 1000}}]});
    let cfg = ScenarioConfig::from_json(&v.to_string()).unwrap();
    let (with, without) = same_both_ways(&cfg);
    assert!(with < without, "{with} / {without} events");
}

/// Where the event loop looks for what the next delivery on an access link will read
/// (`access_flow_end`, from the link's number alone) agrees with the routes: the access
/// links of a connection's data route carry packets to its receiver, those of its ACK route
/// to its sender, each of its own flow.
#[test]
fn an_access_links_number_tells_its_flow_and_where_its_packets_go() {
    use tcplab_core::net::topology::{access_flow_end, Topology};
    use tcplab_core::tcp::connection::Side;
    let flows: Vec<Value> = (0..3)
        .map(|_| json!({"cca": "cubic", "app": {"kind": "bulk"}}))
        .collect();
    let link = dir(10_000_000, 5_000_000, 0.0, 100);
    let v = json!({"name": "three", "seed": 1, "duration_ns": 1_000_000_000u64,
        "bottleneck": {"forward": link, "reverse": link},
        "access": {"rate_bps": 100_000_000u64, "delay_ns": 100_000u64}, "flows": flows});
    let sim = Simulation::new(ScenarioConfig::from_json(&v.to_string()).unwrap()).unwrap();
    let t = &sim.topo;
    let mut seen = 0;
    for conn in 0..3u32 {
        for (route, side) in [
            (Topology::data_route(conn), Side::Receiver),
            (Topology::ack_route(conn), Side::Sender),
        ] {
            for &l in t.route_links(route) {
                if let Some(a) = t.access_index(l) {
                    assert_eq!(
                        access_flow_end(a),
                        (conn as usize, side),
                        "{}",
                        t.links[l as usize].name
                    );
                    seen += 1;
                }
            }
        }
    }
    assert_eq!(seen, 12, "four access links a flow");
}
