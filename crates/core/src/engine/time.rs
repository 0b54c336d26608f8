//! Simulated time: integer nanoseconds, never floating point.
//!
//! `SimTime` is an instant (ns since the start of the run), `SimDuration` a span. Keeping
//! them apart makes "instant + instant" a type error, and subtraction of instants panics
//! if time would run backwards — that can only be an engine bug, never user input.
use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

/// An instant of simulated time, in nanoseconds since the start of the run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    #[inline]
    pub fn ns(self) -> u64 {
        self.0
    }

    /// Span since `earlier`; panics if `earlier` is later (time never goes back).
    #[inline]
    pub fn since(self, earlier: SimTime) -> SimDuration {
        SimDuration(
            self.0
                .checked_sub(earlier.0)
                .expect("simulated time went backwards"),
        )
    }

    /// Span since `earlier`, or zero if `earlier` is in the future.
    #[inline]
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub const MAX: SimDuration = SimDuration(u64::MAX);

    #[inline]
    pub const fn from_ns(ns: u64) -> Self {
        SimDuration(ns)
    }
    #[inline]
    pub const fn from_us(us: u64) -> Self {
        SimDuration(us * 1_000)
    }
    #[inline]
    pub const fn from_ms(ms: u64) -> Self {
        SimDuration(ms * 1_000_000)
    }
    #[inline]
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * 1_000_000_000)
    }
    #[inline]
    pub fn ns(self) -> u64 {
        self.0
    }
    #[inline]
    pub fn us(self) -> u64 {
        self.0 / 1_000
    }
    /// Seconds as `f64`, for reporting only (never used to drive the simulation).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    #[inline]
    pub fn min(self, other: SimDuration) -> SimDuration {
        if self.0 <= other.0 {
            self
        } else {
            other
        }
    }
    #[inline]
    pub fn max(self, other: SimDuration) -> SimDuration {
        if self.0 >= other.0 {
            self
        } else {
            other
        }
    }
    #[inline]
    pub fn saturating_sub(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(other.0))
    }
}

/// `serialization_time(wire_bytes, rate_bps)` for a link of a fixed rate, remembered for the
/// last size asked (`last_bytes`, `last`: the link's own fields): a link carries packets of
/// one or two sizes (full segments one way, ACKs the other), and the division is the
/// costliest step of a hop.
#[inline]
pub fn remembered_serialization(
    last_bytes: &mut u32,
    last: &mut SimDuration,
    wire_bytes: u32,
    rate_bps: u64,
) -> SimDuration {
    if wire_bytes != *last_bytes {
        *last_bytes = wire_bytes;
        *last = serialization_time(wire_bytes as u64, rate_bps);
    }
    debug_assert_eq!(*last, serialization_time(wire_bytes as u64, rate_bps));
    *last
}

/// Time to serialize `bytes` at `rate_bps`, rounded up to the next nanosecond.
#[inline]
pub fn serialization_time(bytes: u64, rate_bps: u64) -> SimDuration {
    // Any packet (below 2.3 GB) fits the product in 64 bits, where division is a single
    // instruction instead of a call to the 128-bit routine; the result is the same.
    if let Some(bits_ns) = bytes.checked_mul(8_000_000_000) {
        return SimDuration(bits_ns.div_ceil(rate_bps));
    }
    let bits_ns = (bytes as u128) * 8 * 1_000_000_000;
    SimDuration(bits_ns.div_ceil(rate_bps as u128) as u64)
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.checked_add(d.0).expect("simulated time overflow"))
    }
}
impl AddAssign<SimDuration> for SimTime {
    #[inline]
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}
impl Sub<SimDuration> for SimTime {
    type Output = SimTime;
    #[inline]
    fn sub(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_sub(d.0))
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn add(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(o.0))
    }
}
impl AddAssign for SimDuration {
    #[inline]
    fn add_assign(&mut self, o: SimDuration) {
        self.0 = self.0.saturating_add(o.0);
    }
}
impl Sub for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn sub(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.checked_sub(o.0).expect("negative duration"))
    }
}
impl SubAssign for SimDuration {
    #[inline]
    fn sub_assign(&mut self, o: SimDuration) {
        *self = *self - o;
    }
}

impl Mul<u64> for SimDuration {
    type Output = SimDuration;
    /// Saturating multiplication (RTO backoff can be doubled many times).
    #[inline]
    fn mul(self, k: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(k))
    }
}
impl Div<u64> for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn div(self, k: u64) -> SimDuration {
        SimDuration(self.0 / k)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.0 as f64 / 1e9)
    }
}
impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}ms", self.0 as f64 / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_of_full_packet_at_4mbps_is_3ms() {
        // 1500 B * 8 = 12000 bit; 12000 / 4e6 = 3 ms exactly.
        assert_eq!(serialization_time(1500, 4_000_000), SimDuration::from_ms(3));
    }

    #[test]
    fn serialization_rounds_up_to_next_ns() {
        // 1 B at 3 bit/s = 8/3 s = 2.666...e9 ns -> 2_666_666_667 ns.
        assert_eq!(serialization_time(1, 3).ns(), 2_666_666_667);
        // beyond 64 bits for the product (2^61 bytes at 1 Tbit/s): the 128-bit path,
        // 2^61 x 8 x 1e9 / 1e12 = 18,446,744,073,709,551.616 ns, rounded up
        assert_eq!(
            serialization_time(1 << 61, 1_000_000_000_000).ns(),
            18_446_744_073_709_552
        );
    }

    #[test]
    #[should_panic(expected = "backwards")]
    fn since_panics_when_time_goes_back() {
        let _ = SimTime(5).since(SimTime(6));
    }
}
