//! Link models against hand-derived numbers: outages, Gilbert–Elliott burst loss, rate and
//! delay traces, Mahimahi delivery traces, RED and CoDel — at the link level (a `Link`
//! driven directly) and in full simulations; plus the validation of the new fields.
mod common;
use common::{assert_conservation, bulk_flow, run_config, ACCESS_DELAY_NS};
use tcplab_core::api::{self, RunResult};
use tcplab_core::engine::time::SimTime;
use tcplab_core::net::link::{Admission, Link};
use tcplab_core::scenario::*;
use tcplab_core::sim::Simulation;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn queue(kind: &str, limit_pkts: u64) -> QueueConfig {
    QueueConfig {
        kind: kind.into(),
        limit_pkts: Some(limit_pkts),
        limit_bytes: None,
        red: None,
        codel: None,
    }
}

/// A link direction of `rate_bps` and one-way `delay_ns` with nothing else.
fn dir(rate_bps: u64, delay_ns: u64, queue: QueueConfig) -> DirConfig {
    DirConfig {
        queue,
        ..DirConfig::droptail(rate_bps, delay_ns, 1)
    }
}

/// A dumbbell of round-trip propagation delay `rtt_ns` (access links included), forward
/// direction `fwd` (its delay is set here), a plain reverse direction of the same rate.
fn dumbbell(
    fwd: DirConfig,
    rtt_ns: u64,
    duration_ns: u64,
    flows: Vec<FlowConfig>,
) -> ScenarioConfig {
    let one_way = rtt_ns / 2 - 2 * ACCESS_DELAY_NS;
    let reverse = dir(fwd.rate_bps, one_way, queue("droptail", 1000));
    ScenarioConfig {
        cross: Vec::new(),
        name: "links".into(),
        seed: 1,
        duration_ns,
        interval_ns: S,
        bottleneck: Some(BottleneckConfig {
            forward: DirConfig {
                delay_ns: one_way,
                ..fwd
            },
            reverse,
            wifi: None,
        }),
        path: None,
        access: AccessConfig {
            rate_bps: 1_000_000_000,
            delay_ns: ACCESS_DELAY_NS,
            queue_pkts: None,
        },
        flows,
    }
}

/// Mean queueing delay of the bottleneck (time-averaged bytes waiting / rate), in ms.
fn queue_delay_ms(r: &RunResult) -> f64 {
    let l = &r.links[0];
    l.queue_mean_bytes * 8.0 / l.rate_bps as f64 * 1e3
}

/// Every packet created is delivered, dropped (any cause) or still on a link.

// ---- outages ----------------------------------------------------------------------------

#[test]
fn outage_drops_exactly_the_packets_whose_transmission_would_start_in_it() {
    // 4 Mbit/s (3 ms per 1500 B), offered a packet every 1.5 ms from 0 to 6 s, outage
    // [2 s, 4 s). Services start back to back at 3k ms: k = 0..=666 start before 2 s
    // (the last at 1.998 s, still serializing at 2 s, arrives). Every other packet offered
    // before 4 s (i ≤ 2666: 2667 offers) would start in the outage: 2667 − 667 = 2000
    // lost, the queue included. From 4.0005 s the link is idle again and each offer is
    // served at once.
    let mut d = dir(4_000_000, 250 * MS, queue("droptail", 10_000));
    d.outages = vec![(2 * S, 4 * S)];
    let mut l = Link::from_config("bottleneck.forward", &d, 1);
    let mut arrivals = Vec::new();
    for i in 0..4000u64 {
        let t = SimTime(i * 3 * MS / 2);
        match l.admit(t, 1500, false) {
            Admission::Arrives { at, .. } => arrivals.push((i, at.ns())),
            Admission::OutageDrop => assert!((667..=2666).contains(&i), "offer {i}"),
            a => panic!("offer {i}: {a:?}"),
        }
    }
    assert_eq!(l.stats.outage_drops, 2000);
    assert_eq!(l.stats.queue_drops + l.stats.error_drops, 0);
    // Offer 666 (at 0.999 s) is the last one served before the outage: it starts at
    // 1.998 s and is still being serialized at 2 s; it ends at 2.001 s and arrives.
    assert_eq!(arrivals[666], (666, 2_001 * MS + 250 * MS));
    // The first one after it is offered at 4.0005 s and served at once.
    assert_eq!(arrivals[667], (2667, 4_000_500_000 + 3 * MS + 250 * MS));
}

#[test]
fn a_tcp_flow_rides_out_a_two_second_outage() {
    let mut fwd = dir(4_000_000, 0, queue("droptail", 100));
    fwd.outages = vec![(10 * S, 12 * S)];
    let cfg = dumbbell(fwd, 100 * MS, 40 * S, vec![bulk_flow("cubic", false, 0)]);
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run();
    assert_conservation(&sim);
    let r = api::summarize(&sim);
    let l = &r.links[0];
    let u = &r.series.bottleneck_utilization;
    // Intervals [10, 11) and [11, 12) s: nothing enters service.
    assert_eq!((u[10], u[11]), (0.0, 0.0), "{u:?}");
    let before = u[3..10].iter().sum::<f64>() / 7.0;
    assert!(before > 0.9, "{u:?}");
    assert!(l.outage_drops > 0);
    // The flow recovers (RTO backoff may delay it): full rate again over [25, 40) s.
    let late = u[25..40].iter().sum::<f64>() / 15.0;
    assert!(late > 0.95, "utilization after recovery {late}");
    println!(
        "outage: {} outage drops, utilization [25, 40) s {late:.3}",
        l.outage_drops
    );
}

// ---- Gilbert–Elliott ----------------------------------------------------------------------

/// Offer `n` packets, one per 20 µs (a 1 Gbit/s link never queues them), and return the
/// loss rate and the lengths of the runs of consecutive losses.
fn ge_link(p_gb: f64, p_bg: f64, loss_good: f64, loss_bad: f64, n: u64) -> (f64, Vec<u64>) {
    let mut d = dir(1_000_000_000, 0, queue("droptail", 1_000_000));
    d.loss = Some(LossConfig::GilbertElliott {
        p_gb,
        p_bg,
        loss_good,
        loss_bad,
    });
    d.per = 0.5; // replaced by the Gilbert–Elliott model
    let mut l = Link::from_config("bottleneck.forward", &d, 7);
    let (mut runs, mut run) = (Vec::new(), 0u64);
    for i in 0..n {
        if l.admit(SimTime(i * 20_000), 1500, false) == Admission::ErrorDrop {
            run += 1;
        } else if run > 0 {
            runs.push(run);
            run = 0;
        }
    }
    (l.stats.error_drops as f64 / n as f64, runs)
}

#[test]
fn gilbert_elliott_loss_rate_and_burst_length_match_the_chain() {
    // p_gb = 0.002, p_bg = 0.2, loss_bad = 1, loss_good = 0.0005:
    // π_bad = 0.002/0.202 = 0.0099010; loss = 0.0099010·1 + 0.990099·0.0005 = 0.0103960.
    let (loss, _) = ge_link(0.002, 0.2, 0.0005, 1.0, 2_000_000);
    // Correlated losses: sd ≈ 0.0002 here; allow ±0.0008.
    assert!((loss - 0.010_396).abs() < 0.0008, "loss rate {loss}");
    // Gilbert's channel (loss_good 0, loss_bad 1): loss runs are exactly the stays in the
    // bad state, geometric with mean 1/p_bg = 5 packets; loss = π_bad = 0.0099010.
    let (loss0, runs) = ge_link(0.002, 0.2, 0.0, 1.0, 2_000_000);
    let mean_run = runs.iter().sum::<u64>() as f64 / runs.len() as f64;
    // P(run = 1) = p_bg = 0.2.
    let ones = runs.iter().filter(|&&r| r == 1).count() as f64 / runs.len() as f64;
    println!(
        "GE: loss {loss:.6} (want 0.010396); Gilbert loss {loss0:.6} (want 0.009901), \
         {} runs of mean {mean_run:.3} (want 5), P(1) {ones:.3}",
        runs.len()
    );
    assert!((loss0 - 0.009_901).abs() < 0.0008, "loss rate {loss0}");
    // ~3960 runs, sd of a run 4.5: sd of the mean 0.07; allow 0.3.
    assert!((mean_run - 5.0).abs() < 0.3, "mean run {mean_run}");
    assert!((ones - 0.2).abs() < 0.03, "P(run = 1) {ones}");
}

#[test]
fn gilbert_elliott_on_a_tcp_path_loses_at_the_long_run_rate() {
    // π_bad = 0.001/0.101 = 0.00990; loss = 0.00990 · 0.5 = 0.00495 per packet.
    let mut fwd = dir(10_000_000, 0, queue("droptail", 1000));
    fwd.loss = Some(LossConfig::GilbertElliott {
        p_gb: 0.001,
        p_bg: 0.1,
        loss_good: 0.0,
        loss_bad: 0.5,
    });
    let cfg = dumbbell(fwd, 50 * MS, 300 * S, vec![bulk_flow("cubic", false, 0)]);
    let mut sim = Simulation::new(cfg.clone()).unwrap();
    sim.run();
    assert_conservation(&sim);
    let r = api::summarize(&sim);
    let l = &r.links[0];
    let p = l.error_drops as f64 / l.packets_tx as f64;
    println!(
        "GE on TCP path: {} of {} lost = {p:.5}",
        l.error_drops, l.packets_tx
    );
    assert!((p / 0.004_95 - 1.0).abs() < 0.15, "loss {p}");
    // Deterministic: the same seed gives the same run.
    let again = serde_json::to_string(&run_config(cfg)).unwrap();
    assert_eq!(serde_json::to_string(&r).unwrap(), again);
}

// ---- rate and delivery traces -----------------------------------------------------------

#[test]
fn halving_the_rate_halves_the_departure_rate() {
    let mut fwd = dir(8_000_000, 0, queue("droptail", 200));
    fwd.rate_trace = Some(vec![
        RatePoint {
            t_ns: 0,
            rate_bps: 8_000_000,
            delay_ns: None,
        },
        RatePoint {
            t_ns: 30 * S,
            rate_bps: 4_000_000,
            delay_ns: None,
        },
    ]);
    let r = run_config(dumbbell(
        fwd,
        60 * MS,
        60 * S,
        vec![bulk_flow("cubic", false, 0)],
    ));
    // Utilization is relative to the nominal 8 Mbit/s.
    let u = &r.series.bottleneck_utilization;
    let before = u[5..30].iter().sum::<f64>() / 25.0;
    let after = u[35..60].iter().sum::<f64>() / 25.0;
    println!(
        "rate trace: departure rate {:.3} → {:.3} Mbit/s",
        before * 8.0,
        after * 8.0
    );
    // (Counted as packets enter the queue, so a change of the standing queue shifts a
    // few packets between intervals; over 25 s it is within 1.5 %.)
    assert!(before > 0.97, "{before}");
    assert!((after - 0.5).abs() < 0.015, "{after}");
}

#[test]
fn one_1500_byte_opportunity_per_ms_delivers_12_mbit_per_s() {
    // A Mahimahi trace with one line "1" (1 ms period): 1500 B · 8 / 1 ms = 12 Mbit/s, so
    // full data packets leave exactly one per ms once the queue stands.
    let mut fwd = dir(12_000_000, 0, queue("droptail", 500));
    fwd.delivery_trace = Some(DeliveryTraceConfig {
        opportunities_ns: vec![MS],
        period_ns: MS,
        bytes_per_opportunity: 1500,
    });
    let r = run_config(dumbbell(
        fwd,
        40 * MS,
        60 * S,
        vec![bulk_flow("cubic", false, 0)],
    ));
    let goodput = r.flows[0].goodput_bps / 1e6;
    // Delivered payload per interval after the start-up: one 1448 B payload per ms.
    let g = &r.series.flows[0].goodput_bps;
    let steady = g[10..60].iter().sum::<f64>() / 50.0 / 1e6;
    println!("delivery trace: goodput {goodput:.3} Mbit/s, steady {steady:.4} Mbit/s");
    // Payload ceiling 12 · 1448/1500 = 11.584 Mbit/s (12 Mbit/s of 1500 B packets).
    assert!(goodput > 0.99 * 11.584 && goodput <= 11.584, "{goodput}");
    assert!((steady - 11.584).abs() < 0.001, "{steady}");
}

// ---- RED --------------------------------------------------------------------------------

#[test]
fn red_keeps_the_mean_queue_between_min_th_and_max_th_for_reno() {
    // 10 Mbit/s, 20 ms RTT (BDP 16.7 packets), 200-packet buffer, RED defaults (5, 15,
    // 0.1, w_q 0.002). Four Reno flows: a halving takes an eighth of the window off, so
    // the queue does not drain between drops. DropTail fills the same buffer.
    let flows: Vec<FlowConfig> = (0..4)
        .map(|i| bulk_flow("reno", false, i * 100 * MS))
        .collect();
    let red = run_config(dumbbell(
        dir(10_000_000, 0, queue("red", 200)),
        20 * MS,
        120 * S,
        flows.clone(),
    ));
    let dt = run_config(dumbbell(
        dir(10_000_000, 0, queue("droptail", 200)),
        20 * MS,
        120 * S,
        flows,
    ));
    let (q, qdt) = (red.links[0].queue_mean_pkts, dt.links[0].queue_mean_pkts);
    let l = &red.links[0];
    println!(
        "RED: mean queue {q:.2} pkts (DropTail {qdt:.1}), utilization {:.3}, {} early drops, {} tail drops",
        l.utilization, l.aqm_drops, l.queue_drops
    );
    assert!((5.0..=15.0).contains(&q), "RED mean queue {q}");
    assert!(qdt > 100.0, "DropTail mean queue {qdt}");
    assert!(l.aqm_drops > 0 && l.queue_drops == 0);
    assert!(l.utilization > 0.95, "{}", l.utilization);
}

#[test]
fn red_with_ecn_marks_instead_of_dropping() {
    let flows: Vec<FlowConfig> = (0..4)
        .map(|i| bulk_flow("reno", true, i * 100 * MS))
        .collect();
    let mut sim = Simulation::new(dumbbell(
        dir(10_000_000, 0, queue("red", 200)),
        20 * MS,
        60 * S,
        flows,
    ))
    .unwrap();
    sim.run();
    assert_conservation(&sim);
    let r = api::summarize(&sim);
    let l = &r.links[0];
    println!(
        "RED+ECN: {} marks, {} early drops, mean queue {:.2}",
        l.ecn_marks, l.aqm_drops, l.queue_mean_pkts
    );
    assert!(l.ecn_marks > 100, "{}", l.ecn_marks);
    // New data is ECN-capable and marked; only Not-ECT packets (SYNs, and retransmissions,
    // which Linux sends Not-ECT, RFC 3168 §6.1.5) can be dropped.
    assert!(l.aqm_drops * 100 < l.ecn_marks, "{} drops", l.aqm_drops);
    assert!((5.0..=15.0).contains(&l.queue_mean_pkts));
}

// ---- CoDel ------------------------------------------------------------------------------

#[test]
fn codel_keeps_the_standing_queue_near_target_on_a_large_buffer() {
    // 10 Mbit/s, 100 ms RTT, 1000-packet buffer (≈ 1.2 s of queue). DropTail lets Reno and
    // CUBIC fill it; CoDel (target 5 ms, interval 100 ms) holds the queueing delay near
    // target: four flows keep a standing queue of ≈ 5 ms, a single flow (which CoDel
    // drives below full utilization between drops) less.
    for cca in ["reno", "cubic"] {
        let one = vec![bulk_flow(cca, false, 0)];
        let four: Vec<FlowConfig> = (0..4)
            .map(|i| bulk_flow(cca, false, i * 100 * MS))
            .collect();
        let net = |kind: &str, flows: Vec<FlowConfig>| {
            run_config(dumbbell(
                dir(10_000_000, 0, queue(kind, 1000)),
                100 * MS,
                120 * S,
                flows,
            ))
        };
        let dt = net("droptail", one.clone());
        let c1 = net("codel", one);
        let c4 = net("codel", four);
        let (d_dt, d1, d4) = (
            queue_delay_ms(&dt),
            queue_delay_ms(&c1),
            queue_delay_ms(&c4),
        );
        println!(
            "{cca}: mean queue delay DropTail {d_dt:.1} ms, CoDel 1 flow {d1:.2} ms \
             (util {:.3}), 4 flows {d4:.2} ms (util {:.3}); drops {} / {}; RTT p50 {:.1} vs {:.1} ms",
            c1.links[0].utilization,
            c4.links[0].utilization,
            c1.links[0].aqm_drops,
            c4.links[0].aqm_drops,
            c1.flows[0].rtt.p50_ns.unwrap() as f64 / 1e6,
            dt.flows[0].rtt.p50_ns.unwrap() as f64 / 1e6,
        );
        assert!(d_dt > 500.0, "{cca}: DropTail {d_dt}");
        assert!((2.5..=7.5).contains(&d4), "{cca}: 4 flows {d4}");
        assert!(d1 <= 7.5, "{cca}: 1 flow {d1}");
        assert!(c4.links[0].utilization > 0.9);
        for c in [&c1, &c4] {
            let l = &c.links[0];
            assert!(l.aqm_drops > 0 && l.queue_drops == 0, "{cca}");
        }
        // The sender sees the propagation RTT plus a few ms, not the DropTail second.
        let p50 = c1.flows[0].rtt.p50_ns.unwrap() as f64 / 1e6;
        assert!(p50 < 110.0, "{cca}: RTT p50 {p50}");
        assert!(dt.flows[0].rtt.p50_ns.unwrap() as f64 / 1e6 > 600.0);
    }
}

#[test]
fn codel_with_ecn_marks_and_conserves_packets() {
    let flows: Vec<FlowConfig> = (0..4)
        .map(|i| bulk_flow("cubic", true, i * 100 * MS))
        .collect();
    let mut sim = Simulation::new(dumbbell(
        dir(10_000_000, 0, queue("codel", 1000)),
        100 * MS,
        60 * S,
        flows,
    ))
    .unwrap();
    sim.run();
    assert_conservation(&sim);
    let r = api::summarize(&sim);
    let l = &r.links[0];
    println!("CoDel+ECN: {} marks, {} drops", l.ecn_marks, l.aqm_drops);
    assert!(l.ecn_marks > 50);
    assert_eq!(l.aqm_drops, 0);
}

#[test]
fn codel_with_outage_and_rate_trace_and_gilbert_elliott_runs_and_conserves() {
    // All event-driven paths at once.
    let mut fwd = dir(10_000_000, 0, queue("codel", 1000));
    fwd.outages = vec![(5 * S, 6 * S)];
    fwd.rate_trace = Some(vec![
        RatePoint {
            t_ns: 0,
            rate_bps: 10_000_000,
            delay_ns: None,
        },
        RatePoint {
            t_ns: 10 * S,
            rate_bps: 5_000_000,
            delay_ns: Some(10 * MS),
        },
    ]);
    fwd.loss = Some(LossConfig::GilbertElliott {
        p_gb: 0.001,
        p_bg: 0.2,
        loss_good: 0.0,
        loss_bad: 0.3,
    });
    let cfg = dumbbell(fwd, 60 * MS, 30 * S, vec![bulk_flow("reno", false, 0)]);
    let mut sim = Simulation::new(cfg.clone()).unwrap();
    sim.run();
    assert_conservation(&sim);
    let r = api::summarize(&sim);
    let l = &r.links[0];
    assert!(
        l.outage_drops > 0 && l.error_drops > 0 && l.aqm_drops > 0,
        "{l:?}"
    );
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        serde_json::to_string(&run_config(cfg)).unwrap()
    );
}

// ---- configuration ------------------------------------------------------------------------

fn scenario_json(forward: &str) -> String {
    format!(
        r#"{{"duration_ns": 1000000000,
            "bottleneck": {{
              "forward": {forward},
              "reverse": {{"rate_bps": 4000000, "delay_ns": 1000, "queue": {{"limit_pkts": 10}}}}}},
            "access": {{"rate_bps": 1000000000, "delay_ns": 100000}},
            "flows": [{{"cca": "reno", "app": {{"kind": "bulk"}}}}]}}"#
    )
}

fn err(forward: &str) -> String {
    tcplab_core::api::run_json(&scenario_json(forward)).expect_err("invalid")
}

#[test]
fn contract_example_parses_with_defaults() {
    let c = ScenarioConfig::from_json(&scenario_json(
        r#"{"rate_bps": 10000000, "delay_ns": 260000000, "per": 1e-4, "ber": 0.0,
            "queue": {"kind": "red", "limit_pkts": 334, "red": {"max_p": 0.2}},
            "ecn_threshold_pkts": null,
            "loss": {"kind": "gilbert_elliott", "p_gb": 0.01, "p_bg": 0.1,
                     "loss_good": 0.0, "loss_bad": 0.5},
            "outages": [[10000000000, 12000000000]],
            "rate_trace": [[0, 10000000, null], [5000000000, 5000000, 300000000]],
            "delivery_trace": null}"#,
    ))
    .unwrap();
    let f = &c.bottleneck.as_ref().unwrap().forward;
    let red = f.queue.red.unwrap();
    assert_eq!(
        (red.min_th_pkts, red.max_th_pkts, red.max_p),
        (5.0, 15.0, 0.2)
    );
    assert_eq!((red.w_q, red.gentle, red.ecn), (0.002, true, true));
    assert_eq!(f.outages, vec![(10 * S, 12 * S)]);
    let t = f.rate_trace.as_ref().unwrap();
    assert_eq!((t[0].delay_ns, t[1].delay_ns), (None, Some(300 * MS)));
    assert_eq!(CodelConfig::default().target_ns, 5 * MS);
    assert_eq!(CodelConfig::default().interval_ns, 100 * MS);
    let d = ScenarioConfig::from_json(&scenario_json(
        r#"{"rate_bps": 1, "delay_ns": 0, "queue": {"kind": "codel", "limit_pkts": 5},
            "delivery_trace": {"opportunities_ns": [1000000], "period_ns": 1000000}}"#,
    ))
    .unwrap();
    assert_eq!(
        d.bottleneck
            .unwrap()
            .forward
            .delivery_trace
            .unwrap()
            .bytes_per_opportunity,
        1500
    );
}

#[test]
fn invalid_link_models_name_the_field() {
    let q = r#""queue": {"limit_pkts": 10}"#;
    let cases = [
        (
            format!(r#"{{"rate_bps": 1, "delay_ns": 0, {q}, "outages": [[1, 5], [9, 7]]}}"#),
            "bottleneck.forward.outages[1]: end before start",
        ),
        (
            format!(r#"{{"rate_bps": 1, "delay_ns": 0, {q}, "outages": [[1, 5], [4, 7]]}}"#),
            "bottleneck.forward.outages[1]: starts at 4, before the end",
        ),
        (
            format!(r#"{{"rate_bps": 1, "delay_ns": 0, {q}, "rate_trace": [[5, 1, null]]}}"#),
            "bottleneck.forward.rate_trace[0]: the first point must be at t_ns = 0",
        ),
        (
            format!(
                r#"{{"rate_bps": 1, "delay_ns": 0, {q},
                    "rate_trace": [[0, 1, null], [7, 1, null], [7, 2, null]]}}"#
            ),
            "bottleneck.forward.rate_trace[2]: t_ns 7 is not after",
        ),
        (
            format!(r#"{{"rate_bps": 1, "delay_ns": 0, {q}, "rate_trace": [[0, 0, null]]}}"#),
            "bottleneck.forward.rate_trace[0]: rate_bps 0 is out of range",
        ),
        (
            format!(
                r#"{{"rate_bps": 1, "delay_ns": 0, {q},
                    "loss": {{"kind": "gilbert_elliott", "p_gb": 1.5, "p_bg": 0.1}}}}"#
            ),
            "bottleneck.forward.loss.p_gb: 1.5 must be in [0, 1]",
        ),
        (
            format!(
                r#"{{"rate_bps": 1, "delay_ns": 0, {q},
                    "delivery_trace": {{"opportunities_ns": [5, 3], "period_ns": 10}}}}"#
            ),
            "bottleneck.forward.delivery_trace.opportunities_ns[1]: 3 is before",
        ),
        (
            format!(
                r#"{{"rate_bps": 1, "delay_ns": 0, {q},
                    "delivery_trace": {{"opportunities_ns": [11], "period_ns": 10}}}}"#
            ),
            "bottleneck.forward.delivery_trace.opportunities_ns[0]: 11 is after period_ns",
        ),
        (
            format!(
                r#"{{"rate_bps": 1, "delay_ns": 0, {q}, "rate_trace": [[0, 1, null]],
                    "delivery_trace": {{"opportunities_ns": [1], "period_ns": 10}}}}"#
            ),
            "bottleneck.forward: give at most one of rate_trace and delivery_trace",
        ),
        (
            r#"{"rate_bps": 1, "delay_ns": 0, "queue": {"kind": "pie", "limit_pkts": 10}}"#
                .to_string(),
            "bottleneck.forward.queue.kind: unknown queue discipline \"pie\"; allowed: droptail, red, codel",
        ),
        (
            r#"{"rate_bps": 1, "delay_ns": 0,
                "queue": {"limit_pkts": 10, "red": {"min_th_pkts": 3}}}"#
                .to_string(),
            "bottleneck.forward.queue.red: only allowed with kind \"red\"",
        ),
        (
            r#"{"rate_bps": 1, "delay_ns": 0,
                "queue": {"kind": "red", "limit_pkts": 10, "red": {"min_th_pkts": 20}}}"#
                .to_string(),
            "bottleneck.forward.queue.red.max_th_pkts: 15 must be a finite number > min_th_pkts",
        ),
        (
            r#"{"rate_bps": 1, "delay_ns": 0,
                "queue": {"kind": "red", "limit_pkts": 10, "red": {"max_p": 0}}}"#
                .to_string(),
            "bottleneck.forward.queue.red.max_p: 0 must be in (0, 1]",
        ),
        (
            r#"{"rate_bps": 1, "delay_ns": 0,
                "queue": {"kind": "codel", "limit_pkts": 10, "codel": {"target_ns": 0}}}"#
                .to_string(),
            "bottleneck.forward.queue.codel.target_ns: 0 is out of range",
        ),
    ];
    for (json, want) in cases {
        let e = err(&json);
        assert!(e.starts_with(want), "got {e:?}, want {want:?}");
        assert!(!e.contains('\n'), "one line: {e:?}");
    }
    // Unknown keys in the new tables are rejected too.
    let e = err(r#"{"rate_bps": 1, "delay_ns": 0,
            "queue": {"kind": "codel", "limit_pkts": 10, "codel": {"targt_ns": 1}}}"#);
    assert!(e.contains("targt_ns"), "{e}");
    let e = err(
        r#"{"rate_bps": 1, "delay_ns": 0, "queue": {"limit_pkts": 10},
            "loss": {"kind": "gilbert_elliott", "p_gb": 0.1, "p_bg": 0.1, "p_x": 1}}"#,
    );
    assert!(e.contains("p_x"), "{e}");
}
