//! TCP-LP, Low Priority (Kuzmanovic & Knightly 2003), as in Linux `tcp_lp.c`.
//!
//! TCP-LP uses only the capacity other flows leave unused. It watches the one-way delay
//! (OWD) of its data and treats a rise of the smoothed OWD above 15 % of the observed range
//! as *early congestion*, long before a loss:
//! - OWD samples give owd_min, owd_max (through a one-step "reserve": a single spike above
//!   the current max only becomes the max once a second, larger sample confirms it) and
//!   sowd = EWMA 7/8 (kept ×8).
//! - Per ACK: inference time = 3·(now − TSecr) (≈ 3 RTTs). If sowd ≥ owd_min +
//!   15 %·(owd_max − owd_min): reset owd_min = sowd, owd_max = 2·sowd, then cwnd = 1 if the
//!   previous early-congestion cut was less than the inference time ago, else cwnd/2
//!   (ssthresh unchanged); remember the time of this cut.
//! - Otherwise Reno growth — but not during the inference time after a cut.
//! - Losses, timeouts and undo are Reno's.
//!
//! Consequence of the kernel's choices (kept): an early cut never lowers ssthresh, so a flow
//! that has not lost a packet slow-starts again after every inference time, and the
//! range reset makes the next threshold only 15 % of sowd above it. Alone on a path, the
//! queue of its own slow-start rounds (and the delayed-ACK wait, which the receiver's TSval
//! includes, at cwnd 1) triggers further cuts: TCP-LP then uses only a small part of an
//! idle link (see `tests/delay_based.rs`).
//!
//! OWD in this simulator: Linux computes OWD = TSval·(TS_HZ/remote_hz) − TSecr, estimating the
//! peer's timestamp clock rate `remote_hz` from successive TSval/TSecr pairs (EWMA 1/64),
//! because the two hosts' clocks differ. Here both endpoints use the one simulation clock:
//! `Window::rcv_tsval` is the receiver's time when it sent the ACK and `rcv_tsecr` the
//! echoed TSval (send time) of the data, so the estimator is the identity and OWD =
//! rcv_tsval − rcv_tsecr directly — the true forward delay, not a relative one. (Linux
//! additionally needs one earlier ACK as a reference before its first sample; here the first
//! ACK with timestamps already gives one.) Timestamps are counted in Linux's TCP timestamp
//! unit, milliseconds (`TCP_TS_HZ` = 1000), so state is `u32` ms with the kernel's integer
//! arithmetic; an OWD of 0 ms (sub-millisecond paths) is invalid, as in Linux. Without
//! timestamps every sample is invalid and TCP-LP behaves as Reno.
use super::reno::Reno;
use super::{AckSample, CcInfo, CongestionControl, FlowInit, LossKind, Params, Window};
use crate::scenario::ConfigError;

/// Nanoseconds per tick of the TCP timestamp clock (Linux `TCP_TS_HZ` = 1000).
const NS_PER_TS_TICK: u64 = 1_000_000;

pub const INFO: CcInfo = CcInfo {
    name: "lp",
    summary:
        "TCP-LP: low priority; halves (or drops to 1) when one-way delay rises 15 % into its range",
    feedback: "delay",
    reference: "Kuzmanovic, Knightly, INFOCOM 2003; Linux net/ipv4/tcp_lp.c",
    params: &[],
    sack: None,
    ecn: false,
};

/// Linux `struct lp` (remote-clock fields dropped: see the module doc).
#[derive(Debug, Clone)]
pub struct Lp {
    /// `LP_VALID_OWD`: the last sample was usable.
    valid_owd: bool,
    /// `LP_WITHIN_THR`: sowd below the early-congestion threshold.
    within_thr: bool,
    /// `LP_WITHIN_INF`: within the inference time of the last cut (no growth).
    within_inf: bool,
    /// Smoothed OWD ×8 (ms).
    sowd: u32,
    owd_min: u32,
    owd_max: u32,
    owd_max_rsv: u32,
    /// Time of the last early-congestion cut (ms; 0 = none).
    last_drop: u32,
    /// Inference time (ms).
    inference: u32,
    reno: Reno,
}

impl Lp {
    pub fn new(p: &Params<'_>, init: &FlowInit) -> Result<Self, ConfigError> {
        // Linux `tcp_lp_init`.
        Ok(Lp {
            valid_owd: false,
            within_thr: false,
            within_inf: false,
            sowd: 0,
            owd_min: 0xffff_ffff,
            owd_max: 0,
            owd_max_rsv: 0,
            last_drop: 0,
            inference: 0,
            reno: Reno::new(p, init)?,
        })
    }

    /// (owd_min, owd_max, sowd) in ms, for tests and traces.
    pub fn owd(&self) -> (u32, u32, u32) {
        (self.owd_min, self.owd_max, self.sowd >> 3)
    }

    /// Linux `tcp_lp_owd_calculator` with the identity clock-rate estimate.
    fn owd_ms(&mut self, w: &Window) -> i64 {
        let mut owd = 0i64;
        if w.rcv_tsval != 0 && w.rcv_tsecr != 0 {
            let tsval = (w.rcv_tsval / NS_PER_TS_TICK) as u32 as i64;
            let tsecr = (w.rcv_tsecr / NS_PER_TS_TICK) as u32 as i64;
            owd = (tsval - tsecr).abs();
        }
        self.valid_owd = owd > 0;
        owd
    }

    /// Linux `tcp_lp_rtt_sample`: min/max/smoothed OWD.
    fn rtt_sample(&mut self, w: &Window) {
        let mut mowd = self.owd_ms(w);
        if !self.valid_owd {
            return;
        }
        if mowd < self.owd_min as i64 {
            self.owd_min = mowd as u32;
        }
        // Forget the max of the max: a new maximum is only believed once a second sample
        // exceeds the previous one (the "reserve").
        if mowd > self.owd_max as i64 {
            if mowd > self.owd_max_rsv as i64 {
                self.owd_max = if self.owd_max_rsv == 0 {
                    mowd as u32
                } else {
                    self.owd_max_rsv
                };
                self.owd_max_rsv = mowd as u32;
            } else {
                self.owd_max = mowd as u32;
            }
        }
        if self.sowd != 0 {
            mowd -= (self.sowd >> 3) as i64;
            self.sowd = (self.sowd as i64 + mowd) as u32;
        } else {
            self.sowd = (mowd << 3) as u32;
        }
    }
}

impl CongestionControl for Lp {
    /// Linux `tcp_lp_pkts_acked`: OWD sample and the early-congestion reaction.
    fn on_pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
        let now = (w.now.ns() / NS_PER_TS_TICK) as u32;
        if s.rtt.is_some_and(|r| r.us() > 0) {
            self.rtt_sample(w);
        }
        let tsecr = (w.rcv_tsecr / NS_PER_TS_TICK) as u32;
        let delta = now.wrapping_sub(tsecr);
        if (delta as i32) > 0 {
            self.inference = delta.wrapping_mul(3);
        }
        self.within_inf = self.last_drop != 0 && now.wrapping_sub(self.last_drop) < self.inference;
        let thresh = self
            .owd_min
            .wrapping_add(15u32.wrapping_mul(self.owd_max.wrapping_sub(self.owd_min)) / 100);
        self.within_thr = (self.sowd >> 3) < thresh;
        if self.within_thr {
            return;
        }
        // Early congestion. Reset the range around the current delay so that it usually
        // reads "within threshold" during the inference time.
        self.owd_min = self.sowd >> 3;
        self.owd_max = self.sowd >> 2;
        self.owd_max_rsv = self.sowd >> 2;
        w.cwnd = if self.within_inf {
            // A second indication within ~3 RTTs: back off completely.
            1
        } else {
            (w.cwnd >> 1).max(1)
        };
        self.last_drop = now;
    }

    fn on_congestion_event(&mut self, w: &mut Window, kind: LossKind) -> u32 {
        self.reno.on_congestion_event(w, kind)
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        if !self.within_inf {
            self.reno.cong_avoid(w, acked);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::{SimDuration, SimTime};
    use std::collections::BTreeMap;

    fn lp() -> (Lp, Window) {
        let m = BTreeMap::new();
        let p = Params::new("lp", &m, &[]).unwrap();
        let c = Lp::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (c, w)
    }

    /// An ACK at `now_ms` for data sent at `sent_ms` that took `owd_ms` to arrive, then
    /// `cong_avoid` for one packet.
    fn ack(c: &mut Lp, w: &mut Window, now_ms: u64, sent_ms: u64, owd_ms: u64) {
        w.now = SimTime(now_ms * 1_000_000);
        w.rcv_tsecr = sent_ms * 1_000_000;
        w.rcv_tsval = (sent_ms + owd_ms) * 1_000_000;
        c.on_pkts_acked(
            w,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(SimDuration::from_ms(now_ms - sent_ms)),
                in_flight: 0,
            },
        );
        c.cong_avoid(w, 1);
    }

    /// Only the OWD bookkeeping of an ACK (no reaction).
    fn sample_only(c: &mut Lp, w: &mut Window, sent_ms: u64, owd_ms: u64) {
        w.rcv_tsecr = sent_ms * 1_000_000;
        w.rcv_tsval = (sent_ms + owd_ms) * 1_000_000;
        c.rtt_sample(w);
    }

    #[test]
    fn open_first_sample_counts_as_early_congestion() {
        // First sample, OWD 20 ms: min = max = 20, sowd = 20; the threshold 20 + 15 %·0 = 20
        // is not above 20, so the kernel cuts at once: cwnd 10 -> 5, range reset to
        // [sowd, 2·sowd] = [20, 40]. The inference flag was computed before the cut (no
        // earlier cut), so cong_avoid on the same ACK still grows: slow start 5 -> 6.
        let (mut c, mut w) = lp();
        ack(&mut c, &mut w, 100, 50, 20);
        assert_eq!(w.cwnd, 6);
        assert_eq!(c.owd(), (20, 40, 20));
    }

    #[test]
    fn open_no_growth_within_inference_time_then_reno() {
        let (mut c, mut w) = lp();
        ack(&mut c, &mut w, 100, 50, 20); // cut at t = 100 ms: cwnd 5, then 6
                                          // Inference = 3·(now - TSecr) = 3·50 = 150 ms. At t = 101: within -> no growth,
                                          // and sowd 20 < threshold 20 + 15·20/100 = 23: no cut.
        ack(&mut c, &mut w, 101, 51, 20);
        assert_eq!(w.cwnd, 6);
        // At t = 251: 251 - 100 = 151 >= 150: Reno slow start again, 6 -> 7.
        ack(&mut c, &mut w, 251, 201, 20);
        assert_eq!(w.cwnd, 7);
    }

    #[test]
    fn open_rising_owd_halves_then_drops_to_one_within_inference() {
        let (mut c, mut w) = lp();
        ack(&mut c, &mut w, 100, 50, 20); // cut at 100: cwnd 6, range [20, 40]
        ack(&mut c, &mut w, 251, 201, 20); // outside inference: cwnd 7
                                           // OWD 40: sowd×8 = 160 + (40 - 20) = 180 -> 22 < 23: fine, Reno growth -> 8.
        ack(&mut c, &mut w, 252, 202, 40);
        assert_eq!(w.cwnd, 8);
        // OWD 40: 180 + (40 - 22) = 198 -> 24 >= 23: early congestion 153 ms after the last
        // cut (>= 150): halve, 8 -> 4 (then +1 by the same ACK's slow start: 5).
        // Range [24, 198/4 = 49].
        ack(&mut c, &mut w, 253, 203, 40);
        assert_eq!(w.cwnd, 5);
        assert_eq!(c.owd(), (24, 49, 24));
        // OWD 40: 198 + 16 = 214 -> 26 < 24 + 15·25/100 = 27: fine, but within inference:
        // no growth.
        ack(&mut c, &mut w, 254, 204, 40);
        assert_eq!(w.cwnd, 5);
        // OWD 40: 214 + 14 = 228 -> 28 >= 27, 2 ms after the cut: cwnd = 1.
        ack(&mut c, &mut w, 255, 205, 40);
        assert_eq!(w.cwnd, 1);
        assert_eq!(c.owd(), (28, 57, 28));
    }

    #[test]
    fn open_single_owd_spike_does_not_raise_the_max() {
        let (mut c, mut w) = lp();
        sample_only(&mut c, &mut w, 50, 20); // min = max = reserve = 20
        assert_eq!(c.owd(), (20, 20, 20));
        // Spike 100 > max and > reserve: max takes the old reserve (20), reserve = 100.
        sample_only(&mut c, &mut w, 51, 100);
        assert_eq!(c.owd().1, 20);
        // 50 > max but not above the reserve: max = 50.
        sample_only(&mut c, &mut w, 52, 50);
        assert_eq!(c.owd().1, 50);
        // 120 > reserve 100: max = 100 (the confirmed spike), reserve = 120.
        sample_only(&mut c, &mut w, 53, 120);
        assert_eq!(c.owd().1, 100);
    }

    #[test]
    fn open_without_timestamps_is_reno() {
        // No TS: no valid OWD; owd_max - owd_min wraps to 1 and the threshold is
        // 0xffffffff + 0, so sowd 0 is always "within": slow start as Reno.
        let (mut c, mut w) = lp();
        for t in 0..5u64 {
            w.now = SimTime((100 + t) * 1_000_000);
            c.on_pkts_acked(
                &mut w,
                &AckSample {
                    pkts_acked: 1,
                    rtt: Some(SimDuration::from_ms(50)),
                    in_flight: 0,
                },
            );
            c.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 15);
    }

    #[test]
    fn loss_halves_like_reno() {
        let (mut c, mut w) = lp();
        w.cwnd = 41;
        assert_eq!(c.on_congestion_event(&mut w, LossKind::Recovery), 20);
    }
}
