//! Random Early Detection (Floyd & Jacobson 1993, "Random Early Detection Gateways for
//! Congestion Avoidance", Fig. 2; gentle RED, Floyd 2000; Linux `sch_red`).
//!
//! Decisions are taken when a packet arrives, so RED fits the link's analytic model: the
//! link tells RED the number of packets waiting (the one in service is not counted, as in
//! ns-2 and Linux) and, if the link is idle, for how long it has been.
//!
//! - Average queue: `avg ← (1 − w_q)·avg + w_q·q` at each arrival to a busy link; an
//!   arrival to an idle link first ages the average as if `m` empty-queue arrivals had
//!   happened, `avg ← (1 − w_q)^m · avg` with `m = idle time / s`, `s` the transmission
//!   time of a full-size (1500 B) packet (F&J §4; Linux `red_calc_qavg_from_idle_time`).
//! - Below `min_th`: accept. Between `min_th` and `max_th`:
//!   `p_b = max_p·(avg − min_th)/(max_th − min_th)` and the packet is marked with
//!   `p_a = p_b/(1 − count·p_b)`, `count` being the packets accepted since the last mark
//!   (or since `avg` rose above `min_th`), so marks are spaced uniformly on
//!   `1 ..= 1/p_b` packets instead of geometrically (F&J §7; Linux `qcount`/`qR`).
//! - Gentle (Floyd 2000): between `max_th` and `2·max_th`, `p_b` rises linearly from
//!   `max_p` to 1 (with the same spacing rule); above, or above `max_th` when not gentle,
//!   every packet is marked.
//! - A "mark" CE-marks ECN-capable packets when `ecn` is set (Linux marks in the forced
//!   region too unless `harddrop`) and drops the others.
use crate::engine::rng::SimRng;
use crate::scenario::RedConfig;

/// What RED does with an arriving packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RedVerdict {
    Accept,
    /// Accept it with CE set.
    Mark,
    Drop,
}

/// RED state of one queue.
#[derive(Clone, Debug)]
pub struct Red {
    pub cfg: RedConfig,
    /// Average queue (packets).
    avg: f64,
    /// Packets accepted unmarked since the last mark; −1 while `avg < min_th`.
    count: i64,
    rng: SimRng,
}

impl Red {
    pub fn new(cfg: RedConfig, rng: SimRng) -> Red {
        Red {
            cfg,
            avg: 0.0,
            count: -1,
            rng,
        }
    }

    /// Current average queue (packets).
    pub fn avg(&self) -> f64 {
        self.avg
    }

    /// Update the average for an arrival that finds `q` packets waiting; `idle_slots`:
    /// `Some(m)` if the link has been idle for `m` full-size packet times.
    #[inline]
    pub fn update_avg(&mut self, q: usize, idle_slots: Option<f64>) {
        let w = self.cfg.w_q;
        match idle_slots {
            Some(m) => self.avg *= (1.0 - w).powf(m),
            None => self.avg = (1.0 - w) * self.avg + w * q as f64,
        }
    }

    /// Marking probability `p_b` for the current average: `None` below `min_th`,
    /// `Some(1.0)` in the forced region.
    pub fn p_b(&self) -> Option<f64> {
        let c = &self.cfg;
        let a = self.avg;
        if a < c.min_th_pkts {
            None
        } else if a < c.max_th_pkts {
            Some(c.max_p * (a - c.min_th_pkts) / (c.max_th_pkts - c.min_th_pkts))
        } else if c.gentle && a < 2.0 * c.max_th_pkts {
            Some(c.max_p + (1.0 - c.max_p) * (a - c.max_th_pkts) / c.max_th_pkts)
        } else {
            Some(1.0)
        }
    }

    /// Decide for an arriving packet (`ect`: it is ECN-capable) at the current average.
    #[inline]
    pub fn decide(&mut self, ect: bool) -> RedVerdict {
        let Some(p_b) = self.p_b() else {
            self.count = -1;
            return RedVerdict::Accept;
        };
        let count = self.count.max(0) as f64;
        let p_a = if count * p_b >= 1.0 {
            1.0
        } else {
            p_b / (1.0 - count * p_b)
        };
        if p_a >= 1.0 || self.rng.bernoulli(p_a) {
            self.count = 0;
            if self.cfg.ecn && ect {
                RedVerdict::Mark
            } else {
                RedVerdict::Drop
            }
        } else {
            self.count = count as i64 + 1;
            RedVerdict::Accept
        }
    }

    /// Average update and decision for one arrival.
    #[inline]
    pub fn on_arrival(&mut self, q: usize, idle_slots: Option<f64>, ect: bool) -> RedVerdict {
        self.update_avg(q, idle_slots);
        self.decide(ect)
    }

    #[cfg(test)]
    fn set_avg(&mut self, avg: f64) {
        self.avg = avg;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red(cfg: RedConfig) -> Red {
        Red::new(cfg, SimRng::substream(1, "red"))
    }

    #[test]
    fn average_follows_the_ewma_and_ages_over_idle_time() {
        let mut r = red(RedConfig::default());
        // 1000 arrivals to a queue of 10: avg = 10·(1 − 0.998^1000) = 10·(1 − 0.135065)
        // = 8.64935.
        for _ in 0..1000 {
            r.update_avg(10, None);
        }
        assert!((r.avg() - 8.649_35).abs() < 1e-4, "{}", r.avg());
        // Idle for 500 packet times: avg · 0.998^500 = 8.64935 · 0.367511 = 3.17873.
        r.update_avg(0, Some(500.0));
        assert!((r.avg() - 3.178_73).abs() < 1e-4, "{}", r.avg());
    }

    #[test]
    fn marking_probability_at_hand_computed_points() {
        let mut r = red(RedConfig::default());
        let at = |r: &mut Red, a| {
            r.set_avg(a);
            r.p_b()
        };
        assert_eq!(at(&mut r, 4.9), None);
        // min 5, max 15, max_p 0.1: avg 10 → 0.05; avg 14 → 0.09.
        assert!((at(&mut r, 10.0).unwrap() - 0.05).abs() < 1e-12);
        assert!((at(&mut r, 14.0).unwrap() - 0.09).abs() < 1e-12);
        // Gentle: avg 22.5 → 0.1 + 0.9·7.5/15 = 0.55; ≥ 30 → 1.
        assert!((at(&mut r, 22.5).unwrap() - 0.55).abs() < 1e-12);
        assert_eq!(at(&mut r, 30.0), Some(1.0));
        let mut hard = red(RedConfig {
            gentle: false,
            ..RedConfig::default()
        });
        assert_eq!(at(&mut hard, 15.0), Some(1.0));
    }

    #[test]
    fn marks_are_spaced_uniformly_on_one_to_one_over_p_b() {
        // avg fixed at 10: p_b = 0.05, so the gap between marks is uniform on 1..=20
        // packets: mean 10.5, never more than 20.
        let mut r = red(RedConfig::default());
        r.set_avg(10.0);
        let (mut gaps, mut since, mut max_gap) = (Vec::new(), 0u64, 0u64);
        for _ in 0..200_000 {
            since += 1;
            // ECN-capable: marks, never drops.
            match r.decide(true) {
                RedVerdict::Mark => {
                    gaps.push(since);
                    max_gap = max_gap.max(since);
                    since = 0;
                }
                RedVerdict::Accept => {}
                RedVerdict::Drop => panic!("ECT packet dropped"),
            }
        }
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        // sd of the uniform gap = sqrt((20² − 1)/12) = 5.77; over ~19000 gaps, 5 sd = 0.21.
        assert!((mean - 10.5).abs() < 0.21, "mean gap {mean}");
        assert_eq!(max_gap, 20);
        // Each gap length 1..=20 has probability 1/20.
        let ones = gaps.iter().filter(|&&g| g == 1).count() as f64 / gaps.len() as f64;
        assert!((ones - 0.05).abs() < 0.008, "P(gap = 1) = {ones}");
    }

    #[test]
    fn not_ect_or_ecn_off_means_drop() {
        let mut r = red(RedConfig::default());
        r.set_avg(40.0);
        assert_eq!(r.decide(false), RedVerdict::Drop);
        assert_eq!(r.decide(true), RedVerdict::Mark);
        let mut d = red(RedConfig {
            ecn: false,
            ..RedConfig::default()
        });
        d.set_avg(40.0);
        assert_eq!(d.decide(true), RedVerdict::Drop);
    }
}
