//! CUBIC as in Linux `tcp_cubic.c` (v2.3), with HyStart (ACK-train and delay detection).
//!
//! Integer arithmetic exactly as the kernel does it: time in jiffies (HZ configurable,
//! default 1000) scaled to 2^10 units per second, the cube root by table + one
//! Newton-Raphson step, `cnt` = ACKs per +1 packet, the TCP-friendly region, and the
//! quirks (at most one `cnt` update per jiffy, the 5 %/RTT cap before the first loss,
//! delay samples ignored for 1 s after a loss).
use super::{
    AckSample, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind, ParamSpec,
    Params, Window,
};
use crate::scenario::ConfigError;

const BETA_SCALE: u32 = 1024;
/// 2^BICTCP_HZ time units per second.
const BICTCP_HZ: u32 = 10;
const HYSTART_ACK_TRAIN: u32 = 1;
const HYSTART_DELAY: u32 = 2;
const HYSTART_MIN_SAMPLES: u8 = 8;
const HYSTART_DELAY_MIN_US: u32 = 4_000;
const HYSTART_DELAY_MAX_US: u32 = 16_000;
/// Linux `GSO_MAX_SIZE` (used by `hystart_ack_delay`).
const GSO_MAX_SIZE: u64 = 65_536;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "beta",
        default: 717.0,
        unit: "/1024",
        help: "multiplicative decrease factor (717/1024 = 0.7)",
    },
    ParamSpec {
        name: "bic_scale",
        default: 41.0,
        unit: "/1024",
        help: "cubic scaling C = bic_scale*10/1024 (41 -> 0.4)",
    },
    ParamSpec {
        name: "fast_convergence",
        default: 1.0,
        unit: "bool",
        help: "release bandwidth faster when Wmax shrinks",
    },
    ParamSpec {
        name: "tcp_friendliness",
        default: 1.0,
        unit: "bool",
        help: "never grow slower than Reno would",
    },
    ParamSpec {
        name: "hystart",
        default: 1.0,
        unit: "bool",
        help: "hybrid slow start",
    },
    ParamSpec {
        name: "hystart_detect",
        default: 3.0,
        unit: "bits",
        help: "1 = ACK train, 2 = delay, 3 = both",
    },
    ParamSpec {
        name: "hystart_low_window",
        default: 16.0,
        unit: "pkts",
        help: "HyStart is active above this cwnd",
    },
    ParamSpec {
        name: "hystart_ack_delta_ns",
        default: 2_000_000.0,
        unit: "ns",
        help: "ACK spacing that still counts as a train",
    },
    ParamSpec {
        name: "initial_ssthresh",
        default: 0.0,
        unit: "pkts",
        help: "initial ssthresh (0 = infinite) when HyStart is off",
    },
    ParamSpec {
        name: "hz",
        default: 1000.0,
        unit: "Hz",
        help: "kernel jiffies rate (CONFIG_HZ)",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "cubic",
    summary: "CUBIC: cwnd follows a cubic of time since the last loss; HyStart slow-start exit",
    feedback: "loss",
    reference: "RFC 9438; Ha, Rhee, Xu (2008); Linux net/ipv4/tcp_cubic.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux CUBIC state (`struct bictcp`).
#[derive(Debug, Clone, Default)]
pub struct Cubic {
    // parameters
    beta: u32,
    fast_convergence: bool,
    tcp_friendliness: bool,
    hystart: bool,
    hystart_detect: u32,
    hystart_low_window: u32,
    hystart_ack_delta_us: u32,
    initial_ssthresh: u32,
    hz: u32,
    beta_scale: u32,
    cube_rtt_scale: u32,
    cube_factor: u64,
    // state
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    bic_origin_point: u32,
    bic_k: u32,
    delay_min_us: u32,
    epoch_start: u32,
    ack_cnt: u32,
    tcp_cwnd: u32,
    sample_cnt: u8,
    found: bool,
    round_start_us: u32,
    end_seq: u64,
    last_ack_us: u32,
    curr_rtt_us: u32,
    initialized: bool,
}

/// Linux `cubic_root`: table lookup then one Newton-Raphson iteration (avg error ~0.2 %).
pub fn cubic_root(a: u64) -> u32 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164,
        168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209,
        211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240,
        242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    let b = 64 - a.leading_zeros(); // fls64
    if b < 7 {
        return (V[a as usize] as u32 + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let mut x = ((V[shift] as u32 + 10) << b) >> 6;
    x = 2 * x + (a / (x as u64 * (x as u64 - 1))) as u32;
    ((x as u64 * 341) >> 10) as u32
}

impl Cubic {
    pub fn new(p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        let beta = p.int("beta", 1, 1023)? as u32;
        let bic_scale = p.int("bic_scale", 1, 1 << 20)? as u32;
        let hz = p.int("hz", 100, 100_000)? as u32;
        let mut c = Cubic {
            beta,
            fast_convergence: p.flag("fast_convergence")?,
            tcp_friendliness: p.flag("tcp_friendliness")?,
            hystart: p.flag("hystart")?,
            hystart_detect: p.int("hystart_detect", 0, 3)? as u32,
            hystart_low_window: p.int("hystart_low_window", 0, 1 << 30)? as u32,
            hystart_ack_delta_us: (p.int("hystart_ack_delta_ns", 0, 1_000_000_000)? / 1_000) as u32,
            initial_ssthresh: p.int("initial_ssthresh", 0, 1 << 30)? as u32,
            hz,
            ..Default::default()
        };
        // Module-load precomputation (cubictcp_register), for an SRTT of 100 ms.
        c.beta_scale = 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta);
        c.cube_rtt_scale = bic_scale * 10;
        c.cube_factor = (1u64 << (10 + 3 * BICTCP_HZ)) / (bic_scale as u64 * 10);
        Ok(c)
    }

    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.bic_origin_point = 0;
        self.bic_k = 0;
        self.delay_min_us = 0;
        self.epoch_start = 0;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.sample_cnt = 0;
        self.found = false;
        self.round_start_us = 0;
        self.end_seq = 0;
        self.last_ack_us = 0;
        self.curr_rtt_us = 0;
    }

    fn hystart_reset(&mut self, w: &Window) {
        let now = w.now_us() as u32;
        self.round_start_us = now;
        self.last_ack_us = now;
        self.end_seq = w.snd_nxt;
        self.curr_rtt_us = u32::MAX;
        self.sample_cnt = 0;
    }

    /// Linux `cubictcp_init` — run lazily on the first hook so it sees the connection.
    fn ensure_init(&mut self, w: &mut Window) {
        if self.initialized {
            return;
        }
        self.initialized = true;
        self.reset();
        if self.hystart {
            self.hystart_reset(w);
        }
        if !self.hystart && self.initial_ssthresh != 0 {
            w.ssthresh = self.initial_ssthresh;
        }
    }

    fn usecs_to_jiffies(&self, us: u32) -> u32 {
        let per = 1_000_000 / self.hz;
        us.div_ceil(per)
    }

    /// Linux `bictcp_update`.
    fn update(&mut self, w: &Window, cwnd: u32, acked: u32) {
        let jiffies = w.jiffies(self.hz);
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);
        if self.last_cwnd == cwnd
            && (jiffies.wrapping_sub(self.last_time) as i32) <= (self.hz / 32) as i32
        {
            return;
        }
        let skip_cubic = self.epoch_start != 0 && jiffies == self.last_time;
        if !skip_cubic {
            self.last_cwnd = cwnd;
            self.last_time = jiffies;
            if self.epoch_start == 0 {
                self.epoch_start = jiffies;
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.bic_k = 0;
                    self.bic_origin_point = cwnd;
                } else {
                    self.bic_k = cubic_root(self.cube_factor * (self.last_max_cwnd - cwnd) as u64);
                    self.bic_origin_point = self.last_max_cwnd;
                }
            }
            let mut t = jiffies.wrapping_sub(self.epoch_start) as i32 as i64 as u64;
            t += self.usecs_to_jiffies(self.delay_min_us) as u64;
            t <<= BICTCP_HZ;
            t /= self.hz as u64;
            let k = self.bic_k as u64;
            let offs = k.abs_diff(t);
            let delta = ((self.cube_rtt_scale as u64)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                >> (10 + 3 * BICTCP_HZ)) as u32;
            let bic_target = if t < k {
                self.bic_origin_point.wrapping_sub(delta)
            } else {
                self.bic_origin_point.wrapping_add(delta)
            };
            self.cnt = if bic_target > cwnd {
                cwnd / (bic_target - cwnd)
            } else {
                100 * cwnd
            };
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20; // 5 % per RTT until the first loss
            }
        }
        if self.tcp_friendliness {
            let delta = (cwnd * self.beta_scale) >> 3;
            if delta > 0 {
                while self.ack_cnt > delta {
                    self.ack_cnt -= delta;
                    self.tcp_cwnd += 1;
                }
            }
            if self.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                if self.cnt > max_cnt {
                    self.cnt = max_cnt;
                }
            }
        }
        self.cnt = self.cnt.max(2);
    }

    /// Linux `hystart_ack_delay`: cushion for TSO/GRO aggregation, ≤ 1 ms.
    fn hystart_ack_delay_us(w: &Window) -> u32 {
        let rate = w.linux_pacing_rate_bytes();
        if rate == 0 {
            return 0;
        }
        (GSO_MAX_SIZE * 4 * 1_000_000 / rate).min(1_000) as u32
    }

    fn hystart_update(&mut self, w: &mut Window, delay_us: u32) {
        if w.snd_una > self.end_seq {
            self.hystart_reset(w);
        }
        if w.cwnd < self.hystart_low_window {
            return;
        }
        if self.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = w.now_us() as u32;
            if (now.wrapping_sub(self.last_ack_us) as i32) <= self.hystart_ack_delta_us as i32 {
                self.last_ack_us = now;
                let mut threshold = self.delay_min_us + Self::hystart_ack_delay_us(w);
                if !w.pacing {
                    threshold >>= 1;
                }
                if (now.wrapping_sub(self.round_start_us) as i32) > threshold as i32 {
                    self.found = true;
                    w.ssthresh = w.cwnd;
                }
            }
        }
        if self.hystart_detect & HYSTART_DELAY != 0 {
            if self.curr_rtt_us > delay_us {
                self.curr_rtt_us = delay_us;
            }
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let thresh =
                    (self.delay_min_us >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
                if self.curr_rtt_us > self.delay_min_us + thresh {
                    self.found = true;
                    w.ssthresh = w.cwnd;
                }
            }
        }
    }

    /// Current Wmax (packets), for tests and traces.
    pub fn last_max_cwnd(&self) -> u32 {
        self.last_max_cwnd
    }

    /// K in seconds × 1024 (the cubic's time to reach Wmax), for tests.
    pub fn k_scaled(&self) -> u32 {
        self.bic_k
    }
}

impl CongestionControl for Cubic {
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        self.ensure_init(w);
        self.epoch_start = 0;
        if w.cwnd < self.last_max_cwnd && self.fast_convergence {
            self.last_max_cwnd = (w.cwnd * (BETA_SCALE + self.beta)) / (2 * BETA_SCALE);
        } else {
            self.last_max_cwnd = w.cwnd;
        }
        ((w.cwnd * self.beta) / BETA_SCALE).max(2)
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        self.ensure_init(w);
        if !w.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if w.in_slow_start() {
            acked = w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = w.cwnd;
        self.update(w, cwnd, acked);
        let cnt = self.cnt;
        w.cong_avoid_ai(cnt, acked);
    }

    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        self.ensure_init(w);
        if new == CaState::Loss {
            self.reset();
            self.hystart_reset(w);
        }
    }

    fn on_cwnd_event(&mut self, w: &mut Window, ev: CwndEvent) {
        self.ensure_init(w);
        if ev == CwndEvent::TxStart {
            let now = w.jiffies(self.hz);
            let last_send = (w.last_send.ns() / (1_000_000_000 / self.hz as u64)) as u32;
            let delta = now.wrapping_sub(last_send) as i32;
            // Idle (application-limited): shift the epoch so cwnd stays on the curve.
            if self.epoch_start != 0 && delta > 0 {
                self.epoch_start = self.epoch_start.wrapping_add(delta as u32);
                if (self.epoch_start.wrapping_sub(now) as i32) > 0 {
                    self.epoch_start = now;
                }
            }
        }
    }

    fn on_pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
        self.ensure_init(w);
        let Some(rtt) = s.rtt else { return };
        let jiffies = w.jiffies(self.hz);
        if self.epoch_start != 0 && (jiffies.wrapping_sub(self.epoch_start) as i32) < self.hz as i32
        {
            return; // just after a loss: queues are draining, delays are misleading
        }
        let delay = (rtt.us().min(u32::MAX as u64) as u32).max(1);
        if self.delay_min_us == 0 || self.delay_min_us > delay {
            self.delay_min_us = delay;
        }
        if !self.found && w.in_slow_start() && self.hystart {
            self.hystart_update(w, delay);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::{SimDuration, SimTime};
    use std::collections::BTreeMap;

    fn cubic() -> (Cubic, Window) {
        let m = BTreeMap::new();
        let p = Params::new("cubic", &m, PARAMS).unwrap();
        let c = Cubic::new(
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

    #[test]
    fn cube_root_is_within_one_percent() {
        for a in [
            1u64,
            8,
            27,
            64,
            1000,
            123_456,
            1 << 30,
            1 << 40,
            9_999_999_999,
        ] {
            let exact = (a as f64).cbrt();
            let got = cubic_root(a) as f64;
            assert!(
                (got - exact).abs() <= 1.0 + 0.01 * exact,
                "a={a} got={got} exact={exact}"
            );
        }
    }

    #[test]
    fn ack_train_spacing_defaults_to_2ms_and_is_settable_in_ns() {
        let (c, _) = cubic();
        assert_eq!(c.hystart_ack_delta_us, 2_000);
        let mut m = BTreeMap::new();
        m.insert("hystart_ack_delta_ns".to_string(), 1_000_000.0);
        let p = Params::new("cubic", &m, PARAMS).unwrap();
        let c = Cubic::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        assert_eq!(c.hystart_ack_delta_us, 1_000);
    }

    #[test]
    fn precomputed_constants_match_the_kernel() {
        let (c, _) = cubic();
        // beta_scale = 8*(1024+717)/3/(1024-717) = 8*1741/3/307 = 13928/3/307 = 4642/307 = 15
        assert_eq!(c.beta_scale, 15);
        assert_eq!(c.cube_rtt_scale, 410);
        // cube_factor = 2^40 / 410 = 2681735677
        assert_eq!(c.cube_factor, 2_681_735_677);
    }

    #[test]
    fn loss_sets_ssthresh_to_0_7_cwnd_and_records_wmax() {
        let (mut c, mut w) = cubic();
        w.cwnd = 100;
        assert_eq!(c.on_congestion_event(&mut w, LossKind::Recovery), 70); // 100*717/1024 = 70
        assert_eq!(c.last_max_cwnd(), 100);
        // Second loss below Wmax: fast convergence, Wmax = 80*(1024+717)/2048 = 68.
        w.cwnd = 80;
        c.on_congestion_event(&mut w, LossKind::Recovery);
        assert_eq!(c.last_max_cwnd(), 68);
    }

    #[test]
    fn k_matches_cube_root_of_wmax_drop_over_c() {
        // Wmax = 100, cwnd = 70 after the loss: K = cbrt(30 / 0.4) = 4.217 s -> 4318 (x1024).
        let (mut c, mut w) = cubic();
        w.cwnd = 100;
        w.ssthresh = c.on_congestion_event(&mut w, LossKind::Recovery);
        w.cwnd = w.ssthresh;
        w.now = SimTime(10_000_000_000);
        c.cong_avoid(&mut w, 1);
        let k = c.k_scaled() as f64 / 1024.0;
        assert!((k - (30.0f64 / 0.4).cbrt()).abs() < 0.02, "K = {k}");
    }

    #[test]
    fn window_reaches_wmax_after_k_seconds() {
        // Feed one ACK per ms (cwnd-limited) after a loss from 100 packets; at t = K the
        // window should be back at Wmax = 100 (±2 packets for integer rounding).
        let (mut c, mut w) = cubic();
        w.cwnd = 100;
        w.ssthresh = c.on_congestion_event(&mut w, LossKind::Recovery);
        w.cwnd = w.ssthresh;
        let t0 = 10_000_000_000u64;
        let k_ns = ((30.0f64 / 0.4).cbrt() * 1e9) as u64;
        let mut t = t0;
        while t < t0 + k_ns {
            w.now = SimTime(t);
            c.cong_avoid(&mut w, 1);
            t += 1_000_000;
        }
        assert!((w.cwnd as i64 - 100).abs() <= 2, "cwnd at K = {}", w.cwnd);
    }

    /// Run one HyStart round: a first round establishes delay_min = 100 ms, then a new round
    /// (snd_una past end_seq) feeds nine samples of `rtt_ms`, 5 ms apart (no ACK train).
    fn hystart_round(rtt_ms: u64) -> u32 {
        let (mut c, mut w) = cubic();
        w.cwnd = 32;
        w.now = SimTime(5_000_000_000);
        w.snd_nxt = 1_000_000;
        c.on_state_change(&mut w, CaState::Open); // init: round ends at snd_nxt
        let rtt = |ms| AckSample {
            pkts_acked: 1,
            rtt: Some(SimDuration::from_ms(ms)),
            in_flight: 30,
        };
        c.on_pkts_acked(&mut w, &rtt(100));
        w.snd_una = 1_000_001;
        w.snd_nxt = 3_000_000;
        for _ in 0..9 {
            w.now += SimDuration::from_ms(5);
            c.on_pkts_acked(&mut w, &rtt(rtt_ms));
        }
        w.ssthresh
    }

    /// A connection whose first round measured delay_min = 100 ms (cwnd `cwnd`), and
    /// whose next round starts at 6 s: `acks` then feeds ACKs `spacing_ms` apart, each
    /// with a 100 ms RTT (no queueing delay), and returns ssthresh after each one.
    fn hystart_train(cwnd: u32, spacing_ms: u64, acks: usize) -> Vec<u32> {
        let (mut c, mut w) = cubic();
        w.cwnd = cwnd;
        w.now = SimTime(5_000_000_000);
        w.snd_nxt = 1_000_000;
        c.on_state_change(&mut w, CaState::Open);
        let rtt = AckSample {
            pkts_acked: 1,
            rtt: Some(SimDuration::from_ms(100)),
            in_flight: 30,
        };
        c.on_pkts_acked(&mut w, &rtt);
        w.now = SimTime(6_000_000_000);
        w.snd_una = 1_000_001;
        w.snd_nxt = 3_000_000;
        let mut out = Vec::new();
        for _ in 0..acks {
            c.on_pkts_acked(&mut w, &rtt);
            out.push(w.ssthresh);
            w.now += SimDuration::from_ms(spacing_ms);
        }
        out
    }

    #[test]
    fn hystart_ack_train_exits_once_the_train_spans_half_the_min_rtt() {
        // Without pacing the train threshold is delay_min / 2 = 50 ms (hystart_ack_delay is
        // 0 with no pacing rate yet). ACKs 1 ms apart (within the 2 ms train spacing): the
        // ACK at +50 ms is not past the threshold, the one at +51 ms is, and ssthresh
        // becomes the cwnd of that moment.
        let ss = hystart_train(32, 1, 53);
        assert_eq!(ss[50], super::super::INFINITE_SSTHRESH, "+50 ms: stay");
        assert_eq!(ss[51], 32, "+51 ms: exit at cwnd");
    }

    #[test]
    fn hystart_ack_train_ignores_acks_spaced_wider_than_2ms() {
        // 3 ms apart (one 1500 B packet per 3 ms at 4 Mbit/s): never a train, even after
        // 300 ms, and no RTT growth either.
        let ss = hystart_train(32, 3, 100);
        assert!(ss.iter().all(|&s| s == super::super::INFINITE_SSTHRESH));
    }

    #[test]
    fn hystart_is_inactive_below_the_low_window() {
        // hystart_low_window = 16: at cwnd 15 even a 51 ms train does nothing; at 16 it exits.
        assert_eq!(
            hystart_train(15, 1, 60)[59],
            super::super::INFINITE_SSTHRESH
        );
        assert_eq!(hystart_train(16, 1, 60)[59], 16);
    }

    #[test]
    fn hystart_delay_exits_slow_start_when_rtt_grows_by_threshold() {
        // delay_min = 100 ms: threshold = clamp(100/8 = 12.5 ms, 4, 16) = 12.5 ms, checked
        // once 8 samples of the round were seen (on the 9th).
        assert_eq!(
            hystart_round(112),
            super::super::INFINITE_SSTHRESH,
            "112 < 112.5 ms: stay"
        );
        assert_eq!(hystart_round(113), 32, "113 > 112.5 ms: exit at cwnd");
    }
}
