//! A token-bucket policer (single rate, two colours: RFC 2697's committed rate and burst
//! without the excess bucket; Linux `tc ... action police rate R burst B conform-exceed
//! drop`; a carrier's rate limit on a shared gateway).
//!
//! The bucket holds at most `burst_bytes` of credit and refills at `rate_bps`. A packet that
//! finds at least its size in the bucket conforms and takes that much out; any other packet
//! is dropped on arrival — it is never queued, so a policed path has no standing queue and
//! its losses come in bursts whenever a sender outruns the rate for longer than the burst
//! lasts. Over any interval of length T starting with a full bucket, the conforming bytes
//! are at most `burst_bytes + rate_bps·T/8`.
//!
//! Credit is kept exactly in integers, in bit-nanoseconds: T ns at R bit/s add R·T, and a
//! byte costs 8·10⁹, so no rounding drifts over a long run.

const NS_PER_S: u128 = 1_000_000_000;

/// Credit (bit·ns) one byte costs.
const BYTE_CREDIT: u128 = 8 * NS_PER_S;

/// The bucket of one link direction.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate_bps: u64,
    /// Capacity, in bit·ns.
    capacity: u128,
    /// Current credit, in bit·ns (full at the start).
    credit: u128,
    /// When `credit` was last brought up to date (ns).
    updated_ns: u64,
}

impl TokenBucket {
    /// A full bucket of `burst_bytes` refilled at `rate_bps`.
    pub fn new(rate_bps: u64, burst_bytes: u64) -> TokenBucket {
        let capacity = burst_bytes as u128 * BYTE_CREDIT;
        TokenBucket {
            rate_bps,
            capacity,
            credit: capacity,
            updated_ns: 0,
        }
    }

    /// A packet of `wire_bytes` arrives at `now_ns` (never earlier than the last one): true
    /// if it conforms (its bytes are taken from the bucket), false if it is to be dropped.
    pub fn conforms(&mut self, now_ns: u64, wire_bytes: u32) -> bool {
        let elapsed = now_ns.saturating_sub(self.updated_ns) as u128;
        self.updated_ns = self.updated_ns.max(now_ns);
        self.credit = (self.credit + elapsed * self.rate_bps as u128).min(self.capacity);
        let cost = wire_bytes as u128 * BYTE_CREDIT;
        if self.credit >= cost {
            self.credit -= cost;
            true
        } else {
            false
        }
    }

    /// Whole bytes of credit in the bucket as last updated.
    pub fn credit_bytes(&self) -> u64 {
        (self.credit / BYTE_CREDIT) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_full_bucket_passes_its_burst_then_drops() {
        // 1 Mbit/s, burst 4500 B: three 1500 B packets at t = 0 conform, the fourth does not.
        let mut b = TokenBucket::new(1_000_000, 4_500);
        let passed: Vec<bool> = (0..4).map(|_| b.conforms(0, 1500)).collect();
        assert_eq!(passed, [true, true, true, false]);
        assert_eq!(b.credit_bytes(), 0);
        // 1500 B of credit take 1500·8/1e6 s = 12 ms to refill: at 11.999 ms the packet is
        // dropped, at 12 ms it passes.
        assert!(!b.conforms(12 * MS - 1_000, 1500));
        assert!(b.conforms(12 * MS, 1500));
    }

    #[test]
    fn admitted_bytes_are_the_burst_plus_rate_times_time() {
        // Offered far above the rate: a 100-byte packet every 100 us (8 Mbit/s) for 10 s
        // into a 2 Mbit/s, 10 000 B bucket. By the last offer, at T = 9.9999 s, the bucket has
        // granted 10 000 B + 2e6·9.9999/8 B = 2 509 975 B; every offer takes 100 B whenever
        // 100 B are there, so 25 099 packets (2 509 900 B) pass and < 100 B are left.
        let mut b = TokenBucket::new(2_000_000, 10_000);
        let mut admitted = 0u64;
        for i in 0..100_000u64 {
            if b.conforms(i * 100_000, 100) {
                admitted += 100;
            }
        }
        assert_eq!(admitted, 2_509_900);
        assert_eq!(b.credit_bytes(), 75);
    }

    #[test]
    fn credit_never_exceeds_the_burst_after_idle() {
        let mut b = TokenBucket::new(1_000_000, 3_000);
        assert!(b.conforms(0, 3_000));
        // An hour idle refills only to 3000 B: two 1500 B pass, the third is dropped.
        let t = 3_600_000 * MS;
        assert!(b.conforms(t, 1500));
        assert!(b.conforms(t, 1500));
        assert!(!b.conforms(t, 1500));
    }

    #[test]
    fn a_packet_larger_than_the_burst_never_conforms() {
        let mut b = TokenBucket::new(1_000_000_000, 1_000);
        assert!(!b.conforms(0, 1500));
        assert!(!b.conforms(1_000 * MS, 1500));
        assert!(b.conforms(1_000 * MS, 1000));
    }
}
