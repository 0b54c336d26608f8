//! A packet leaving a link is handed at once to the access link behind it when that link
//! alone feeds it (one event for the two hops). That must change nothing but the number of
//! events: these runs, with and without the hand-over, have the same results to the last
//! bit. (A timer due in the nanosecond a packet arrives runs first either way, by the event
//! queue's rule, not by which was scheduled first; on a link that spaces packets evenly the
//! delayed-ACK timer, whose timeout follows the arrival gaps, often falls due exactly then.
//! Only two arrivals on different links in one nanosecond may swap.)
mod common;
use common::*;
use serde_json::{json, Value};
use tcplab_core::api;
use tcplab_core::scenario::{AppConfig, ScenarioConfig};
use tcplab_core::sim::Simulation;

/// The run's result as JSON without its event count, and the event count.
fn run(cfg: &ScenarioConfig, hand_over: bool) -> (Value, u64) {
    let mut sim = Simulation::new(cfg.clone()).unwrap();
    sim.set_hand_over(hand_over);
    sim.run();
    let mut v = serde_json::to_value(api::summarize(&sim)).unwrap();
    let events = v["events"].as_u64().unwrap();
    v.as_object_mut().unwrap().remove("events");
    (v, events)
}

/// Same results both ways; returns the events of each (with, without the hand-over).
fn same_results(cfg: &ScenarioConfig) -> (u64, u64) {
    let (a, events_a) = run(cfg, true);
    let (b, events_b) = run(cfg, false);
    if a != b {
        std::fs::write("/tmp/g/ho_a.json", a.to_string()).unwrap();
        std::fs::write("/tmp/g/ho_b.json", b.to_string()).unwrap();
    }
    assert!(a == b, "results differ with and without the hand-over");
    (events_a, events_b)
}

#[test]
fn a_lossy_geo_download_is_the_same_with_a_third_fewer_events() {
    let mut cfg = Spec {
        per: 2e-3,
        duration_s: 120,
        ..Spec::geo("cubic")
    }
    .build();
    cfg.flows[0].app = AppConfig::File {
        size_bytes: 20_000_000,
    };
    let (with, without) = same_results(&cfg);
    // data: three hops, two events; ACKs (one per two segments): three hops, two events,
    // so 4.5 events a segment become 3 (timers and the like aside)
    let ratio = with as f64 / without as f64;
    assert!((0.64..0.72).contains(&ratio), "{with} / {without} events");
}

/// A split-TCP gateway in front of a slow last mile: the satellite leg's bursts reach the
/// client's 5 Mbit/s access link at 10 Mbit/s and overflow its 8-packet router port, so
/// the access link refuses packets handed to it ahead of time (they must be lost when they
/// arrive, not earlier), and the server's own interface drops its bursts.
#[test]
fn a_pep_burst_into_a_small_last_mile_queue_loses_the_same_packets() {
    let dir = |rate: u64, delay_ms: f64, per: f64, queue_pkts: u64| {
        json!({"rate_bps": rate, "delay_ns": (delay_ms * 1e6) as u64, "per": per,
               "queue": {"limit_pkts": queue_pkts}})
    };
    let path = json!({"pep": "gateway", "segments": [
        {"name": "internet", "forward": dir(100_000_000, 10.0, 0.0, 1000),
                             "reverse": dir(100_000_000, 10.0, 0.0, 1000)},
        {"name": "satellite", "forward": dir(10_000_000, 260.0, 1e-4, 918),
                              "reverse": dir(2_000_000, 260.0, 0.0, 918)},
        {"name": "last-mile", "forward": dir(100_000_000, 5.0, 0.0, 1000),
                              "reverse": dir(100_000_000, 5.0, 0.0, 1000)}]});
    let v = json!({"name": "pep", "seed": 3, "duration_ns": 60_000_000_000u64,
        "path": path, "access": {"rate_bps": 1_000_000_000u64, "delay_ns": 100_000},
        "flows": [{"cca": "cubic", "app": {"kind": "bulk"},
                   "pep": {"cca": "hybla"},
                   "access": {"rate_bps": 5_000_000, "delay_ns": 1_000_000, "queue_pkts": 8}},
                  {"cca": "reno", "app": {"kind": "bulk"}}]});
    let cfg = ScenarioConfig::from_json(&v.to_string()).unwrap();
    let (with, without) = same_results(&cfg);
    assert!(with < without);
    // the client's link, not the path, is where the satellite leg loses: no queue drop on
    // the way, and the leg retransmits far more than the satellite's errors explain
    let (r, _) = run(&cfg, true);
    let leg = &r["flows"][0]["legs"][1];
    let delivered = leg["bytes_delivered"].as_f64().unwrap() / 1448.0;
    let retransmits = leg["retransmits"].as_f64().unwrap();
    assert!(
        retransmits > 10.0 * 1e-4 * delivered,
        "{retransmits} retransmits for {delivered} segments"
    );
}

/// A CBR flow beside a TCP flow over a lossy GEO link: UDP packets are handed over too.
#[test]
fn a_cbr_flow_beside_a_tcp_flow_is_the_same() {
    let mut cfg = Spec {
        per: 1e-3,
        duration_s: 60,
        flows: 2,
        ..Spec::geo("cubic")
    }
    .build();
    cfg.flows[1].app = AppConfig::Cbr {
        rate_bps: 1_000_000,
        packet_bytes: 1200,
    };
    let (with, without) = same_results(&cfg);
    assert!(with < without);
}

/// Which access links are handed packets: on a dumbbell, each flow's router ports (the
/// receiver's for data, the sender's for ACKs), fed by the bottleneck's two directions; never
/// a host's own interface, which its host feeds. Behind a gateway PEP the client's port is
/// fed by the last segment and the server's by the first.
#[test]
fn router_ports_are_fed_by_one_link_and_host_interfaces_by_their_host() {
    use tcplab_core::net::topology::NO_FEEDER;
    let sim = Simulation::new(
        Spec {
            flows: 2,
            ..Spec::geo("cubic")
        }
        .build(),
    )
    .unwrap();
    let t = &sim.topo;
    let (f, r) = (t.bottleneck_fwd, t.bottleneck_rev);
    // per flow: sender_up, receiver_down, receiver_up, sender_down
    assert_eq!(
        t.access_feeder,
        [NO_FEEDER, f, NO_FEEDER, r, NO_FEEDER, f, NO_FEEDER, r]
    );
    let dir = json!({"rate_bps": 10_000_000u64, "delay_ns": 10_000_000u64,
                     "queue": {"limit_pkts": 100}});
    let seg = |name: &str| json!({"name": name, "forward": dir, "reverse": dir});
    let v = json!({"name": "pep", "seed": 1, "duration_ns": 1_000_000_000u64,
        "path": {"pep": "gateway", "segments": [seg("internet"), seg("satellite"), seg("last")]},
        "access": {"rate_bps": 1_000_000_000u64, "delay_ns": 100_000},
        "flows": [{"cca": "cubic", "app": {"kind": "bulk"}, "pep": {"cca": "hybla"}}]});
    let sim = Simulation::new(ScenarioConfig::from_json(&v.to_string()).unwrap()).unwrap();
    let t = &sim.topo;
    let names: Vec<&str> = t.links.iter().map(|l| l.name.as_str()).collect();
    let link = |name: &str| names.iter().position(|n| *n == name).expect(name) as u32;
    assert_eq!(
        t.access_feeder,
        [
            NO_FEEDER,
            link("last.forward"),
            NO_FEEDER,
            link("internet.reverse")
        ]
    );
}
