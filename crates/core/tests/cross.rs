//! Cross traffic in full simulations: it takes its share of the link it crosses, the flows
//! under test get the rest, it is reported apart from them, and bad input is one line.
mod common;
use common::{assert_conservation, run_config, Spec};
use tcplab_core::scenario::*;
use tcplab_core::sim::Simulation;

const MBPS: u64 = 1_000_000;

/// One CUBIC bulk flow on a 10 Mbit/s, 40 ms dumbbell (queue 100 packets, 3×BDP) for
/// `secs`, with `cross` on the bottleneck.
fn with_cross(cross: Vec<CrossConfig>, secs: u64, seed: u64) -> ScenarioConfig {
    let mut cfg = Spec {
        rtt_ms: 40.0,
        rate_bps: 10 * MBPS,
        return_rate_bps: 10 * MBPS,
        duration_s: secs,
        cca: "cubic",
        seed,
        ..Default::default()
    }
    .build();
    cfg.cross = cross;
    cfg
}

fn lognormal_flows(offered_bps: u64) -> CrossConfig {
    CrossConfig::Flows {
        segment: None,
        reverse: false,
        offered_bps,
        peak_bps: 5 * MBPS,
        packet_bytes: 1500,
        size: DistConfig::Lognormal {
            mean: 30_000.0,
            sigma: 1.0,
        },
    }
}

#[test]
fn tcp_gets_the_capacity_the_cross_traffic_leaves() {
    // 3 Mbit/s of open-loop cross traffic on 10 Mbit/s: the TCP flow can have the other
    // 7 Mbit/s of wire rate, 7e6 * 1448 / 1500 = 6.76 Mbit/s of payload (timestamps take
    // 12 of the 52 header bytes: 1448 payload bytes per 1500-byte packet).
    let r = run_config(with_cross(vec![lognormal_flows(3 * MBPS)], 120, 1));
    assert_eq!(r.flows.len(), 1, "cross traffic is not a flow");
    assert_eq!(r.cross.len(), 1);
    let c = &r.cross[0];
    assert_eq!(c.link, "bottleneck.forward");
    assert_eq!(c.kind, "flows");
    // offered 3 Mbit/s in about 1500 flows over 120 s: the total of N lognormal sizes
    // (sigma 1, CV^2 = e - 1) with N Poisson has a relative sd of sqrt((1 + CV^2) / N) =
    // sqrt(2.72 / 1500) = 4.3 %, so the realised load is within 3 sd = 13 % (the unit
    // tests check the mean closely over longer runs)
    assert!((c.sent_bps / 3e6 - 1.0).abs() < 0.13, "{}", c.sent_bps);
    assert!(c.counters.bytes_sent <= c.counters.bytes_offered);
    // whatever it lost to the queue, the rest arrived (nothing is left but in flight)
    assert!(c.counters.packets_delivered + c.counters.packets_dropped <= c.counters.packets_sent);
    assert!(
        c.counters.packets_sent - c.counters.packets_delivered - c.counters.packets_dropped < 10
    );
    let left_bps = (10e6 - c.delivered_bps) * 1448.0 / 1500.0;
    let tcp = r.flows[0].goodput_bps;
    assert!(tcp <= left_bps * 1.002, "{tcp} > {left_bps}");
    assert!(tcp >= left_bps * 0.9, "{tcp} < 0.9 x {left_bps}");
    // the link carried both: near full
    assert!(r.links[0].utilization > 0.95, "{}", r.links[0].utilization);
}

#[test]
fn cross_traffic_on_the_reverse_direction_leaves_the_data_alone() {
    // 3 Mbit/s on the ACK direction of a 10 Mbit/s link whose ACKs need ~0.3 Mbit/s: the
    // data direction stays the flow's (6.76 Mbit/s of payload at 7 Mbit/s becomes ~9.65).
    let mut cross = lognormal_flows(3 * MBPS);
    if let CrossConfig::Flows { reverse, .. } = &mut cross {
        *reverse = true;
    }
    let r = run_config(with_cross(vec![cross], 60, 2));
    assert_eq!(r.cross[0].link, "bottleneck.reverse");
    assert!(r.flows[0].goodput_bps > 9.0e6, "{}", r.flows[0].goodput_bps);
}

#[test]
fn packets_are_conserved_and_runs_repeat() {
    let on_off = CrossConfig::OnOff {
        segment: Some("bottleneck".into()),
        reverse: false,
        peak_bps: 8 * MBPS,
        packet_bytes: 1000,
        on: DistConfig::Pareto {
            mean: 50e6,
            shape: 1.5,
        },
        off: DistConfig::Exponential { mean: 150e6 },
    };
    let cfg = with_cross(vec![lognormal_flows(2 * MBPS), on_off], 30, 3);
    let mut sim = Simulation::new(cfg.clone()).unwrap();
    sim.run();
    assert_conservation(&sim);
    let a = tcplab_core::result::summarize(&sim);
    let b = run_config(cfg);
    assert_eq!(
        a.cross[1].counters.bytes_sent,
        b.cross[1].counters.bytes_sent
    );
    assert_eq!(a.flows[0].bytes_delivered, b.flows[0].bytes_delivered);
    assert!(a.cross[1].counters.bursts > 0);
}

#[test]
fn bad_cross_traffic_is_a_one_line_error_naming_the_field() {
    let err = |c: CrossConfig| {
        let e = Simulation::new(with_cross(vec![c], 1, 1)).err().unwrap().0;
        assert!(!e.contains('\n'), "{e}");
        e
    };
    let mut c = lognormal_flows(MBPS);
    if let CrossConfig::Flows { segment, .. } = &mut c {
        *segment = Some("satellite".into());
    }
    let e = err(c);
    assert!(
        e.starts_with("cross[0].segment: no segment \"satellite\""),
        "{e}"
    );
    let mut c = lognormal_flows(MBPS);
    if let CrossConfig::Flows { size, .. } = &mut c {
        *size = DistConfig::Pareto {
            mean: 1e4,
            shape: 1.0,
        };
    }
    assert!(err(c).starts_with("cross[0].size.shape: 1 is out of range"));
    let mut c = lognormal_flows(0);
    assert!(err(c.clone()).starts_with("cross[0].offered_bps: 0 is out of range"));
    if let CrossConfig::Flows {
        offered_bps,
        packet_bytes,
        ..
    } = &mut c
    {
        *offered_bps = MBPS;
        *packet_bytes = 20;
    }
    assert!(err(c).starts_with("cross[0].packet_bytes: 20 is out of range"));
}

#[test]
fn cross_json_parses_with_its_tags() {
    let text = r#"{"kind": "on_off", "peak_bps": 1000000, "packet_bytes": 1500,
        "on": {"dist": "exponential", "mean": 1e8}, "off": {"dist": "pareto", "mean": 1e8, "shape": 1.4}}"#;
    let c: CrossConfig = serde_json::from_str(text).unwrap();
    assert_eq!(c.place(), (None, false));
    assert_eq!(c.kind_name(), "on_off");
}

fn tcp_flows(offered_bps: u64, mean_bytes: f64, max_connections: u32) -> CrossConfig {
    CrossConfig::TcpFlows {
        segment: None,
        reverse: false,
        offered_bps,
        size: DistConfig::Exponential { mean: mean_bytes },
        cca: "cubic".into(),
        cca_params: Default::default(),
        max_connections,
        rtt_ns: Some(100_000_000),
        tcp: None,
    }
}

#[test]
fn tcp_cross_traffic_through_a_lossy_link_conserves_packets_closes_its_connections_and_repeats() {
    // 1 % of packets lost each way: downloads retransmit (and a slot's late duplicates may
    // meet its next connection), yet every packet is accounted for, every started download
    // either closed or is still open, and the run repeats bit for bit
    let mut cfg = with_cross(vec![tcp_flows(2 * MBPS, 40_000.0, 50)], 30, 4);
    let b = cfg.bottleneck.as_mut().unwrap();
    b.forward.per = 0.01;
    b.reverse.per = 0.01;
    let mut sim = Simulation::new(cfg.clone()).unwrap();
    sim.run();
    assert_conservation(&sim);
    let a = tcplab_core::result::summarize(&sim);
    let t = a.cross[0].tcp.as_ref().expect("a tcp_flows entry");
    assert_eq!(t.rtt_ns, 100_000_000);
    assert!(t.retransmits > 0 && a.cross[0].counters.packets_dropped > 0);
    assert_eq!(
        t.connections_completed + t.connections_open,
        t.connections_started
    );
    assert_eq!(
        t.connections_started + t.connections_refused,
        a.cross[0].counters.bursts
    );
    assert!(t.connections_completed > 100, "{}", t.connections_completed);
    assert!(t.connections_peak as u64 <= 50);
    let b = run_config(cfg);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

#[test]
fn tcp_cross_traffic_is_not_a_flow_and_its_bad_input_is_one_line() {
    let r = run_config(with_cross(vec![tcp_flows(MBPS, 20_000.0, 10)], 10, 5));
    assert_eq!(r.flows.len(), 1);
    assert_eq!(r.cross[0].kind, "tcp_flows");
    assert_eq!(r.cross[0].link, "bottleneck.forward");
    let err = |c: CrossConfig| Simulation::new(with_cross(vec![c], 1, 1)).err().unwrap().0;
    let mut c = tcp_flows(MBPS, 20_000.0, 0);
    assert!(err(c.clone())
        .starts_with("cross[0].max_connections: 0 is out of range; allowed: 1 ..= 10000"));
    if let CrossConfig::TcpFlows {
        max_connections,
        rtt_ns,
        ..
    } = &mut c
    {
        *max_connections = 1;
        // the 40 ms dumbbell's segment alone takes 2 x 19.8 ms
        *rtt_ns = Some(1_000_000);
    }
    let e = err(c.clone());
    assert!(
        e.starts_with("cross[0].rtt_ns: 1000000 is out of range"),
        "{e}"
    );
    if let CrossConfig::TcpFlows { rtt_ns, cca, .. } = &mut c {
        *rtt_ns = None;
        *cca = "sack".into();
    }
    let e = err(c.clone());
    assert!(
        e.starts_with("cross[0].cca: \"sack\" is an ns-2 agent"),
        "{e}"
    );
    assert!(!e.contains('\n'));
    if let CrossConfig::TcpFlows { cca, tcp, .. } = &mut c {
        *cca = "cubic".into();
        *tcp = Some(TcpConfig {
            mss_bytes: 20,
            ..TcpConfig::default()
        });
    }
    let e = err(c.clone());
    assert!(
        e.starts_with("cross[0].tcp.mss_bytes: 20 is out of range"),
        "{e}"
    );
    if let CrossConfig::TcpFlows { tcp, .. } = &mut c {
        *tcp = Some(TcpConfig {
            stack: Stack::Ns2,
            ..TcpConfig::default()
        });
    }
    let e = err(c);
    assert!(e.starts_with("cross[0].tcp.stack: "), "{e}");
    assert!(e.ends_with("allowed: linux"), "{e}");
}

#[test]
fn tcp_cross_traffic_runs_with_its_own_tcp_options() {
    // 1 MB downloads (691 segments of 1448 B) with a 500 ms base RTT on an otherwise idle
    // 10 Mbit/s link (the flow under test sends 1 kB) with a 1,000-packet queue, one every
    // 10 s on average.
    // By hand, counting round trips from the arrival: the handshake (1), then slow start
    // from 10 segments. With window scaling (the default) the windows are 10, 20, 40, 80,
    // 160, 320 and the last 61 segments: 8 round trips, 4.0 s, plus the serialization of
    // the larger windows (320 x 1.2 ms = 0.38 s) and the delayed ACK of the last segment.
    // Without it the window stops at 65535 B (45 segments): 10, 20, 40, then 14 windows of
    // up to 45 for the other 621 segments: 18 round trips, 9.0 s (a 45-segment window takes
    // 54 ms to send, less than a round trip, so the serialization adds only the last one's).
    let download = |tcp: Option<TcpConfig>| {
        let mut cfg = with_cross(
            vec![CrossConfig::TcpFlows {
                segment: None,
                reverse: false,
                offered_bps: 800_000,
                size: DistConfig::Constant { mean: 1e6 },
                cca: "cubic".into(),
                cca_params: Default::default(),
                max_connections: 10,
                rtt_ns: Some(500_000_000),
                tcp,
            }],
            200,
            3,
        );
        cfg.flows[0].app = AppConfig::File { size_bytes: 1000 };
        // room for a whole window in the queue: no loss, so only the window decides
        let b = cfg.bottleneck.as_mut().unwrap();
        b.forward.queue.limit_pkts = Some(1000);
        let r = run_config(cfg);
        let t = r.cross[0].tcp.clone().expect("a tcp_flows entry");
        assert!(t.connections_completed >= 10, "{}", t.connections_completed);
        assert_eq!(t.retransmits, 0);
        t.completion_mean_ns.expect("completed downloads") as f64 / 1e9
    };
    let scaled = download(None);
    assert!((4.0..4.8).contains(&scaled), "{scaled}");
    let capped = download(Some(TcpConfig {
        window_scaling: false,
        ..TcpConfig::default()
    }));
    assert!((9.0..9.3).contains(&capped), "{capped}");
}
