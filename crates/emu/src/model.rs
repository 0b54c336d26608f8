//! One emulated link direction: the simulator's `Link` fed with real time.
//!
//! `DirModel::offer` is called when a packet is read from the input TUN device, with the
//! read instant as `now`. It asks `tcplab_core::net::link::Link::admit` — the very code the
//! simulator runs — whether the DropTail queue has room, when the packet's serialization
//! ends and whether the error model corrupts it, then applies what the emulator adds on
//! top of that model (Gilbert-Elliott loss, outages, rate traces) and returns the instant
//! the packet must leave the far end. The engine holds the packet until then. Everything
//! here is pure: time comes in as an argument, so the tests drive it with made-up instants.
use crate::config::{DirConfig, GilbertElliott, RatePoint};
use tcplab_core::engine::rng::SimRng;
use tcplab_core::engine::stats::{LogHistogram, TimeWeighted};
use tcplab_core::engine::time::{serialization_time, SimDuration, SimTime};
use tcplab_core::net::link::{stream_name, Admission, ErrorModel, Link, LinkStats, QueueLimit};

/// What happens to an offered packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Write it to the far end at `at`; `ce`: set the ECN field to Congestion Experienced.
    Deliver { at: SimTime, ce: bool },
    /// The simulator's link dropped it (full queue, PER/BER error, …).
    Dropped(Admission),
    /// Lost by the Gilbert-Elliott model.
    LossModelDrop,
    /// The link was down (an outage) when the packet's transmission would start.
    OutageDrop,
}

/// Per-interval samples of one direction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirSeries {
    /// Time-weighted mean number of waiting packets in each interval.
    pub queue_pkts: Vec<f64>,
    /// Bits that entered service in each interval over rate × interval.
    pub utilization: Vec<f64>,
}

/// Counters the emulator keeps beyond the simulator's `LinkStats`.
#[derive(Clone, Debug, Default)]
pub struct EmuCounters {
    pub outage_drops: u64,
    /// Packets the far-end TUN refused (should stay 0).
    pub write_errors: u64,
    /// Packets still in the delay line when the measurement ended.
    pub in_flight_at_end: u64,
    /// How late packets left compared with the model's instant (ns).
    pub lateness: LogHistogram,
}

/// A Gilbert-Elliott chain with its own random stream.
#[derive(Debug)]
struct GeState {
    model: GilbertElliott,
    bad: bool,
    rng: SimRng,
}

impl GeState {
    /// Step the chain for one packet, then decide whether that packet is lost.
    fn lose(&mut self) -> bool {
        let switch = if self.bad {
            self.model.p_bg
        } else {
            self.model.p_gb
        };
        if self.rng.bernoulli(switch) {
            self.bad = !self.bad;
        }
        let p = if self.bad {
            self.model.loss_bad
        } else {
            self.model.loss_good
        };
        self.rng.bernoulli(p)
    }
}

/// One direction of an emulated link.
#[derive(Debug)]
pub struct DirModel {
    /// Result name, e.g. `bottleneck.forward`.
    pub name: String,
    /// Configured rate (the rate-trace changes only the `Link`'s current rate).
    pub rate_bps: u64,
    link: Link,
    ge: Option<GeState>,
    outages: Vec<(u64, u64)>,
    rate_trace: Vec<RatePoint>,
    next_trace: usize,
    /// Start of the measurement: outages, traces and series count from here.
    origin: SimTime,
    /// Latest delivery instant handed out: deliveries stay in FIFO order even when a rate
    /// trace shortens the delay.
    last_at: SimTime,
    interval: SimDuration,
    next_sample: SimTime,
    prev_area: u128,
    prev_bytes: u64,
    pub series: DirSeries,
    pub counters: EmuCounters,
}

impl DirModel {
    /// A direction named `name` whose loss models draw from substream `name` of `seed`.
    pub fn new(name: &str, cfg: &DirConfig, seed: u64, interval_ns: u64) -> DirModel {
        let limit = match (cfg.queue.limit_pkts, cfg.queue.limit_bytes) {
            (Some(n), _) => QueueLimit::Packets(n),
            (None, Some(b)) => QueueLimit::Bytes(b),
            (None, None) => QueueLimit::Unlimited, // refused by the config check
        };
        let errors = ErrorModel {
            per: cfg.per,
            ber: cfg.ber,
        };
        let mut link = Link::new(
            name,
            cfg.rate_bps,
            SimDuration::from_ns(cfg.delay_ns),
            limit,
            errors,
            SimRng::substream(seed, &stream_name(name, "errors")),
        );
        link.ecn_threshold_pkts = cfg.ecn_threshold_pkts;
        let ge = cfg.loss.clone().map(|model| GeState {
            model,
            bad: false,
            rng: SimRng::substream(seed, &stream_name(name, "loss")),
        });
        let interval = SimDuration::from_ns(interval_ns);
        DirModel {
            name: name.to_string(),
            rate_bps: cfg.rate_bps,
            link,
            ge,
            outages: cfg.outages.clone(),
            rate_trace: cfg.rate_trace.clone().unwrap_or_default(),
            next_trace: 0,
            origin: SimTime::ZERO,
            last_at: SimTime::ZERO,
            interval,
            next_sample: SimTime::ZERO + interval,
            prev_area: 0,
            prev_bytes: 0,
            series: DirSeries::default(),
            counters: EmuCounters::default(),
        }
    }

    /// Offer a packet of `wire_bytes` (the IP packet) read at `now`; `ect`: ECN-capable.
    pub fn offer(&mut self, now: SimTime, wire_bytes: u32, ect: bool) -> Verdict {
        self.apply_trace(now);
        let rel = now.saturating_since(self.origin).ns();
        if self.in_outage(rel) {
            self.counters.outage_drops += 1;
            return Verdict::OutageDrop;
        }
        match self.link.admit(now, wire_bytes, ect) {
            Admission::Arrives { at, ce } => {
                let tx = serialization_time(wire_bytes as u64, self.link.rate_bps);
                let start = (at - self.link.delay - tx)
                    .saturating_since(self.origin)
                    .ns();
                if start != rel && self.in_outage(start) {
                    // Queued behind the outage's start: the link is down when its turn comes.
                    self.counters.outage_drops += 1;
                    return Verdict::OutageDrop;
                }
                if self.ge.as_mut().is_some_and(GeState::lose) {
                    self.link.stats.error_drops += 1;
                    return Verdict::LossModelDrop;
                }
                let at = at.max(self.last_at);
                self.last_at = at;
                Verdict::Deliver { at, ce }
            }
            // Every other admission is a drop (full queue, error): one arm, so drop kinds
            // the simulator's link may add need no change here.
            dropped => Verdict::Dropped(dropped),
        }
    }

    fn in_outage(&self, rel_ns: u64) -> bool {
        self.outages.iter().any(|&(s, e)| s <= rel_ns && rel_ns < e)
    }

    /// Switch the link to the rate-trace point in force at `now`.
    fn apply_trace(&mut self, now: SimTime) {
        let rel = now.saturating_since(self.origin).ns();
        while let Some(&(t_ns, rate_bps, delay_ns)) = self.rate_trace.get(self.next_trace) {
            if t_ns > rel {
                break;
            }
            self.link.rate_bps = rate_bps;
            if let Some(d) = delay_ns {
                self.link.delay = SimDuration::from_ns(d);
            }
            self.next_trace += 1;
        }
    }

    /// Start the measurement at `now`: counters and series restart; packets already queued
    /// or propagating keep their schedule.
    pub fn start_measurement(&mut self, now: SimTime) {
        self.link.sample(now);
        let waiting = |tw: &TimeWeighted| TimeWeighted {
            area: 0,
            last_t_ns: now.ns(),
            value: tw.value,
            max: tw.value,
        };
        let stats = &self.link.stats;
        self.link.stats = LinkStats {
            q_pkts: waiting(&stats.q_pkts),
            q_bytes: waiting(&stats.q_bytes),
            ..LinkStats::default()
        };
        self.counters = EmuCounters::default();
        self.series = DirSeries::default();
        self.origin = now;
        self.next_trace = 0;
        self.apply_trace(now);
        self.next_sample = now + self.interval;
        self.prev_area = 0;
        self.prev_bytes = 0;
    }

    /// The next interval boundary (the engine must wake up for it).
    pub fn next_sample(&self) -> SimTime {
        self.next_sample
    }

    /// Close every interval that ended by `now`.
    pub fn sample_until(&mut self, now: SimTime) {
        while self.next_sample <= now {
            let t = self.next_sample;
            self.link.sample(t);
            let area = self.link.stats.q_pkts.area;
            let bytes = self.link.stats.bytes_tx;
            let span = self.interval.ns() as f64;
            self.series
                .queue_pkts
                .push((area - self.prev_area) as f64 / span);
            let bits = 8.0 * (bytes - self.prev_bytes) as f64;
            self.series
                .utilization
                .push(bits * 1e9 / (self.rate_bps as f64 * span));
            self.prev_area = area;
            self.prev_bytes = bytes;
            self.next_sample = t + self.interval;
        }
    }

    /// Bring the queue statistics up to `now` (end of the measurement).
    pub fn finish(&mut self, now: SimTime) {
        self.link.sample(now);
    }

    /// The simulator's counters for this direction.
    pub fn stats(&self) -> &LinkStats {
        &self.link.stats
    }

    /// Start of the measurement.
    pub fn origin(&self) -> SimTime {
        self.origin
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::QueueConfig;

    fn dir(rate_bps: u64, delay_ms: u64, limit_pkts: u64) -> DirConfig {
        DirConfig {
            rate_bps,
            delay_ns: delay_ms * 1_000_000,
            per: 0.0,
            ber: 0.0,
            queue: QueueConfig {
                kind: "droptail".into(),
                limit_pkts: Some(limit_pkts),
                limit_bytes: None,
            },
            ecn_threshold_pkts: None,
            loss: None,
            outages: vec![],
            rate_trace: None,
            delivery_trace: None,
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn back_to_back_packets_leave_one_serialization_time_apart() {
        // 1500 B at 4 Mbit/s = 3 ms; 250 ms delay.
        let mut m = DirModel::new("bottleneck.forward", &dir(4_000_000, 250, 10), 1, 1000 * MS);
        let ats: Vec<_> = (0..3).map(|_| m.offer(SimTime(0), 1500, false)).collect();
        let expect = |ms| Verdict::Deliver {
            at: SimTime(ms * MS),
            ce: false,
        };
        assert_eq!(ats, vec![expect(253), expect(256), expect(259)]);
    }

    #[test]
    fn full_queue_drops_like_the_simulator() {
        let mut m = DirModel::new("l", &dir(4_000_000, 0, 2), 1, 1000 * MS);
        for _ in 0..3 {
            assert!(matches!(
                m.offer(SimTime(0), 1500, false),
                Verdict::Deliver { .. }
            ));
        }
        assert_eq!(
            m.offer(SimTime(0), 1500, false),
            Verdict::Dropped(Admission::QueueDrop)
        );
        assert_eq!(m.stats().queue_drops, 1);
    }

    #[test]
    fn outage_drops_packets_offered_while_the_link_is_down() {
        let mut cfg = dir(10_000_000, 5, 100);
        cfg.outages = vec![(10 * MS, 20 * MS)];
        let mut m = DirModel::new("l", &cfg, 1, 1000 * MS);
        m.start_measurement(SimTime(100 * MS));
        assert!(matches!(
            m.offer(SimTime(105 * MS), 1500, false),
            Verdict::Deliver { .. }
        ));
        assert_eq!(m.offer(SimTime(112 * MS), 1500, false), Verdict::OutageDrop);
        assert!(matches!(
            m.offer(SimTime(121 * MS), 1500, false),
            Verdict::Deliver { .. }
        ));
        assert_eq!(m.counters.outage_drops, 1);
    }

    #[test]
    fn gilbert_elliott_always_bad_loses_everything() {
        let mut cfg = dir(100_000_000, 0, 1000);
        cfg.loss = Some(GilbertElliott {
            kind: "gilbert_elliott".into(),
            p_gb: 1.0,
            p_bg: 0.0,
            loss_good: 0.0,
            loss_bad: 1.0,
        });
        let mut m = DirModel::new("l", &cfg, 1, 1000 * MS);
        for i in 0..10 {
            assert_eq!(m.offer(SimTime(i * MS), 100, false), Verdict::LossModelDrop);
        }
        assert_eq!(m.stats().error_drops, 10);
    }

    #[test]
    fn per_uses_the_simulator_error_stream() {
        // Same seed and name: the emulator drops exactly the packets the simulator's link
        // with the same substream would drop.
        let mut cfg = dir(1_000_000_000, 0, 1_000_000);
        cfg.per = 0.05;
        let mut m = DirModel::new("l", &cfg, 9, 1000 * MS);
        let mut sim = Link::new(
            "l",
            1_000_000_000,
            SimDuration::ZERO,
            QueueLimit::Packets(1_000_000),
            ErrorModel {
                per: 0.05,
                ber: 0.0,
            },
            SimRng::substream(9, &stream_name("l", "errors")),
        );
        for i in 0..10_000u64 {
            let a = m.offer(SimTime(i * MS), 1500, false) == Verdict::Dropped(Admission::ErrorDrop);
            let b = sim.admit(SimTime(i * MS), 1500, false) == Admission::ErrorDrop;
            assert_eq!(a, b, "packet {i}");
        }
    }

    #[test]
    fn rate_trace_changes_serialization_and_keeps_fifo() {
        let mut cfg = dir(1_000_000, 100, 100);
        // 1 Mbit/s, 100 ms; from 50 ms: 10 Mbit/s and 10 ms.
        cfg.rate_trace = Some(vec![
            (0, 1_000_000, None),
            (50 * MS, 10_000_000, Some(10 * MS)),
        ]);
        let mut m = DirModel::new("l", &cfg, 1, 1000 * MS);
        // 1250 B at 1 Mbit/s = 10 ms: leaves at 110 ms.
        assert_eq!(
            m.offer(SimTime(0), 1250, false),
            Verdict::Deliver {
                at: SimTime(110 * MS),
                ce: false
            }
        );
        // At 60 ms: 1 ms at 10 Mbit/s + 10 ms = 71 ms, held back to 110 ms (FIFO).
        assert_eq!(
            m.offer(SimTime(60 * MS), 1250, false),
            Verdict::Deliver {
                at: SimTime(110 * MS),
                ce: false
            }
        );
        assert_eq!(
            m.offer(SimTime(200 * MS), 1250, false),
            Verdict::Deliver {
                at: SimTime(211 * MS),
                ce: false
            }
        );
    }

    #[test]
    fn series_reports_queue_and_utilization_per_interval() {
        // 1500 B at 12 Mbit/s = 1 ms. Three packets at t = 0: queue 2 for 1 ms, 1 for 1 ms.
        let mut m = DirModel::new("l", &dir(12_000_000, 0, 100), 1, 10 * MS);
        for _ in 0..3 {
            m.offer(SimTime(0), 1500, false);
        }
        m.sample_until(SimTime(25 * MS));
        assert_eq!(m.series.queue_pkts, vec![0.3, 0.0]);
        // 3 × 12000 bits over 10 ms at 12 Mbit/s = 0.3.
        assert_eq!(m.series.utilization, vec![0.3, 0.0]);
    }

    #[test]
    fn start_measurement_resets_counters_but_not_the_queue() {
        let mut m = DirModel::new("l", &dir(12_000_000, 0, 100), 1, 10 * MS);
        for _ in 0..3 {
            m.offer(SimTime(0), 1500, false);
        }
        m.start_measurement(SimTime(MS / 2));
        assert_eq!(m.stats().packets_tx, 0);
        assert_eq!(m.stats().q_pkts.value, 2);
        // The fourth packet waits behind the three (end of service at 4 ms).
        assert_eq!(
            m.offer(SimTime(MS / 2), 1500, false),
            Verdict::Deliver {
                at: SimTime(4 * MS),
                ce: false
            }
        );
    }
}
