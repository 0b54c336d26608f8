//! Deterministic random numbers: one master seed, named substreams.
//!
//! Every consumer (a link's error model, a CCA's random phase) asks for its own stream by
//! name, so adding a consumer never shifts the numbers another one sees, and a run is a pure
//! function of (scenario, seed). The generator is xoshiro256++ seeded through SplitMix64 of
//! (seed, FNV-1a(name)); no OS entropy, no global state.

/// A seeded pseudo-random stream (xoshiro256++).
#[derive(Clone, Debug)]
pub struct SimRng {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fnv1a(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

impl SimRng {
    /// The substream called `name` of master seed `seed`.
    pub fn substream(seed: u64, name: &str) -> SimRng {
        let mut st = seed ^ fnv1a(name).rotate_left(17);
        let mut s = [0u64; 4];
        for x in &mut s {
            *x = splitmix64(&mut st);
        }
        SimRng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// Uniform integer in [0, n) (n > 0), by multiply-shift.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_name_give_same_stream() {
        let mut a = SimRng::substream(7, "link/bottleneck");
        let mut b = SimRng::substream(7, "link/bottleneck");
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn different_names_or_seeds_give_different_streams() {
        let a = SimRng::substream(7, "a").next_u64();
        assert_ne!(a, SimRng::substream(7, "b").next_u64());
        assert_ne!(a, SimRng::substream(8, "a").next_u64());
    }

    #[test]
    fn bernoulli_frequency_matches_probability() {
        // 1e6 draws at p = 0.01: mean 1e4, sd = sqrt(1e6*0.01*0.99) = 99.5; allow 5 sd.
        let mut r = SimRng::substream(1, "t");
        let hits = (0..1_000_000).filter(|_| r.bernoulli(0.01)).count() as i64;
        assert!((hits - 10_000).abs() < 500, "hits = {hits}");
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = SimRng::substream(3, "x");
        assert!((0..10_000).all(|_| r.below(7) < 7));
    }
}
