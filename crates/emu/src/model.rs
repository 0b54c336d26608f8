//! One emulated link direction: the simulator's `Link` fed with real time.
//!
//! `DirModel::offer` is called when a packet is read from the input TUN device, with the
//! read instant as `now`. It asks `tcplab_core::net::link::Link::admit` — the very code the
//! simulator runs, built from the same `DirConfig` by `Link::from_config` — whether the
//! DropTail queue has room, whether the link is down (outages), when the packet's
//! serialization ends under the rate trace in force and whether the loss model (PER/BER or
//! Gilbert-Elliott, drawn from the simulator's random substreams) corrupts it, and returns
//! the instant the packet must leave the far end. The engine holds the packet until then.
//! Everything here is pure: time comes in as an argument, so the tests drive it with
//! made-up instants.
use tcplab_core::engine::stats::{LogHistogram, TimeWeighted};
use tcplab_core::engine::time::{SimDuration, SimTime};
use tcplab_core::net::link::{Admission, Link, LinkStats};
use tcplab_core::scenario::DirConfig;

/// What happens to an offered packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Write it to the far end at `at`; `ce`: set the ECN field to Congestion Experienced.
    Deliver { at: SimTime, ce: bool },
    /// The simulator's link dropped it (full queue, error or loss model, outage, …).
    Dropped(Admission),
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
    /// Packets the far-end TUN refused (should stay 0).
    pub write_errors: u64,
    /// Packets still in the delay line when the measurement ended.
    pub in_flight_at_end: u64,
    /// How late packets left compared with the model's instant (ns).
    pub lateness: LogHistogram,
}

/// One direction of an emulated link.
#[derive(Debug)]
pub struct DirModel {
    link: Link,
    interval: SimDuration,
    next_sample: SimTime,
    prev_area: u128,
    prev_bytes: u64,
    pub series: DirSeries,
    pub counters: EmuCounters,
}

impl DirModel {
    /// A direction named `name` (e.g. `bottleneck.forward`) whose loss models draw from the
    /// simulator's substreams of `seed` for that name.
    pub fn new(name: &str, cfg: &DirConfig, seed: u64, interval_ns: u64) -> DirModel {
        let interval = SimDuration::from_ns(interval_ns);
        DirModel {
            link: Link::from_config(name, cfg, seed),
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
        match self.link.admit(now, wire_bytes, ect) {
            Admission::Arrives { at, ce } => Verdict::Deliver { at, ce },
            // Every other admission is a drop: one arm, so drop kinds the simulator's link
            // may add need no change here.
            dropped => Verdict::Dropped(dropped),
        }
    }

    /// Start the measurement at `now`: counters and series restart, the outages and the
    /// rate trace count from here; packets already queued or propagating keep their
    /// schedule.
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
        self.link.set_origin(now);
        self.counters = EmuCounters::default();
        self.series = DirSeries::default();
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
                .push(bits * 1e9 / (self.link.rate_bps as f64 * span));
            self.prev_area = area;
            self.prev_bytes = bytes;
            self.next_sample = t + self.interval;
        }
    }

    /// Bring the queue statistics up to `now` (end of the measurement).
    pub fn finish(&mut self, now: SimTime) {
        self.link.sample(now);
    }

    /// The simulator's link (its name, configured rate and counters).
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// The simulator's counters for this direction.
    pub fn stats(&self) -> &LinkStats {
        &self.link.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tcplab_core::net::topology::Topology;
    use tcplab_core::scenario::{
        AccessConfig, BottleneckConfig, LossConfig, RatePoint, ScenarioConfig,
    };

    fn dir(rate_bps: u64, delay_ms: u64, limit_pkts: u64) -> DirConfig {
        DirConfig::droptail(rate_bps, delay_ms * 1_000_000, limit_pkts)
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
        assert_eq!(
            m.offer(SimTime(112 * MS), 1500, false),
            Verdict::Dropped(Admission::OutageDrop)
        );
        assert!(matches!(
            m.offer(SimTime(121 * MS), 1500, false),
            Verdict::Deliver { .. }
        ));
        assert_eq!(m.stats().outage_drops, 1);
    }

    #[test]
    fn gilbert_elliott_always_bad_loses_everything() {
        let mut cfg = dir(100_000_000, 0, 1000);
        cfg.loss = Some(LossConfig::GilbertElliott {
            p_gb: 1.0,
            p_bg: 0.0,
            loss_good: 0.0,
            loss_bad: 1.0,
        });
        let mut m = DirModel::new("l", &cfg, 1, 1000 * MS);
        for i in 0..10 {
            assert_eq!(
                m.offer(SimTime(i * MS), 100, false),
                Verdict::Dropped(Admission::ErrorDrop)
            );
        }
        assert_eq!(m.stats().error_drops, 10);
    }

    #[test]
    fn per_uses_the_simulator_error_stream() {
        // Same seed and link name: the emulator drops exactly the packets the simulator's
        // link of that scenario drops (common random numbers), for PER and burst loss.
        let mut per = dir(1_000_000_000, 0, 1_000_000);
        per.per = 0.05;
        let mut ge = per.clone();
        ge.loss = Some(LossConfig::GilbertElliott {
            p_gb: 0.01,
            p_bg: 0.2,
            loss_good: 0.0,
            loss_bad: 0.5,
        });
        for cfg in [per, ge] {
            let scenario = ScenarioConfig {
                cross: Vec::new(),
                name: String::new(),
                seed: 9,
                duration_ns: 1,
                interval_ns: 1,
                bottleneck: Some(BottleneckConfig {
                    forward: cfg.clone(),
                    reverse: cfg.clone(),
                    wifi: None,
                }),
                path: None,
                access: AccessConfig {
                    rate_bps: 1_000_000_000,
                    delay_ns: 0,
                    queue_pkts: None,
                },
                flows: vec![],
            };
            let mut topo = Topology::build(&scenario, &[], &[]);
            let sim = &mut topo.links[topo.bottleneck_fwd as usize];
            let mut m = DirModel::new("bottleneck.forward", &cfg, 9, 1000 * MS);
            let mut drops = 0;
            for i in 0..10_000u64 {
                let emu = m.offer(SimTime(i * MS), 1500, false);
                let simulated = sim.admit(SimTime(i * MS), 1500, false);
                let lost = emu == Verdict::Dropped(Admission::ErrorDrop);
                assert_eq!(lost, simulated == Admission::ErrorDrop, "packet {i}");
                drops += lost as u32;
            }
            assert!(drops > 100, "{drops} drops");
        }
    }

    #[test]
    fn rate_trace_changes_serialization_and_keeps_fifo() {
        let mut cfg = dir(1_000_000, 100, 100);
        // 1 Mbit/s, 100 ms; from 50 ms: 10 Mbit/s and 10 ms.
        cfg.rate_trace = Some(vec![
            RatePoint::from((0, 1_000_000, None)),
            RatePoint::from((50 * MS, 10_000_000, Some(10 * MS))),
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
    fn outages_and_the_rate_trace_count_from_the_latest_measurement_start() {
        // 1 Mbit/s, then 10 Mbit/s 50 ms into the measurement; down 10..20 ms into it.
        let mut cfg = dir(1_000_000, 0, 100);
        cfg.rate_trace = Some(vec![
            RatePoint::from((0, 1_000_000, None)),
            RatePoint::from((50 * MS, 10_000_000, None)),
        ]);
        cfg.outages = vec![(10 * MS, 20 * MS)];
        let mut m = DirModel::new("l", &cfg, 1, 1000 * MS);
        m.start_measurement(SimTime(100 * MS));
        m.start_measurement(SimTime(1000 * MS)); // a second start (SIGUSR1) moves time 0
        let at = |m: &mut DirModel, ms: u64| match m.offer(SimTime(ms * MS), 1250, false) {
            Verdict::Deliver { at, .. } => Some(at.ns() / 1_000),
            _ => None,
        };
        // 1250 B: 10 ms at 1 Mbit/s, 1 ms at 10 Mbit/s (µs below).
        assert_eq!(at(&mut m, 1005), Some(1_015_000));
        assert_eq!(at(&mut m, 1015), None, "down from 1010 to 1020 ms");
        assert_eq!(at(&mut m, 1060), Some(1_061_000));
        assert_eq!(m.stats().outage_drops, 1);
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
