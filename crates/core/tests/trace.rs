//! Packet captures and event logs: a traced run has the untraced run's results, the two
//! capture points of a segment differ by exactly the packets the segment lost, and the
//! event log counts what the results count.
mod common;
use common::*;
use serde_json::json;
use std::path::{Path, PathBuf};
use tcplab_core::api;
use tcplab_core::scenario::{AppConfig, ScenarioConfig};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tcplab-trace-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A lossy GEO run with two flows (one downloading a file) for `secs` seconds.
fn lossy_geo(secs: u64) -> ScenarioConfig {
    let mut cfg = Spec {
        per: 2e-3,
        duration_s: secs,
        flows: 2,
        ..Spec::geo("cubic")
    }
    .build();
    cfg.flows[1].app = AppConfig::File {
        size_bytes: 2_000_000,
    };
    cfg.flows[1].cca = "bbr".into();
    cfg
}

/// One Enhanced Packet Block: time, the frame bytes kept, its original length, direction.
struct Epb {
    t_ns: u64,
    data: Vec<u8>,
    orig_len: u32,
    flags: u32,
}

/// Read every Enhanced Packet Block of a file this crate wrote (little-endian).
fn read_pcapng(path: &Path) -> Vec<Epb> {
    parse_pcapng(&std::fs::read(path).unwrap())
}

/// The Enhanced Packet Blocks of a capture's bytes.
fn parse_pcapng(b: &[u8]) -> Vec<Epb> {
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let (kind, len) = (u32_at(i), u32_at(i + 4) as usize);
        assert_eq!(u32_at(i + len - 4) as usize, len, "trailing length");
        if kind == 6 {
            let cap = u32_at(i + 20) as usize;
            let opts = i + 28 + cap.div_ceil(4) * 4;
            let flags = if opts + 8 <= i + len - 4 && u32_at(opts) == 0x0004_0002 {
                u32_at(opts + 4)
            } else {
                0
            };
            out.push(Epb {
                t_ns: (u32_at(i + 12) as u64) << 32 | u32_at(i + 16) as u64,
                data: b[i + 28..i + 28 + cap].to_vec(),
                orig_len: u32_at(i + 24),
                flags,
            });
        }
        i += len;
    }
    out
}

fn is_data(e: &Epb) -> bool {
    // TCP (protocol 6) with payload: IP total length > IP header + TCP header.
    let d = &e.data;
    d[23] == 6 && {
        let total = u16::from_be_bytes([d[16], d[17]]) as usize;
        let thl = (d[14 + 20 + 12] >> 4) as usize * 4;
        total > 20 + thl
    }
}

/// A traced run has the untraced run's results, its event count included: the tracer only
/// reads, and packets go to their endpoints ahead of time as in any run (`sim::ahead`).
#[test]
fn a_traced_run_has_the_untraced_runs_results() {
    let dir = tmpdir("identical");
    let plain = api::run(lossy_geo(60)).unwrap();
    let (traced, report) = api::run_traced(lossy_geo(60), &trace_spec(&dir, true)).unwrap();
    assert_eq!(
        serde_json::to_string(&plain).unwrap(),
        serde_json::to_string(&traced).unwrap()
    );
    assert_eq!(report.captures.len(), 2);
    assert!(report.captures.iter().all(|c| c.packets > 1000));
    assert!(report.events.unwrap().records > 100);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A 20 ms, 20 Mbit/s dumbbell of `n` CUBIC flows with losses, for 20 s.
fn lossy_dumbbell(n: usize) -> ScenarioConfig {
    Spec {
        rtt_ms: 40.0,
        rate_bps: 20_000_000,
        return_rate_bps: 20_000_000,
        per: 1e-3,
        queue_pkts: 60,
        duration_s: 20,
        cca: "cubic",
        flows: n,
        ..Default::default()
    }
    .build()
}

/// The files a traced run of `cfg` writes (captures of the segments `links`, of `flows`,
/// and the event log), sorted by name, with its event count; packets handed to their
/// endpoints ahead of time or not.
fn traced_files(
    cfg: ScenarioConfig,
    links: &[&str],
    flows: Option<Vec<u32>>,
    ahead: bool,
) -> (u64, Vec<(String, Vec<u8>)>) {
    let dir = tmpdir(&format!("ahead-{}-{ahead}", cfg.flows.len()));
    let mut spec = trace_spec(&dir, true);
    spec.flows = flows;
    spec.links = links.iter().map(|l| l.to_string()).collect();
    let mut sim = tcplab_core::sim::Simulation::new(cfg).unwrap();
    sim.set_deliver_ahead(ahead);
    let tracer = tcplab_core::sim::trace::Tracer::new(&spec, &sim).unwrap();
    sim.set_tracer(tracer);
    sim.run();
    sim.take_tracer().unwrap().finish().unwrap();
    (sim.events(), take_files(&dir))
}

/// Event records' times, in file order.
fn record_times(log: &[u8]) -> Vec<u64> {
    log.chunks(64)
        .map(|r| u64::from_le_bytes(r[0..8].try_into().unwrap()))
        .collect()
}

/// The same frames and records in `a` and `b` (files of two runs), in time order in `a`
/// (within one nanosecond, frames or records of different flows may come in another order).
fn same_frames_and_records(a: &[(String, Vec<u8>)], b: &[(String, Vec<u8>)]) {
    assert_eq!(a.len(), b.len());
    for ((name, a), (other, b)) in a.iter().zip(b) {
        assert_eq!(name, other);
        assert_eq!(a.len(), b.len(), "{name}");
        if name.ends_with(".pcapng") {
            let (fa, fb) = (parse_pcapng(a), parse_pcapng(b));
            assert!(fa.len() > 1000, "{name}: {} frames", fa.len());
            assert!(
                fa.windows(2).all(|w| w[0].t_ns <= w[1].t_ns),
                "{name} in time order"
            );
            let key = |f: &Vec<Epb>| {
                let mut v: Vec<_> = f
                    .iter()
                    .map(|e| (e.t_ns, e.data.clone(), e.flags))
                    .collect();
                v.sort();
                v
            };
            assert!(key(&fa) == key(&fb), "{name}: other frames");
        } else {
            let ta = record_times(a);
            assert!(ta.len() > 100, "{} records", ta.len());
            assert!(
                ta.windows(2).all(|w| w[0] <= w[1]),
                "event log in time order"
            );
            let mut ra: Vec<&[u8]> = a.chunks(64).collect();
            let mut rb: Vec<&[u8]> = b.chunks(64).collect();
            ra.sort();
            rb.sort();
            assert!(ra == rb, "other event records");
        }
    }
}

/// What an endpoint logs or sends while it handles a packet ahead of time waits in the
/// tracer until the run reaches its time: the captures and the event log are those of a
/// run that hands nothing ahead.
#[test]
fn handing_packets_ahead_leaves_captures_and_the_event_log_as_they_were() {
    // one flow (its host passes what it sends on to the bottleneck): the same bytes
    let (ahead_events, ahead) = traced_files(lossy_dumbbell(1), &[], None, true);
    let (stepped_events, stepped) = traced_files(lossy_dumbbell(1), &[], None, false);
    assert!(
        ahead_events * 2 < stepped_events,
        "{ahead_events} / {stepped_events}"
    );
    assert_eq!(ahead.len(), 3, "two captures and the event log");
    for ((name, a), (_, b)) in ahead.iter().zip(&stepped) {
        assert!(a.len() > 40_000, "{name}: {} bytes", a.len());
        assert!(a == b, "{name} differs ({} / {} bytes)", a.len(), b.len());
    }
    // eight flows, three of them traced
    let flows = Some(vec![0, 3, 7]);
    let (ahead_events, ahead) = traced_files(lossy_dumbbell(8), &[], flows.clone(), true);
    let (stepped_events, stepped) = traced_files(lossy_dumbbell(8), &[], flows, false);
    assert!(
        ahead_events < stepped_events,
        "{ahead_events} / {stepped_events}"
    );
    same_frames_and_records(&ahead, &stepped);
    // a gateway PEP splitting two downloads, captured on all three segments
    let seg = |name: &str, rate: u64, delay_ms: u64, per: f64| {
        let d = |r: u64| {
            json!({"rate_bps": r, "delay_ns": delay_ms * 1_000_000, "per": per,
                                 "queue": {"limit_pkts": 200}})
        };
        json!({"name": name, "forward": d(rate), "reverse": d(rate / 5)})
    };
    let v = json!({"name": "pep", "seed": 3, "duration_ns": 30_000_000_000u64,
        "interval_ns": 1_000_000_000u64,
        "path": {"pep": "gateway", "segments": [seg("internet", 100_000_000, 10, 0.0),
            seg("satellite", 10_000_000, 260, 1e-3), seg("last-mile", 50_000_000, 5, 0.0)]},
        "access": {"rate_bps": 1_000_000_000u64, "delay_ns": 100_000u64},
        "flows": [{"cca": "cubic", "app": {"kind": "file", "size_bytes": 3_000_000u64}},
                  {"cca": "bbr", "app": {"kind": "bulk"}, "start_ns": 2_000_000_000u64}]});
    let cfg = ScenarioConfig::from_json(&v.to_string()).unwrap();
    let links = ["internet", "satellite", "last-mile"];
    let (ahead_events, ahead) = traced_files(cfg.clone(), &links, None, true);
    let (stepped_events, stepped) = traced_files(cfg, &links, None, false);
    assert!(
        ahead_events < stepped_events,
        "{ahead_events} / {stepped_events}"
    );
    assert_eq!(ahead.len(), 7, "six captures and the event log");
    same_frames_and_records(&ahead, &stepped);
}

#[test]
fn the_sender_side_sees_what_the_segment_lost_and_the_receiver_side_does_not() {
    let dir = tmpdir("sides");
    let cfg = lossy_geo(60);
    let mut sim = tcplab_core::sim::Simulation::new(cfg).unwrap();
    let tracer = tcplab_core::sim::trace::Tracer::new(&trace_spec(&dir, false), &sim).unwrap();
    sim.set_tracer(tracer);
    sim.run();
    sim.take_tracer().unwrap().finish().unwrap();
    let fwd = &sim.topo.links[sim.topo.bottleneck_fwd as usize];
    let s = &fwd.stats;
    let lost = s.queue_drops + s.error_drops + s.outage_drops + s.aqm_drops;
    let on_link = fwd.in_flight().count() as u64;
    assert!(lost > 10, "a lossy run: {lost}");
    let sender = read_pcapng(&dir.join("bottleneck.sender-side.pcapng"));
    let receiver = read_pcapng(&dir.join("bottleneck.receiver-side.pcapng"));
    // Data leaves the sender side (outbound, 2) and arrives at the receiver side (inbound, 1).
    let out = sender.iter().filter(|e| e.flags == 2).count() as u64;
    let arrived = receiver.iter().filter(|e| e.flags == 1).count() as u64;
    assert_eq!(out, arrived + lost + on_link);
    // The link's counters agree with the sender side's bytes.
    let offered_bytes: u64 = sender
        .iter()
        .filter(|e| e.flags == 2)
        .map(|e| e.orig_len as u64 - 14)
        .sum();
    assert!(offered_bytes >= s.bytes_tx);
    // ACKs: what enters the reverse link on the receiver side and leaves it on the sender
    // side (a lossless, uncongested return path) are the same packets, one RTT/2 later.
    let acks_in = receiver.iter().filter(|e| e.flags == 2).count();
    let acks_out = sender.iter().filter(|e| e.flags == 1).count();
    let rev = &sim.topo.links[sim.topo.bottleneck_rev as usize];
    assert_eq!(acks_in, acks_out + rev.in_flight().count());
    // Timestamps are non-decreasing in each file and frames are cut at the snap length.
    for f in [&sender, &receiver] {
        assert!(f.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
        assert!(f
            .iter()
            .all(|e| e.data.len() <= 128 && e.data.len() as u32 <= e.orig_len));
        assert!(f.iter().any(is_data));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn filters_keep_one_flow_in_a_time_window() {
    let dir = tmpdir("filters");
    let mut sp = trace_spec(&dir, false);
    sp.flows = Some(vec![1]);
    sp.from_ns = 5_000_000_000;
    sp.to_ns = Some(6_000_000_000);
    api::run_traced(lossy_geo(20), &sp).unwrap();
    let sender = read_pcapng(&dir.join("bottleneck.sender-side.pcapng"));
    assert!(!sender.is_empty());
    assert!(sender
        .iter()
        .all(|e| (5_000_000_000..6_000_000_000).contains(&e.t_ns)));
    // Flow 1's server is 10.0.0.2, its client 10.128.0.2.
    assert!(sender.iter().all(|e| {
        let (src, dst) = (&e.data[26..30], &e.data[30..34]);
        (src == [10, 0, 0, 2] && dst == [10, 128, 0, 2])
            || (src == [10, 128, 0, 2] && dst == [10, 0, 0, 2])
    }));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_trace_requests_are_one_line_errors() {
    let dir = tmpdir("errors");
    let mut sp = trace_spec(&dir, false);
    sp.links = vec!["satellite".into()];
    let e = api::run_traced(lossy_geo(1), &sp).unwrap_err();
    assert_eq!(
        e,
        "trace.links: unknown segment \"satellite\"; allowed: bottleneck"
    );
    let mut sp = trace_spec(&dir, false);
    sp.flows = Some(vec![7]);
    let e = api::run_traced(lossy_geo(1), &sp).unwrap_err();
    assert_eq!(e, "trace.flows: no flow 7; the scenario has flows 0 to 1");
    let sp = trace_spec(&dir.join("missing/deeper"), false);
    let e = api::run_traced(lossy_geo(1), &sp).unwrap_err();
    assert!(
        e.starts_with("cannot write ") && e.contains("No such file"),
        "{e}"
    );
    assert!(!e.contains('\n'));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_the_disk_refuses_midway_is_a_one_line_error_naming_it() {
    // Linux's full device takes the file's creation and refuses every write (ENOSPC): the
    // capture's writing thread stops on it, and the run reports it as its error
    let full = Path::new("/dev/full");
    assert!(full.exists(), "/dev/full is missing: this test needs Linux");
    for name in ["bottleneck.receiver-side.pcapng", "events.bin"] {
        let dir = tmpdir(&format!("full-{name}"));
        std::os::unix::fs::symlink(full, dir.join(name)).unwrap();
        let sp = trace_spec(&dir, true);
        let e = api::run_traced(lossy_geo(20), &sp).unwrap_err();
        let expected = format!("cannot write {}: ", dir.join(name).display());
        assert!(e.starts_with(&expected), "{e}");
        assert!(e.contains("No space left on device"), "{e}");
        assert!(!e.contains('\n'));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Event records: (event kind, flow, segments, len).
fn read_events(path: &Path) -> Vec<(u8, u32, u32, u32)> {
    let b = std::fs::read(path).unwrap();
    assert_eq!(b.len() % 64, 0);
    b.chunks(64)
        .map(|r| {
            let u32_at = |i: usize| u32::from_le_bytes(r[i..i + 4].try_into().unwrap());
            (r[53], u32_at(40), u32_at(44), u32_at(48))
        })
        .collect()
}

#[test]
fn the_event_log_counts_what_the_results_count() {
    let dir = tmpdir("events");
    let (r, _) = api::run_traced(lossy_geo(120), &trace_spec(&dir, true)).unwrap();
    let ev = read_events(&dir.join("events.bin"));
    let names: Vec<String> = serde_json::from_value(
        serde_json::from_str::<serde_json::Value>(&api::trace_format_json()).unwrap()["events"]
            ["kinds"]
            .clone(),
    )
    .unwrap();
    let kind = |n: &str| names.iter().position(|k| *k == n).unwrap() as u8;
    for f in &r.flows {
        let id = f.id;
        let count = |n: &str| {
            ev.iter()
                .filter(|e| e.0 == kind(n) && e.1 == id)
                .map(|e| e.2 as u64)
                .sum::<u64>()
        };
        assert_eq!(count("retransmission"), f.retransmits, "flow {id}");
        assert_eq!(count("rto"), f.rto_count, "flow {id}");
        let rows = |n: &str| ev.iter().filter(|e| e.0 == kind(n) && e.1 == id).count();
        assert_eq!(rows("start"), 1, "flow {id}");
        assert!(rows("cwnd") > 10, "flow {id}");
        assert_eq!(count("recovery_entry"), f.fast_recoveries, "flow {id}");
        assert_eq!(count("undo"), f.spurious_undos, "flow {id}");
        assert_eq!(count("tlp"), f.tlp_probes, "flow {id}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
