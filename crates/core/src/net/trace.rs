//! Time-varying links: outages, piecewise-constant rate/delay traces and Mahimahi-style
//! delivery-opportunity traces.
//!
//! All three are queried in FIFO service order, so the instants a link asks about never go
//! back; each keeps a cursor and answers in amortized O(1) (a backwards query, which the
//! link never makes, falls back to a binary search so the answer is still right).
//!
//! The service models answer one question for the link: a packet of `bytes` whose service
//! can begin at `start` (the queue ahead of it is served) — when does it start, when is the
//! transmitter free again, and when does it reach the far end? The link then commits the
//! plan, or drops the packet (an outage) without touching the service state.
use crate::engine::time::{serialization_time, SimDuration, SimTime};
use crate::scenario::{DeliveryTraceConfig, RatePoint};

/// `[start, end)` intervals during which a link is down (sorted, disjoint).
#[derive(Clone, Debug, Default)]
pub struct Outages {
    spans: Vec<(SimTime, SimTime)>,
    cursor: usize,
}

impl Outages {
    pub fn new(spans: &[(u64, u64)]) -> Outages {
        Outages {
            spans: spans
                .iter()
                .map(|&(s, e)| (SimTime(s), SimTime(e)))
                .collect(),
            cursor: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Move every span later by `by` (the schedule starts at `by` instead of 0).
    pub fn delay_by(&mut self, by: SimDuration) {
        for s in &mut self.spans {
            *s = (s.0 + by, s.1 + by);
        }
        self.cursor = 0;
    }

    /// True if the link is down at `t`.
    #[inline]
    pub fn contains(&mut self, t: SimTime) -> bool {
        if self.cursor > 0 && self.spans[self.cursor - 1].1 > t {
            // Backwards query: recompute the first span that ends after `t`.
            self.cursor = self.spans.partition_point(|&(_, e)| e <= t);
        }
        while self.cursor < self.spans.len() && self.spans[self.cursor].1 <= t {
            self.cursor += 1;
        }
        self.spans.get(self.cursor).is_some_and(|&(s, _)| s <= t)
    }
}

/// A piecewise-constant rate and propagation delay.
#[derive(Clone, Debug)]
pub struct RateTrace {
    /// (from, rate_bps, delay); the first entry is at 0.
    steps: Vec<(SimTime, u64, SimDuration)>,
    rate_cursor: usize,
    delay_cursor: usize,
}

impl RateTrace {
    /// `delay0`: the delay before the first explicit one (the link's `delay_ns`).
    pub fn new(points: &[RatePoint], delay0: SimDuration) -> RateTrace {
        let mut delay = delay0;
        let steps = points
            .iter()
            .map(|p| {
                if let Some(d) = p.delay_ns {
                    delay = SimDuration(d);
                }
                (SimTime(p.t_ns), p.rate_bps, delay)
            })
            .collect();
        RateTrace {
            steps,
            rate_cursor: 0,
            delay_cursor: 0,
        }
    }

    /// Move every step later by `by`: the first step's values hold until `by`.
    pub fn delay_by(&mut self, by: SimDuration) {
        for s in self.steps.iter_mut().skip(1) {
            s.0 += by;
        }
        self.rate_cursor = 0;
        self.delay_cursor = 0;
    }

    /// Index of the step in force at `t`, moving `cursor` forward.
    #[inline]
    fn step_at(steps: &[(SimTime, u64, SimDuration)], cursor: &mut usize, t: SimTime) -> usize {
        if steps[*cursor].0 > t {
            *cursor = steps.partition_point(|s| s.0 <= t).saturating_sub(1);
        }
        while *cursor + 1 < steps.len() && steps[*cursor + 1].0 <= t {
            *cursor += 1;
        }
        *cursor
    }

    /// Rate (bit/s) in force at `t`.
    #[inline]
    pub fn rate_at(&mut self, t: SimTime) -> u64 {
        let i = Self::step_at(&self.steps, &mut self.rate_cursor, t);
        self.steps[i].1
    }

    /// Propagation delay in force at `t`.
    #[inline]
    pub fn delay_at(&mut self, t: SimTime) -> SimDuration {
        let i = Self::step_at(&self.steps, &mut self.delay_cursor, t);
        self.steps[i].2
    }
}

/// Mahimahi delivery opportunities: at each listed instant the link can deliver up to
/// `budget` bytes; the list repeats every `period`. Opportunities are numbered globally
/// (`k = cycle · n + i`), so their instants are non-decreasing in `k`.
#[derive(Clone, Debug)]
pub struct DeliveryTrace {
    opps: Vec<u64>,
    period: u64,
    budget: u32,
    /// The instant the first period starts.
    origin: u64,
    /// The opportunity the last packet left with and the bytes it has carried.
    last: Option<(u64, u32)>,
}

impl DeliveryTrace {
    pub fn new(c: &DeliveryTraceConfig) -> DeliveryTrace {
        DeliveryTrace {
            opps: c.opportunities_ns.clone(),
            period: c.period_ns,
            budget: c.bytes_per_opportunity,
            origin: 0,
            last: None,
        }
    }

    /// Start the periods `by` later.
    pub fn delay_by(&mut self, by: SimDuration) {
        self.origin += by.ns();
        self.last = None;
    }

    /// Instant of opportunity `k`.
    #[inline]
    pub fn time_of(&self, k: u64) -> SimTime {
        let n = self.opps.len() as u64;
        SimTime(self.origin + (k / n) * self.period + self.opps[(k % n) as usize])
    }

    /// The first opportunity at or after `t`.
    pub fn first_at_or_after(&self, t: SimTime) -> u64 {
        let n = self.opps.len() as u64;
        let t = t.ns().saturating_sub(self.origin);
        let (c, r) = (t / self.period, t % self.period);
        // An instant equal to the period belongs to the previous cycle but falls on `c · P`.
        if r == 0 && c > 0 && self.opps[self.opps.len() - 1] == self.period {
            let i = self.opps.partition_point(|&o| o < self.period) as u64;
            return (c - 1) * n + i;
        }
        let i = self.opps.partition_point(|&o| o < r) as u64;
        c * n + i
    }

    /// The opportunity that carries a packet of `bytes` whose turn comes at `start`, and
    /// the bytes that opportunity will then have carried. The packet shares the previous
    /// packet's opportunity if that one is not over and has room; otherwise it takes the
    /// next one. A packet larger than the budget starts on a fresh opportunity and also
    /// uses the following ones until all its bytes are carried (as Mahimahi splits it).
    #[inline]
    pub fn plan(&self, start: SimTime, bytes: u32) -> (u64, u32) {
        if let Some((k, used)) = self.last {
            if self.time_of(k) >= start {
                if bytes <= self.budget - used {
                    return (k, used + bytes);
                }
                return self.fresh(k + 1, bytes);
            }
        }
        self.fresh(self.first_at_or_after(start), bytes)
    }

    fn fresh(&self, k: u64, bytes: u32) -> (u64, u32) {
        let extra = (bytes - 1) / self.budget;
        (k + extra as u64, bytes - extra * self.budget)
    }

    pub fn commit(&mut self, plan: (u64, u32)) {
        self.last = Some(plan);
    }
}

/// How a link serves its queue.
#[derive(Clone, Debug)]
pub enum Service {
    /// The link's fixed `rate_bps` and `delay`.
    Fixed,
    Rate(RateTrace),
    Delivery(DeliveryTrace),
}

/// When a packet is served (see `Service::plan`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The instant the packet leaves the queue: start of serialization, or its delivery
    /// opportunity. A link that is down at this instant loses the packet.
    pub start: SimTime,
    /// The transmitter is free for the next packet from here.
    pub free_at: SimTime,
    /// Arrival at the far end.
    pub arrive: SimTime,
    /// Delivery traces: the opportunity used.
    opportunity: (u64, u32),
}

impl Service {
    /// Move the service's schedule later by `by` (a fixed rate has none).
    pub fn delay_by(&mut self, by: SimDuration) {
        match self {
            Service::Fixed => {}
            Service::Rate(r) => r.delay_by(by),
            Service::Delivery(d) => d.delay_by(by),
        }
    }

    /// Plan the service of `bytes` whose turn comes at `start` (on a link of `rate_bps`
    /// and `delay` for `Fixed`); `last_arrival` keeps arrivals in FIFO order when the delay
    /// changes (a shorter delay never lets a packet overtake the previous one).
    #[inline]
    pub fn plan(
        &mut self,
        start: SimTime,
        bytes: u32,
        rate_bps: u64,
        delay: SimDuration,
        last_arrival: SimTime,
    ) -> Plan {
        match self {
            Service::Fixed => {
                let end = start + serialization_time(bytes as u64, rate_bps);
                Plan {
                    start,
                    free_at: end,
                    arrive: end + delay,
                    opportunity: (0, 0),
                }
            }
            Service::Rate(t) => {
                let end = start + serialization_time(bytes as u64, t.rate_at(start));
                let arrive = (end + t.delay_at(end)).max(last_arrival);
                Plan {
                    start,
                    free_at: end,
                    arrive,
                    opportunity: (0, 0),
                }
            }
            Service::Delivery(d) => {
                let opportunity = d.plan(start, bytes);
                let at = d.time_of(opportunity.0);
                Plan {
                    start: at,
                    free_at: at,
                    arrive: at + delay,
                    opportunity,
                }
            }
        }
    }

    /// Make a plan the current state (the packet was served as planned).
    #[inline]
    pub fn commit(&mut self, plan: &Plan) {
        if let Service::Delivery(d) = self {
            d.commit(plan.opportunity);
        }
    }

    /// Rate in force at `t` (the link's `rate_bps` if the rate is not traced).
    pub fn rate_at(&mut self, t: SimTime, rate_bps: u64) -> u64 {
        match self {
            Service::Rate(r) => r.rate_at(t),
            _ => rate_bps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outages_are_half_open_intervals() {
        let mut o = Outages::new(&[(10, 20), (30, 40)]);
        let down: Vec<u64> = (0..50).filter(|&t| o.contains(SimTime(t))).collect();
        let want: Vec<u64> = (10..20).chain(30..40).collect();
        assert_eq!(down, want);
        // A backwards query is still answered correctly.
        assert!(o.contains(SimTime(15)));
        assert!(!o.contains(SimTime(25)));
    }

    #[test]
    fn rate_trace_keeps_the_previous_delay_when_null() {
        let pts = [
            RatePoint {
                t_ns: 0,
                rate_bps: 8_000_000,
                delay_ns: None,
            },
            RatePoint {
                t_ns: 1_000,
                rate_bps: 4_000_000,
                delay_ns: Some(7),
            },
            RatePoint {
                t_ns: 2_000,
                rate_bps: 2_000_000,
                delay_ns: None,
            },
        ];
        let mut t = RateTrace::new(&pts, SimDuration(5));
        assert_eq!(t.rate_at(SimTime(999)), 8_000_000);
        assert_eq!(t.delay_at(SimTime(999)), SimDuration(5));
        assert_eq!(t.rate_at(SimTime(1_000)), 4_000_000);
        assert_eq!(t.delay_at(SimTime(2_500)), SimDuration(7));
        assert_eq!(t.rate_at(SimTime(5_000)), 2_000_000);
        assert_eq!(t.rate_at(SimTime(10)), 8_000_000);
    }

    fn trace(opps: &[u64], period: u64, budget: u32) -> DeliveryTrace {
        DeliveryTrace::new(&DeliveryTraceConfig {
            opportunities_ns: opps.to_vec(),
            period_ns: period,
            bytes_per_opportunity: budget,
        })
    }

    #[test]
    fn opportunities_repeat_every_period() {
        // Mahimahi style: instants 1..=3 of a period of 3 (the last equals the period).
        let d = trace(&[1, 2, 3], 3, 1500);
        let times: Vec<u64> = (0..7).map(|k| d.time_of(k).ns()).collect();
        assert_eq!(times, vec![1, 2, 3, 4, 5, 6, 7]);
        for t in 0..8 {
            let k = d.first_at_or_after(SimTime(t));
            assert_eq!(d.time_of(k).ns(), t.max(1), "t = {t}");
        }
        let z = trace(&[0, 5], 10, 1500);
        assert_eq!(z.time_of(z.first_at_or_after(SimTime(6))), SimTime(10));
        assert_eq!(z.time_of(z.first_at_or_after(SimTime(10))), SimTime(10));
    }

    #[test]
    fn small_packets_share_an_opportunity_and_large_ones_span_several() {
        let mut d = trace(&[10], 10, 1500);
        // 40 B ACK and a 1460 B packet fill the opportunity at t = 10.
        let a = d.plan(SimTime(1), 40);
        assert_eq!((d.time_of(a.0), a.1), (SimTime(10), 40));
        d.commit(a);
        let b = d.plan(SimTime(1), 1460);
        assert_eq!((d.time_of(b.0), b.1), (SimTime(10), 1500));
        d.commit(b);
        // No room left: the next packet waits for t = 20.
        let c = d.plan(SimTime(10), 40);
        assert_eq!(d.time_of(c.0), SimTime(20));
        d.commit(c);
        // A 4000 B packet starts fresh at 30 and leaves with the opportunity at 50.
        let e = d.plan(SimTime(20), 4000);
        assert_eq!((d.time_of(e.0), e.1), (SimTime(50), 1000));
        d.commit(e);
        // After an idle gap the packet takes the first opportunity not before it.
        let f = d.plan(SimTime(71), 1500);
        assert_eq!(d.time_of(f.0), SimTime(80));
    }
}
