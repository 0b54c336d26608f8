//! LEDBAT, Low Extra Delay Background Transport (RFC 6817), as a TCP sender-side
//! congestion controller. Linux has no mainline module, so this follows the RFC's
//! pseudocode (§2.4.2) with floating point, on top of the core's Linux loss recovery.
//!
//! **Delay measurement.** LEDBAT reacts to the one-way delay (OWD) of the data path. It is
//! measured from TCP timestamps: the receiver's TSval on an ACK is its clock when it sent
//! the ACK, and TSecr echoes the TSval of the data segment being acknowledged (TS.Recent,
//! RFC 7323). Both endpoints of the simulator share one clock (ns), so
//! OWD = `rcv_tsval − rcv_tsecr` exactly, with no clock-offset or skew estimation (a real
//! implementation only needs differences, as the offset cancels in `current − base`). The
//! sample includes the receiver's delayed-ACK wait; the minimum filter removes most of it.
//! A sample is taken on every ACK that advances `snd_una` (as Linux only trusts TSecr on
//! such ACKs: a dupACK echoes an old TS.Recent). Without timestamps, the RTT sample is
//! used instead (the reverse path is then assumed uncongested).
//!
//! **Delay estimates** (RFC 6817 §2.4.2, §3.1):
//! - base delay = minimum over `base_history` (10) one-minute buckets (the newest bucket
//!   takes the minimum of the samples of the current minute of simulated time; a new
//!   minute drops the oldest bucket);
//! - current delay = FILTER over the last `current_filter` (4) samples, FILTER = MIN (the
//!   RFC's example filter);
//! - queuing_delay = current − base; off_target = (TARGET − queuing_delay)/TARGET.
//!
//! **Window** (packets here, the RFC's bytes divided by MSS; a fractional window is kept
//! and its integer part is the Linux `snd_cwnd` the core sends with):
//! - per ACK in congestion avoidance: cwnd += GAIN·off_target·acked/cwnd, then
//!   cwnd ≤ flightsize + ALLOWED_INCREASE (flightsize = packets outstanding before the ACK,
//!   `snd_nxt − snd_una`), cwnd ≥ MIN_CWND. off_target < 0 shrinks the window, so LEDBAT
//!   yields to loss-based flows that keep the queue above TARGET;
//! - loss (entering Recovery, CWR or an RTO): ssthresh = max(cwnd/2, MIN_CWND). The core's
//!   Linux state machine applies it at most once per window of data (once per RTT, as the
//!   RFC requires), PRR brings cwnd down to it, and an RTO restarts from cwnd = 1 as TCP.
//!
//! **Slow start** (our choice; the RFC only requires that LEDBAT never ramps up faster
//! than TCP): with `slow_start` = 1 (default) the window grows as TCP slow start (+1 per
//! packet ACKed, while cwnd < ssthresh and cwnd-limited) until the filtered queuing delay
//! reaches TARGET/2; ssthresh is then set to cwnd and the LEDBAT rule takes over. Ending at
//! half the target leaves room for the up-to-one-RTT lag of the delay signal, during which
//! the window still doubles (LEDBAT++ uses the same idea with 3/4·TARGET). With
//! `slow_start` = 0 the LEDBAT rule applies from the initial window (the RFC's pseudocode
//! as written), which grows by at most GAIN packets per RTT.
use super::Window;
use super::{AckSample, CcInfo, CongestionControl, FlowInit, LossKind, ParamSpec, Params};
use crate::scenario::ConfigError;
use std::collections::VecDeque;

/// Length of a base-delay bucket (RFC 6817 §2.4.2: "each minimum is measured over a period
/// of a minute").
pub const BASE_BUCKET_NS: u64 = 60_000_000_000;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "target_ns",
        default: 100_000_000.0,
        unit: "ns",
        help: "TARGET queuing delay (RFC 6817: at most 100 ms)",
    },
    ParamSpec {
        name: "gain",
        default: 1.0,
        unit: "",
        help: "GAIN: packets per RTT added at zero queuing delay (RFC 6817: at most 1)",
    },
    ParamSpec {
        name: "allowed_increase",
        default: 1.0,
        unit: "pkts",
        help: "ALLOWED_INCREASE: cwnd may exceed the flight size by this much",
    },
    ParamSpec {
        name: "min_cwnd",
        default: 2.0,
        unit: "pkts",
        help: "MIN_CWND: smallest window",
    },
    ParamSpec {
        name: "base_history",
        default: 10.0,
        unit: "minutes",
        help: "BASE_HISTORY: one-minute minima kept for the base delay",
    },
    ParamSpec {
        name: "current_filter",
        default: 4.0,
        unit: "samples",
        help: "CURRENT_FILTER: delay samples the current-delay minimum is taken over",
    },
    ParamSpec {
        name: "slow_start",
        default: 1.0,
        unit: "bool",
        help: "TCP slow start until the queuing delay reaches TARGET/2 (0: none)",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "ledbat",
    summary: "LEDBAT: steer the one-way queuing delay to TARGET (100 ms), yield to TCP",
    feedback: "delay",
    reference: "RFC 6817 (Shalunov et al. 2012)",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// RFC 6817 LEDBAT sender state.
#[derive(Debug, Clone)]
pub struct Ledbat {
    // parameters
    target_ns: f64,
    gain: f64,
    allowed_increase: f64,
    min_cwnd: u32,
    current_filter: usize,
    slow_start: bool,
    // state
    /// Fractional congestion window (packets).
    cwnd: f64,
    /// The integer window last written to `Window.cwnd`; any other value there means the
    /// core changed it (recovery, RTO, undo, idle restart) and `cwnd` is re-synchronised.
    cwnd_set: u32,
    /// One-minute minima of the OWD (ns), oldest first; u64::MAX = no sample yet.
    base_delays: VecDeque<u64>,
    /// Minute index (simulated time) of the newest base bucket.
    last_rollover: Option<u64>,
    /// The last `current_filter` OWD samples (ns).
    current_delays: VecDeque<u64>,
    /// Packets outstanding before the ACK being processed (RFC `flightsize`).
    flightsize: u32,
}

impl Ledbat {
    pub fn new(p: &Params<'_>, init: &FlowInit) -> Result<Self, ConfigError> {
        let target_ns = p.int("target_ns", 1_000, 100_000_000)? as f64;
        let gain = p.real("gain", 1e-6, 1.0)?;
        let allowed_increase = p.int("allowed_increase", 1, 1_000)? as f64;
        let min_cwnd = p.int("min_cwnd", 1, 1_000)? as u32;
        let base_history = p.int("base_history", 2, 1_000)? as usize;
        let current_filter = p.int("current_filter", 1, 1_000)? as usize;
        let slow_start = p.flag("slow_start")?;
        Ok(Ledbat {
            target_ns,
            gain,
            allowed_increase,
            min_cwnd,
            current_filter,
            slow_start,
            cwnd: init.initial_window as f64,
            cwnd_set: init.initial_window,
            base_delays: std::iter::repeat_n(u64::MAX, base_history).collect(),
            last_rollover: None,
            current_delays: VecDeque::with_capacity(current_filter),
            flightsize: 0,
        })
    }

    /// RFC 6817 `update_base_delay`: a new minute (of simulated time) opens a new bucket and
    /// drops the oldest; otherwise the newest bucket keeps the minimum.
    fn update_base_delay(&mut self, now_ns: u64, delay: u64) {
        let minute = now_ns / BASE_BUCKET_NS;
        if self.last_rollover != Some(minute) {
            self.last_rollover = Some(minute);
            self.base_delays.pop_front();
            self.base_delays.push_back(delay);
        } else if let Some(tail) = self.base_delays.back_mut() {
            *tail = (*tail).min(delay);
        }
    }

    /// RFC 6817 `update_current_delay`: keep the last CURRENT_FILTER samples.
    fn update_current_delay(&mut self, delay: u64) {
        if self.current_delays.len() == self.current_filter {
            self.current_delays.pop_front();
        }
        self.current_delays.push_back(delay);
    }

    /// One OWD sample (ns) taken at `now_ns`.
    fn on_delay_sample(&mut self, now_ns: u64, delay: u64) {
        self.update_base_delay(now_ns, delay);
        self.update_current_delay(delay);
    }

    /// Base (minimum) one-way delay in ns, if any sample was taken.
    pub fn base_delay_ns(&self) -> Option<u64> {
        self.base_delays
            .iter()
            .copied()
            .min()
            .filter(|&d| d != u64::MAX)
    }

    /// FILTER(current_delays) − MIN(base_delays), in ns; None before the first sample.
    pub fn queuing_delay_ns(&self) -> Option<u64> {
        let current = self.current_delays.iter().copied().min()?;
        Some(current.saturating_sub(self.base_delay_ns()?))
    }

    /// (TARGET − queuing_delay)/TARGET; 1 before any sample (no queue seen yet).
    pub fn off_target(&self) -> f64 {
        let q = self.queuing_delay_ns().unwrap_or(0) as f64;
        (self.target_ns - q) / self.target_ns
    }

    /// The fractional window (packets), for tests and traces.
    pub fn cwnd_pkts(&self) -> f64 {
        self.cwnd
    }

    /// Adopt the core's window if it changed it since our last update.
    fn resync(&mut self, w: &Window) {
        if w.cwnd != self.cwnd_set {
            self.cwnd = w.cwnd as f64;
            self.cwnd_set = w.cwnd;
        }
    }

    fn publish(&mut self, w: &mut Window) {
        let c = (self.cwnd.floor() as u32).clamp(1, w.cwnd_clamp);
        w.cwnd = c;
        self.cwnd_set = c;
    }
}

impl CongestionControl for Ledbat {
    /// Take the delay sample of an ACK that advanced `snd_una`, and remember the flight
    /// size before it.
    fn on_pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
        if s.pkts_acked == 0 {
            return;
        }
        self.flightsize = w.packets_out + s.pkts_acked;
        let now = w.now.ns();
        if w.rcv_tsecr != 0 && w.rcv_tsval >= w.rcv_tsecr {
            self.on_delay_sample(now, w.rcv_tsval - w.rcv_tsecr);
        } else if let Some(rtt) = s.rtt {
            self.on_delay_sample(now, rtt.ns());
        }
    }

    /// RFC 6817 "on data loss": cwnd = max(cwnd/2, MIN_CWND) (reached through PRR).
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        (w.cwnd / 2).max(self.min_cwnd)
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        self.resync(w);
        if self.slow_start && w.in_slow_start() {
            let q = self.queuing_delay_ns().unwrap_or(0) as f64;
            if q < self.target_ns / 2.0 {
                if !w.is_cwnd_limited() {
                    return;
                }
                let left = w.slow_start(acked);
                self.cwnd = w.cwnd as f64;
                self.cwnd_set = w.cwnd;
                if left == 0 {
                    return;
                }
                // Reached ssthresh: the rest of the ACK goes to the LEDBAT rule.
                return self.ledbat_increase(w, left);
            }
            // Queuing delay reached TARGET/2: leave slow start for good.
            w.ssthresh = w.cwnd;
        }
        self.ledbat_increase(w, acked);
    }
}

impl Ledbat {
    /// RFC 6817 §2.4.2 "on acknowledgement", for `acked` packets.
    fn ledbat_increase(&mut self, w: &mut Window, acked: u32) {
        let off_target = self.off_target();
        self.cwnd += self.gain * off_target * acked as f64 / self.cwnd;
        // Flight size before this ACK (recorded by `on_pkts_acked`; never below what is
        // still outstanding, should an ACK reach here without a cumulative advance).
        let flight = self.flightsize.max(w.packets_out);
        let max_allowed = flight as f64 + self.allowed_increase;
        self.cwnd = self.cwnd.min(max_allowed).max(self.min_cwnd as f64);
        self.publish(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::SimTime;
    use std::collections::BTreeMap;

    const MS: u64 = 1_000_000;

    fn ledbat_with(params: &[(&str, f64)]) -> (Ledbat, Window) {
        let m: BTreeMap<String, f64> = params.iter().map(|&(k, v)| (k.to_string(), v)).collect();
        let p = Params::new("ledbat", &m, PARAMS).unwrap();
        let l = Ledbat::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (l, w)
    }

    /// A flow in congestion avoidance with a fractional window of `cwnd` packets, all of
    /// them in flight.
    fn in_ca(cwnd: u32) -> (Ledbat, Window) {
        let (mut l, mut w) = ledbat_with(&[]);
        w.cwnd = cwnd;
        w.ssthresh = cwnd;
        l.resync(&w);
        (l, w)
    }

    /// An ACK of `acked` packets at `now_ms` whose data took `owd_ms` one way.
    fn ack(l: &mut Ledbat, w: &mut Window, now_ms: u64, owd_ms: u64, acked: u32) {
        w.now = SimTime(now_ms * MS);
        w.rcv_tsval = now_ms * MS;
        w.rcv_tsecr = (now_ms - owd_ms) * MS;
        w.packets_out = w.cwnd - acked;
        let s = AckSample {
            pkts_acked: acked,
            rtt: None,
            in_flight: w.cwnd,
        };
        l.on_pkts_acked(w, &s);
        l.cong_avoid(w, acked);
    }

    #[test]
    fn ca_off_target_is_hand_computed_from_owd_samples() {
        let (mut l, mut w) = in_ca(20);
        // Base 20 ms (first sample); then 70 ms: queuing 50 ms, off_target (100−50)/100.
        ack(&mut l, &mut w, 1_000, 20, 2);
        ack(&mut l, &mut w, 1_010, 70, 2);
        // FILTER = min of the last 4 samples {20, 70} = 20 → queuing 0 still.
        assert_eq!(l.queuing_delay_ns(), Some(0));
        ack(&mut l, &mut w, 1_020, 70, 2);
        ack(&mut l, &mut w, 1_030, 70, 2);
        ack(&mut l, &mut w, 1_040, 70, 2);
        // Last four samples are all 70 ms: queuing 70 − 20 = 50 ms.
        assert_eq!(l.queuing_delay_ns(), Some(50 * MS));
        assert_eq!(l.off_target(), 0.5);
        ack(&mut l, &mut w, 1_050, 170, 2);
        assert_eq!(
            l.queuing_delay_ns(),
            Some(50 * MS),
            "a single spike is filtered"
        );
        for t in [1_060, 1_070, 1_080] {
            ack(&mut l, &mut w, t, 170, 2);
        }
        // 170 − 20 = 150 ms: off_target = (100 − 150)/100 = −0.5.
        assert_eq!(l.off_target(), -0.5);
    }

    #[test]
    fn ca_window_moves_by_gain_off_target_acked_over_cwnd() {
        // Queuing delay 50 ms → off_target 0.5; cwnd 20, 2 packets ACKed:
        // Δ = 1 · 0.5 · 2 / 20 = 0.05 → 20.05 (integer window 20).
        let (mut l, mut w) = in_ca(20);
        for t in 0..4 {
            l.on_delay_sample(t * MS, 20 * MS); // base 20 ms
        }
        for t in 4..8 {
            l.on_delay_sample(t * MS, 70 * MS);
        }
        w.packets_out = 18;
        l.flightsize = 20;
        l.cong_avoid(&mut w, 2);
        assert!((l.cwnd_pkts() - 20.05).abs() < 1e-12, "{}", l.cwnd_pkts());
        assert_eq!(w.cwnd, 20);
        // Queuing 150 ms → off_target −0.5: 20.05 − 0.5·2/20.05 = 20.05 − 0.049875… = 20.000125.
        for t in 8..12 {
            l.on_delay_sample(t * MS, 170 * MS);
        }
        l.cong_avoid(&mut w, 2);
        assert!((l.cwnd_pkts() - (20.05 - 1.0 / 20.05)).abs() < 1e-12);
        l.cong_avoid(&mut w, 2);
        assert_eq!(w.cwnd, 19, "the window shrinks below 20");
    }

    #[test]
    fn ca_equilibrium_at_queuing_delay_equal_to_target() {
        // Base 30 ms, current 130 ms: queuing delay = TARGET = 100 ms → off_target 0, the
        // window neither grows nor shrinks however many ACKs arrive.
        let (mut l, mut w) = in_ca(50);
        l.on_delay_sample(400 * MS, 30 * MS);
        for t in 0..4 {
            l.on_delay_sample((500 + t) * MS, 130 * MS);
        }
        let mut t = 510;
        for _ in 0..1_000 {
            ack(&mut l, &mut w, t, 130, 2);
            t += 1;
        }
        assert_eq!(l.queuing_delay_ns(), Some(100 * MS));
        assert_eq!(l.off_target(), 0.0);
        assert_eq!(l.cwnd_pkts(), 50.0);
        assert_eq!(w.cwnd, 50);
        // 10 ms less queue: off_target 0.1, +0.1 packet per window (RTT) of ACKs:
        // 50 ACKs of 1 packet at cwnd ≈ 50 add ≈ 50 · 0.1/50 = 0.1.
        for _ in 0..4 {
            ack(&mut l, &mut w, t, 120, 1);
            t += 1;
        }
        let before = l.cwnd_pkts();
        for _ in 0..50 {
            ack(&mut l, &mut w, t, 120, 1);
            t += 1;
        }
        let grew = l.cwnd_pkts() - before;
        assert!((grew - 0.1).abs() < 1e-3, "grew {grew}");
    }

    #[test]
    fn ca_window_cannot_exceed_flight_plus_allowed_increase() {
        // Application-limited: 5 packets outstanding, cwnd 20 → max 5 + 1 = 6.
        let (mut l, mut w) = in_ca(20);
        w.packets_out = 4;
        let s = AckSample {
            pkts_acked: 1,
            rtt: None,
            in_flight: 5,
        };
        w.now = SimTime(100 * MS);
        w.rcv_tsval = 100 * MS;
        w.rcv_tsecr = 90 * MS;
        l.on_pkts_acked(&mut w, &s);
        l.cong_avoid(&mut w, 1);
        assert_eq!(l.cwnd_pkts(), 6.0);
        assert_eq!(w.cwnd, 6);
    }

    #[test]
    fn ca_window_floor_is_min_cwnd() {
        // The first four ACKs still have the 10 ms sample in the 4-sample minimum (no
        // queue): 3 → 3.33 → 3.63 → 3.91 → 4.16, capped at flight 3 + 1 = 4. The fifth sees
        // only 1010 ms: queuing 1 s, off_target −9: 4 − 9·1/4 = 1.75 → MIN_CWND = 2.
        let (mut l, mut w) = in_ca(3);
        ack(&mut l, &mut w, 100, 10, 1);
        for t in 0..4 {
            ack(&mut l, &mut w, 2_000 + t, 1_010, 1);
        }
        assert_eq!(w.cwnd, 2);
        assert_eq!(l.cwnd_pkts(), 2.0);
    }

    #[test]
    fn ca_base_delay_is_the_minimum_of_ten_one_minute_buckets() {
        let (mut l, _) = in_ca(10);
        let min = 60_000 * MS;
        l.on_delay_sample(5 * MS, 20 * MS); // minute 0: 20 ms
        l.on_delay_sample(30_000 * MS, 25 * MS);
        for m in 1..10 {
            l.on_delay_sample(m * min + MS, 30 * MS); // minutes 1..9: 30 ms
        }
        assert_eq!(
            l.base_delay_ns(),
            Some(20 * MS),
            "minute 0 still within 10 buckets"
        );
        l.on_delay_sample(10 * min + MS, 40 * MS); // minute 10 pushes minute 0 out
        assert_eq!(l.base_delay_ns(), Some(30 * MS));
        // Within a minute the newest bucket keeps its minimum.
        l.on_delay_sample(10 * min + 2 * MS, 35 * MS);
        assert_eq!(l.base_delays.back(), Some(&(35 * MS)));
    }

    #[test]
    fn loss_halves_with_min_cwnd_floor() {
        let (mut l, mut w) = in_ca(41);
        assert_eq!(l.on_congestion_event(&mut w, LossKind::Recovery), 20);
        w.cwnd = 3;
        assert_eq!(l.on_congestion_event(&mut w, LossKind::Rto), 2);
    }

    #[test]
    fn ca_resynchronises_after_the_core_sets_cwnd() {
        // Recovery ends with cwnd = ssthresh = 20 set by the core: LEDBAT continues from it.
        let (mut l, mut w) = in_ca(40);
        l.cwnd = 40.7;
        w.cwnd = 20;
        w.ssthresh = 20;
        l.flightsize = 20;
        l.cong_avoid(&mut w, 1); // no delay sample yet: off_target 1 → 20 + 1/20
        assert!((l.cwnd_pkts() - 20.05).abs() < 1e-12);
    }

    #[test]
    fn slow_start_doubles_until_half_target_then_ledbat_takes_over() {
        let (mut l, mut w) = ledbat_with(&[]);
        w.max_packets_out = 10;
        ack(&mut l, &mut w, 100, 20, 2);
        assert_eq!(w.cwnd, 12, "slow start: +2 for 2 packets");
        // Base 20 ms; four samples of 69 ms: queuing delay 49 ms < 50 ms, still slow start.
        for t in 0..4 {
            ack(&mut l, &mut w, 110 + t, 69, 1);
        }
        assert_eq!(w.cwnd, 16);
        assert_eq!(w.ssthresh, super::super::INFINITE_SSTHRESH);
        // Samples of 70 ms: the 4-sample minimum stays 69 ms for three more ACKs (+3), then
        // reaches 70 ms: 50 ms = TARGET/2, so slow start ends with ssthresh = cwnd = 19 and
        // that ACK goes to the LEDBAT rule: 19 + 0.5·1/19 = 19.0263.
        for t in 0..4 {
            ack(&mut l, &mut w, 120 + t, 70, 1);
        }
        assert_eq!(w.ssthresh, 19);
        assert!(
            (l.cwnd_pkts() - (19.0 + 0.5 / 19.0)).abs() < 1e-12,
            "{}",
            l.cwnd_pkts()
        );
        assert_eq!(w.cwnd, 19);
    }

    #[test]
    fn slow_start_disabled_uses_the_ledbat_rule_from_the_initial_window() {
        let (mut l, mut w) = ledbat_with(&[("slow_start", 0.0)]);
        // No queue: off_target 1, one ACK of 2 at cwnd 10: 10 + 2/10 = 10.2.
        ack(&mut l, &mut w, 100, 20, 2);
        assert!((l.cwnd_pkts() - 10.2).abs() < 1e-12);
        assert_eq!(w.cwnd, 10);
    }

    #[test]
    fn params_follow_the_rfc_bounds() {
        let m: BTreeMap<String, f64> = [("target_ns".to_string(), 150e6)].into();
        let p = Params::new("ledbat", &m, PARAMS).unwrap();
        let init = FlowInit {
            mss: 1448,
            initial_window: 10,
        };
        let e = Ledbat::new(&p, &init).err().unwrap();
        assert!(
            e.0.starts_with("cca_params.target_ns: 150000000 is invalid"),
            "{e}"
        );
        let m: BTreeMap<String, f64> = [("gain".to_string(), 2.0)].into();
        let p = Params::new("ledbat", &m, PARAMS).unwrap();
        assert!(Ledbat::new(&p, &init).is_err());
    }
}
