//! The ns-2 TCP agents (tahoe, reno and vegas on the ns-2 stack, newreno, sack, fack) in
//! full simulations, on paths whose outcome theory predicts. Their recovery from scripted
//! losses (Fall & Floyd's multiple drops) is tested on the two-endpoint harness
//! (`tcp::ns2::multiple_drops`).
mod common;
use std::collections::BTreeMap;
use tcplab_core::scenario::{AppConfig, Stack, TcpConfig};
use tcplab_core::tcp::connection::TimerSlot;

/// ns-2 `Agent/TCP` defaults as `tcp` fields: `packetSize_` = MSS (40-byte headers, no
/// timestamps), `window_` packets, `windowInit_` 2, no delayed ACK, the ns-2 stack.
fn ns2_tcp(mss: u32, window_pkts: u64) -> TcpConfig {
    TcpConfig {
        mss_bytes: mss,
        sack: false,
        dsack: false,
        timestamps: false,
        initial_window_pkts: 2,
        rwnd_bytes: window_pkts * mss as u64,
        delayed_ack: false,
        frto: false,
        rack: false,
        tlp: false,
        stack: Stack::Ns2,
        ..TcpConfig::default()
    }
}

#[test]
fn slow_start_overflow_sack_agents_resend_only_what_was_lost() {
    // One flow, 2 Mbit/s, RTT 100 ms (BDP 24 packets of 1040 B), DropTail of 10: slow start
    // overshoots and ~20 packets of one window are dropped. Sack1 and FACK retransmit each
    // lost packet about once; Tahoe, Reno and NewReno end in go-back-N slow start (after
    // the fast retransmit for Tahoe, after a timeout for Reno and NewReno) and resend
    // packets the receiver already holds. The SACK agents also deliver the most.
    let mut goodput = BTreeMap::new();
    for cca in ["tahoe", "reno", "newreno", "sack", "fack"] {
        let spec = common::Spec {
            rtt_ms: 100.0,
            rate_bps: 2_000_000,
            return_rate_bps: 2_000_000,
            queue_pkts: 10,
            duration_s: 10,
            cca,
            tcp: ns2_tcp(1000, 100),
            ..Default::default()
        };
        let r = tcplab_core::api::run(spec.build()).unwrap();
        let f = &r.flows[0];
        let drops = r.links[0].queue_drops;
        assert!(drops >= 15, "{cca}: {drops} drops");
        if cca == "sack" || cca == "fack" {
            assert!(f.retransmits <= drops + 2, "{cca}: {} rtx", f.retransmits);
            assert!(
                f.dup_bytes_received <= 2_000,
                "{cca}: {}",
                f.dup_bytes_received
            );
        } else {
            assert!(
                f.retransmits * 2 >= drops * 3,
                "{cca}: {} rtx",
                f.retransmits
            );
            assert!(
                f.dup_bytes_received >= 10_000,
                "{cca}: {}",
                f.dup_bytes_received
            );
        }
        goodput.insert(cca, f.goodput_bps);
    }
    for cca in ["tahoe", "reno", "newreno"] {
        assert!(goodput["sack"] > goodput[cca], "{goodput:?}");
        assert!(goodput["fack"] > goodput[cca], "{goodput:?}");
    }
}

/// The `goodput-ns2` study: 4 senders behind 10 Mbit/s access links (1 ms), a 100 Mbit/s,
/// 3 ms bottleneck with a 64-packet DropTail queue, `window_` 128 packets, 11 s.
fn goodput_ns2_scenario(cca: &str, mss: u32) -> tcplab_core::scenario::ScenarioConfig {
    use tcplab_core::scenario::*;
    let dir = DirConfig::droptail(100_000_000, 3_000_000, 64);
    ScenarioConfig {
        cross: Vec::new(),
        name: format!("goodput-ns2 {cca} {mss}"),
        seed: 1,
        duration_ns: 11_000_000_000,
        interval_ns: 1_000_000_000,
        bottleneck: Some(BottleneckConfig {
            forward: dir.clone(),
            reverse: dir,
            wifi: None,
        }),
        path: None,
        access: AccessConfig {
            rate_bps: 10_000_000,
            delay_ns: 1_000_000,
            queue_pkts: None,
        },
        flows: (0..4)
            .map(|_| FlowConfig {
                cca: cca.into(),
                cca_params: Default::default(),
                start_ns: 0,
                app: AppConfig::Bulk,
                tcp: ns2_tcp(mss, 128),
                access: None,
                pep: None,
            })
            .collect(),
    }
}

#[test]
fn goodput_ns2_study_is_access_limited_and_vegas_keeps_the_queue_short() {
    // The 10 Mbit/s access links are the bottleneck (4 × 10 < 100 Mbit/s) and the hosts'
    // queues do not drop, so no packet is lost: every agent reaches the access payload rate
    // 10 Mbit/s · MSS/(MSS + 40) (9.306 Mbit/s at 536 B, 9.733 at 1460 B) less the start.
    // The loss-based agents fill window_ = 128 packets into the access queue: RTT ≈
    // 128·(MSS + 40)·8/10 Mbit/s = 59.0 ms (536 B) / 153.6 ms (1460 B); Vegas holds
    // α..β = 1..3 packets there: RTT ≈ 10 ms propagation + a few packet times.
    for (mss, rtt_full_ms) in [(536u32, 58.98), (1460, 153.6)] {
        let cap = 10e6 * mss as f64 / (mss + 40) as f64;
        let base_ms = 10.0 + 2.0 * (mss + 40) as f64 * 8.0 / 10e6 * 1e3;
        for cca in ["tahoe", "reno", "newreno", "vegas", "sack", "fack"] {
            let r = tcplab_core::api::run(goodput_ns2_scenario(cca, mss)).unwrap();
            assert_eq!(r.links[0].queue_drops, 0, "{cca} {mss}");
            for f in &r.flows {
                let g = f.goodput_bps;
                assert!(g > 0.98 * cap && g <= cap, "{cca} {mss}: {g} vs {cap}");
                let rtt_ms = f.rtt.mean_ns.unwrap() / 1e6;
                if cca == "vegas" {
                    assert!(rtt_ms < 2.0 * base_ms, "{cca} {mss}: rtt {rtt_ms} ms");
                } else {
                    assert!(
                        (rtt_ms / rtt_full_ms - 1.0).abs() < 0.05,
                        "{cca} {mss}: rtt {rtt_ms} ms"
                    );
                }
            }
        }
    }
}

#[test]
fn routing_reno_and_vegas_follow_the_stack_newreno_is_always_ns2() {
    use tcplab_core::sim::Simulation;
    let mut spec = common::Spec {
        duration_s: 1,
        ..Default::default()
    };
    for (cca, stack, ns2) in [
        ("reno", Stack::Linux, false),
        ("reno", Stack::Ns2, true),
        ("newreno", Stack::Linux, true),
        ("tahoe", Stack::Linux, true),
        ("cubic", Stack::Ns2, false),
    ] {
        spec.cca = cca;
        spec.tcp.stack = stack;
        let sim = Simulation::new(spec.build()).unwrap();
        assert_eq!(sim.conns[0].sender.ns2().is_some(), ns2, "{cca} {stack:?}");
    }
}

#[test]
fn ns2_agents_conserve_bytes_under_heavy_loss_and_finish_files() {
    use tcplab_core::sim::Simulation;
    for cca in ["tahoe", "reno", "newreno", "sack", "fack", "vegas"] {
        let spec = common::Spec {
            rtt_ms: 80.0,
            rate_bps: 5_000_000,
            return_rate_bps: 5_000_000,
            per: 2e-2,
            queue_pkts: 15,
            duration_s: 120,
            flows: 3,
            cca,
            app: AppConfig::File {
                size_bytes: 400_000,
            },
            tcp: ns2_tcp(1000, 40),
            ..Default::default()
        };
        let mut sim = Simulation::new(spec.build()).unwrap();
        sim.run();
        for f in &sim.conns {
            let rx = &f.receiver;
            assert_eq!(rx.stats.bytes_delivered, rx.rcv_nxt, "{cca}");
            assert_eq!(rx.rcv_nxt, 400_000, "{cca}: the file arrives");
            assert!(rx.completion.is_some(), "{cca}");
            assert!(f.sender.finished(), "{cca}");
            assert!(f.sender.snd_una() <= rx.rcv_nxt && rx.rcv_nxt <= f.sender.snd_nxt());
            assert_eq!(
                f.sender.timer_deadline(TimerSlot::Retransmit),
                None,
                "{cca}"
            );
        }
        common::assert_conservation(&sim);
    }
}

#[test]
fn ns2_runs_are_deterministic() {
    let a = tcplab_core::api::run(goodput_ns2_scenario("sack", 536)).unwrap();
    let b = tcplab_core::api::run(goodput_ns2_scenario("sack", 536)).unwrap();
    assert_eq!(a.events, b.events);
    let spec = common::Spec {
        per: 1e-2,
        duration_s: 20,
        cca: "fack",
        tcp: ns2_tcp(1460, 64),
        ..Default::default()
    };
    let a = tcplab_core::api::run(spec.build()).unwrap();
    let b = tcplab_core::api::run(spec.build()).unwrap();
    assert_eq!(
        (a.events, a.flows[0].bytes_delivered),
        (b.events, b.flows[0].bytes_delivered)
    );
}

#[test]
fn catalogue_lists_the_ns2_agents() {
    let v: serde_json::Value = serde_json::from_str(&tcplab_core::api::ccas_json()).unwrap();
    for name in ["tahoe", "newreno", "sack", "fack"] {
        let e = v
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(e["feedback"], "loss");
        assert!(e["reference"].as_str().unwrap().contains("ns-2"), "{name}");
        let params: Vec<&str> = e["params"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert!(params.contains(&"max_burst"), "{name}: {params:?}");
    }
}

#[test]
fn goodput_study_with_drop_tail_access_queues_orders_the_classic_stacks() {
    // The ns-2 goodput setup with ns-2's DropTail on every link (64 packets, host NICs
    // included): each sender's 10 Mbit/s access link is its bottleneck, slow start overflows
    // it with several drops per window, and the classic result follows (Fall & Floyd 1996):
    // SACK/FACK repair them in one RTT without timeouts, NewReno one per RTT, Tahoe restarts
    // slow start, Reno times out; Vegas avoids the losses altogether.
    let run = |cca: &str| {
        let tcp = |sack| {
            serde_json::json!({"mss_bytes": 1460, "stack": "ns2", "timestamps": false,
                "delayed_ack": false, "rwnd_bytes": 128 * 1460, "initial_window_pkts": 2,
                "sack": sack, "dsack": false, "rack": false, "tlp": false, "frto": false})
        };
        let d = serde_json::json!({"rate_bps": 100_000_000u64, "delay_ns": 3_000_000,
            "queue": {"limit_pkts": 64}});
        let flows: Vec<_> = (0..4)
            .map(|_| {
                serde_json::json!({"cca": cca, "app": {"kind": "bulk"},
                "tcp": tcp(cca == "sack" || cca == "fack")})
            })
            .collect();
        let v = serde_json::json!({"name": "g", "seed": 1, "duration_ns": 11_000_000_000u64,
            "bottleneck": {"forward": d, "reverse": d},
            "access": {"rate_bps": 10_000_000, "delay_ns": 100_000, "queue_pkts": 64},
            "flows": flows});
        let cfg = tcplab_core::scenario::ScenarioConfig::from_json(&v.to_string()).unwrap();
        let r = tcplab_core::api::run(cfg).unwrap();
        let g: f64 = r.flows.iter().map(|f| f.goodput_bps).sum();
        let rto: u64 = r.flows.iter().map(|f| f.rto_count).sum();
        (g, rto)
    };
    let [tahoe, reno, newreno, vegas, sack, fack] =
        ["tahoe", "reno", "newreno", "vegas", "sack", "fack"].map(run);
    eprintln!(
        "goodput-ns2 with access queues: tahoe {tahoe:?} reno {reno:?} newreno {newreno:?} \
               vegas {vegas:?} sack {sack:?} fack {fack:?}"
    );
    assert!(sack.0 > newreno.0 && fack.0 > newreno.0);
    assert!(newreno.0 > reno.0 && tahoe.0 > reno.0);
    assert_eq!((sack.1, fack.1, vegas.1), (0, 0, 0));
    assert!(reno.1 > 0, "Reno times out on multiple drops per window");
    // Four flows cannot exceed 4 x 10 Mbit/s x 1460/1500 = 38.93 Mbit/s of payload.
    assert!(sack.0 <= 38.94e6 && sack.0 > 0.99 * 38.93e6);
}
