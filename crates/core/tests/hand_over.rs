//! A packet leaving a link is handed at once to the access link behind it when that link
//! alone feeds it (one event for the two hops), and a packet leaving a host is passed on at
//! once to the link behind the host's interface when that interface alone feeds it. Neither
//! may change anything but the number of events: these runs, with and without each, have
//! the same results to the last bit. (A timer due in the nanosecond a packet arrives runs first either way, by the event
//! queue's rule, not by which was scheduled first; on a link that spaces packets evenly the
//! delayed-ACK timer, whose timeout follows the arrival gaps, often falls due exactly then.
//! Only two arrivals on different links in one nanosecond may swap.)
mod common;
use common::*;
use serde_json::{json, Value};
use tcplab_core::api;
use tcplab_core::scenario::{AppConfig, ScenarioConfig};
use tcplab_core::sim::Simulation;

/// The run's result as JSON without its event count, and the event count; `hand_over`
/// turns all three shortcuts on or off (`sim::ahead` is the third).
fn run(cfg: &ScenarioConfig, hand_over: bool) -> (Value, u64) {
    run_with(cfg, hand_over, hand_over, hand_over)
}

fn run_with(cfg: &ScenarioConfig, hand_over: bool, pass_on: bool, ahead: bool) -> (Value, u64) {
    let mut sim = Simulation::new(cfg.clone()).unwrap();
    sim.set_hand_over(hand_over);
    sim.set_pass_on(pass_on);
    sim.set_deliver_ahead(ahead);
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
fn a_lossy_geo_download_is_the_same_with_a_third_of_the_events() {
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
    // data: three hops, one event (the host's interface and the bottleneck, then the
    // bottleneck and the receiver's port); ACKs (one per two segments) likewise, so 4.5
    // events a segment become 1.5; timers (delayed ACKs, RTOs re-armed, TLP) add the same
    // few to both, which lifts the ratio a little above a third
    let (a, stepped) = run_with(&cfg, true, true, false);
    assert_eq!(a, run(&cfg, true).0);
    // handed to its endpoint ahead of time, a segment takes an event only when the one
    // before it was itself handled ahead or a timer or series sample comes first: a flight
    // of segments, or of their ACKs, takes about one
    assert!(with * 4 < stepped, "{with} / {stepped} events");
    let ratio = stepped as f64 / without as f64;
    assert!(
        (0.333..0.40).contains(&ratio),
        "{stepped} / {without} events"
    );
    // the hand-over alone: two events for three hops, 4.5 a segment become 3
    let (a, hand_over) = run_with(&cfg, true, false, false);
    assert_eq!(a, run(&cfg, true).0);
    let ratio = hand_over as f64 / without as f64;
    assert!(
        (0.64..0.72).contains(&ratio),
        "{hand_over} / {without} events"
    );
}

/// Passing packets on from the host is exact for every link that decides at admission:
/// outages, a loss model, RED marking, a rate trace, a delivery trace and a policer on the
/// link behind the host's interface (each of these is a function of the offer's time and
/// the order of offers); CoDel, which serves its queue in events, is never passed to. The
/// series, every 10 ms, reads the bottleneck's queue: a packet that would reach it after the
/// next sample takes its event, and so do the packets behind it while it is on its way (the
/// hosts' interfaces have 3 ms of delay, so there often are some; passed on, they would
/// reach the link before it).
#[test]
fn every_link_model_behind_a_host_gives_the_same_results() {
    let plain = json!({"rate_bps": 10_000_000u64, "delay_ns": 20_000_000u64, "per": 1e-3,
                       "queue": {"kind": "droptail", "limit_pkts": 100}});
    let with = |extra: Value| {
        let mut d = plain.clone();
        for (k, v) in extra.as_object().unwrap() {
            d[k] = v.clone();
        }
        d
    };
    let models = [
        json!({"outages": [[2_000_000_000u64, 3_500_000_000u64]]}),
        json!({"loss": {"kind": "gilbert_elliott", "p_gb": 0.01, "p_bg": 0.1,
                        "loss_good": 0.0, "loss_bad": 0.5}}),
        json!({"queue": {"kind": "red", "limit_pkts": 100, "red": {"min_th_pkts": 5,
               "max_th_pkts": 15, "max_p": 0.1, "w_q": 0.002, "gentle": true, "ecn": true}}}),
        json!({"rate_trace": [[0, 10_000_000u64, 20_000_000u64],
                              [3_000_000_000u64, 2_000_000u64, 40_000_000u64],
                              [6_000_000_000u64, 20_000_000u64, null]]}),
        json!({"delivery_trace": {"opportunities_ns": [0, 500_000u64, 2_000_000u64],
                                  "period_ns": 3_000_000u64}}),
        json!({"policer": {"rate_bps": 5_000_000u64, "burst_bytes": 30_000u64}}),
        json!({"queue": {"kind": "codel", "limit_pkts": 100,
               "codel": {"target_ns": 5_000_000u64, "interval_ns": 100_000_000u64,
                         "ecn": true}}}),
    ];
    for (i, model) in models.into_iter().enumerate() {
        let link = with(model);
        let v = json!({"name": "models", "seed": 7, "duration_ns": 10_000_000_000u64,
            "interval_ns": 10_000_000u64,
            "bottleneck": {"forward": link, "reverse": link},
            "access": {"rate_bps": 1_000_000_000u64, "delay_ns": 3_000_000u64},
            "flows": [{"cca": "cubic", "app": {"kind": "bulk"}, "tcp": {"ecn": true}}]});
        let cfg = ScenarioConfig::from_json(&v.to_string()).unwrap();
        let (a, events_a) = run_with(&cfg, true, true, false);
        let (b, events_b) = run_with(&cfg, true, false, false);
        assert!(
            a == b,
            "model {i}: results differ with and without passing on"
        );
        let passed = events_a < events_b;
        assert_eq!(passed, i < 6, "model {i}: {events_a} / {events_b} events");
    }
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
    // the hosts' interfaces pass on into the first segment and the last one's return
    assert_eq!(
        t.access_feeds,
        [
            link("internet.forward"),
            NO_FEEDER,
            link("last.reverse"),
            NO_FEEDER
        ]
    );
}

/// Which links a host's interface passes packets on to: the bottleneck's two directions for
/// a single flow; nothing when two flows (or cross traffic) share them, or when the host's
/// interface has a queue limit (it could refuse a packet).
#[test]
fn a_host_passes_on_only_to_a_link_it_alone_feeds() {
    use tcplab_core::net::topology::NO_FEEDER;
    let feeds = |cfg: ScenarioConfig| Simulation::new(cfg).unwrap().topo.access_feeds.clone();
    let one = Spec::geo("cubic").build();
    let (f, r) = (0, 1);
    assert_eq!(feeds(one.clone()), [f, NO_FEEDER, r, NO_FEEDER]);
    let two = Spec {
        flows: 2,
        ..Spec::geo("cubic")
    }
    .build();
    assert_eq!(feeds(two), [NO_FEEDER; 8]);
    let mut limited = one.clone();
    limited.access.queue_pkts = Some(50);
    assert_eq!(feeds(limited), [NO_FEEDER; 4]);
    let mut v = json!({
        "name": "x", "seed": 1, "duration_ns": 1_000_000_000u64,
        "bottleneck": {"forward": {"rate_bps": 4_000_000u64, "delay_ns": 250_000_000u64,
                                   "queue": {"kind": "droptail", "limit_pkts": 334}},
                       "reverse": {"rate_bps": 4_000_000u64, "delay_ns": 250_000_000u64,
                                   "queue": {"kind": "droptail", "limit_pkts": 334}}},
        "access": {"rate_bps": 1_000_000_000u64, "delay_ns": 100_000},
        "flows": [{"cca": "cubic", "app": {"kind": "bulk"}}]});
    let cfg = |v: &Value| ScenarioConfig::from_json(&v.to_string()).unwrap();
    assert_eq!(feeds(cfg(&v)), [f, NO_FEEDER, r, NO_FEEDER]);
    let exp = json!({"dist": "exponential", "mean": 5e8});
    v["cross"] = json!([{"kind": "on_off", "peak_bps": 1_000_000u64, "packet_bytes": 1500,
                         "on": exp, "off": exp}]);
    assert_eq!(feeds(cfg(&v)), [NO_FEEDER, NO_FEEDER, r, NO_FEEDER]);
    // TCP cross traffic's connections, made during the run, cross both directions
    v["cross"] = json!([{"kind": "tcp_flows", "offered_bps": 1_000_000u64,
                         "size": {"dist": "exponential", "mean": 1e5}}]);
    assert_eq!(feeds(cfg(&v)), [NO_FEEDER; 4]);
}

/// A traced run writes the same captures and event log, byte for byte, whether packets are
/// passed on from the hosts or not (the frames a host passes on are seen entering the
/// bottleneck ahead of time and written when their capture file reaches them), and has the
/// result of the untraced run, event count included.
#[test]
fn captures_are_the_same_bytes_when_hosts_pass_packets_on() {
    use tcplab_core::sim::trace::Tracer;
    // hosts 2 ms from a 0.5 ms bottleneck: a frame a host passes on enters the bottleneck
    // after ACKs that leave it later are known, so the capture must merge the two
    let dir = json!({"rate_bps": 20_000_000u64, "delay_ns": 500_000u64, "per": 1e-3,
                     "queue": {"kind": "droptail", "limit_pkts": 50}});
    let v = json!({"name": "near", "seed": 5, "duration_ns": 10_000_000_000u64,
        "interval_ns": 100_000_000u64,
        "bottleneck": {"forward": dir, "reverse": dir},
        "access": {"rate_bps": 100_000_000u64, "delay_ns": 2_000_000u64},
        "flows": [{"cca": "cubic", "app": {"kind": "bulk"}}]});
    let cfg = ScenarioConfig::from_json(&v.to_string()).unwrap();
    let traced = |pass_on: bool| {
        let dir =
            std::env::temp_dir().join(format!("tcplab-pass-on-{}-{pass_on}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut sim = Simulation::new(cfg.clone()).unwrap();
        sim.set_pass_on(pass_on);
        let tracer = Tracer::new(&trace_spec(&dir, true), &sim).unwrap();
        sim.set_tracer(tracer);
        sim.run();
        let report = sim.take_tracer().unwrap().finish().unwrap();
        let files = take_files(&dir);
        let frames: u64 = report.captures.iter().map(|c| c.packets).sum();
        let v = serde_json::to_value(api::summarize(&sim)).unwrap();
        (v, files, frames)
    };
    let (passed, files_passed, frames) = traced(true);
    let (stepped, files_stepped, _) = traced(false);
    assert_eq!(files_passed.len(), 3, "two captures and the event log");
    // 10 s at up to 20 Mbit/s: ~1,700 segments a second and their ACKs, at both ends
    assert!(frames > 20_000, "{frames} frames");
    for ((name, a), (_, b)) in files_passed.iter().zip(&files_stepped) {
        assert!(a == b, "{name} differs ({} / {} bytes)", a.len(), b.len());
    }
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("events");
        v
    };
    assert!(passed["events"].as_u64() < stepped["events"].as_u64());
    assert_eq!(strip(passed.clone()), strip(stepped));
    let plain = |ahead: bool| {
        let mut sim = Simulation::new(cfg.clone()).unwrap();
        sim.set_deliver_ahead(ahead);
        sim.run();
        serde_json::to_value(api::summarize(&sim)).unwrap()
    };
    assert_eq!(passed, plain(true));
    let stepped = plain(false);
    assert!(passed["events"].as_u64() < stepped["events"].as_u64());
    assert_eq!(strip(passed), strip(stepped));
}
