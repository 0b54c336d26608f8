//! The ns-2 TCP agents (tahoe, reno and vegas on the ns-2 stack, newreno, sack,
//! fack), on paths whose outcome theory predicts.
mod common;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use tcplab_core::engine::time::SimTime;
use tcplab_core::net::packet::{Packet, PacketKind};
use tcplab_core::scenario::{AppConfig, Stack, TcpConfig};
use tcplab_core::tcp::connection::TimerSlot;
use tcplab_core::tcp::ns2::{self, FlowTcp, Ns2Kind, Ns2Sender};
use tcplab_core::tcp::receiver::{EcnEcho, Receiver, ReceiverConfig};

// --- a two-node harness with a deterministic drop list ------------------------------------

/// Sender and sink joined by a FIFO link of `rate_bps` and `delay_ns` each way (ACKs are
/// not serialized), dropping the first transmission of the data packets in `drops` (ns-2
/// packet numbers, data starting at 1): Fall & Floyd's "k drops in one window".
struct Harness {
    s: Ns2Sender,
    r: Receiver,
    mss: u32,
    rate_bps: u64,
    delay_ns: u64,
    drops: Vec<i64>,
    link_free: u64,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    events: Vec<Option<Ev>>,
    sched: [Option<u64>; 2],
}

enum Ev {
    ToReceiver(Packet),
    ToSender(Packet),
    Timer(usize),
}

impl Harness {
    fn new(kind: Ns2Kind, window_pkts: u64, drops: &[i64]) -> Harness {
        let mss = 1000;
        let tcp = FlowTcp {
            mss,
            initial_window: 2,
            rwnd_bytes: window_pkts * mss as u64,
            timestamps: false,
            app: AppConfig::Bulk,
            relay: false,
            peer_window: false,
        };
        let s = ns2::build(kind, 0, &BTreeMap::new(), &tcp, 0.5).unwrap();
        let r = Receiver::new(
            0,
            ReceiverConfig {
                mss,
                sack: kind.uses_sack(),
                dsack: false,
                timestamps: true,
                delayed_ack: false,
                rwnd_bytes: window_pkts * mss as u64,
                app: AppConfig::Bulk,
                ecn: EcnEcho::Off,
            },
        );
        Harness {
            s,
            r,
            mss,
            rate_bps: 800_000,
            delay_ns: 100_000_000,
            drops: drops.to_vec(),
            link_free: 0,
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            events: Vec::new(),
            sched: [None; 2],
        }
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.events.push(Some(ev));
        self.seq += 1;
        self.heap
            .push(Reverse((t, self.seq, self.events.len() - 1)));
    }

    fn carry_data(&mut self, out: Vec<Packet>) {
        for p in out {
            if p.kind == PacketKind::Data {
                let n = (p.seq / self.mss as u64) as i64 + 1;
                if let Some(i) = self.drops.iter().position(|&d| d == n) {
                    self.drops.remove(i);
                    continue;
                }
            }
            let start = self.now.max(self.link_free);
            self.link_free = start + p.wire_bytes as u64 * 8 * 1_000_000_000 / self.rate_bps;
            let at = self.link_free + self.delay_ns;
            self.push(at, Ev::ToReceiver(p));
        }
        self.sync(0);
    }

    fn carry_acks(&mut self, out: Vec<Packet>) {
        for mut p in out {
            ns2::sink::rewrite(&mut p);
            let at = self.now + self.delay_ns;
            self.push(at, Ev::ToSender(p));
        }
        self.sync(1);
    }

    fn sync(&mut self, side: usize) {
        let d = if side == 0 {
            self.s.timer_deadline(TimerSlot::Retransmit)
        } else {
            self.r.timer_deadline(TimerSlot::Ack)
        };
        if let Some(d) = d {
            if self.sched[side].is_none_or(|s| d.0 < s) {
                self.sched[side] = Some(d.0);
                self.push(d.0, Ev::Timer(side));
            }
        }
    }

    /// Run until the receiver holds `bytes` in order; returns that time in seconds.
    fn time_to_deliver(&mut self, bytes: u64, limit_s: f64) -> f64 {
        let mut out = Vec::new();
        self.r.start(SimTime(0), &mut out);
        self.carry_acks(std::mem::take(&mut out));
        self.s.start(SimTime(0), &mut out);
        self.carry_data(std::mem::take(&mut out));
        while let Some(Reverse((t, _, i))) = self.heap.pop() {
            self.now = t;
            if t as f64 * 1e-9 > limit_s {
                break;
            }
            let now = SimTime(t);
            match self.events[i].take().expect("event") {
                Ev::ToReceiver(p) => {
                    self.r.on_packet(now, &p, &mut out);
                    self.carry_acks(std::mem::take(&mut out));
                    if self.r.rcv_nxt >= bytes {
                        return t as f64 * 1e-9;
                    }
                }
                Ev::ToSender(p) => {
                    self.s.on_packet(now, &p, &mut out);
                    self.carry_data(std::mem::take(&mut out));
                }
                Ev::Timer(side) => {
                    if self.sched[side] == Some(t) {
                        self.sched[side] = None;
                    }
                    if side == 0 {
                        self.s.on_timer(now, TimerSlot::Retransmit, &mut out);
                        self.carry_data(std::mem::take(&mut out));
                    } else {
                        self.r.on_timer(now, TimerSlot::Ack, &mut out);
                        self.carry_acks(std::mem::take(&mut out));
                    }
                }
            }
        }
        f64::INFINITY
    }
}

/// The agents of the multiple-drops experiment, Tahoe first.
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
/// first `k` of packets 60, 62, 64, 66 dropped (they leave in one window in congestion
/// avoidance).
fn multiple_drops(kind: Ns2Kind, k: usize) -> Outcome {
    let drops = &[60, 62, 64, 66][..k];
    let mut h = Harness::new(kind, 28, drops);
    let secs = h.time_to_deliver(150_000, 60.0);
    Outcome {
        secs,
        rto: h.s.stats.rto_count,
        fast_retransmits: h.s.stats.fast_recoveries,
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

// --- the full simulator -------------------------------------------------------------------

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
    let dir = DirConfig {
        rate_bps: 100_000_000,
        delay_ns: 3_000_000,
        per: 0.0,
        ber: 0.0,
        queue: QueueConfig {
            kind: "droptail".into(),
            limit_pkts: Some(64),
            limit_bytes: None,
            red: None,
            codel: None,
        },
        ecn_threshold_pkts: None,
        loss: None,
        outages: Vec::new(),
        rate_trace: None,
        delivery_trace: None,
    };
    ScenarioConfig {
        name: format!("goodput-ns2 {cca} {mss}"),
        seed: 1,
        duration_ns: 11_000_000_000,
        interval_ns: 1_000_000_000,
        bottleneck: Some(BottleneckConfig {
            forward: dir.clone(),
            reverse: dir,
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
        let drops: u64 = sim
            .topo
            .links
            .iter()
            .map(|l| l.stats.queue_drops + l.stats.error_drops)
            .sum();
        assert_eq!(
            sim.counters.created,
            sim.counters.delivered + drops + sim.packets_on_links(),
            "{cca}"
        );
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
