//! Split-TCP PEPs, multi-segment paths and CBR traffic.
use serde_json::json;
use tcplab_core::api::{self, RunResult};
use tcplab_core::scenario::ScenarioConfig;
use tcplab_core::sim::flow::FlowKind;
use tcplab_core::sim::Simulation;

fn dir(rate: u64, delay_ms: f64, per: f64, queue_pkts: u64) -> serde_json::Value {
    json!({"rate_bps": rate, "delay_ns": (delay_ms * 1e6) as u64, "per": per,
           "queue": {"limit_pkts": queue_pkts}})
}

/// The GEO path of the PEP studies: internet 100 Mbit/s 10 ms — satellite 10/2 Mbit/s
/// 260 ms — access 100 Mbit/s 5 ms (base RTT 2·275 ms + 4·0.1 ms access = 550.4 ms).
fn geo_path(pep: &str, sat_per: f64) -> serde_json::Value {
    json!({"pep": pep, "segments": [
        {"name": "internet", "forward": dir(100_000_000, 10.0, 0.0, 1000),
                             "reverse": dir(100_000_000, 10.0, 0.0, 1000)},
        {"name": "satellite", "forward": dir(10_000_000, 260.0, sat_per, 918),
                              "reverse": dir(2_000_000, 260.0, 0.0, 918)},
        {"name": "access", "forward": dir(100_000_000, 5.0, 0.0, 1000),
                           "reverse": dir(100_000_000, 5.0, 0.0, 1000)}]})
}

fn scenario(path: serde_json::Value, flows: serde_json::Value, duration_s: u64) -> ScenarioConfig {
    let v = json!({"name": "pep", "seed": 1, "duration_ns": duration_s * 1_000_000_000,
        "path": path, "access": {"rate_bps": 1_000_000_000u64, "delay_ns": 100_000},
        "flows": flows});
    ScenarioConfig::from_json(&v.to_string()).expect("valid scenario")
}

fn download(cca: &str, pep: Option<&str>, size: u64) -> serde_json::Value {
    let mut f = json!({"cca": cca, "app": {"kind": "file", "size_bytes": size}});
    if let Some(p) = pep {
        f["pep"] = json!({"cca": p});
    }
    f
}

fn run(cfg: ScenarioConfig) -> RunResult {
    api::run(cfg).expect("runs")
}

fn completion_s(r: &RunResult) -> f64 {
    r.flows[0].completion_ns.expect("download completed") as f64 / 1e9
}

#[test]
fn pep_shortens_a_5mb_download_over_geo() {
    // End to end, CUBIC pays the 550 ms RTT for the handshake, the request and every
    // slow-start round: 3454 segments need rounds of 10, 20, 40, ... up to the satellite's
    // 458-packet BDP, then ~3454/458 more RTTs at the link rate: about 13 RTTs (7 s).
    // Through a distributed PEP the end hosts see 10-20 ms RTTs and the satellite leg runs
    // the PEP's TCP. The request still has to cross the satellite once (it reaches the
    // server at about 2 x 10.4 ms + 520 ms + 260 ms = 0.8 s), and 5 MB take at least
    // 5e6 x 8 / 9.65e6 = 4.15 s at the payload rate of 10 Mbit/s, so no PEP can finish before
    // ~0.8 + 4.15 + 0.26 = 5.2 s. Hybla (rho = 22) or a PEP window opened wide from the start
    // would fill the satellite at once, but the far PEP's socket autotunes its receive
    // window (Linux; the relay sets no SO_RCVBUF): it offers 45 packets (65160 B), then 55
    // (rcv_ssthresh opened to 80 KB during the first round), then about 3 x 55 (right-sizing
    // grows the buffer and every segment opens two more), and only the fourth round can
    // exceed the 442-packet BDP. Three rounds carry ~265 packets instead of 3 x 442: about
    // (1326 - 265) x 1.2 ms = 1.3 s later than the bound, i.e. ~6.5 s, still at least the
    // end-to-end handshake's satellite round trip (0.55 s) ahead of end to end; the same
    // CUBIC on the satellite leg gains only the local handshake.
    let size = 5_000_000;
    let with = |pep: &str, sat: serde_json::Value| {
        let mut f = download("cubic", None, size);
        f["pep"] = sat;
        run(scenario(geo_path(pep, 0.0), json!([f]), 60))
    };
    let e2e = run(scenario(
        geo_path("none", 0.0),
        json!([download("cubic", None, size)]),
        60,
    ));
    let pep_same = with("distributed", json!({"cca": "cubic"}));
    let pep_iw = with(
        "distributed",
        json!({"cca": "cubic", "tcp": {"initial_window_pkts": 500}}),
    );
    let pep_hybla = with("distributed", json!({"cca": "hybla"}));
    let t: Vec<f64> = [&e2e, &pep_same, &pep_iw, &pep_hybla]
        .iter()
        .map(|r| completion_s(r))
        .collect();
    eprintln!(
        "5 MB download: e2e {:.2} s, PEP cubic {:.2} s, PEP cubic IW500 {:.2} s, PEP hybla {:.2} s",
        t[0], t[1], t[2], t[3]
    );
    for r in [&e2e, &pep_same, &pep_iw, &pep_hybla] {
        assert_eq!(r.flows[0].bytes_delivered, size);
    }
    let bound = 0.8 + 4.15 + 0.26;
    let window_opening = 1.3;
    assert!(t[0] > 6.0, "end to end needs ~13 RTTs of 0.55 s: {}", t[0]);
    assert!(
        t[1] < t[0],
        "the PEP's local handshake saves time even with the same CUBIC"
    );
    for (name, x) in [("IW 500", t[2]), ("hybla", t[3])] {
        assert!(
            x >= bound && x < 1.05 * (bound + window_opening),
            "PEP {name}: {x} s vs bound {bound} s + {window_opening} s"
        );
        assert!(
            x + 0.55 < t[0],
            "PEP {name}: {x} s vs end to end {} s",
            t[0]
        );
    }
    // The legs are reported, the satellite one running Hybla.
    let legs = &pep_hybla.flows[0].legs;
    assert_eq!(legs.len(), 3);
    assert_eq!(
        (
            legs[1].from.as_str(),
            legs[1].to.as_str(),
            legs[1].cca.as_str()
        ),
        ("pep1", "pep2", "hybla")
    );
    assert!(legs.iter().all(|l| l.bytes_delivered == size));
}

#[test]
fn gateway_pep_splits_in_two_and_the_server_sees_a_terrestrial_rtt() {
    // Hybla's window is bounded only by the client's receive window. A 1 MB SO_RCVBUF
    // offers 690 packets at first (sent as one burst, which the 918-packet satellite queue
    // holds) and at most 65535 << 4 (window scale 4) = 1048560 B = 724 packets: above the
    // 442-packet BDP and within BDP + queue, so the queue never overflows. (An autotuned
    // window would grow to 3.9 MB and Hybla would fill the queue until it drops.)
    let r = run(scenario(
        geo_path("gateway", 0.0),
        json!([{"cca": "cubic", "app": {"kind": "bulk"},
                "pep": {"cca": "hybla", "tcp": {"rwnd_bytes": 1_000_000}}}]),
        30,
    ));
    let f = &r.flows[0];
    assert_eq!(f.legs.len(), 2);
    // The server's connection ends at the gateway: RTT = 2·(10 + 0.1 ms) plus queueing at
    // most, far below the 550 ms of the end-to-end path; the satellite leg spans
    // 2·(260 + 5 + 0.1) = 530.2 ms plus serialization.
    let rtt_min = f.rtt.min_ns.unwrap() as f64 / 1e6;
    assert!((20.0..40.0).contains(&rtt_min), "server RTT {rtt_min} ms");
    let sat_rtt = f.legs[1].rtt.min_ns.unwrap() as f64 / 1e6;
    assert!(
        (530.2..540.0).contains(&sat_rtt),
        "satellite leg RTT {sat_rtt} ms"
    );
    // The satellite forward link is the bottleneck: ≥ 90 % of 10 Mbit/s · 1448/1500.
    assert!(f.goodput_bps > 0.9 * 9.65e6, "goodput {}", f.goodput_bps);
}

#[test]
fn backpressure_keeps_the_pep_buffer_within_its_limit_without_loss() {
    // Terrestrial 100 Mbit/s into a 10 Mbit/s satellite leg: the server could send ten
    // times faster than the PEP can forward. With a 1 MiB relay buffer, the PEP's advertised
    // window must throttle the server so that the buffer never exceeds 1 MiB and no byte is
    // dropped or duplicated anywhere along the chain. The ns-2 agents keep their receiver
    // window at the sender, so they must obey the relay's advertised window as well.
    for cca in ["cubic", "sack", "newreno", "fack", "tahoe"] {
        backpressure_holds(cca);
    }
}

fn backpressure_holds(cca: &str) {
    let limit = 1 << 20;
    let cfg = scenario(
        geo_path("gateway", 0.0),
        json!([{"cca": cca, "app": {"kind": "bulk"},
                "pep": {"cca": cca, "buffer_bytes": limit}}]),
        60,
    );
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run();
    let r = api::summarize(&sim);
    let buf = &r.flows[0].pep_buffer[0];
    assert_eq!(buf.limit_bytes, limit);
    assert!(buf.max_bytes <= limit, "{cca}: max {}", buf.max_bytes);
    assert!(
        buf.max_bytes as f64 > 0.9 * limit as f64,
        "{cca}: the buffer filled: {}",
        buf.max_bytes
    );
    // The server is held to the satellite rate (≈ 9.65 Mbit/s of payload), not 100 Mbit/s.
    assert!(r.flows[0].legs[0].goodput_bps < 1.05 * 9.65e6, "{cca}");
    // Byte integrity along the chain: each receiver got a prefix of the stream, in order,
    // each byte once; the relay handed on exactly what it received.
    let FlowKind::Tcp { conns, relays } = &sim.flows[0].kind else {
        panic!()
    };
    let up = &sim.conns[conns[0] as usize];
    let down = &sim.conns[conns[1] as usize];
    assert_eq!(up.receiver.stats.bytes_delivered, up.receiver.rcv_nxt);
    assert_eq!(relays[0].supplied, up.receiver.rcv_nxt);
    assert!(down.receiver.rcv_nxt <= relays[0].supplied);
    assert!(down.receiver.rcv_nxt <= down.sender.snd_nxt());
    assert_eq!(down.receiver.stats.dup_bytes, 0);
    assert!(up.receiver.rcv_nxt - down.sender.snd_una() <= limit);
    for l in &r.links {
        assert_eq!(
            l.queue_drops + l.error_drops,
            0,
            "{cca}: {} dropped",
            l.name
        );
    }
}

#[test]
fn pep_relays_a_lossy_satellite_transfer_intact() {
    // PER 1 % on the satellite leg: losses are repaired on that leg only; the client gets
    // the whole file in order.
    let size = 2_000_000;
    let r = run(scenario(
        geo_path("distributed", 1e-2),
        json!([download("cubic", Some("hybla"), size)]),
        120,
    ));
    let f = &r.flows[0];
    assert_eq!(f.bytes_delivered, size);
    assert!(f.completion_ns.is_some());
    assert!(f.legs[1].retransmits > 0 && f.legs[0].retransmits == 0 && f.legs[2].retransmits == 0);
}

#[test]
fn cbr_gets_its_rate_and_a_hand_computed_delay_when_the_link_has_room() {
    // One 250 kbit/s CBR flow (1200 B payload, 1228 B on the wire) on an idle 4 Mbit/s GEO
    // link: no loss; one-way delay = access 0.1 ms + 9824 bit / 1 Gbit/s (9.824 us) +
    // satellite 250 ms + 9824 / 4e6 s (2.456 ms) + access 0.1 ms + 9.824 us = 252.675648 ms.
    let path = json!({"pep": "none", "segments": [
        {"name": "satellite", "forward": dir(4_000_000, 250.0, 0.0, 200),
                              "reverse": dir(4_000_000, 250.0, 0.0, 200)}]});
    let r = run(scenario(
        path,
        json!([{"cca": "reno", "app": {"kind": "cbr", "rate_bps": 250_000, "packet_bytes": 1200}}]),
        60,
    ));
    let f = &r.flows[0];
    assert_eq!(f.kind, "cbr");
    assert_eq!(f.loss_ratio, Some(0.0));
    let owd = f.owd.as_ref().unwrap();
    let owd_ms = owd.mean_ns.unwrap() / 1e6;
    assert!((owd_ms - 252.675648).abs() < 1e-6, "owd {owd_ms}");
    // 60 s at 250 kbit/s, minus the datagrams still in flight at the end (~253 ms worth):
    // ≈ 250 kbit/s · (1 − 0.253/60).
    assert!(
        (f.goodput_bps / 250_000.0 - 1.0).abs() < 0.01,
        "goodput {}",
        f.goodput_bps
    );
}

#[test]
fn cbr_competing_with_tcp_keeps_most_of_its_rate() {
    // Six CUBIC flows and two 250 kbit/s CBR flows share a 4 Mbit/s satellite link with a
    // 200-packet queue (the sat-train setup). The TCP flows fill the queue, so the CBR
    // datagrams wait behind it (one-way delay up to 250 ms + 200·3 ms) and lose what a full
    // queue drops, but they keep most of their rate: TCP backs off, CBR does not.
    let path = json!({"pep": "none", "segments": [
        {"name": "satellite", "forward": dir(4_000_000, 250.0, 0.0, 200),
                              "reverse": dir(4_000_000, 250.0, 0.0, 200)}]});
    let mut flows = vec![json!({"cca": "cubic", "app": {"kind": "bulk"}}); 6];
    for _ in 0..2 {
        flows.push(json!({"cca": "reno", "app": {"kind": "cbr", "rate_bps": 250_000, "packet_bytes": 1200}}));
    }
    let r = run(scenario(path, json!(flows), 120));
    for f in r.flows.iter().filter(|f| f.kind == "cbr") {
        assert!(
            f.goodput_bps > 0.8 * 250_000.0,
            "cbr goodput {}",
            f.goodput_bps
        );
        let p95 = f.owd.as_ref().unwrap().p95_ns.unwrap() as f64 / 1e6;
        assert!(p95 > 300.0 && p95 < 860.0, "cbr p95 delay {p95} ms");
    }
    let tcp: f64 = r
        .flows
        .iter()
        .filter(|f| f.kind == "tcp")
        .map(|f| f.goodput_bps)
        .sum();
    assert!(tcp > 3.0e6, "TCP keeps the rest: {tcp}");
}

#[test]
fn every_algorithm_survives_a_2s_outage_with_nothing_lost() {
    // (15 MB take at least 31 s at the 3.86 Mbit/s payload rate, so every algorithm is mid-transfer.)
    // A 15 MB download over the GEO link (4 Mbit/s, 250 ms one way, 2xBDP queue); the
    // satellite segment is down in both directions from 15 s to 17 s (handover / rain fade),
    // in the middle of the transfer. Every algorithm must resume (by fast retransmit, TLP or
    // RTO) and deliver the whole file in order.
    let mut down = dir(4_000_000, 250.0, 0.0, 334);
    down["outages"] = json!([[15_000_000_000u64, 17_000_000_000u64]]);
    let path = json!({"pep": "none", "segments": [
        {"name": "satellite", "forward": down, "reverse": down}]});
    let names: Vec<String> = serde_json::from_str::<Vec<serde_json::Value>>(&api::ccas_json())
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.len() >= 24);
    for cca in &names {
        let r = run(scenario(
            path.clone(),
            json!([download(cca, None, 15_000_000)]),
            300,
        ));
        let f = &r.flows[0];
        assert_eq!(f.bytes_delivered, 15_000_000, "{cca}: transfer incomplete");
        let done = f.completion_ns.expect("completed") as f64 / 1e9;
        assert!(
            done > 17.0,
            "{cca}: finished at {done} s, before the outage ended?"
        );
        let outage_drops = r.links[0].outage_drops;
        assert!(outage_drops > 0, "{cca}: the outage dropped nothing");
    }
}

/// Times after the download completed, in ms: (server's FIN acknowledged, client closed).
fn teardown_ms(r: &RunResult) -> (f64, f64) {
    let f = &r.flows[0];
    let done = f.completion_ns.expect("completed") as f64;
    let server = f.server_done_ns.expect("server's FIN acknowledged") as f64;
    let closed = f.closed_ns.expect("client closed") as f64;
    ((server - done) / 1e6, (closed - done) / 1e6)
}

#[test]
fn teardown_end_to_end_takes_a_round_trip_and_a_pep_closes_locally() {
    let size = 1_000_000;
    let flow = |pep: Option<&str>| json!([download("cubic", pep, size)]);
    let e2e = run(scenario(geo_path("none", 0.0), flow(None), 60));
    let gateway = run(scenario(geo_path("gateway", 0.0), flow(Some("cubic")), 60));
    let distributed = run(scenario(
        geo_path("distributed", 0.0),
        flow(Some("cubic")),
        60,
    ));

    // End to end. The client's ACK and FIN leave when the last byte arrives and cross the
    // return path: 0.1 + 5 + 260 + 10 + 0.1 ms = 275.2 ms of propagation, plus 52-byte
    // frames serialized at 1 Gbit/s (0.416 us) twice, 100 Mbit/s (4.16 us) twice and
    // 2 Mbit/s (208 us): 275.417 ms. The first of them acknowledges the server's FIN. The
    // FIN waits behind a pure ACK for one 2 Mbit/s slot (208 us) when two segments were
    // unacknowledged, and the server's ACK of it comes back over the forward path:
    // 275.2 ms + 0.83 us + 8.3 us + 41.6 us (10 Mbit/s) = 275.251 ms.
    let (server, closed) = teardown_ms(&e2e);
    assert!(
        (server - 275.417).abs() < 0.01,
        "server done after {server} ms"
    );
    let fin_wait = closed - server - 275.251;
    assert!(
        fin_wait.abs() < 0.01 || (fin_wait - 0.208).abs() < 0.01,
        "closed after {closed} ms"
    );

    for r in [&gateway, &distributed] {
        // The first PEP acknowledged the server's FIN while the end of the file still had
        // the satellite (260 ms) and the access link (5.1 ms) ahead of it.
        let (server, _) = teardown_ms(r);
        assert!(server < -265.1, "server done {server} ms after completion");
        // Every leg closes, the close passed upstream from PEP to PEP: the client's FIN
        // travels 5.1 + 260 ms to the gateway, whose own FIN needs 10.1 ms to the server
        // and its ACK 10.1 ms back: the server's leg closes >= 285.3 ms after completion.
        let f = &r.flows[0];
        assert!(f.legs.iter().all(|l| l.closed_ns.is_some()));
        let server_leg =
            (f.legs[0].closed_ns.unwrap() as f64 - f.completion_ns.unwrap() as f64) / 1e6;
        assert!(
            (285.3..286.5).contains(&server_leg),
            "server leg closed after {server_leg} ms"
        );
    }
    // The client's FIN is acknowledged by the nearest PEP: at the gateway it still crosses
    // the satellite (2 x 265.1 ms + serialization), at the terminal only the access link
    // (2 x 5.1 ms).
    let (_, closed) = teardown_ms(&gateway);
    assert!(
        (530.2..531.0).contains(&closed),
        "gateway PEP: closed after {closed} ms"
    );
    let (_, closed) = teardown_ms(&distributed);
    assert!(
        (10.2..10.5).contains(&closed),
        "distributed PEP: closed after {closed} ms"
    );
}

#[test]
fn teardown_survives_lost_fins_and_acks() {
    // Heavy loss both ways on the satellite: FINs and their ACKs get lost and are sent
    // again until every connection is closed.
    let mut path = geo_path("none", 0.05);
    path["segments"][1]["reverse"]["per"] = json!(0.2);
    let mut resent = 0;
    for pep in ["none", "gateway", "distributed"] {
        path["pep"] = json!(pep);
        for seed in 1..=4u64 {
            let mut cfg = scenario(
                path.clone(),
                json!([download("reno", Some("reno"), 200_000)]),
                300,
            );
            cfg.seed = seed;
            let r = run(cfg);
            let f = &r.flows[0];
            assert_eq!(f.bytes_delivered, 200_000, "{pep} seed {seed}");
            let (done, closed) = (f.completion_ns.unwrap(), f.closed_ns.expect("closed"));
            assert!(closed > done, "{pep} seed {seed}");
            assert!(f
                .legs
                .iter()
                .all(|l| l.closed_ns.is_some() && l.sender_done_ns.is_some()));
            // Without a loss the client is closed at most 551 ms after completion; a lost
            // FIN or ACK costs at least the client's 1 s retransmission timeout.
            if closed - done > 1_000_000_000 {
                resent += 1;
            }
        }
    }
    assert!(resent > 0, "some FIN or ACK was lost and sent again");
}

/// Routes on a three-segment path (links numbered as `net::topology` documents: segment `s`
/// is links 2s / 2s+1, then four access links per flow): the second flow's data crosses its
/// sender's access link, the three forward links and its receiver's access link; its ACKs
/// come back the other way. Its base RTT is 2 · (10 + 260 + 5 ms + 2 · 0.1 ms) = 550.4 ms.
#[test]
fn routes_cross_the_access_links_and_every_segment_in_order() {
    let flows = json!([download("cubic", None, 1000), download("cubic", None, 1000)]);
    let sim = Simulation::new(scenario(geo_path("none", 0.0), flows, 1)).expect("valid");
    let topo = &sim.topo;
    use tcplab_core::net::topology::Topology;
    assert_eq!(topo.route_links(Topology::data_route(1)), [10, 0, 2, 4, 11]);
    assert_eq!(topo.route_links(Topology::ack_route(1)), [12, 5, 3, 1, 13]);
    assert_eq!(topo.route_links(Topology::data_route(0)), [6, 0, 2, 4, 7]);
    assert_eq!(topo.route_link(Topology::ack_route(0), 4), 9);
    assert_eq!(topo.base_rtt(1).ns(), 550_400_000);
}
