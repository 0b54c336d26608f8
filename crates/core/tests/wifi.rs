//! Whole runs over a Wi-Fi bottleneck against the airtime calculation from the standard's
//! timings (IEEE 802.11-2016, 802.11a at 54 Mbit/s in 5 GHz): DIFS 34 µs, mean backoff
//! 7.5 slots of 9 µs, a 1500 B IP packet in 57 OFDM symbols (20 + 228 µs), SIFS 16 µs and
//! an ACK at 24 Mbit/s (28 µs): 393.5 µs per data frame.
use tcplab_core::api;
use tcplab_core::scenario::ScenarioConfig;

fn scenario(flows: &str, duration_s: u64) -> ScenarioConfig {
    let dir = r#"{"rate_bps": 54000000, "delay_ns": 0, "queue": {"limit_pkts": 1000}}"#;
    let text = format!(
        r#"{{"duration_ns": {d}, "seed": 3,
            "bottleneck": {{"forward": {dir}, "reverse": {dir},
              "wifi": {{"standard": "a", "band": "5", "mcs": 7, "frame_errors": false,
                        "ap_tx_power_dbm": 20, "tx_power_dbm": 20, "distance_m": 5}}}},
            "access": {{"rate_bps": 1000000000, "delay_ns": 1000000}},
            "flows": [{flows}]}}"#,
        d = duration_s * 1_000_000_000
    );
    ScenarioConfig::from_json(&text).expect("valid scenario")
}

const DATA_FRAME_US: f64 = 34.0 + 7.5 * 9.0 + 248.0 + 16.0 + 28.0;

#[test]
fn udp_goodput_of_one_station_matches_the_airtime_calculation() {
    // 1472 B of UDP payload per 1500 B IP packet, one packet per 393.5 µs: 29.93 Mbit/s.
    let r = api::run(scenario(
        r#"{"cca": "reno", "app": {"kind": "cbr", "rate_bps": 40000000, "packet_bytes": 1472}}"#,
        5,
    ))
    .unwrap();
    let theory = 1472.0 * 8.0 / DATA_FRAME_US * 1e6;
    let got = r.flows[0].goodput_bps;
    eprintln!("UDP over 802.11a 54 Mbit/s: model {got:.0}, airtime {theory:.0}");
    assert!((got / theory - 1.0).abs() < 0.05, "{got} vs {theory}");
    let w = &r.wifi[0];
    assert_eq!(w.stations[0].name, "ap");
    // Airtime counts the exchanges (DATA + SIFS + ACK = 292 µs), not the idle DIFS and
    // backoff between them: 292 / 393.5 of the run.
    let share = w.stations[0].airtime_ratio;
    assert!(
        (share / (292.0 / DATA_FRAME_US) - 1.0).abs() < 0.02,
        "{share}"
    );
}

#[test]
fn tcp_goodput_of_one_station_matches_the_airtime_calculation() {
    // Delayed ACKs: two 1448 B segments (1500 B IP) per 52 B TCP ACK from the station,
    // which contends like any frame: DIFS + 7.5 slots + 36 µs (4 symbols) + SIFS + ACK
    // = 181.5 µs. Two segments per 2·393.5 + 181.5 µs: 23.92 Mbit/s.
    let r = api::run(scenario(r#"{"cca": "cubic", "app": {"kind": "bulk"}}"#, 8)).unwrap();
    let theory =
        2.0 * 1448.0 * 8.0 / (2.0 * DATA_FRAME_US + 34.0 + 67.5 + 36.0 + 16.0 + 28.0) * 1e6;
    let got = r.flows[0].goodput_bps;
    eprintln!("TCP over 802.11a 54 Mbit/s: model {got:.0}, airtime {theory:.0}");
    assert!((got / theory - 1.0).abs() < 0.05, "{got} vs {theory}");
    // The station's ACKs took airtime and sometimes collided with the AP.
    let st = &r.wifi[0].stations[1];
    assert!(st.airtime_ratio > 0.05 && st.ppdus > 1000, "{st:?}");
}

#[test]
fn wifi_runs_are_deterministic() {
    let run = || {
        let mut c = scenario(r#"{"cca": "bbr", "app": {"kind": "bulk"}}"#, 2);
        if let Some(b) = c.bottleneck.as_mut() {
            let w = b.wifi.as_mut().unwrap();
            (w.standard, w.mcs, w.frame_errors, w.distance_m) = ("ac".into(), None, true, 25.0);
        }
        serde_json::to_string(&api::run(c).unwrap()).unwrap()
    };
    assert_eq!(run(), run());
}

/// The mean smoothed RTT (ms, over time) of one CUBIC download over the 802.11a hop, its
/// goodput and the packets CoDel dropped at the AP, with the AP's queue `ap_queue`.
fn cubic_rtt_ms(ap_queue: &str) -> (f64, f64, u64) {
    let mut c = scenario(r#"{"cca": "cubic", "app": {"kind": "bulk"}}"#, 30);
    if let Some(b) = c.bottleneck.as_mut() {
        let w = b.wifi.as_mut().unwrap();
        w.ap_queue = serde_json::from_str(&format!("\"{ap_queue}\"")).unwrap();
    }
    let r = api::run(c).unwrap();
    let forward = r
        .links
        .iter()
        .find(|l| l.name == "bottleneck.forward")
        .unwrap();
    let srtt_ns = r.flows[0].rtt.srtt_time_mean_ns.unwrap();
    (srtt_ns / 1e6, r.flows[0].goodput_bps, forward.aqm_drops)
}

#[test]
fn codel_at_the_ap_keeps_a_tcp_download_near_its_target_delay() {
    // Per-station DropTail: CUBIC fills the 1000-frame queue, each frame waiting up to
    // 1000 × 393.5 µs = 394 ms, and after a loss the window falls to 0.7 of what it was,
    // so the queue swings between ~700 and 1000 frames (RTT ~275 to ~394 ms).
    let (droptail_ms, _, none) = cubic_rtt_ms("per-station");
    // mac80211's CoDel (target 20 ms, interval 100 ms): one TCP flow's standing queue stays
    // near the target (RFC 8289 §4), an RTT of a few ms of path plus ~20 ms.
    let (codel_ms, goodput, dropped) = cubic_rtt_ms("fq-codel");
    eprintln!("CUBIC over 802.11a: RTT {droptail_ms:.1} ms DropTail, {codel_ms:.1} ms CoDel ({dropped} drops)");
    assert_eq!(none, 0);
    assert!(
        (250.0..=400.0).contains(&droptail_ms),
        "DropTail {droptail_ms} ms"
    );
    assert!(dropped > 0);
    assert!((10.0..=45.0).contains(&codel_ms), "CoDel {codel_ms} ms");
    // ...without starving the link: the airtime calculation above, 23.92 Mbit/s
    let theory =
        2.0 * 1448.0 * 8.0 / (2.0 * DATA_FRAME_US + 34.0 + 67.5 + 36.0 + 16.0 + 28.0) * 1e6;
    assert!(goodput > 0.9 * theory, "{goodput} vs {theory}");
}

#[test]
fn a_tcp_download_from_a_server_on_wifi_takes_two_exchanges_per_packet() {
    // Each pair of 1448 B segments takes four data exchanges (up to the AP, down to the
    // client) and its delayed ACK two (181.5 µs each, above): 2·1448·8 bits per
    // 4·393.5 + 2·181.5 µs = 11.96 Mbit/s, less what collisions among the three busy
    // contenders cost and more what their overlapping backoffs save.
    let mut c = scenario(r#"{"cca": "cubic", "app": {"kind": "bulk"}}"#, 20);
    if let Some(b) = c.bottleneck.as_mut() {
        b.wifi.as_mut().unwrap().server_on_wifi = true;
    }
    let r = api::run(c).unwrap();
    let theory = 2.0 * 1448.0 * 8.0 / (4.0 * DATA_FRAME_US + 2.0 * 181.5) * 1e6;
    let got = r.flows[0].goodput_bps;
    let names: Vec<&str> = r.wifi[0].stations.iter().map(|s| s.name.as_str()).collect();
    eprintln!("TCP from a server on Wi-Fi: model {got:.0}, airtime {theory:.0}; {names:?}");
    assert_eq!(names, ["ap", "flow0", "server"]);
    assert!((got / theory - 1.0).abs() < 0.1, "{got} vs {theory}");
}
