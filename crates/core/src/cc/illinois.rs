//! TCP-Illinois (Liu, Başar, Srikant 2008) as in Linux `tcp_illinois.c`.
//!
//! A loss-based AIMD whose increase α and decrease β are set once per RTT from the average
//! queueing delay da (mean RTT of the last round − base RTT) relative to the largest one
//! seen, dm (max RTT − base RTT):
//! - α = 10 while da ≤ dm/100 (empty queue: grow fast), falling as a hyperbola to 0.3 at
//!   da = dm (queue full: approach the loss point slowly) — a concave window curve;
//!   after a high-delay period α returns to 10 only after θ = 5 low-delay rounds.
//! - β = 1/8 while da ≤ dm/10 (a loss without queueing is probably not congestion),
//!   rising linearly to 1/2 at da ≥ 0.8·dm.
//! - Below `win_thresh` = 15 packets, α = 1 and β = 1/2 (Reno).
//!
//! Kernel arithmetic kept here: α is ×128 (α_min = ⌊3·128/10⌋ = 38 ≈ 0.297, α_max =
//! 1280), β is ×64 (8 .. 32); delays are µs in `u32` with RTT samples capped at
//! ⌊2^32/1280⌋ µs ≈ 3.36 s so the α product cannot overflow; base_rtt and max_rtt never age.
//! In CA, `snd_cwnd_cnt` accumulates the packets *cumulatively* ACKed as reported to
//! `pkts_acked` (then 1 per further call), and cwnd grows by ⌊cnt·α/128⌋/cwnd once that
//! reaches cwnd. Slow start is standard. Entering Loss (RTO) resets α = 1, β = 1/2.
//! Undo is Reno's.
use super::{
    AckSample, CaState, CcInfo, CongestionControl, FlowInit, LossKind, ParamSpec, Params, Window,
};
use crate::scenario::ConfigError;

const ALPHA_SHIFT: u32 = 7;
const ALPHA_SCALE: u32 = 1 << ALPHA_SHIFT;
/// ≈ 0.3 (38/128 = 0.297).
const ALPHA_MIN: u32 = (3 * ALPHA_SCALE) / 10;
/// 10.0
const ALPHA_MAX: u32 = 10 * ALPHA_SCALE;
/// 1.0
const ALPHA_BASE: u32 = ALPHA_SCALE;
/// Largest RTT sample used, in µs (3.36 s): keeps `dm · ALPHA_MAX` within 32 bits.
const RTT_MAX: u32 = u32::MAX / ALPHA_MAX;
const BETA_SHIFT: u32 = 6;
const BETA_SCALE: u32 = 1 << BETA_SHIFT;
/// 0.125
const BETA_MIN: u32 = BETA_SCALE / 8;
/// 0.5
const BETA_MAX: u32 = BETA_SCALE / 2;
const BETA_BASE: u32 = BETA_MAX;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "win_thresh",
        default: 15.0,
        unit: "pkts",
        help: "below this cwnd alpha = 1 and beta = 1/2 (Reno)",
    },
    ParamSpec {
        name: "theta",
        default: 5.0,
        unit: "RTTs",
        help: "low-delay rounds needed before alpha returns to its maximum",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "illinois",
    summary:
        "Illinois: loss-based AIMD, alpha in [0.3, 10] and beta in [1/8, 1/2] set by queueing delay",
    feedback: "hybrid",
    reference: "Liu, Basar, Srikant, Perform. Eval. 65 (2008); Linux net/ipv4/tcp_illinois.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux `struct illinois`.
#[derive(Debug, Clone)]
pub struct Illinois {
    win_thresh: u32,
    theta: u32,
    /// Sum and count of the RTT samples (µs) of the current round.
    sum_rtt: u64,
    cnt_rtt: u16,
    base_rtt: u32,
    max_rtt: u32,
    /// Right edge of the current round (snd_nxt when it started).
    end_seq: u64,
    alpha: u32,
    beta: u32,
    /// Packets cumulatively ACKed by the current ACK (Linux keeps a u16).
    acked: u16,
    rtt_above: bool,
    rtt_low: u32,
}

impl Illinois {
    pub fn new(p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        // Linux `tcp_illinois_init`; end_seq = snd_nxt = 0 at creation.
        Ok(Illinois {
            win_thresh: p.int("win_thresh", 0, 1 << 30)? as u32,
            theta: p.int("theta", 0, 255)? as u32,
            sum_rtt: 0,
            cnt_rtt: 0,
            base_rtt: 0x7fff_ffff,
            max_rtt: 0,
            end_seq: 0,
            alpha: ALPHA_MAX,
            beta: BETA_BASE,
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
        })
    }

    /// (α ×128, β ×64), for tests and traces.
    pub fn alpha_beta(&self) -> (u32, u32) {
        (self.alpha, self.beta)
    }

    fn rtt_reset(&mut self, w: &Window) {
        self.end_seq = w.snd_nxt;
        self.cnt_rtt = 0;
        self.sum_rtt = 0;
    }

    /// Maximum queueing delay seen (µs).
    fn max_delay(&self) -> u32 {
        self.max_rtt.wrapping_sub(self.base_rtt)
    }

    /// Average queueing delay of the last round (µs).
    fn avg_delay(&self) -> u32 {
        ((self.sum_rtt / self.cnt_rtt as u64) as u32).wrapping_sub(self.base_rtt)
    }

    /// Linux `alpha()`: α from the average (`da`) and maximum (`dm`) queueing delay.
    fn calc_alpha(&mut self, da: u32, dm: u32) -> u32 {
        let d1 = dm / 100;
        if da <= d1 {
            if !self.rtt_above {
                return ALPHA_MAX;
            }
            // One good round must not cause a sudden jump: wait for θ of them.
            self.rtt_low += 1;
            if self.rtt_low < self.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return ALPHA_MAX;
        }
        self.rtt_above = true;
        // α = k1/(k2 + da): the hyperbola through (d1, α_max) and (dm, α_min).
        let dm = dm - d1;
        let da = da - d1;
        dm.wrapping_mul(ALPHA_MAX)
            / dm.wrapping_add(da.wrapping_mul(ALPHA_MAX - ALPHA_MIN) / ALPHA_MIN)
    }

    /// Linux `beta()`: linear from β_min at dm/10 to β_max at 0.8·dm.
    fn calc_beta(da: u32, dm: u32) -> u32 {
        let d2 = dm / 10;
        if da <= d2 {
            return BETA_MIN;
        }
        let d3 = (8 * dm) / 10;
        if da >= d3 || d3 <= d2 {
            return BETA_MAX;
        }
        (BETA_MIN
            .wrapping_mul(d3)
            .wrapping_sub(BETA_MAX.wrapping_mul(d2))
            .wrapping_add((BETA_MAX - BETA_MIN).wrapping_mul(da)))
            / (d3 - d2)
    }

    /// Linux `update_params`, once per round.
    fn update_params(&mut self, w: &Window) {
        if w.cwnd < self.win_thresh {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
        } else if self.cnt_rtt > 0 {
            let dm = self.max_delay();
            let da = self.avg_delay();
            self.alpha = self.calc_alpha(da, dm);
            self.beta = Self::calc_beta(da, dm);
        }
        self.rtt_reset(w);
    }
}

impl CongestionControl for Illinois {
    fn on_pkts_acked(&mut self, _w: &mut Window, s: &AckSample) {
        self.acked = s.pkts_acked as u16;
        let Some(rtt) = s.rtt else { return };
        // Linux passes rtt_us as s32 (-1 = none); cap bogus values to keep α in 32 bits.
        let rtt_us = rtt.us().min(RTT_MAX as u64) as u32;
        self.base_rtt = self.base_rtt.min(rtt_us);
        self.max_rtt = self.max_rtt.max(rtt_us);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
        self.sum_rtt += rtt_us as u64;
    }

    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        if new == CaState::Loss {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.rtt_reset(w);
        }
    }

    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        let cut = w.cwnd.wrapping_mul(self.beta) >> BETA_SHIFT;
        (w.cwnd - cut).max(2)
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        // `ack` is the new snd_una: a round ends once it passes the recorded snd_nxt.
        if w.snd_una > self.end_seq {
            self.update_params(w);
        }
        if !w.is_cwnd_limited() {
            return;
        }
        if w.in_slow_start() {
            w.slow_start(acked);
        } else {
            // cwnd += α/cwnd per packet, in integer steps.
            w.cwnd_cnt = w.cwnd_cnt.wrapping_add(self.acked as u32);
            self.acked = 1;
            let delta = w.cwnd_cnt.wrapping_mul(self.alpha) >> ALPHA_SHIFT;
            if delta >= w.cwnd {
                w.cwnd = (w.cwnd + delta / w.cwnd).min(w.cwnd_clamp);
                w.cwnd_cnt = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::INFINITE_SSTHRESH;
    use crate::engine::time::SimDuration;
    use std::collections::BTreeMap;

    fn illinois() -> (Illinois, Window) {
        let m = BTreeMap::new();
        let p = Params::new("illinois", &m, PARAMS).unwrap();
        let c = Illinois::new(
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

    fn sample(c: &mut Illinois, w: &mut Window, rtt_ms: u64) {
        c.on_pkts_acked(
            w,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(SimDuration::from_ms(rtt_ms)),
                in_flight: 0,
            },
        );
    }

    /// End the current round (ACK past end_seq) at cwnd 100 in CA; returns (α, β).
    fn end_round(c: &mut Illinois, w: &mut Window) -> (u32, u32) {
        w.cwnd = 100;
        w.ssthresh = 50;
        w.snd_una = c.end_seq + 1;
        w.snd_nxt = w.snd_una + 100_000;
        c.cong_avoid(w, 1);
        w.cwnd = 100;
        c.alpha_beta()
    }

    #[test]
    fn alpha_at_hand_computed_delays() {
        // dm = 100 ms = 100000 µs, d1 = dm/100 = 1000.
        let (mut c, _) = illinois();
        // da <= d1 and never above: α_max = 1280 (10.0).
        assert_eq!(c.calc_alpha(1000, 100_000), 1280);
        // da = 50 ms: dm' = 99000, da' = 49000;
        // 99000·1280 / (99000 + 49000·1242/38) = 126720000 / (99000 + 1601526)
        // = 126720000 / 1700526 = 74.5 -> 74 (0.578).
        assert_eq!(c.calc_alpha(50_000, 100_000), 74);
        // da = dm: 126720000 / (99000 + 99000·1242/38 = 3235736) = 126720000/3334736
        // = 38.0 -> 38 = α_min (0.297).
        assert_eq!(c.calc_alpha(100_000, 100_000), 38);
        // da = 10 ms: da' = 9000: 9000·1242/38 = 294157; 126720000/393157 = 322.3 -> 322
        // (2.52).
        assert_eq!(c.calc_alpha(10_000, 100_000), 322);
    }

    #[test]
    fn alpha_returns_to_max_after_theta_low_delay_rounds() {
        let (mut c, _) = illinois();
        c.alpha = c.calc_alpha(50_000, 100_000); // above d1: rtt_above set, α = 74
        assert_eq!(c.alpha, 74);
        // Rounds 1..4 with da <= d1: α held at 74; the 5th (θ = 5) restores 1280.
        for _ in 0..4 {
            c.alpha = c.calc_alpha(500, 100_000);
            assert_eq!(c.alpha, 74);
        }
        assert_eq!(c.calc_alpha(500, 100_000), 1280);
    }

    #[test]
    fn beta_at_hand_computed_delays() {
        // dm = 100000: d2 = 10000, d3 = 80000.
        assert_eq!(Illinois::calc_beta(5_000, 100_000), 8, "1/8 below d2");
        assert_eq!(Illinois::calc_beta(10_000, 100_000), 8, "1/8 at d2");
        assert_eq!(Illinois::calc_beta(90_000, 100_000), 32, "1/2 above d3");
        // Midpoint 45000: (8·80000 - 32·10000 + 24·45000)/70000 = 1400000/70000 = 20
        // (0.3125 = (1/8 + 1/2)/2).
        assert_eq!(Illinois::calc_beta(45_000, 100_000), 20);
        // da = 50000: (640000 - 320000 + 1200000)/70000 = 21.7 -> 21.
        assert_eq!(Illinois::calc_beta(50_000, 100_000), 21);
    }

    #[test]
    fn congestion_avoidance_round_sets_alpha_beta_from_average_delay() {
        // Round 1: samples 100 ms and 200 ms: base 100000, max 200000, mean 150000;
        // dm = 100000, da = 50000 -> α = 74, β = 21 (as above).
        let (mut c, mut w) = illinois();
        sample(&mut c, &mut w, 100);
        sample(&mut c, &mut w, 200);
        assert_eq!(end_round(&mut c, &mut w), (74, 21));
        // Round 2: two samples at 102 ms: da = 2000 > d1 = 1000 -> α = 99000·1280/(99000 +
        // 1000·1242/38 = 32684) = 126720000/131684 = 962.3 -> 962; da <= d2 -> β = 8.
        sample(&mut c, &mut w, 102);
        sample(&mut c, &mut w, 102);
        assert_eq!(end_round(&mut c, &mut w), (962, 8));
        // Loss with β = 1/8 at cwnd 100: ssthresh = 100 - (100·8 >> 6 = 12) = 88.
        assert_eq!(c.on_congestion_event(&mut w, LossKind::Recovery), 88);
    }

    #[test]
    fn slow_start_small_window_is_reno() {
        // cwnd < 15 at the round end: α = 1, β = 1/2 whatever the delay.
        let (mut c, mut w) = illinois();
        sample(&mut c, &mut w, 100);
        sample(&mut c, &mut w, 300);
        w.snd_una = 1;
        w.cwnd = 14;
        c.cong_avoid(&mut w, 2);
        assert_eq!(c.alpha_beta(), (128, 32));
        assert_eq!(w.cwnd, 16, "slow start +acked");
        assert_eq!(w.ssthresh, INFINITE_SSTHRESH);
        // ssthresh = 14 - (14·32 >> 6 = 7) = 7.
        w.cwnd = 14;
        assert_eq!(c.on_congestion_event(&mut w, LossKind::Recovery), 7);
    }

    #[test]
    fn congestion_avoidance_with_alpha_max_adds_ten_per_rtt() {
        // α = 1280 at cwnd 100: delta = cnt·1280 >> 7 = 10·cnt reaches 100 at cnt = 10:
        // +100/100 = 1 packet per 10 ACKs, i.e. 10 packets per window.
        let (mut c, mut w) = illinois();
        sample(&mut c, &mut w, 100);
        end_round(&mut c, &mut w); // da = dm = 0 -> α = 1280
        assert_eq!(c.alpha_beta(), (1280, 8));
        w.cwnd_cnt = 0;
        for _ in 0..100 {
            c.on_pkts_acked(
                &mut w,
                &AckSample {
                    pkts_acked: 1,
                    rtt: None,
                    in_flight: 0,
                },
            );
            c.cong_avoid(&mut w, 1);
        }
        // A step at cwnd c needs 10·cnt >= c, i.e. ⌈c/10⌉ ACKs: 10 at cwnd 100, then 11
        // at each of 101..108: after 10 + 8·11 = 98 ACKs cwnd = 109 (2 ACKs left over).
        assert_eq!(w.cwnd, 109);
    }

    #[test]
    fn congestion_avoidance_counts_cumulative_acks_then_one() {
        // pkts_acked reports 5 packets: the first cong_avoid adds 5 to snd_cwnd_cnt, a
        // second call on the same ACK adds 1 (Linux resets ca->acked to 1).
        let (mut c, mut w) = illinois();
        w.cwnd = 100;
        w.ssthresh = 50;
        c.on_pkts_acked(
            &mut w,
            &AckSample {
                pkts_acked: 5,
                rtt: None,
                in_flight: 0,
            },
        );
        c.alpha = 128;
        c.cong_avoid(&mut w, 5);
        assert_eq!(w.cwnd_cnt, 5);
        c.cong_avoid(&mut w, 5);
        assert_eq!(w.cwnd_cnt, 6);
    }

    #[test]
    fn loss_state_resets_to_reno_values() {
        let (mut c, mut w) = illinois();
        c.alpha = 500;
        c.beta = 8;
        c.rtt_above = true;
        c.on_state_change(&mut w, CaState::Loss);
        assert_eq!(c.alpha_beta(), (128, 32));
        assert!(!c.rtt_above);
    }

    #[test]
    fn rtt_samples_are_capped_at_3_36_s() {
        let (mut c, mut w) = illinois();
        sample(&mut c, &mut w, 10_000);
        assert_eq!(c.max_rtt, 3_355_443); // (2^32 - 1)/1280
    }
}
