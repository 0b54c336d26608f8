//! The medium against theory. Expected numbers come from the published formulas with the
//! standard's parameters written out here (IEEE 802.11-2016 timings; Bianchi, "Performance
//! analysis of the IEEE 802.11 distributed coordination function", IEEE JSAC 18(3), 2000),
//! never from the model's own PHY code.
use super::*;
use crate::scenario::{ApQueue, BackgroundConfig, DirConfig};

const IP_BYTES: u32 = 1500;

fn wifi(standard: &str, band: &str) -> WifiConfig {
    WifiConfig {
        standard: standard.into(),
        band: band.into(),
        width_mhz: 20,
        streams: 1,
        short_gi: false,
        retry_limit: 7,
        max_ampdu_mpdus: None,
        mcs: None,
        frame_errors: false,
        noise_figure_db: 7.0,
        ap_tx_power_dbm: 20.0,
        tx_power_dbm: 20.0,
        distance_m: 1.0,
        stations: Vec::new(),
        background: Vec::new(),
        ap_queue: ApQueue::PerStation,
        server_on_wifi: false,
    }
}

/// Run `m` for `secs` with the chosen queues kept saturated: `up` stations always have
/// frames for the AP, the AP (if `down`) always has frames for station 0. Returns the IP
/// bytes each contender delivered.
fn saturate(m: &mut WifiMedium, up: usize, down: bool, secs: u64) -> Vec<u64> {
    let end = SimTime(secs * 1_000_000_000);
    let mut next_pkt = 0u32;
    let fill = |m: &mut WifiMedium, now: SimTime, next_pkt: &mut u32| {
        for s in 0..up {
            while m.contenders[1 + s].backlog_pkts < 100 {
                m.enqueue(now, false, s, *next_pkt, IP_BYTES, false);
                *next_pkt = next_pkt.wrapping_add(1) % (u32::MAX - 1);
            }
        }
        if down {
            while m.contenders[0].backlog_pkts < 100 {
                m.enqueue(now, true, 0, *next_pkt, IP_BYTES, false);
                *next_pkt = next_pkt.wrapping_add(1) % (u32::MAX - 1);
            }
        }
    };
    fill(m, SimTime::ZERO, &mut next_pkt);
    drive(m, end, |m, t, _| fill(m, t, &mut next_pkt));
    m.contenders
        .iter()
        .map(|c| c.stats.delivered * IP_BYTES as u64)
        .collect()
}

/// Every channel access of `m` before `end`: `each` sees what it output (then discarded)
/// and may offer more frames.
fn drive(
    m: &mut WifiMedium,
    end: SimTime,
    mut each: impl FnMut(&mut WifiMedium, SimTime, &mut Vec<WifiOutput>),
) {
    let mut out = Vec::new();
    let mut wake = m.arm_wakeup();
    while let Some(t) = wake {
        if t >= end {
            break;
        }
        m.on_wake(t, &mut out);
        each(m, t, &mut out);
        out.clear();
        wake = m.arm_wakeup().or(m.armed);
    }
}

fn medium(w: &WifiConfig, n: usize, seed: u64) -> WifiMedium {
    let d = DirConfig::droptail(1_000_000, 0, 1000);
    WifiMedium::new("w", w, &d, &d, n, seed)
}

/// Bianchi's saturation throughput (bit/s of payload) for `n` stations: the fixed point of
/// τ = 2(1−2p) / ((1−2p)(W+1) + pW(1−(2p)^m)), p = 1 − (1−τ)^(n−1), solved by bisection,
/// then S = P_s·P_tr·E[P] / ((1−P_tr)σ + P_tr·P_s·T_s + P_tr(1−P_s)·T_c).
fn bianchi_bps(
    n: usize,
    w: f64,
    m: i32,
    slot_us: f64,
    ts_us: f64,
    tc_us: f64,
    payload_bits: f64,
) -> f64 {
    let tau_of = |p: f64| {
        2.0 * (1.0 - 2.0 * p) / ((1.0 - 2.0 * p) * (w + 1.0) + p * w * (1.0 - (2.0 * p).powi(m)))
    };
    // p(τ(p)) − p is decreasing in p on (0, 1): bisect its root.
    let (mut lo, mut hi) = (0.0f64, 0.999f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        let p_mid = 1.0 - (1.0 - tau_of(mid)).powi(n as i32 - 1);
        if p_mid > mid {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let tau = tau_of(0.5 * (lo + hi));
    let p_tr = 1.0 - (1.0 - tau).powi(n as i32);
    let p_s = n as f64 * tau * (1.0 - tau).powi(n as i32 - 1) / p_tr;
    let denom = (1.0 - p_tr) * slot_us + p_tr * p_s * ts_us + p_tr * (1.0 - p_s) * tc_us;
    p_s * p_tr * payload_bits / denom * 1e6
}

/// 802.11b, 11 Mbit/s, long preamble: DATA = 192 µs + 8·(1500 + 8 LLC + 28 MAC)/11 µs
/// rounded up = 192 + 1118 µs; ACK (14 B) at 2 Mbit/s = 192 + 56 µs; SIFS 10, DIFS 50,
/// slot 20; W = 32, CWmax = 1024·... → m = 5.
const B_TS_US: f64 = 1310.0 + 10.0 + 248.0 + 50.0;
const B_TC_US: f64 = 1310.0 + 50.0;
/// ERP-OFDM 802.11g, 54 Mbit/s, short slot: DATA = 20 + 4·⌈(16 + 8·1536 + 6)/216⌉ + 6
/// (signal extension) = 254 µs; ACK at 24 Mbit/s = 20 + 4·2 + 6 = 34 µs; SIFS 10, DIFS 28,
/// slot 9; W = 16, m = 6.
const G_TS_US: f64 = 254.0 + 10.0 + 34.0 + 28.0;
const G_TC_US: f64 = 254.0 + 28.0;

fn check_bianchi(standard: &str, mcs: u32, w: f64, m: i32, slot: f64, ts: f64, tc: f64) {
    let mut cfg = wifi(standard, "2.4");
    cfg.mcs = Some(mcs);
    for n in [1usize, 2, 5, 10, 20] {
        let mut med = medium(&cfg, n, 7);
        // DCF is unfair over short spans (a winner resets its window): 20 s give each of
        // 20 stations ~600 frames at 11 Mbit/s.
        let secs = 20;
        let got = saturate(&mut med, n, false, secs);
        let model_bps = got.iter().sum::<u64>() as f64 * 8.0 / secs as f64;
        let theory = bianchi_bps(n, w, m, slot, ts, tc, 8.0 * IP_BYTES as f64);
        let err = model_bps / theory - 1.0;
        eprintln!(
            "bianchi 802.11{standard} n={n}: model {model_bps:.0} theory {theory:.0} ({:+.2} %)",
            100.0 * err
        );
        assert!(
            err.abs() < 0.05,
            "802.11{standard} n={n}: {model_bps} vs {theory}"
        );
        // Fairness among the saturated stations: Jain's index.
        if n > 1 {
            let x: Vec<f64> = got[1..=n].iter().map(|&b| b as f64).collect();
            let jain =
                x.iter().sum::<f64>().powi(2) / (n as f64 * x.iter().map(|v| v * v).sum::<f64>());
            assert!(jain >= 0.99, "802.11{standard} n={n}: Jain {jain}");
        }
    }
}

#[test]
fn saturation_throughput_of_80211b_matches_bianchi() {
    check_bianchi("b", 3, 32.0, 5, 20.0, B_TS_US, B_TC_US);
}

#[test]
fn saturation_throughput_of_80211g_matches_bianchi() {
    check_bianchi("g", 7, 16.0, 6, 9.0, G_TS_US, G_TC_US);
}

#[test]
fn single_ofdm_station_at_54_mbps_matches_the_airtime_calculation() {
    // 802.11a (5 GHz): one exchange = DIFS 34 + mean backoff 7.5·9 + DATA 248 (57 symbols)
    // + SIFS 16 + ACK 28 µs = 393.5 µs per 1500 B IP packet → 30.50 Mbit/s.
    let mut cfg = wifi("a", "5");
    cfg.mcs = Some(7);
    let mut med = medium(&cfg, 1, 3);
    let got = saturate(&mut med, 0, true, 2);
    let model = got[0] as f64 * 8.0 / 2.0;
    let theory = 8.0 * 1500.0 / (34.0 + 7.5 * 9.0 + 248.0 + 16.0 + 28.0) * 1e6;
    eprintln!("802.11a 54 Mbit/s: model {model:.0} airtime {theory:.0}");
    assert!((model / theory - 1.0).abs() < 0.05, "{model} vs {theory}");
}

/// The airtime of a saturated A-MPDU sender: AIFS + mean backoff + PPDU + SIFS + BlockAck,
/// with as many 1544 B subframes (4 delimiter + 30 QoS MAC + 8 LLC + 1500, padded to 4) as
/// the 64-MPDU window, the byte limit and aPPDUMaxTime (5484 µs) allow.
fn ampdu_goodput_bps(
    preamble_us: f64,
    bits_per_symbol: f64,
    max_bytes: f64,
    ba_us: f64,
    sifs: f64,
) -> f64 {
    let dur =
        |k: f64| preamble_us + 4.0 * ((16.0 + 8.0 * 1544.0 * k + 6.0) / bits_per_symbol).ceil();
    let mut k = 1.0;
    while k < 64.0 && 1544.0 * (k + 1.0) <= max_bytes && dur(k + 1.0) <= 5484.0 {
        k += 1.0;
    }
    let aifs = sifs + 3.0 * 9.0;
    k * 8.0 * 1500.0 / (aifs + 7.5 * 9.0 + dur(k) + sifs + ba_us) * 1e6
}

#[test]
fn aggregating_ht_and_vht_stations_match_the_airtime_calculation() {
    // HT, 5 GHz, 40 MHz, 2 streams, MCS 7 (270 Mbit/s): HT-mixed preamble 20 + 8 + 4 +
    // 2·4 = 40 µs, 1080 bits per symbol, 65 535 B per A-MPDU; BlockAck (32 B) at 24 Mbit/s:
    // 20 + 4·⌈(16 + 256 + 6)/96⌉ = 32 µs.
    let mut n = wifi("n", "5");
    (n.width_mhz, n.streams, n.mcs) = (40, 2, Some(7));
    // VHT, 80 MHz, 1 stream, MCS 9 (390 Mbit/s): preamble 20 + 8 + 4 + 4 + 4 (SIG-B) =
    // 40 µs, 1560 bits per symbol; the 5484 µs PPDU limit binds before 64 MPDUs do.
    let mut ac = wifi("ac", "5");
    (ac.width_mhz, ac.mcs) = (80, Some(9));
    for (cfg, theory) in [
        (n, ampdu_goodput_bps(40.0, 1080.0, 65_535.0, 32.0, 16.0)),
        (ac, ampdu_goodput_bps(40.0, 1560.0, 1_048_575.0, 32.0, 16.0)),
    ] {
        let mut med = medium(&cfg, 1, 5);
        let got = saturate(&mut med, 0, true, 2);
        let model = got[0] as f64 * 8.0 / 2.0;
        eprintln!(
            "802.11{} aggregated: model {model:.0} airtime {theory:.0}",
            cfg.standard
        );
        assert!(
            (model / theory - 1.0).abs() < 0.05,
            "{}: {model} vs {theory}",
            cfg.standard
        );
    }
}

#[test]
fn collisions_retries_and_retry_limit_are_counted() {
    // Twenty saturated 802.11b stations collide often (Bianchi: p ≈ 0.3); every collided
    // MPDU is retried, and the window doubling keeps drops at the limit rare.
    let mut cfg = wifi("b", "2.4");
    cfg.mcs = Some(3);
    let mut med = medium(&cfg, 20, 1);
    saturate(&mut med, 20, false, 2);
    let (mut coll, mut ppdus, mut retries) = (0, 0, 0);
    for (_, s) in med.contenders() {
        coll += s.collisions;
        ppdus += s.ppdus;
        retries += s.retries;
    }
    let p = coll as f64 / ppdus as f64;
    assert!((0.2..0.45).contains(&p), "collision probability {p}");
    assert!(retries > 0 && retries <= coll, "{retries} {coll}");
}

#[test]
fn background_stations_take_their_offered_airtime() {
    // One 802.11g background station offering 5 Mbit/s of 1500 B frames at 54 Mbit/s
    // (326 µs per exchange incl. DIFS, ~417 frames/s) next to an idle AP: it delivers
    // what it is offered (Poisson arrivals, no loss).
    let mut cfg = wifi("g", "2.4");
    cfg.mcs = Some(7);
    cfg.background = vec![BackgroundConfig {
        count: 1,
        load_bps: 5_000_000,
        frame_bytes: 1500,
        tx_power_dbm: 20.0,
        distance_m: 1.0,
    }];
    let mut med = medium(&cfg, 1, 2);
    let got = saturate(&mut med, 0, false, 4);
    let bps = got[2] as f64 * 8.0 / 4.0;
    assert!((bps / 5e6 - 1.0).abs() < 0.05, "{bps}");
}

#[test]
fn same_seed_same_exchanges() {
    let mut cfg = wifi("n", "2.4");
    cfg.frame_errors = true;
    cfg.distance_m = 30.0;
    let run = |seed| {
        let mut m = medium(&cfg, 3, seed);
        saturate(&mut m, 3, true, 1)
    };
    assert_eq!(run(4), run(4));
    assert_ne!(run(4), run(5));
}

#[test]
fn downlink_data_and_uplink_acks_contend_as_three_stations() {
    // One AP sending to two stations while both stations send back (the two flows'
    // ACKs, saturated here): three DCF contenders on one medium, so the total is Bianchi's
    // N = 3 and each transmitter, the AP included, gets a third of the transmissions —
    // the AP does not get more for carrying two flows. The AP's own share splits evenly
    // between its two receivers (round-robin over per-station queues).
    let mut cfg = wifi("b", "2.4");
    cfg.mcs = Some(3);
    let mut med = medium(&cfg, 2, 11);
    let secs = 20u64;
    let end = SimTime(secs * 1_000_000_000);
    let mut to_station = [0u64; 2];
    let mut next_pkt = 0u32;
    let mut dest = std::collections::HashMap::new();
    let fill = |m: &mut WifiMedium,
                now: SimTime,
                next: &mut u32,
                dest: &mut std::collections::HashMap<u32, usize>| {
        for s in 0..2 {
            while m.contenders[1 + s].backlog_pkts < 100 {
                m.enqueue(now, false, s, *next, IP_BYTES, false);
                *next += 1;
            }
        }
        while m.contenders[0].backlog_pkts < 200 {
            let s = (*next % 2) as usize;
            m.enqueue(now, true, s, *next, IP_BYTES, false);
            dest.insert(*next, s);
            *next += 1;
        }
    };
    fill(&mut med, SimTime::ZERO, &mut next_pkt, &mut dest);
    drive(&mut med, end, |m, t, out| {
        for o in out.drain(..) {
            if let WifiOutput::Deliver {
                forward: true, pkt, ..
            } = o
            {
                to_station[dest[&pkt]] += IP_BYTES as u64;
            }
        }
        fill(m, t, &mut next_pkt, &mut dest);
    });
    let per: Vec<f64> = med
        .contenders
        .iter()
        .map(|c| (c.stats.delivered * IP_BYTES as u64) as f64 * 8.0 / secs as f64)
        .collect();
    let total: f64 = per.iter().sum();
    let theory = bianchi_bps(3, 32.0, 5, 20.0, B_TS_US, B_TC_US, 8.0 * IP_BYTES as f64);
    eprintln!("AP + 2 stations: {per:?} total {total:.0} Bianchi N=3 {theory:.0}");
    assert!((total / theory - 1.0).abs() < 0.05, "{total} vs {theory}");
    let jain = per.iter().sum::<f64>().powi(2) / (3.0 * per.iter().map(|v| v * v).sum::<f64>());
    assert!(jain >= 0.99, "AP and stations: Jain {jain} {per:?}");
    let (a, b) = (to_station[0] as f64, to_station[1] as f64);
    assert!((a / b - 1.0).abs() < 0.02, "AP to stations {a} {b}");
}

/// The AP alone (802.11g, 54 Mbit/s, no aggregation) with 300 frames waiting for station 0
/// and 100 for station 1, queued 3 : 1 interleaved; each departure is replaced by a frame for
/// the same station. Returns the IP bytes delivered to each station in 5 s.
fn ap_shares(ap_queue: ApQueue) -> [u64; 2] {
    let mut cfg = wifi("g", "2.4");
    (cfg.mcs, cfg.ap_queue) = (Some(7), ap_queue);
    let d = DirConfig::droptail(1_000_000, 0, 1000);
    let mut med = WifiMedium::new("w", &cfg, &d, &d, 2, 5);
    let end = SimTime(5_000_000_000);
    let mut next = 0u32;
    let mut offer = |med: &mut WifiMedium, t: SimTime, s: usize| {
        assert!(med.enqueue(t, true, s, 2 * next + s as u32, IP_BYTES, false));
        next += 1;
    };
    for i in 0..400 {
        offer(&mut med, SimTime::ZERO, usize::from(i % 4 == 3));
    }
    let mut to = [0u64; 2];
    drive(&mut med, end, |med, t, out| {
        for o in out.drain(..) {
            if let WifiOutput::Deliver {
                forward: true, pkt, ..
            } = o
            {
                to[(pkt & 1) as usize] += IP_BYTES as u64;
            }
        }
        for (s, level) in [(0usize, 300usize), (1, 100)] {
            while med.contenders[0].queues[s].q.len() < level {
                offer(med, t, s);
            }
        }
    });
    to
}

#[test]
fn fifo_ap_serves_stations_in_arrival_order_per_station_queues_in_turn() {
    // Both stations always have frames waiting. Round-robin over per-station queues gives
    // them the same number of exchanges (1 : 1); one FIFO serves frames in the order they
    // came, three for station 0 to one for station 1 (3 : 1).
    let rr = ap_shares(ApQueue::PerStation);
    let fifo = ap_shares(ApQueue::Fifo);
    let (r_rr, r_fifo) = (rr[0] as f64 / rr[1] as f64, fifo[0] as f64 / fifo[1] as f64);
    eprintln!("per-station {rr:?} ({r_rr:.3}), fifo {fifo:?} ({r_fifo:.3})");
    assert!((r_rr - 1.0).abs() < 0.01, "per-station {r_rr}");
    assert!((r_fifo - 3.0).abs() < 0.03, "fifo {r_fifo}");
}

/// The AP alone (802.11a at 54 Mbit/s, no aggregation) gets frames for station 0 at 1.1×
/// the rate it can send them (one exchange: 393.5 µs on average, see above) for 20 s, with
/// a 1000-frame queue. Returns the mean time from arrival to delivery of the frames
/// delivered in the last 10 s (ms), and how many frames were offered, refused at the
/// limit, delivered (in order, checked) and dropped by CoDel, and are still held.
fn ap_overload(ap_queue: ApQueue) -> (f64, [u64; 5]) {
    let mut cfg = wifi("a", "5");
    (cfg.mcs, cfg.ap_queue) = (Some(7), ap_queue);
    let d = DirConfig::droptail(1_000_000, 0, 1000);
    let mut med = WifiMedium::new("w", &cfg, &d, &d, 1, 11);
    let gap_ns = (393.5e3 / 1.1) as u64;
    let end = SimTime(20_000_000_000);
    let mut arrived: Vec<SimTime> = Vec::new();
    let (mut sum_ns, mut n) = (0u64, 0u64);
    let [mut refused, mut delivered, mut dropped] = [0u64; 3];
    let mut last = None;
    let mut out = Vec::new();
    let mut next_arrival = SimTime::ZERO;
    loop {
        let t = match med.arm_wakeup().or(med.armed) {
            Some(w) if w <= next_arrival => w,
            _ => next_arrival,
        };
        if t >= end {
            break;
        }
        if t == next_arrival {
            if !med.enqueue(t, true, 0, arrived.len() as u32, IP_BYTES, false) {
                refused += 1;
            }
            arrived.push(t);
            next_arrival = t + SimDuration(gap_ns);
            continue;
        }
        med.on_wake(t, &mut out);
        for o in out.drain(..) {
            match o {
                WifiOutput::Deliver { pkt, at, .. } => {
                    assert!(last < Some(pkt), "{pkt} after {last:?}");
                    last = Some(pkt);
                    delivered += 1;
                    if at.ns() >= 10_000_000_000 {
                        sum_ns += at.since(arrived[pkt as usize]).ns();
                        n += 1;
                    }
                }
                WifiOutput::AqmDropped { .. } => dropped += 1,
                other => panic!("{other:?}"),
            }
        }
    }
    let held = med.in_flight().count() as u64;
    let counts = [arrived.len() as u64, refused, delivered, dropped, held];
    (sum_ns as f64 / n as f64 / 1e6, counts)
}

#[test]
fn codel_at_the_ap_drops_at_dequeue_and_loses_or_reorders_nothing_else() {
    // DropTail: the queue fills (10 % too much offered) and a frame waits for the 1000
    // before it, 1000 × 393.5 µs = 393.5 ms (Little's law), plus its own exchange.
    let (droptail_ms, [offered, refused, delivered, dropped, held]) =
        ap_overload(ApQueue::PerStation);
    eprintln!("DropTail: {droptail_ms:.1} ms; {offered} {refused} {delivered} {dropped} {held}");
    assert!(
        (droptail_ms / 393.9 - 1.0).abs() < 0.05,
        "DropTail {droptail_ms} ms"
    );
    assert_eq!(dropped, 0);
    assert_eq!(offered, refused + delivered + held);
    // CoDel drops as frames leave (the sequence numbers come after it, so the receiver
    // waits for no gap): every frame is delivered in order, dropped, refused or held.
    let (codel_ms, [offered, refused, delivered, dropped, held]) = ap_overload(ApQueue::FqCodel);
    eprintln!("CoDel: {codel_ms:.1} ms; {offered} {refused} {delivered} {dropped} {held}");
    assert!(
        dropped > 0 && codel_ms < droptail_ms / 2.0,
        "CoDel {codel_ms} ms"
    );
    assert_eq!(offered, refused + delivered + dropped + held);
}

/// 802.11a, 54 Mbit/s: DATA 248 µs (20 + 57 symbols), SIFS 16, ACK 28 (24 Mbit/s), DIFS 34,
/// slot 9; W = 16, m = 6.
const A_TS_US: f64 = 248.0 + 16.0 + 28.0 + 34.0;
const A_TC_US: f64 = 248.0 + 34.0;

#[test]
fn a_server_on_wifi_relays_through_the_ap_at_half_the_two_station_rate() {
    // The sender's station always has frames for the AP, which relays each to the
    // receiver's station: two saturated contenders (the sender's station and the AP), and
    // every packet needs a success of each, so the flow gets half of Bianchi's N = 2
    // throughput (802.11a at 54 Mbit/s: 31.0 Mbit/s of IP for both, 15.5 for the flow).
    let mut cfg = wifi("a", "5");
    (cfg.mcs, cfg.server_on_wifi) = (Some(7), true);
    let mut med = medium(&cfg, 1, 13);
    let secs = 20;
    let (mut next, mut got, mut last) = (0u32, 0u64, None);
    let fill = |m: &mut WifiMedium, t: SimTime, next: &mut u32| {
        while m.contenders[2].backlog_pkts < 100 {
            assert!(m.enqueue(t, true, 0, *next, IP_BYTES, false));
            *next += 1;
        }
    };
    fill(&mut med, SimTime::ZERO, &mut next);
    drive(&mut med, SimTime(secs * 1_000_000_000), |m, t, out| {
        for o in out.drain(..) {
            match o {
                WifiOutput::Deliver {
                    forward: true, pkt, ..
                } => {
                    assert!(last < Some(pkt), "{pkt} after {last:?}: reordered");
                    (last, got) = (Some(pkt), got + 1);
                }
                other => panic!("{other:?}"),
            }
        }
        fill(m, t, &mut next);
    });
    let model = (got * IP_BYTES as u64) as f64 * 8.0 / secs as f64;
    let theory = bianchi_bps(2, 16.0, 6, 9.0, A_TS_US, A_TC_US, 8.0 * IP_BYTES as f64) / 2.0;
    eprintln!("relayed by the AP: model {model:.0}, Bianchi N=2 / 2 {theory:.0}");
    assert!((model / theory - 1.0).abs() < 0.05, "{model} vs {theory}");
    // every frame the sender's station got through reached the receiver or waits at the AP
    let (ap, server) = (&med.contenders[0], &med.contenders[2]);
    assert_eq!(server.role, Role::Server);
    assert_eq!(
        server.stats.delivered,
        got + ap.backlog_pkts + med.relays.len() as u64
    );
}
