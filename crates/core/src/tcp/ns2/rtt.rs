//! ns-2's retransmission timer (`TcpAgent::rtt_init`, `rtt_update`, `rtt_timeout`,
//! `rtt_backoff` in `tcp.cc`), a BSD-style estimator counted in clock ticks.
//!
//! A measured RTT becomes `t_rtt` ticks (`tcpTick_` = 10 ms): without timestamps, the number
//! of tick boundaries between send and receive of the agent's clock, whose phase is
//! `boot_time_` (uniform in one tick); with timestamps, the RTT rounded to the nearest tick.
//! `t_srtt` keeps 8·SRTT and `t_rttvar` 4·RTTVAR in ticks (`T_SRTT_BITS` 3,
//! `T_RTTVAR_BITS` 2), updated with gains 1/8 and 1/4 (RFC 6298 in integers); the RTO is
//! `(t_srtt + 8·t_rttvar) >> 3` ticks = SRTT + 4·RTTVAR, floored to whole ticks.
//!
//! `rtt_timeout` (`rfc2988_` true): max(RTO, `minrto_`) × backoff, at most `maxrto_`, at
//! least two ticks. Backoff doubles per timeout while the result stays below `maxrto_`; past
//! a backoff of 8 the smoothed RTT is folded into the variance and forgotten, so the next
//! sample starts afresh.

/// `T_SRTT_BITS`: `t_srtt` is 8 × SRTT.
pub const T_SRTT_BITS: u32 = 3;
/// `T_RTTVAR_BITS`: `t_rttvar` is 4 × RTTVAR.
pub const T_RTTVAR_BITS: u32 = 2;
/// `rttvar_exp_`: RTO = SRTT + 2^2 × RTTVAR.
pub const RTTVAR_EXP: u32 = 2;
/// `rttvar_init_` (s): the variance before any sample (irrelevant once sampled).
pub const RTTVAR_INIT_S: f64 = 12.0;

/// The RTO state of one agent (all times in seconds, as ns-2 keeps them).
#[derive(Clone, Debug)]
pub struct Ns2Rtt {
    /// `tcpTick_` (s).
    pub tick: f64,
    /// `minrto_` (s).
    pub minrto: f64,
    /// `maxrto_` (s).
    pub maxrto: f64,
    /// Phase of the agent's tick clock (`boot_time_`, s).
    pub boot_time: f64,
    /// Last sample in ticks.
    pub t_rtt: i64,
    /// 8 × SRTT in ticks (0: no sample yet).
    pub t_srtt: i64,
    /// 4 × RTTVAR in ticks.
    pub t_rttvar: i64,
    /// Current RTO before backoff (s).
    pub t_rtxcur: f64,
    /// Backoff multiplier (1, 2, 4, …).
    pub t_backoff: i64,
}

impl Ns2Rtt {
    /// `rtt_init` with `srtt_init_` 0.
    pub fn new(tick: f64, minrto: f64, maxrto: f64, rtxcur_init: f64, boot_time: f64) -> Self {
        Ns2Rtt {
            tick,
            minrto,
            maxrto,
            boot_time,
            t_rtt: 0,
            t_srtt: 0,
            t_rttvar: ((RTTVAR_INIT_S / tick) as i64) << T_RTTVAR_BITS,
            t_rtxcur: rtxcur_init,
            t_backoff: 1,
        }
    }

    /// `rtt_timeout`: the timer value (s) for the current estimate and backoff.
    pub fn timeout(&self) -> f64 {
        let mut t = if self.t_rtxcur < self.minrto {
            self.minrto * self.t_backoff as f64
        } else {
            self.t_rtxcur * self.t_backoff as f64
        };
        if t > self.maxrto {
            t = self.maxrto;
        }
        if t < 2.0 * self.tick {
            t = 2.0 * self.tick;
        }
        t
    }

    /// `rtt_update`: a sample of `tao` seconds taken at `now` (s).
    pub fn update(&mut self, tao: f64, now: f64, timestamps: bool) {
        self.t_rtt = if timestamps {
            (tao / self.tick + 0.5) as i64
        } else {
            // Count the ticks of a clock started at boot_time between send and receive.
            let sendtime = now - tao + self.boot_time;
            let tickoff = sendtime % self.tick;
            ((tao + tickoff) / self.tick) as i64
        };
        if self.t_rtt < 1 {
            self.t_rtt = 1;
        }
        if self.t_srtt != 0 {
            let mut delta = self.t_rtt - (self.t_srtt >> T_SRTT_BITS);
            self.t_srtt += delta;
            if self.t_srtt <= 0 {
                self.t_srtt = 1;
            }
            if delta < 0 {
                delta = -delta;
            }
            delta -= self.t_rttvar >> T_RTTVAR_BITS;
            self.t_rttvar += delta;
            if self.t_rttvar <= 0 {
                self.t_rttvar = 1;
            }
        } else {
            self.t_srtt = self.t_rtt << T_SRTT_BITS;
            self.t_rttvar = self.t_rtt << (T_RTTVAR_BITS - 1);
        }
        let shift = RTTVAR_EXP + (T_SRTT_BITS - T_RTTVAR_BITS);
        self.t_rtxcur =
            (((self.t_rttvar << shift) + self.t_srtt) >> T_SRTT_BITS) as f64 * self.tick;
    }

    /// `rtt_backoff`: double the backoff (while below `maxrto_`), forget SRTT past 8.
    pub fn backoff(&mut self) {
        if self.t_backoff < 64 || self.timeout() < self.maxrto {
            self.t_backoff <<= 1;
        }
        if self.t_backoff > 8 {
            self.t_rttvar += self.t_srtt >> T_SRTT_BITS;
            self.t_srtt = 0;
        }
    }

    /// Smoothed RTT (s), if sampled.
    pub fn srtt(&self) -> Option<f64> {
        (self.t_srtt != 0).then_some((self.t_srtt >> T_SRTT_BITS) as f64 * self.tick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtt() -> Ns2Rtt {
        Ns2Rtt::new(0.01, 0.2, 60.0, 3.0, 0.0)
    }

    #[test]
    fn initial_timeout_is_rtxcur_init_three_seconds() {
        assert_eq!(rtt().timeout(), 3.0);
    }

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar() {
        // 100 ms with timestamps = 10 ticks: t_srtt = 80 (8·10), t_rttvar = 20 (4·5);
        // RTO = (20·8 + 80) >> 3 = 30 ticks = 300 ms = SRTT + 4·RTTVAR = 100 + 4·50.
        let mut r = rtt();
        r.update(0.100, 1.0, true);
        assert_eq!((r.t_rtt, r.t_srtt, r.t_rttvar), (10, 80, 20));
        assert!((r.timeout() - 0.30).abs() < 1e-12);
    }

    #[test]
    fn second_sample_uses_integer_gains_and_floors_to_ticks() {
        // Then 200 ms = 20 ticks: delta = 20 − 10 = 10 → t_srtt = 90 (SRTT 11.25 ticks);
        // |delta| − 20/4 = 5 → t_rttvar = 25 (RTTVAR 6.25 ticks);
        // RTO = (25·8 + 90) >> 3 = 290 >> 3 = 36 ticks = 360 ms (exact 362.5 ms, floored).
        let mut r = rtt();
        r.update(0.100, 1.0, true);
        r.update(0.200, 2.0, true);
        assert_eq!((r.t_srtt, r.t_rttvar), (90, 25));
        assert!((r.timeout() - 0.36).abs() < 1e-12);
    }

    #[test]
    fn short_rtt_is_floored_at_minrto_and_backoff_doubles_it() {
        // 20 ms = 2 ticks: RTO = (4·8 + 16) >> 3 = 6 ticks = 60 ms < minrto → 200 ms;
        // after one backoff 400 ms, after two 800 ms.
        let mut r = rtt();
        r.update(0.020, 1.0, true);
        assert!((r.timeout() - 0.2).abs() < 1e-12);
        r.backoff();
        assert!((r.timeout() - 0.4).abs() < 1e-12);
        r.backoff();
        assert!((r.timeout() - 0.8).abs() < 1e-12);
    }

    #[test]
    fn backoff_stops_at_maxrto_and_forgets_srtt_past_eight() {
        let mut r = rtt();
        r.update(0.5, 1.0, true); // 50 ticks: RTO = (50·2·8 + 400) >> 3 = 150 ticks = 1.5 s
        for _ in 0..3 {
            r.backoff(); // 2, 4, 8
        }
        assert_eq!(r.t_srtt, 400);
        r.backoff(); // 16 > 8: t_rttvar += 50, t_srtt = 0
        assert_eq!((r.t_backoff, r.t_srtt, r.t_rttvar), (16, 0, 150));
        for _ in 0..10 {
            r.backoff();
        }
        assert_eq!(r.timeout(), 60.0);
    }

    #[test]
    fn without_timestamps_the_sample_counts_tick_boundaries() {
        // Sent at 1.005 s, received at 1.031 s (26 ms), clock phase 0: ticks at 1.01, 1.02,
        // 1.03 are crossed → 3 ticks (tickoff = 1.005 mod 0.01 = 0.005; (0.026+0.005)/0.01).
        let mut r = rtt();
        r.update(0.026, 1.031, false);
        assert_eq!(r.t_rtt, 3);
    }
}
