//! Cross traffic: open-loop background load on one link direction, kept apart from the flows
//! under test (its packets share the link's queue, its counters are reported on their own).
//!
//! Two processes, each a superposition of *bursts* — a burst of S bytes leaves at the peak
//! rate R as back-to-back packets of at most `packet_bytes` (wire bytes; the last one carries
//! the remainder), the byte starting at offset B of the burst at `start + ⌈8·B·10⁹/R⌉` ns:
//!
//! - `flows`: bursts start as a Poisson process (exponential gaps of mean 8·E[S]/L for an
//!   offered load of L bit/s) with sizes from a heavy-tailed law (Pareto or lognormal) — the
//!   Poisson Pareto burst process (Zukerman, Neame & Addie, IEEE Communications Letters
//!   7(11), 2003), whose aggregate is long-range dependent for a Pareto shape in (1, 2): the
//!   mix of many short and a few huge transfers seen on shared Internet links. The bursts
//!   do not react to loss (UDP-like, or TCP flows far from the bottleneck's feedback).
//! - `onoff`: one source alternating on and off periods (exponential or Pareto, as ns-2's
//!   `Application/Traffic/Exponential` and `/Pareto`), sending at the peak rate while on:
//!   an on period of T ns is a burst of R·T/8·10⁹ bytes. Offered load R·E[on]/(E[on]+E[off]).
//!
//! - `tcp_flows`: connections start as the `flows` bursts do (the same draws of gaps and
//!   sizes), but each is a real TCP download run by the simulation (`app::cross_tcp`),
//!   which backs off on loss; this source only says when each starts and how big it is.
//!
//! The random draws come from the source's own substream of the run's seed, so a run stays a
//! pure function of (scenario, seed) and adding a source never shifts the flows' numbers.
use crate::app::cross_tcp::TcpCross;
use crate::engine::rng::SimRng;
use crate::engine::time::SimTime;
use crate::net::packet::{Packet, PacketKind};
use crate::scenario::{CrossConfig, DistConfig};
use serde::Serialize;
use std::collections::BTreeMap;

const NS_PER_S: f64 = 1e9;

/// A positive random variable with a given mean (bytes for sizes, ns for periods).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    /// Always the mean.
    Constant { mean: f64 },
    /// Exponential of this mean.
    Exponential { mean: f64 },
    /// Pareto of shape a > 1 and scale x_m = mean·(a−1)/a: P(X > x) = (x_m/x)^a, x ≥ x_m.
    Pareto { mean: f64, shape: f64 },
    /// exp(N(μ, σ²)) with μ = ln(mean) − σ²/2, so that E[X] = mean.
    Lognormal { mean: f64, sigma: f64 },
}

impl Dist {
    pub fn from_config(c: &DistConfig) -> Dist {
        match *c {
            DistConfig::Constant { mean } => Dist::Constant { mean },
            DistConfig::Exponential { mean } => Dist::Exponential { mean },
            DistConfig::Pareto { mean, shape } => Dist::Pareto { mean, shape },
            DistConfig::Lognormal { mean, sigma } => Dist::Lognormal { mean, sigma },
        }
    }

    /// The law's mean.
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Constant { mean }
            | Dist::Exponential { mean }
            | Dist::Pareto { mean, .. }
            | Dist::Lognormal { mean, .. } => mean,
        }
    }

    /// One draw by inversion (Box–Muller for the normal of the lognormal).
    pub fn sample(&self, rng: &mut SimRng) -> f64 {
        // 1 − U lies in (0, 1]: its logarithm and its powers are finite
        let open = |rng: &mut SimRng| 1.0 - rng.next_f64();
        match *self {
            Dist::Constant { mean } => mean,
            Dist::Exponential { mean } => -mean * open(rng).ln(),
            Dist::Pareto { mean, shape } => {
                let x_m = mean * (shape - 1.0) / shape;
                x_m / open(rng).powf(1.0 / shape)
            }
            Dist::Lognormal { mean, sigma } => {
                let mu = mean.ln() - sigma * sigma / 2.0;
                let z = (-2.0 * open(rng).ln()).sqrt()
                    * (2.0 * std::f64::consts::PI * rng.next_f64()).cos();
                (mu + sigma * z).exp()
            }
        }
    }
}

/// One burst in progress.
#[derive(Debug, Clone, Copy)]
struct Burst {
    start_ns: u64,
    size_bytes: u64,
    sent_bytes: u64,
}

/// How bursts start.
#[derive(Debug, Clone)]
enum Arrivals {
    /// Poisson arrivals, mean gap `gap_ns`, sizes from `size`.
    Poisson { gap: Dist, size: Dist },
    /// One source: on for a draw of `on`, then off for a draw of `off`.
    OnOff { on: Dist, off: Dist },
    /// Poisson arrivals of TCP connections: sent by the simulation, not here.
    Connections { gap: Dist, size: Dist },
}

/// Counters of one cross-traffic source.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CrossCounters {
    /// Bursts (flows, on periods, arrivals of TCP connections) started.
    pub bursts: u64,
    /// Bytes of the bursts started (what they will send in full; TCP: the arrivals'
    /// transfer sizes, refused ones included, so that it is the offered load).
    pub bytes_offered: u64,
    pub packets_sent: u64,
    /// Wire bytes put on the link.
    pub bytes_sent: u64,
    pub packets_delivered: u64,
    pub bytes_delivered: u64,
    /// Packets the link dropped (queue full, errors, policer, outage).
    pub packets_dropped: u64,
}

/// A cross-traffic source and its sink's counters.
#[derive(Debug, Clone)]
pub struct CrossSource {
    /// Index among the scenario's `cross` entries.
    pub index: u32,
    peak_bps: u64,
    packet_bytes: u32,
    arrivals: Arrivals,
    rng: SimRng,
    /// When the next burst starts.
    next_start_ns: u64,
    /// Bursts in progress keyed by (time their next packet is due, burst number).
    active: BTreeMap<(u64, u64), Burst>,
    next_id: u64,
    /// TCP connections that arrived and are not opened yet: (arrival ns, bytes).
    pub arrived: Vec<(u64, u64)>,
    /// The connections of a `tcp_flows` source (set by the simulation).
    pub tcp: Option<Box<TcpCross>>,
    pub counters: CrossCounters,
}

/// Time at which byte `offset` of a burst started at `start_ns` leaves at `peak_bps`.
fn due_ns(start_ns: u64, offset: u64, peak_bps: u64) -> u64 {
    let ns = (offset as u128 * 8 * 1_000_000_000).div_ceil(peak_bps as u128);
    start_ns.saturating_add(ns.min(u64::MAX as u128) as u64)
}

impl CrossSource {
    /// Source `index` of a run with master seed `seed`.
    pub fn new(index: u32, cfg: &CrossConfig, seed: u64) -> CrossSource {
        let mut rng = SimRng::substream(seed, &format!("cross{index}"));
        let (arrivals, peak_bps, packet_bytes) = match cfg {
            CrossConfig::Flows {
                offered_bps,
                peak_bps,
                packet_bytes,
                size,
                ..
            } => {
                let size = Dist::from_config(size);
                let gap_ns = 8.0 * size.mean() * NS_PER_S / *offered_bps as f64;
                (
                    Arrivals::Poisson {
                        gap: Dist::Exponential { mean: gap_ns },
                        size,
                    },
                    *peak_bps,
                    *packet_bytes,
                )
            }
            CrossConfig::TcpFlows {
                offered_bps, size, ..
            } => {
                let size = Dist::from_config(size);
                let gap_ns = 8.0 * size.mean() * NS_PER_S / *offered_bps as f64;
                let gap = Dist::Exponential { mean: gap_ns };
                // TCP sets its own packet sizes and rate
                (Arrivals::Connections { gap, size }, 1, 1)
            }
            CrossConfig::OnOff {
                peak_bps,
                packet_bytes,
                on,
                off,
                ..
            } => (
                Arrivals::OnOff {
                    on: Dist::from_config(on),
                    off: Dist::from_config(off),
                },
                *peak_bps,
                *packet_bytes,
            ),
        };
        // A Poisson process seen from t = 0 starts after one gap; an on/off source starts
        // in an off period.
        let first = match &arrivals {
            Arrivals::Poisson { gap, .. } | Arrivals::Connections { gap, .. } => {
                gap.sample(&mut rng)
            }
            Arrivals::OnOff { off, .. } => off.sample(&mut rng),
        };
        CrossSource {
            index,
            peak_bps,
            packet_bytes,
            arrivals,
            rng,
            next_start_ns: first.round() as u64,
            active: BTreeMap::new(),
            next_id: 0,
            arrived: Vec::new(),
            tcp: None,
            counters: CrossCounters::default(),
        }
    }

    /// When the source next has something to do.
    pub fn deadline(&self) -> SimTime {
        let burst = self.active.keys().next().map_or(u64::MAX, |k| k.0);
        SimTime(burst.min(self.next_start_ns))
    }

    /// Start every burst and send every packet due by `now`.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let now = now.ns();
        while self.next_start_ns <= now {
            self.start_burst();
        }
        while let Some(entry) = self.active.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((t, id), mut b) = entry.remove_entry();
            let len = (b.size_bytes - b.sent_bytes).min(self.packet_bytes as u64) as u32;
            out.push(Packet {
                flow: self.index,
                kind: PacketKind::Udp,
                seq: self.counters.packets_sent,
                len,
                wire_bytes: len,
                ts_val: t,
                ..Default::default()
            });
            self.counters.packets_sent += 1;
            self.counters.bytes_sent += len as u64;
            b.sent_bytes += len as u64;
            if b.sent_bytes < b.size_bytes {
                self.active
                    .insert((due_ns(b.start_ns, b.sent_bytes, self.peak_bps), id), b);
            }
        }
    }

    fn start_burst(&mut self) {
        let start_ns = self.next_start_ns;
        let (size_bytes, next) = match &self.arrivals {
            Arrivals::Poisson { gap, size } | Arrivals::Connections { gap, size } => {
                let s = size.sample(&mut self.rng);
                (s, start_ns as f64 + gap.sample(&mut self.rng))
            }
            Arrivals::OnOff { on, off } => {
                let on_ns = on.sample(&mut self.rng);
                let off_ns = off.sample(&mut self.rng);
                let s = on_ns * self.peak_bps as f64 / (8.0 * NS_PER_S);
                (s, start_ns as f64 + on_ns + off_ns)
            }
        };
        // whole bytes, at least one; the next start never goes back in time
        let size_bytes = (size_bytes.round() as u64).max(1);
        self.next_start_ns = (next.round() as u64).max(start_ns + 1);
        self.counters.bursts += 1;
        self.counters.bytes_offered += size_bytes;
        if matches!(self.arrivals, Arrivals::Connections { .. }) {
            self.arrived.push((start_ns, size_bytes));
            return;
        }
        self.active.insert(
            (start_ns, self.next_id),
            Burst {
                start_ns,
                size_bytes,
                sent_bytes: 0,
            },
        );
        self.next_id += 1;
    }

    /// A packet of this source reached the end of its link.
    pub fn on_delivered(&mut self, p: &Packet) {
        self.counters.packets_delivered += 1;
        self.counters.bytes_delivered += p.wire_bytes as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::CrossConfig;

    fn draws(d: Dist, n: usize) -> Vec<f64> {
        let mut rng = SimRng::substream(7, "test");
        (0..n).map(|_| d.sample(&mut rng)).collect()
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    #[test]
    fn pareto_has_the_mean_a_xm_over_a_minus_1_and_its_tail() {
        // shape 2.5, x_m = 600: mean = 2.5 * 600 / 1.5 = 1000; finite variance
        // (a x_m^2 / ((a-1)^2 (a-2)) = 1.33e6), so 2e5 draws put the sample mean within
        // 3 standard errors = 3 * 1155 / sqrt(2e5) = 7.7 of 1000.
        let v = draws(
            Dist::Pareto {
                mean: 1000.0,
                shape: 2.5,
            },
            200_000,
        );
        assert!((mean(&v) - 1000.0).abs() < 8.0, "{}", mean(&v));
        assert!(v.iter().all(|&x| x >= 600.0));
        // P(X > 2 x_m) = 2^-2.5 = 0.1768; P(X > 10 x_m) = 10^-2.5 = 0.00316
        let above = |x: f64| v.iter().filter(|&&s| s > x).count() as f64 / v.len() as f64;
        assert!((above(1200.0) - 0.1768).abs() < 0.003, "{}", above(1200.0));
        assert!(
            (above(6000.0) - 0.00316).abs() < 0.0004,
            "{}",
            above(6000.0)
        );
    }

    #[test]
    fn lognormal_has_its_mean_and_median() {
        // sigma 1, mean 1000: median e^mu = 1000 e^-0.5 = 606.5; sd = 1000 sqrt(e - 1) = 1311
        let v = draws(
            Dist::Lognormal {
                mean: 1000.0,
                sigma: 1.0,
            },
            200_000,
        );
        assert!((mean(&v) - 1000.0).abs() < 9.0, "{}", mean(&v));
        let below = v.iter().filter(|&&s| s < 606.53).count() as f64 / v.len() as f64;
        assert!((below - 0.5).abs() < 0.004, "{below}");
    }

    #[test]
    fn exponential_has_its_mean_and_memoryless_tail() {
        let v = draws(Dist::Exponential { mean: 50.0 }, 200_000);
        assert!((mean(&v) - 50.0).abs() < 0.4, "{}", mean(&v));
        // P(X > 100) = e^-2 = 0.1353
        let above = v.iter().filter(|&&s| s > 100.0).count() as f64 / v.len() as f64;
        assert!((above - 0.1353).abs() < 0.003, "{above}");
    }

    fn flows(offered_bps: u64, peak_bps: u64, size: DistConfig) -> CrossConfig {
        CrossConfig::Flows {
            segment: None,
            reverse: false,
            offered_bps,
            peak_bps,
            packet_bytes: 1500,
            size,
        }
    }

    /// Run a source alone for `secs` seconds, collecting nothing but its counters.
    fn run(cfg: &CrossConfig, seed: u64, secs: u64) -> CrossSource {
        let mut s = CrossSource::new(0, cfg, seed);
        let mut out = Vec::new();
        let end = secs * 1_000_000_000;
        loop {
            let t = s.deadline();
            if t.ns() >= end {
                break;
            }
            s.on_timer(t, &mut out);
            out.clear();
        }
        s
    }

    #[test]
    fn poisson_bursts_realise_the_offered_load() {
        // 2 Mbit/s offered in lognormal flows of 50 kB mean at a 10 Mbit/s peak: over
        // 2000 s the sent bytes are 2e6 * 2000 / 8 = 500 MB within a few per cent (about
        // 10,000 flows; the law of large numbers, not the generator's formula).
        let cfg = flows(
            2_000_000,
            10_000_000,
            DistConfig::Lognormal {
                mean: 50_000.0,
                sigma: 1.0,
            },
        );
        let s = run(&cfg, 3, 2000);
        let c = &s.counters;
        let rate = c.bytes_sent as f64 * 8.0 / 2000.0;
        assert!((rate / 2e6 - 1.0).abs() < 0.03, "{rate}");
        // about 2e6 * 2000 / (8 * 50e3) = 10,000 flows (Poisson: sd 100)
        assert!((9_700..=10_300).contains(&c.bursts), "{}", c.bursts);
        // packets of at most 1500 bytes: at least bytes / 1500 of them
        assert!(c.packets_sent >= c.bytes_sent / 1500);
    }

    #[test]
    fn on_off_offers_peak_times_on_share() {
        // 1 Mbit/s while on, exponential on 200 ms and off 300 ms: 400 kbit/s on average.
        let cfg = CrossConfig::OnOff {
            segment: None,
            reverse: false,
            peak_bps: 1_000_000,
            packet_bytes: 1000,
            on: DistConfig::Exponential { mean: 2e8 },
            off: DistConfig::Exponential { mean: 3e8 },
        };
        let s = run(&cfg, 5, 2000);
        let rate = s.counters.bytes_sent as f64 * 8.0 / 2000.0;
        assert!((rate / 4e5 - 1.0).abs() < 0.03, "{rate}");
        // 2000 s / 0.5 s per cycle = 4000 on periods
        assert!((3_800..=4_200).contains(&s.counters.bursts));
    }

    #[test]
    fn a_burst_leaves_at_the_peak_rate() {
        // one 4500-byte burst at 12 Mbit/s: three 1500-byte packets 1 ms apart
        let mut s = CrossSource::new(
            0,
            &flows(1, 12_000_000, DistConfig::Constant { mean: 4500.0 }),
            1,
        );
        s.next_start_ns = 0;
        let mut out = Vec::new();
        s.on_timer(SimTime(0), &mut out);
        s.next_start_ns = u64::MAX; // no further bursts
        assert_eq!(s.deadline(), SimTime(1_000_000));
        s.on_timer(SimTime(1_000_000), &mut out);
        s.on_timer(s.deadline(), &mut out);
        let times: Vec<u64> = out.iter().map(|p| p.ts_val).collect();
        assert_eq!(times, vec![0, 1_000_000, 2_000_000]);
        assert!(out.iter().all(|p| p.wire_bytes == 1500));
        assert_eq!(s.deadline(), SimTime(u64::MAX));
    }

    #[test]
    fn tcp_flows_arrive_as_the_flows_bursts_do_and_send_nothing_themselves() {
        let size = DistConfig::Pareto {
            mean: 30_000.0,
            shape: 1.5,
        };
        let tcp = CrossConfig::TcpFlows {
            segment: None,
            reverse: false,
            offered_bps: 1_000_000,
            size,
            cca: "cubic".into(),
            cca_params: Default::default(),
            max_connections: 10,
            rtt_ns: None,
            tcp: None,
        };
        let mut s = CrossSource::new(0, &tcp, 11);
        let mut out = Vec::new();
        loop {
            let t = s.deadline();
            if t.ns() >= 100_000_000_000 {
                break;
            }
            s.on_timer(t, &mut out);
        }
        assert!(out.is_empty());
        // the same draws as open-loop flows of that load and size law: the same transfers
        let open = run(&flows(1_000_000, 5_000_000, size), 11, 100).counters;
        assert_eq!(
            (s.counters.bursts, s.counters.bytes_offered),
            (open.bursts, open.bytes_offered)
        );
        // each arrival is handed over in time order, with its size
        assert_eq!(s.arrived.len() as u64, s.counters.bursts);
        assert!(s.arrived.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(
            s.arrived.iter().map(|a| a.1).sum::<u64>(),
            s.counters.bytes_offered
        );
        // 1e6 x 100 / (8 x 30e3) = 417 arrivals expected (Poisson, sd 20)
        assert!(
            (357..=477).contains(&s.counters.bursts),
            "{}",
            s.counters.bursts
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_traffic_and_another_seed_other_traffic() {
        let cfg = flows(
            1_000_000,
            5_000_000,
            DistConfig::Pareto {
                mean: 30_000.0,
                shape: 1.5,
            },
        );
        let a = run(&cfg, 11, 100).counters;
        let b = run(&cfg, 11, 100).counters;
        let c = run(&cfg, 12, 100).counters;
        assert_eq!((a.bytes_sent, a.bursts), (b.bytes_sent, b.bursts));
        assert_ne!(a.bytes_sent, c.bytes_sent);
    }
}
