//! Bounded-memory statistics: a log-bucketed histogram for RTT percentiles and a
//! time-weighted accumulator for queue occupancy.
//!
//! Memory never grows with the number of packets: the histogram has a fixed bucket layout
//! (128 linear sub-buckets per power of two, so any reported percentile is within 0.4 % of
//! the true sample), and the accumulator keeps two numbers.

/// Histogram of `u64` values (ns) with < 0.4 % relative error.
///
/// Only the buckets from the lowest to the highest one used are stored (`counts[i]` is
/// bucket `first + i`): RTTs of one flow span a few hundred buckets around 2,500, and a
/// histogram per flow of thousands of flows must not hold the empty ones below them.
#[derive(Debug, Clone)]
pub struct LogHistogram {
    counts: Vec<u64>,
    /// Index in `counts` of the last value recorded (`prefetch_recent`).
    recent: usize,
    first: usize,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

#[inline]
fn bucket_of(v: u64) -> usize {
    if v < SUB {
        v as usize
    } else {
        let e = 63 - v.leading_zeros(); // >= SUB_BITS
        let shift = e - SUB_BITS;
        let sub = (v >> shift) & (SUB - 1);
        ((e - SUB_BITS + 1) as u64 * SUB + sub) as usize
    }
}

/// Lowest value and width of bucket `i`.
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        (i, 1)
    } else {
        let e = i / SUB - 1 + SUB_BITS as u64;
        let sub = i % SUB;
        let shift = e - SUB_BITS as u64;
        (((SUB + sub) << shift), 1u64 << shift)
    }
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram {
            counts: Vec::new(),
            recent: 0,
            first: 0,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl LogHistogram {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        let b = bucket_of(v);
        if self.counts.is_empty() {
            self.first = b;
        } else if b < self.first {
            // A new lowest bucket (rare: at most once per bucket below the first sample).
            self.counts
                .splice(0..0, std::iter::repeat_n(0, self.first - b));
            self.first = b;
        }
        let i = b - self.first;
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.recent = i;
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Ask for the count the last value went to (`engine::cache`): a flow's next RTT
    /// sample most often falls in the same bucket or the one beside it, and with thousands
    /// of flows the counts are cold when the next ACK comes.
    #[inline]
    pub fn prefetch_recent(&self) {
        if let Some(c) = self.counts.get(self.recent) {
            crate::engine::cache::prefetch(c);
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of every recorded value (a cumulative counter: differences give interval means).
    pub fn sum(&self) -> u128 {
        self.sum
    }

    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// The `q`-quantile (0 < q ≤ 1): the bucket midpoint of the ⌈q·n⌉-th smallest sample,
    /// clamped to the exact min and max.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, w) = bucket_range(self.first + i);
                return Some((lo + w / 2).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

/// Integral of a piecewise-constant quantity over time (for time-weighted means).
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeWeighted {
    pub area: u128,
    pub last_t_ns: u64,
    pub value: u64,
    pub max: u64,
}

impl TimeWeighted {
    /// Advance to `t_ns` keeping the current value, then set it to `value`.
    #[inline]
    pub fn set(&mut self, t_ns: u64, value: u64) {
        self.advance(t_ns);
        self.value = value;
        self.max = self.max.max(value);
    }

    #[inline]
    pub fn advance(&mut self, t_ns: u64) {
        if t_ns > self.last_t_ns {
            self.area += self.value as u128 * (t_ns - self.last_t_ns) as u128;
            self.last_t_ns = t_ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_contiguously() {
        for v in [
            0u64,
            1,
            127,
            128,
            129,
            255,
            256,
            1000,
            1 << 20,
            123_456_789,
            u64::MAX / 3,
        ] {
            let (lo, w) = bucket_range(bucket_of(v));
            assert!(lo <= v && v < lo + w, "v={v} lo={lo} w={w}");
        }
    }

    #[test]
    fn quantiles_of_uniform_1_to_1000_are_within_half_percent() {
        let mut h = LogHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1_000_000); // 1..1000 ms
        }
        // Exact: p50 = 500 ms, p95 = 950 ms (rank-based).
        let p50 = h.quantile(0.5).unwrap() as f64;
        let p95 = h.quantile(0.95).unwrap() as f64;
        assert!((p50 / 500e6 - 1.0).abs() < 0.005, "{p50}");
        assert!((p95 / 950e6 - 1.0).abs() < 0.005, "{p95}");
        assert_eq!(h.min(), Some(1_000_000));
        assert_eq!(h.max(), Some(1_000_000_000));
        assert_eq!(h.mean(), Some(500.5e6));
    }

    #[test]
    fn samples_arriving_in_falling_order_give_the_same_quantiles() {
        let mut h = LogHistogram::new();
        for v in (1..=1000u64).rev() {
            h.record(v * 1_000_000);
        }
        let p50 = h.quantile(0.5).unwrap() as f64;
        let p95 = h.quantile(0.95).unwrap() as f64;
        assert!((p50 / 500e6 - 1.0).abs() < 0.005, "{p50}");
        assert!((p95 / 950e6 - 1.0).abs() < 0.005, "{p95}");
        assert_eq!(h.min(), Some(1_000_000));
    }

    #[test]
    fn rtts_within_one_doubling_keep_one_doubling_of_buckets() {
        // 40 ms to 80 ms is one power of two: 128 sub-buckets, and the bucket of 80 ms
        // itself opens the next power.
        let mut h = LogHistogram::new();
        for v in (40_000_000..=80_000_000u64).step_by(100_000) {
            h.record(v);
        }
        assert!(h.counts.len() <= 129, "{}", h.counts.len());
        assert_eq!(h.max(), Some(80_000_000));
    }

    #[test]
    fn default_histogram_has_no_minimum_until_a_sample() {
        let mut h = LogHistogram::default();
        assert_eq!(h.min(), None);
        h.record(5);
        assert_eq!(h.min(), Some(5));
    }

    #[test]
    fn time_weighted_mean_of_square_wave() {
        // 0 for 10 ns, 4 for 30 ns: area = 120 over 40 ns -> mean 3.
        let mut tw = TimeWeighted::default();
        tw.set(10, 4);
        tw.advance(40);
        assert_eq!(tw.area, 120);
        assert_eq!(tw.max, 4);
    }
}
