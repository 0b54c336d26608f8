//! RTT estimation and the retransmission timeout, as Linux computes them
//! (`tcp_rtt_estimator`, `tcp_set_rto`; RFC 6298 with Linux's variance handling).
//!
//! Linux keeps `mdev` (an absolute-deviation average that gains 1/4 on increases and 1/32
//! on decreases) and `rttvar`, floored at `rto_min`, so RTO = srtt + rttvar ≥ srtt + 200 ms
//! and the first RTO is max(3R, R + 200 ms). Values are in ns here (Linux uses µs).
use crate::engine::time::SimDuration;

/// Linux `TCP_RTO_MIN`.
pub const RTO_MIN: SimDuration = SimDuration::from_ms(200);
/// Linux `TCP_RTO_MAX`.
pub const RTO_MAX: SimDuration = SimDuration::from_secs(120);
/// Linux `TCP_TIMEOUT_INIT` (RFC 6298: 1 s before any sample).
pub const RTO_INIT: SimDuration = SimDuration::from_secs(1);
/// Linux falls back to 3 s if the handshake was retransmitted and no RTT was measured.
pub const RTO_FALLBACK: SimDuration = SimDuration::from_secs(3);

/// Linux RTT estimator state.
#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt_ns: u64,
    mdev_ns: i64,
    mdev_max_ns: i64,
    rttvar_ns: i64,
    /// `rtt_seq`: once snd_una passes it, rttvar decays towards mdev_max (once per RTT).
    rtt_seq: u64,
    rto: SimDuration,
    rto_min: SimDuration,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator {
            srtt_ns: 0,
            mdev_ns: 0,
            mdev_max_ns: 0,
            rttvar_ns: 0,
            rtt_seq: 0,
            rto: RTO_INIT,
            rto_min: RTO_MIN,
        }
    }
}

impl RttEstimator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Smoothed RTT, or `None` before the first sample.
    pub fn srtt(&self) -> Option<SimDuration> {
        (self.srtt_ns > 0).then_some(SimDuration(self.srtt_ns))
    }

    /// The current RTO (not backed off).
    pub fn rto(&self) -> SimDuration {
        self.rto
    }

    pub fn set_rto(&mut self, rto: SimDuration) {
        self.rto = rto;
    }

    /// Feed one RTT sample `m`; `snd_una`/`snd_nxt` drive the once-per-RTT rttvar decay.
    pub fn sample(&mut self, m: SimDuration, snd_una: u64, snd_nxt: u64) {
        let m = m.ns().max(1) as i64;
        let rto_min = self.rto_min.ns() as i64;
        if self.srtt_ns != 0 {
            let mut err = m - (self.srtt_ns as i64);
            let srtt = self.srtt_ns as i64 + err / 8;
            if err < 0 {
                err = -err - self.mdev_ns / 4;
                // Smaller gain (1/32) when the RTT decreases (Eifel-like).
                if err > 0 {
                    err /= 8;
                }
            } else {
                err -= self.mdev_ns / 4;
            }
            self.mdev_ns += err;
            if self.mdev_ns > self.mdev_max_ns {
                self.mdev_max_ns = self.mdev_ns;
                if self.mdev_max_ns > self.rttvar_ns {
                    self.rttvar_ns = self.mdev_max_ns;
                }
            }
            if snd_una > self.rtt_seq {
                if self.mdev_max_ns < self.rttvar_ns {
                    self.rttvar_ns -= (self.rttvar_ns - self.mdev_max_ns) / 4;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_ns = rto_min;
            }
            self.srtt_ns = srtt.max(1) as u64;
        } else {
            self.srtt_ns = m as u64;
            self.mdev_ns = 2 * m;
            self.rttvar_ns = self.mdev_ns.max(rto_min);
            self.mdev_max_ns = self.rttvar_ns;
            self.rtt_seq = snd_nxt;
        }
        let rto = self.srtt_ns + self.rttvar_ns as u64;
        self.rto = SimDuration(rto).min(RTO_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_gives_rto_max_of_3r_and_r_plus_200ms() {
        // R = 500 ms: mdev = 1000 ms > 200 ms -> RTO = 500 + 1000 = 1500 ms = 3R.
        let mut e = RttEstimator::new();
        e.sample(SimDuration::from_ms(500), 0, 0);
        assert_eq!(e.rto(), SimDuration::from_ms(1500));
        // R = 40 ms: rttvar = max(80, 200) = 200 -> RTO = 240 ms = R + 200 ms.
        let mut e = RttEstimator::new();
        e.sample(SimDuration::from_ms(40), 0, 0);
        assert_eq!(e.rto(), SimDuration::from_ms(240));
    }

    #[test]
    fn steady_rtt_converges_to_srtt_plus_rto_min() {
        // Constant 100 ms samples: srtt stays 100 ms; mdev decays, rttvar decays to the
        // 200 ms floor once per RTT (snd_una passing rtt_seq), so RTO -> 300 ms.
        let mut e = RttEstimator::new();
        let mut una = 0;
        for i in 0..200u64 {
            una += 10;
            e.sample(SimDuration::from_ms(100), una, una + 5 + i);
        }
        assert_eq!(e.srtt(), Some(SimDuration::from_ms(100)));
        let rto = e.rto().ns() as f64 / 1e6;
        assert!((rto - 300.0).abs() < 1.0, "rto = {rto} ms");
    }

    #[test]
    fn srtt_moves_one_eighth_towards_sample() {
        let mut e = RttEstimator::new();
        e.sample(SimDuration::from_ms(100), 0, 0);
        e.sample(SimDuration::from_ms(180), 0, 0);
        // 100 + (180 - 100)/8 = 110 ms
        assert_eq!(e.srtt(), Some(SimDuration::from_ms(110)));
    }
}
