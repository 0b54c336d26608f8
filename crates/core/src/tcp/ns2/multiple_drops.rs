//! Fall & Floyd's "k drops in one window" (CCR 26(3), 1996) on the two-endpoint
//! harness: each agent against the same scripted losses.
use super::Ns2Kind;
use crate::engine::time::{SimDuration, SimTime};
use crate::scenario::{AppConfig, Stack, TcpConfig};
use crate::tcp::harness::{Pair, PairSpec};

const LOSS_AGENTS: [Ns2Kind; 5] = [
    Ns2Kind::Tahoe,
    Ns2Kind::Reno,
    Ns2Kind::NewReno,
    Ns2Kind::Sack1,
    Ns2Kind::Fack,
];

/// One outcome of the multiple-drops experiment.
struct Outcome {
    secs: f64,
    rto: u64,
    fast_retransmits: u64,
}

/// Time to deliver 150 packets over 0.8 Mbit/s, 100 ms each way (RTT 0.2 s + 10.4 ms per
/// 1040-byte packet: pipe ≈ 19 packets), window_ 28, with the first transmissions of the
/// first `k` of packets 60, 62, 64, 66 dropped (ns-2 numbers them from 1; they leave in
/// one window in congestion avoidance).
fn multiple_drops(kind: Ns2Kind, k: usize) -> Outcome {
    let mut p = Pair::new(PairSpec {
        cca: kind.name(),
        tcp: TcpConfig {
            mss_bytes: 1000,
            sack: kind.uses_sack(),
            timestamps: false,
            initial_window_pkts: 2,
            rwnd_bytes: 28_000,
            delayed_ack: false,
            stack: Stack::Ns2,
            ..TcpConfig::default()
        },
        app: AppConfig::Bulk,
        one_way: SimDuration::from_ms(100),
        rate_bps: Some(800_000),
        relay: false,
    });
    for &n in &[60, 62, 64, 66][..k] {
        p.lose(n - 1, 1);
    }
    p.start();
    let done = p.run_until_delivered(150_000, SimTime::ZERO + SimDuration::from_secs(60));
    let stats = p.conn.sender.stats();
    Outcome {
        secs: done.map_or(f64::INFINITY, |t| t.since(SimTime::ZERO).as_secs_f64()),
        rto: stats.rto_count,
        fast_retransmits: stats.fast_recoveries,
    }
}

/// One RTT of the experiment's path (propagation only), seconds.
const RTT_S: f64 = 0.2;

#[test]
fn multiple_drops_without_loss_all_agents_are_identical() {
    // Same slow start (+1 per ACK from windowInit_ 2, ssthresh_ = window_ 28) and no loss:
    // the agents differ only in loss recovery, so the delivery times are equal.
    let t: Vec<f64> = LOSS_AGENTS
        .iter()
        .map(|&k| multiple_drops(k, 0).secs)
        .collect();
    assert!(t.iter().all(|&x| x == t[0]), "{t:?}");
}

#[test]
fn multiple_drops_one_loss_tahoe_pays_slow_start_others_halve() {
    // One drop: every agent fast-retransmits once. Reno, NewReno, Sack1 and FACK continue
    // at half the window; Tahoe restarts from cwnd 1 and needs log2(14) ≈ 4 RTTs of slow
    // start to get back to ssthresh 14: at least one RTT later than the others.
    let o: Vec<Outcome> = LOSS_AGENTS.iter().map(|&k| multiple_drops(k, 1)).collect();
    for (kind, x) in LOSS_AGENTS.iter().zip(&o) {
        assert_eq!((x.rto, x.fast_retransmits), (0, 1), "{kind:?}");
    }
    let reno = o[1].secs;
    assert!(
        o[0].secs > reno + RTT_S,
        "tahoe {} vs reno {reno}",
        o[0].secs
    );
    for x in &o[2..] {
        assert!(
            (x.secs - reno).abs() < RTT_S / 2.0,
            "{} vs reno {reno}",
            x.secs
        );
    }
}

#[test]
fn multiple_drops_two_to_four_losses_order_the_recoveries() {
    // Fall & Floyd (1996), with ns-2's defaults (bugFix_, newreno_changes1_):
    // - Reno leaves fast recovery on the first partial ACK, and bugFix_ forbids a second
    //   fast retransmit below recover_: it waits for the retransmission timeout;
    // - NewReno repairs one hole per RTT (2 drops: no timeout; 3–4: its timer, restarted
    //   only on the first partial ACK, expires first);
    // - Sack1 and FACK repair all holes in one recovery, no later than with one drop plus
    //   an RTT;
    // - Tahoe goes back to slow start once and resends the window: slower than SACK, but
    //   it does not wait for a timeout like Reno.
    let one_sack = multiple_drops(Ns2Kind::Sack1, 1).secs;
    let one_fack = multiple_drops(Ns2Kind::Fack, 1).secs;
    for k in 2..=4 {
        let [tahoe, reno, newreno, sack, fack] = LOSS_AGENTS.map(|a| multiple_drops(a, k));
        assert_eq!(reno.rto, 1, "{k} drops: reno waits for the RTO");
        assert_eq!(newreno.rto, u64::from(k >= 3), "{k} drops: newreno");
        assert_eq!((sack.rto, fack.rto, tahoe.rto), (0, 0, 0), "{k} drops");
        assert!(
            sack.secs < one_sack + RTT_S,
            "{k} drops: sack {}",
            sack.secs
        );
        assert!(
            fack.secs < one_fack + RTT_S,
            "{k} drops: fack {}",
            fack.secs
        );
        assert!(
            fack.secs <= sack.secs && sack.secs < newreno.secs && newreno.secs < reno.secs,
            "{k} drops: fack {} sack {} newreno {} reno {}",
            fack.secs,
            sack.secs,
            newreno.secs,
            reno.secs
        );
        assert!(
            sack.secs < tahoe.secs && tahoe.secs < reno.secs,
            "{k} drops"
        );
    }
}
