//! Validation against independently derived numbers: link utilization, the Mathis and
//! Padhye models, receive-window limits, a hand-computed download time, conservation,
//! determinism and bounded memory.
mod common;
use common::*;
use tcplab_core::api;
use tcplab_core::scenario::{AppConfig, TcpConfig};
use tcplab_core::sim::Simulation;

fn run(spec: &Spec) -> api::RunResult {
    api::run(spec.build()).expect("valid scenario")
}

fn within(got: f64, want: f64, tol: f64) -> bool {
    (got / want - 1.0).abs() <= tol
}

#[test]
fn lossless_link_with_bdp_queue_is_fully_utilized_by_reno_and_cubic() {
    // GEO path: 4 Mbit/s, 500.4 ms RTT; BDP = 4e6·0.5004/12000 = 166.8 packets, queue 167.
    for cca in ["reno", "cubic"] {
        let r = run(&Spec {
            queue_pkts: 167,
            duration_s: 300,
            ..Spec::geo(cca)
        });
        let u = r.links[0].utilization;
        assert!(u >= 0.95, "{cca}: utilization {u}");
        // Payload ceiling 4 Mbit/s · 1448/1500 = 3.861 Mbit/s; ≥ 95 % of it.
        let g = r.flows[0].goodput_bps;
        assert!(g >= 0.95 * 3.861e6, "{cca}: goodput {g}");
    }
}

#[test]
fn reno_follows_mathis_at_loss_rate_1e3_for_short_and_long_rtt() {
    // Capacity far above the loss-limited rate, small queue: the window is loss-limited.
    for (rtt_ms, dur) in [(50.0, 600), (550.0, 3000)] {
        let r = run(&Spec {
            rtt_ms,
            per: 1e-3,
            duration_s: dur,
            ..Default::default()
        });
        let want = mathis_bps(1448.0, rtt_ms / 1e3, 1e-3);
        // RTT 50 ms: 1448·8/0.05·1.2247/0.0316 = 8.97 Mbit/s; RTT 550 ms: 0.816 Mbit/s.
        let got = r.flows[0].goodput_bps;
        assert!(
            within(got, want, 0.25),
            "rtt {rtt_ms}: goodput {got} vs Mathis {want}"
        );
    }
}

#[test]
fn reno_follows_padhye_at_loss_rate_1e2_where_timeouts_matter() {
    // T0 = RTO ≈ RTT + 200 ms (Linux floors the variance term at 200 ms); b = 1 because
    // Linux grows cwnd by one packet per RTT whatever the ACK ratio.
    for (rtt_ms, dur) in [(50.0, 600), (550.0, 3000)] {
        let rtt = rtt_ms / 1e3;
        let r = run(&Spec {
            rtt_ms,
            per: 1e-2,
            duration_s: dur,
            ..Default::default()
        });
        let want = padhye_bps(1448.0, rtt, 1e-2, rtt + 0.2, 1.0);
        let got = r.flows[0].goodput_bps;
        assert!(
            within(got, want, 0.25),
            "rtt {rtt_ms}: goodput {got} vs Padhye {want}"
        );
    }
}

#[test]
fn receive_window_of_64kb_limits_goodput_to_one_window_per_rtt() {
    // 65535 B window holds 45 full segments (45·1448 = 65160 B): 65160·8/0.5504 s ≈ 0.947
    // Mbit/s, whatever the capacity.
    for rate in [4_000_000u64, 100_000_000] {
        let tcp = TcpConfig {
            window_scaling: false,
            ..Default::default()
        };
        let r = run(&Spec {
            rtt_ms: 550.0,
            rate_bps: rate,
            return_rate_bps: rate,
            queue_pkts: 1000,
            duration_s: 300,
            tcp,
            ..Default::default()
        });
        let got = r.flows[0].goodput_bps;
        assert!(
            within(got, 65_160.0 * 8.0 / 0.5504, 0.03),
            "rate {rate}: goodput {got}"
        );
    }
}

#[test]
fn file_download_time_matches_slow_start_rounds() {
    // 100 kB = 70 segments, IW 10, RTT 500 ms, no loss, capacity 100 Mbit/s:
    // SYN→SYN-ACK 0.5 s; the request reaches the server at 0.75 s; rounds of 10, 20, 40
    // segments (cwnd doubles per RTT); the last round arrives at 0.75 + 2·0.5 + 0.25 = 2.0 s.
    let r = run(&Spec {
        rtt_ms: 500.0,
        app: AppConfig::File {
            size_bytes: 100_000,
        },
        duration_s: 10,
        ..Default::default()
    });
    let f = &r.flows[0];
    assert_eq!(f.bytes_delivered, 100_000);
    let t = f.completion_ns.expect("completed") as f64 / 1e9;
    assert!((t - 2.0).abs() < 0.02, "completion {t} s");
}

#[test]
fn bytes_and_packets_are_conserved_under_heavy_loss() {
    let spec = Spec {
        rtt_ms: 100.0,
        rate_bps: 10_000_000,
        return_rate_bps: 10_000_000,
        per: 2e-2,
        queue_pkts: 20,
        duration_s: 120,
        flows: 3,
        cca: "cubic",
        ..Default::default()
    };
    let mut sim = Simulation::new(spec.build()).unwrap();
    sim.run();
    for f in &sim.conns {
        let rx = &f.receiver;
        assert_eq!(
            rx.stats.bytes_delivered, rx.rcv_nxt,
            "in-order delivery, each byte once"
        );
        assert!(
            f.sender.snd_una() <= rx.rcv_nxt,
            "the sender never sees more ACKed than received"
        );
        assert!(
            rx.rcv_nxt <= f.sender.snd_nxt(),
            "delivered ≤ distinct bytes sent"
        );
        assert!(rx.stats.bytes_delivered <= f.sender.stats().bytes_sent);
        f.sender.linux().expect("linux flow").sb.check_invariants();
    }
    assert_conservation(&sim);
    assert!(sim.topo.links[0].stats.error_drops > 0 && sim.topo.links[0].stats.queue_drops > 0);
}

#[test]
fn same_seed_gives_identical_results_and_other_seeds_other_losses() {
    let s = |seed| Spec {
        rtt_ms: 200.0,
        per: 1e-2,
        duration_s: 60,
        seed,
        ..Default::default()
    };
    let a = serde_json::to_string(&run(&s(7))).unwrap();
    let b = serde_json::to_string(&run(&s(7))).unwrap();
    assert_eq!(a, b);
    let c = run(&s(8));
    let d = run(&s(7));
    assert_ne!(c.links[0].error_drops, 0);
    assert_ne!(
        (c.flows[0].bytes_delivered, c.links[0].error_drops),
        (d.flows[0].bytes_delivered, d.links[0].error_drops)
    );
}

#[test]
fn the_series_interval_changes_no_flow_or_link_result() {
    // Sampling only reads cumulative counters: 10 ms or 1 s intervals, the same run.
    let spec = Spec {
        rtt_ms: 100.0,
        per: 1e-3,
        duration_s: 20,
        cca: "cubic",
        ..Default::default()
    };
    let mut fine = spec.build();
    fine.interval_ns = 10_000_000;
    let coarse = api::run(spec.build()).expect("valid scenario");
    let fine = api::run(fine).expect("valid scenario");
    let json = serde_json::to_string::<[api::FlowResult]>;
    assert_eq!(json(&coarse.flows).unwrap(), json(&fine.flows).unwrap());
    let json = serde_json::to_string::<[api::LinkResult]>;
    assert_eq!(json(&coarse.links).unwrap(), json(&fine.links).unwrap());
    assert_eq!(fine.series.t_ns.len(), 2_000);
}

#[test]
fn memory_does_not_grow_with_run_length() {
    // The packet pool's high-water mark depends on what is in flight, not on duration.
    let hw = |dur| {
        let mut sim = Simulation::new(
            Spec {
                rtt_ms: 100.0,
                rate_bps: 20_000_000,
                return_rate_bps: 20_000_000,
                per: 1e-4,
                queue_pkts: 200,
                duration_s: dur,
                cca: "cubic",
                ..Default::default()
            }
            .build(),
        )
        .unwrap();
        sim.run();
        sim.live_packets()
    };
    let (short, long) = (hw(60), hw(600));
    // In flight ≤ BDP (167 pkts) + queue (200) + ACKs: a few hundred either way.
    assert!(
        long < 1000 && short < 1000,
        "live packets: {short} vs {long}"
    );
}

#[test]
fn asymmetric_link_carries_data_at_forward_rate() {
    // 50 Mbit/s forward, 20 Mbit/s return, GEO delay, PER 1e-5, 2·BDP queue: CUBIC keeps
    // the forward link ≥ 90 % busy; the ACK direction stays lightly used (≤ 10 %).
    let q = (2.0_f64 * 50e6 * 0.5004 / 12000.0).ceil() as u64;
    let r = run(&Spec {
        rtt_ms: 500.4,
        rate_bps: 50_000_000,
        return_rate_bps: 20_000_000,
        per: 1e-5,
        queue_pkts: q,
        duration_s: 120,
        cca: "cubic",
        ..Default::default()
    });
    assert!(
        r.links[0].utilization > 0.85,
        "forward {}",
        r.links[0].utilization
    );
    assert!(
        r.links[1].utilization < 0.1,
        "reverse {}",
        r.links[1].utilization
    );
}

#[test]
fn classic_ecn_reduces_cwnd_without_drops() {
    // Reno with ECN through a queue that marks above K = 20 packets (buffer 1000): RFC 3168
    // CWR reductions replace losses, so there are no drops, no retransmissions, marks > 0
    // and the queue stays short (BDP is 10e6·0.05/12000 = 42 packets). With step marking,
    // packets sent just after a reduction still meet a queue at K, so cwnd is usually halved
    // twice (W ≈ BDP + K = 62 → 31 → 16) and takes ~26 RTTs to climb back to the BDP:
    // utilization ≈ 1 − (26/2)·(1 − 29/42)/47 ≈ 0.9 at best, ~0.8 with slow start; > 0.75.
    let tcp = TcpConfig {
        ecn: true,
        ..Default::default()
    };
    let r = run(&Spec {
        rtt_ms: 50.0,
        rate_bps: 10_000_000,
        return_rate_bps: 10_000_000,
        queue_pkts: 1000,
        duration_s: 60,
        tcp,
        ecn_k: Some(20),
        ..Default::default()
    });
    let l = &r.links[0];
    assert_eq!(l.queue_drops, 0);
    assert_eq!(r.flows[0].retransmits, 0);
    assert!(l.ecn_marks > 0);
    assert!(l.utilization > 0.75, "utilization {}", l.utilization);
    assert!(l.queue_mean_pkts < 40.0, "mean queue {}", l.queue_mean_pkts);
}

#[test]
fn recovery_variants_all_repair_losses_and_keep_the_link_busy() {
    // PRR (default), RFC 6675 halving (prr = false), FACK marking and the RFC 6675 DupThresh
    // rule (rack = false) must all recover every loss (in-order delivery = bytes sent once)
    // and stay close to Reno's Mathis rate at p = 1e-3, 50 ms (8.97 Mbit/s, ±25 %).
    let variants = [
        TcpConfig::default(),
        TcpConfig {
            prr: false,
            ..Default::default()
        },
        TcpConfig {
            fack: true,
            ..Default::default()
        },
        TcpConfig {
            rack: false,
            ..Default::default()
        },
    ];
    for tcp in variants {
        let label = format!("prr={} fack={} rack={}", tcp.prr, tcp.fack, tcp.rack);
        let r = run(&Spec {
            rtt_ms: 50.0,
            per: 1e-3,
            duration_s: 300,
            tcp,
            ..Default::default()
        });
        let want = mathis_bps(1448.0, 0.05, 1e-3);
        let got = r.flows[0].goodput_bps;
        assert!(
            within(got, want, 0.25),
            "{label}: goodput {got} vs Mathis {want}"
        );
        assert_eq!(
            r.flows[0].dup_bytes_received, 0,
            "{label}: no spurious retransmission"
        );
    }
}

#[test]
fn cubic_hystart_leaves_slow_start_on_the_ack_train_of_a_linux_receiver() {
    // 10 Mbit/s, 10 ms one way, access links 1 Gbit/s and 0.01 ms: RTT 20.04 ms, one 1500 B
    // packet per 1.2 ms at the bottleneck, a 2 x BDP queue of 34 packets.
    //
    // HyStart's ACK-train rule ends slow start once ACKs at most 2 ms apart
    // (hystart_ack_delta) span more than (delay_min + 1 ms) / 2 from a round's first ACK.
    // delay_min, the first RTT sample, is 20.04 ms plus 1.2 ms of serialization (and 24 us at
    // the access links), 21.26 ms, so a train must span more than 11.13 ms: 10 intervals of
    // 1.2 ms. Round 1 (IW 10) has 9 (10.8 ms). Round 2 sends 20 segments back to back, and
    // the Linux receiver ACKs its first 12 one by one (its 16 quick ACKs plus the six steps
    // that open rcv_ssthresh from 65160 to 80480 B: 22 single ACKs in all), so the 11th ACK
    // of round 2 ends slow start with cwnd 20 + 10 = 30. ACKs every two segments (2.4 ms
    // apart) after the quick ACKs would break the train: slow start then ends by the delay
    // rule only, which took cwnd to 96 and overflowed the queue.
    let mut cfg = Spec {
        rtt_ms: 20.0,
        rate_bps: 10_000_000,
        return_rate_bps: 10_000_000,
        queue_pkts: 34,
        duration_s: 2,
        cca: "cubic",
        ..Default::default()
    }
    .build();
    cfg.access.delay_ns = 10_000;
    if let Some(b) = cfg.bottleneck.as_mut() {
        b.forward.delay_ns = 10_000_000;
        b.reverse.delay_ns = 10_000_000;
    }
    let mut sim = Simulation::new(cfg).expect("valid scenario");
    let mut exit_pkts = None;
    for step in 1..=10_000u64 {
        sim.run_until(tcplab_core::engine::time::SimTime(step * 100_000));
        let s = &sim.conns[0].sender;
        let ssthresh = s.ssthresh_bytes() / s.mss() as u64;
        if ssthresh < 1 << 20 {
            exit_pkts = Some(ssthresh);
            break;
        }
    }
    let exit = exit_pkts.expect("slow start ends within 1 s");
    assert!((28..=32).contains(&exit), "slow start ended at cwnd {exit}");
}

/// What `read_series_file` reads: t_ns, each flow's goodput and RTT, the chunk sizes.
struct SeriesFileContents {
    t: Vec<u64>,
    goodput: Vec<Vec<f64>>,
    rtt: Vec<Vec<Option<f64>>>,
    chunks: Vec<usize>,
}

/// Reads a series file (`series_file`'s layout) back.
fn read_series_file(bytes: &[u8]) -> SeriesFileContents {
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) as usize;
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    let f64_at = |i: usize| f64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    assert_eq!(&bytes[..8], b"TCPLABSR");
    let flows = u32_at(12);
    let (mut t, mut goodput, mut rtt, mut chunks) = (
        Vec::new(),
        vec![Vec::new(); flows],
        vec![Vec::new(); flows],
        Vec::new(),
    );
    let mut at = 24;
    loop {
        let n = u32_at(at);
        at += 4;
        if n == 0 {
            assert_eq!(
                u64_at(at) as usize,
                t.len(),
                "the end record counts every interval"
            );
            assert_eq!(at + 8, bytes.len());
            break;
        }
        chunks.push(n);
        t.extend((0..n).map(|i| u64_at(at + 8 * i)));
        at += 3 * 8 * n; // t_ns, queue, utilization
        for (f, g) in goodput.iter_mut().enumerate() {
            g.extend((0..n).map(|i| f64_at(at + 8 * (f * n + i))));
        }
        at += 8 * n * flows; // goodput
        at += 8 * n * flows; // throughput
        for (f, r) in rtt.iter_mut().enumerate() {
            r.extend((0..n).map(|i| Some(f64_at(at + 8 * (f * n + i))).filter(|v| !v.is_nan())));
        }
        at += 3 * 8 * n * flows; // rtt, cwnd, retransmits
    }
    SeriesFileContents {
        t,
        goodput,
        rtt,
        chunks,
    }
}

/// A normalized dumbbell (docs/interface.md): `flows` CUBIC bulk flows, 10 Mbit/s, 50 ms
/// one way, PER 1e-3 forward, for `duration_s` with a series every `interval_ns`.
fn dumbbell_json(flows: usize, duration_s: u64, interval_ns: u64) -> String {
    let dir = |per: f64| {
        serde_json::json!({"rate_bps": 10_000_000, "delay_ns": 50_000_000, "per": per,
            "queue": {"kind": "droptail", "limit_pkts": 100}})
    };
    let flow = serde_json::json!({"cca": "cubic", "app": {"kind": "bulk"}, "access": null});
    serde_json::json!({
        "name": "stream", "seed": 1, "duration_ns": duration_s * 1_000_000_000,
        "interval_ns": interval_ns,
        "bottleneck": {"forward": dir(1e-3), "reverse": dir(0.0)},
        "access": {"rate_bps": 1_000_000_000u64, "delay_ns": 100_000},
        "flows": vec![flow; flows],
    })
    .to_string()
}

#[test]
fn streamed_series_equal_the_kept_ones_and_every_mode_gives_the_same_run() {
    // Two flows, a 1 ms interval for 40 s: 80,000 flow-intervals, more than one chunk.
    let text = dumbbell_json(2, 40, 1_000_000);
    let kept: serde_json::Value = serde_json::from_str(&api::run_json(&text).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!("tcplab-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.bin");
    let p = path.to_str().unwrap();
    let streamed: serde_json::Value =
        serde_json::from_str(&api::run_json_series(&text, api::SeriesRequest::File(p)).unwrap())
            .unwrap();
    let none: serde_json::Value =
        serde_json::from_str(&api::run_json_series(&text, api::SeriesRequest::Discard).unwrap())
            .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(kept["flows"][0]["retransmits"].as_u64().unwrap() > 0);
    // everything but the series is the same run, byte for byte
    for key in ["flows", "links", "events", "duration_ns"] {
        assert_eq!(kept[key], streamed[key], "{key}");
        assert_eq!(kept[key], none[key], "{key}");
    }
    let expect = serde_json::json!({"interval_ns": 1_000_000, "intervals": 40_000, "file": p});
    assert_eq!(streamed["series"], expect);
    assert_eq!(
        none["series"],
        serde_json::json!({"interval_ns": 1_000_000, "intervals": 40_000, "file": null})
    );
    let SeriesFileContents {
        t,
        goodput,
        rtt,
        chunks,
    } = read_series_file(&bytes);
    // 65,536 flow-intervals per chunk: 32,768 intervals of two flows
    assert_eq!(chunks, vec![32_768, 7_232]);
    let s = &kept["series"];
    let t_kept: Vec<u64> = serde_json::from_value(s["t_ns"].clone()).unwrap();
    assert_eq!(t, t_kept);
    for f in 0..2 {
        let g: Vec<f64> = serde_json::from_value(s["flows"][f]["goodput_bps"].clone()).unwrap();
        let r: Vec<Option<f64>> =
            serde_json::from_value(s["flows"][f]["rtt_mean_ns"].clone()).unwrap();
        assert_eq!(goodput[f], g, "flow {f} goodput");
        assert_eq!(rtt[f], r, "flow {f} rtt");
    }
}

#[test]
fn an_unwritable_series_file_is_a_one_line_error_before_the_run() {
    let text = dumbbell_json(1, 1, 1_000_000_000);
    let e = api::run_json_series(&text, api::SeriesRequest::File("/nonexistent-dir/s.bin"))
        .unwrap_err();
    assert!(e.starts_with("series file /nonexistent-dir/s.bin: "), "{e}");
    assert!(!e.contains('\n'));
}
