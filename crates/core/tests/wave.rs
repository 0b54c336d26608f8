//! TCP Wave on the GEO path (4 Mbit/s, 250 ms one way, 2×BDP DropTail).
//!
//! Hand calculation used throughout (1500-byte wire packets, 1448-byte payload):
//! - one packet takes 1500·8/4e6 = 3 ms at the bottleneck, so a 10-segment burst leaves it
//!   spread over 30 ms: the ACK-train dispersion is ATD = 30 ms (5 delayed ACKs 6 ms apart:
//!   24 ms · 5/4);
//! - base RTT = 500.4 ms propagation + 3 ms own serialization = 503.4 ms; the first ACK of a
//!   steady train acknowledges 2 segments (delayed ACK), one more serialization: 506.4 ms,
//!   while Wave's minimum was taken on a quick-ACKed single segment at start-up, so
//!   Δ = avg − min = 3 ms and TxTime = ATD + Δ/2 = 31.5 ms;
//! - sending rate = 10 packets / 31.5 ms = 317.5 packets/s = 95.2 % of the 333.3 packets/s
//!   capacity; goodput = 0.952 · 4e6 · 1448/1500 = 3.677 Mbit/s;
//! - the queue holds at most the 9 packets behind a burst's first one: RTT ≤ 503.4 + 27 ms.
//!
//! Outages are emulated by setting the packet error rate of both bottleneck directions to 1
//! for a few seconds (the engine has no outage model; the error model is public).
mod common;
use common::*;
use tcplab_core::api;
use tcplab_core::cc::{Cc, CongestionControl};
use tcplab_core::engine::time::{SimDuration, SimTime};
use tcplab_core::scenario::TcpConfig;
use tcplab_core::sim::Simulation;

/// Payload rate of the 4 Mbit/s bottleneck: 4e6 · 1448/1500.
const PAYLOAD_CEILING_BPS: f64 = 3.861e6;
/// Wave's hand-derived goodput on this path (see the module doc).
const WAVE_GOODPUT_BPS: f64 = 3.677e6;
const S: u64 = 1_000_000_000;

/// GEO path, 2×BDP buffer: BDP = 4e6 · 0.5004 / 12000 = 166.8 packets → 334.
fn geo(cca: &'static str, per: f64, duration_s: u64) -> Spec {
    Spec {
        queue_pkts: 334,
        duration_s,
        per,
        ..Spec::geo(cca)
    }
}

fn wave_of(sim: &Simulation) -> &tcplab_core::cc::wave::Wave {
    match &sim.conns[0].sender.linux().unwrap().cc {
        Cc::Wave(w) => w,
        _ => panic!("not a wave flow"),
    }
}

fn mean_rtt_ms(r: &api::RunResult) -> f64 {
    r.flows[0].rtt.mean_ns.expect("rtt samples") / 1e6
}

/// Turn the bottleneck (both directions) off, or back on.
fn outage(sim: &mut Simulation, on: bool) {
    let per = if on { 1.0 } else { 0.0 };
    let (f, r) = (sim.topo.bottleneck_fwd, sim.topo.bottleneck_rev);
    sim.topo.links[f as usize].errors.per = per;
    sim.topo.links[r as usize].errors.per = per;
}

/// Payload delivered to the receiver so far, in bytes.
fn delivered(sim: &Simulation) -> u64 {
    sim.conns[0].receiver.stats.bytes_delivered
}

#[test]
fn wave_runs_near_capacity_at_base_rtt_on_geo_while_cubic_and_reno_fill_the_buffer() {
    let mut sim = Simulation::new(geo("wave", 0.0, 300).build()).unwrap();
    sim.run();
    let w = wave_of(&sim);
    // TxTime = ATD + Δ/2 = 30 + 1.5 ms; never an Adjustment on a clean path.
    let tx = w.tx_time();
    assert!(
        tx >= SimDuration::from_ms(30) && tx <= SimDuration::from_ms(33),
        "TxTime {tx}"
    );
    assert_eq!(w.adjustments(), 0);
    let r = api::summarize(&sim);
    let (g, u, rtt) = (
        r.flows[0].goodput_bps,
        r.links[0].utilization,
        mean_rtt_ms(&r),
    );
    println!(
        "wave: TxTime {tx}, goodput {g:.0} bit/s, utilization {u:.3}, mean RTT {rtt:.1} ms, queue {:.1}",
        r.links[0].queue_mean_pkts
    );
    // 95.2 % of capacity (less ~1 s of start-up over 300 s).
    assert!(u >= 0.93, "wave utilization {u}");
    assert!(g >= 0.97 * WAVE_GOODPUT_BPS, "wave goodput {g}");
    // RTT within the 27 ms of one burst above the 503.4 ms base; the queue stays tiny.
    assert!(rtt <= 503.4 + 27.0, "wave mean RTT {rtt} ms");
    assert!(
        r.links[0].queue_mean_pkts < 9.0,
        "{}",
        r.links[0].queue_mean_pkts
    );
    assert_eq!(r.links[0].queue_drops, 0);
    for cca in ["cubic", "reno"] {
        let c = run(&geo(cca, 0.0, 300));
        let crtt = mean_rtt_ms(&c);
        println!(
            "{cca}: mean RTT {crtt:.1} ms, goodput {:.0}",
            c.flows[0].goodput_bps
        );
        // Loss-based: the 334-packet buffer (up to 1 s of queueing) is filled until it
        // overflows; on average at least half of it.
        assert!(crtt >= 503.4 + 500.0, "{cca} mean RTT {crtt} ms");
        assert!(
            c.links[0].queue_drops > 0,
            "{cca} never overflowed the buffer"
        );
        assert!(rtt < 0.55 * crtt, "wave {rtt} ms vs {cca} {crtt} ms");
    }
}

#[test]
fn wave_goodput_barely_degrades_under_random_loss_unlike_reno_and_cubic() {
    let clean = run(&geo("wave", 0.0, 300)).flows[0].goodput_bps;
    for per in [1e-5, 1e-4, 1e-3, 1e-2] {
        let r = run(&geo("wave", per, 300));
        let g = r.flows[0].goodput_bps;
        println!(
            "wave PER {per}: goodput {g:.0} (lossless {clean:.0}), RTOs {}",
            r.flows[0].rto_count
        );
        // Loss is not a congestion signal: the burst rate is unchanged and every loss is
        // repaired by one extra (parallel) retransmission, at most 1 % more load.
        assert!(
            g >= 0.95 * clean,
            "PER {per}: wave goodput {g} vs {clean} lossless"
        );
        assert!(
            g >= 0.93 * PAYLOAD_CEILING_BPS,
            "PER {per}: wave goodput {g}"
        );
    }
    let wave = run(&geo("wave", 1e-2, 300)).flows[0].goodput_bps;
    // Reno follows Mathis: 1448·8/0.5 · 1.22/√0.01 = 0.283 Mbit/s, 7 % of the capacity;
    // CUBIC's response 1.054·(RTT/p)^0.75 = 19.8 packets per RTT = 0.46 Mbit/s.
    for (cca, max_share) in [("reno", 0.15), ("cubic", 0.25)] {
        let lossless = run(&geo(cca, 0.0, 300)).flows[0].goodput_bps;
        let lossy = run(&geo(cca, 1e-2, 300)).flows[0].goodput_bps;
        println!("{cca}: goodput {lossy:.0} at PER 1e-2, {lossless:.0} lossless");
        assert!(
            lossy <= max_share * lossless,
            "{cca}: {lossy} at PER 1e-2 vs {lossless} lossless"
        );
        assert!(
            wave >= 5.0 * lossy,
            "wave {wave} vs {cca} {lossy} at PER 1e-2"
        );
    }
}

/// Step a simulation from expiry to expiry of Wave's burst timer over `[from, to)`.
/// Calls `at_tick(sent, retransmitted)` for what left at each expiry instant and
/// `between(sent, retransmitted)` for what left strictly between two expiries.
fn step_by_ticks(
    sim: &mut Simulation,
    to: SimTime,
    mut at_tick: impl FnMut(&Simulation, u64, u64),
    mut between: impl FnMut(&Simulation, u64, u64),
) {
    let counters = |sim: &Simulation| {
        let st = &sim.conns[0].sender.stats();
        (st.segments_sent, st.retrans_segs)
    };
    loop {
        let next = wave_of(sim).send_timer().expect("the burst timer runs");
        if next >= to {
            break;
        }
        let (s0, r0) = counters(sim);
        sim.run_until(next);
        let (s1, r1) = counters(sim);
        between(sim, s1 - s0, r1 - r0);
        sim.run_until(next + SimDuration(1));
        let (s2, r2) = counters(sim);
        at_tick(sim, s2 - s1, r2 - r1);
    }
}

#[test]
fn wave_sends_new_data_only_in_timer_bursts_and_fast_retransmits_in_parallel() {
    let mut sim = Simulation::new(geo("wave", 1e-2, 40).build()).unwrap();
    sim.run_until(SimTime(20 * S));
    let (mut ticks, mut parallel, mut in_bursts) = (0u64, 0u64, 0u64);
    step_by_ticks(
        &mut sim,
        SimTime(40 * S),
        |_, sent, rtx| {
            // One expiry opens one burst: at most BURST0 = 10 segments.
            assert!(sent <= 10, "a burst of {sent}");
            ticks += 1;
            in_bursts += rtx;
        },
        |_, sent, rtx| {
            // ACKs never clock out new data: between expiries only retransmissions leave,
            // as soon as the loss is detected.
            assert_eq!(sent, rtx, "new data sent between bursts");
            parallel += rtx;
        },
    );
    println!("{ticks} expiries, {parallel} parallel retransmissions, {in_bursts} in bursts");
    // 20 s at one expiry per 31.5 ms: ~635 bursts; ~1 % of ~6350 segments lost.
    assert!((600..=660).contains(&ticks), "{ticks} expiries");
    assert!(parallel >= 30, "only {parallel} parallel retransmissions");
    assert!(
        parallel >= 10 * in_bursts,
        "{parallel} parallel vs {in_bursts} in bursts"
    );
    assert_eq!(sim.conns[0].sender.stats().rto_count, 0);
}

#[test]
fn wave_survives_a_five_second_outage() {
    let mut sim = Simulation::new(geo("wave", 0.0, 120).build()).unwrap();
    sim.run_until(SimTime(30 * S));
    outage(&mut sim, true);
    sim.run_until(SimTime(35 * S));
    outage(&mut sim, false);
    // The burst timer keeps sending through the outage (it does not wait for ACKs):
    // 5 s / 31.5 ms · 10 = ~1590 segments lost, all SACK-repaired in parallel afterwards.
    sim.run_until(SimTime(60 * S));
    let d60 = delivered(&sim);
    sim.run();
    let w = wave_of(&sim);
    let tx = w.tx_time();
    // The recovery's queueing caused Adjustments, which forget min_rtt; it is re-learnt on
    // steady 2-segment trains, so Δ → 0 and TxTime → ATD = 30 ms (at most 31.5 ms).
    assert!(w.adjustments() > 0);
    assert!(
        tx >= SimDuration::from_ms(30) && tx <= SimDuration::from_ms(33),
        "TxTime after the outage {tx}"
    );
    // At least the hand-derived steady state over the last minute.
    let g = (delivered(&sim) - d60) as f64 * 8.0 / 60.0;
    println!("after a 5 s outage: TxTime {tx}, goodput over 60..120 s {g:.0}");
    assert!(g >= 0.97 * WAVE_GOODPUT_BPS, "goodput after the outage {g}");
}

#[test]
fn wave_rto_keeps_txtime_and_lost_segments_ride_in_bursts() {
    // A 512 KiB receive window (362 segments) fills during a 10 s outage, so the bursts
    // stop, the loss probe and then the RTO fire.
    let spec = Spec {
        tcp: TcpConfig {
            rwnd_bytes: 512 * 1024,
            ..Default::default()
        },
        ..geo("wave", 0.0, 120)
    };
    let mut sim = Simulation::new(spec.build()).unwrap();
    sim.run_until(SimTime(30 * S));
    let tx_before = wave_of(&sim).tx_time();
    let period = wave_of(&sim).period();
    outage(&mut sim, true);
    // Until the first RTO (1 ms steps).
    let mut rto_at = SimTime(30 * S);
    while sim.conns[0].sender.stats().rto_count == 0 {
        rto_at += SimDuration::from_ms(1);
        sim.run_until(rto_at);
    }
    assert_eq!(
        wave_of(&sim).tx_time(),
        tx_before,
        "an RTO does not touch TxTime"
    );
    // After the RTO the lost segments leave BURST0 at a time, one burst per period,
    // and nothing leaves in between (cwnd = in flight + 1 was used by the head).
    let mut last_tick: Option<SimTime> = None;
    let mut bursts = 0;
    step_by_ticks(
        &mut sim,
        rto_at + SimDuration::from_ms(600),
        |sim, sent, rtx| {
            let now = sim.conns[0].sender.linux().unwrap().w.now;
            if let Some(t) = last_tick {
                assert_eq!(now.since(t), period, "burst spacing");
            }
            last_tick = Some(now);
            assert_eq!((sent, rtx), (10, 10), "a burst of retransmissions");
            bursts += 1;
        },
        |_, sent, _| assert_eq!(sent, 0, "sent between bursts"),
    );
    println!("RTO at {rto_at:?}: {bursts} bursts of 10 retransmissions, {period} apart");
    assert!(bursts >= 15, "{bursts} bursts in 600 ms");
    sim.run_until(SimTime(40 * S));
    outage(&mut sim, false);
    sim.run_until(SimTime(60 * S));
    let d60 = delivered(&sim);
    sim.run();
    let g = (delivered(&sim) - d60) as f64 * 8.0 / 60.0;
    println!(
        "after a 10 s outage with RTOs ({}): goodput over 60..120 s {g:.0}",
        sim.conns[0].sender.stats().rto_count
    );
    assert!(g >= 0.97 * WAVE_GOODPUT_BPS, "goodput after the outage {g}");
}
