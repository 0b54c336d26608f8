//! BBR v1 (Bottleneck Bandwidth and RTT) as Linux `net/ipv4/tcp_bbr.c` implements it
//! (Cardwell et al., ACM Queue 14(5), 2016), ported hook by hook.
//!
//! BBR builds a model of the path from the delivery-rate samples of `tcp_rate.c`:
//! `btl_bw` = the maximum delivery rate over the last 10 packet-timed round trips and
//! `min_rtt` = the minimum RTT over the last 10 s. It paces at `pacing_gain · btl_bw` and caps
//! the data in flight at `cwnd_gain · btl_bw · min_rtt` (plus allowances). It owns cwnd
//! entirely (`cong_control`): no PRR, no `cong_avoid`; loss only matters through packet
//! conservation during recovery and the policer detector.
//!
//! State machine (one `match` in `update_gains`, transitions in the `check_*` functions):
//! - STARTUP (pacing and cwnd gain 2/ln 2 = 739/256): leave when the max bandwidth has not
//!   grown by 25 % for 3 non-app-limited rounds ("full pipe");
//! - DRAIN (pacing gain 88/256): until the packets in the network fall to one BDP;
//! - PROBE_BW: an 8-phase pacing-gain cycle 5/4, 3/4, 1 ×6, each phase ≥ min_rtt, starting at a
//!   random phase other than 3/4 (drawn from the flow's `SimRng`);
//! - PROBE_RTT: when min_rtt is 10 s old, cwnd = 4 for max(200 ms, one round), then back.
//!
//! What v3 computes the same way (units, pacing rate, BDP, ACK aggregation, PROBE_RTT hold)
//! is in `common`; this file is v1's own model. Also ported: the ACK-aggregation allowance
//! (`extra_acked`), the long-term ("LT", policer) bandwidth estimator, the TSO quantization
//! budget, the EDT correction of the in-flight estimate, and the kernel's fixed-point units
//! (bandwidth in packets/µs << 24, gains << 8, time in µs and jiffies).
//!
//! Simulator mapping: Linux `tp->delivered_mstamp` is kept here (set when an ACK delivers
//! data, or a flight starts from empty), `tp->app_limited` is `Window.app_limited` (written
//! back by the sender, for PROBE_RTT), the EDT is `Window.next_departure`, and
//! `sk_max_pacing_rate` is unlimited. The simulator sends single segments, so the TSO
//! budget only shapes cwnd, as it does in the kernel's arithmetic.
use super::common::{
    common_in_field_c, interval_us, param_min_rtt_win, param_probe_rtt_mode, shared_hooks,
    take_min_rtt, Common, CommonParams, Mode, Model, BBR_SCALE, BBR_UNIT, BW_UNIT, CWND_MIN_TARGET,
    EXTRA_ACKED_WIN_RTTS, FULL_BW_CNT, FULL_BW_THRESH, GSO_BYTES_MAX, PARAM_EXTRA_ACKED_GAIN,
    PARAM_HZ, PARAM_PACING_MARGIN,
};
use crate::cc::{
    tso_autosize_bytes, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind,
    ParamSpec, Params, Window,
};
use crate::engine::minmax::WindowedMax;
use crate::engine::rng::SimRng;
use crate::scenario::ConfigError;
use crate::tcp::linux::rate::RateSample;

/// Phases in a PROBE_BW pacing-gain cycle.
const CYCLE_LEN: u32 = 8;
/// PROBE_BW pacing gains: probe (5/4), drain (3/4), cruise (1) ×6.
pub const PACING_GAIN: [u32; 8] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// The random start phase is drawn among this many phases.
const CYCLE_RAND: u64 = 7;
/// LT sampling: an interval is at least this many rounds ...
const LT_INTVL_MIN_RTTS: u32 = 4;
/// ... and "lossy" when lost/delivered ≥ 50/256 (≈ 20 %).
const LT_LOSS_THRESH: u64 = 50;
/// Two intervals have a consistent bandwidth if they differ by ≤ 1/8 ...
const LT_BW_RATIO: u64 = (BBR_UNIT / 8) as u64;
/// ... or by ≤ 4 kbit/s (in bytes per second).
const LT_BW_DIFF: u64 = 4000 / 8;
/// Use the LT bandwidth for this many rounds.
const LT_BW_MAX_RTTS: u32 = 48;
/// Linux `TCP_INIT_CWND` (a constant in the kernel, whatever the route's initcwnd).
const TCP_INIT_CWND: u32 = 10;
/// Below this pacing rate (bit/s) the TSO goal is one segment.
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
pub const PARAMS: &[ParamSpec] = &[
    PARAM_HZ,
    param_min_rtt_win("min_rtt filter window (PROBE_RTT when min_rtt is this old)"),
    param_probe_rtt_mode("minimum time at cwnd 4 in PROBE_RTT (0 disables PROBE_RTT)"),
    ParamSpec {
        name: "high_gain",
        default: 739.0,
        unit: "/256",
        help: "STARTUP pacing and cwnd gain (2/ln2 = 739/256)",
    },
    ParamSpec {
        name: "drain_gain",
        default: 88.0,
        unit: "/256",
        help: "DRAIN pacing gain (1/2.885 = 88/256)",
    },
    ParamSpec {
        name: "cwnd_gain",
        default: 512.0,
        unit: "/256",
        help: "PROBE_BW cwnd gain (2 BDP)",
    },
    PARAM_EXTRA_ACKED_GAIN,
    PARAM_PACING_MARGIN,
];

pub const INFO: CcInfo = CcInfo {
    name: "bbr",
    summary:
        "BBR v1: pace at the max delivery rate, cap inflight at 2 BDP; gain cycling, PROBE_RTT",
    feedback: "rate",
    reference: "Cardwell et al., ACM Queue 14(5) 2016; Linux net/ipv4/tcp_bbr.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux BBR v1 state (`struct bbr`) plus the socket fields it writes (`sk_pacing_rate`).
#[derive(Debug, Clone)]
pub struct Bbr {
    /// What v1 shares with v3 (parameters, mode, min RTT, pacing, ACK aggregation).
    c: Common,
    drain_gain: u32,
    cwnd_gain_param: u32,
    // model
    bw: WindowedMax,
    rtt_cnt: u64,
    packet_conservation: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp: u32,
    lt_last_lost: u64,
}

impl Bbr {
    pub fn new(p: &Params<'_>, init: &FlowInit, rng: &mut SimRng) -> Result<Self, ConfigError> {
        let high_gain = p.int("high_gain", 256, 1023)? as u32;
        let drain_gain = p.int("drain_gain", 1, 256)? as u32;
        let cwnd_gain = p.int("cwnd_gain", 256, 1023)? as u32;
        let params = CommonParams::parse(p, high_gain, 0)?;
        // A private stream: the random gain-cycle phase is a function of the seed.
        let rng = SimRng::substream(rng.next_u64(), "bbr");
        let mut c = Common::new(params, init.mss, rng);
        (c.pacing_gain, c.cwnd_gain) = (high_gain, high_gain);
        Ok(Bbr {
            c,
            drain_gain,
            cwnd_gain_param: cwnd_gain,
            bw: WindowedMax::default(),
            rtt_cnt: 0,
            packet_conservation: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
        })
    }

    // --- read-only view (tests, traces); the shared state is `Model::common` ------------

    pub fn lt_use_bw(&self) -> bool {
        self.lt_use_bw
    }
    pub fn lt_bw(&self) -> u64 {
        self.lt_bw
    }
    pub fn rtt_cnt(&self) -> u64 {
        self.rtt_cnt
    }

    // --- init ------------------------------------------------------------------------

    // --- rates -----------------------------------------------------------------------

    /// Linux `bbr_min_tso_segs`.
    fn min_tso_segs(&self) -> u32 {
        if self.c.pacing_rate < (MIN_TSO_RATE_BPS >> 3) {
            1
        } else {
            2
        }
    }

    // --- model -----------------------------------------------------------------------

    /// Linux `bbr_ack_aggregation_cwnd` (v1: only once the pipe is full).
    fn ack_aggregation_cwnd(&self) -> u32 {
        if !self.c.full_bw_reached {
            return 0;
        }
        self.c.ack_aggregation_cwnd(self.bw())
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore`: deduct losses, packet conservation in
    /// the first round of Recovery, restore the saved cwnd when recovery ends. Returns the
    /// new cwnd and whether packet conservation decided it.
    fn set_cwnd_to_recover_or_restore(
        &mut self,
        w: &mut Window,
        rs: &RateSample,
        acked: u32,
    ) -> (u32, bool) {
        let prev_state = self.c.prev_ca_state;
        let state = w.ca_state;
        let mut cwnd = w.cwnd;
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // First round of Recovery: send P packets per P packets ACKed.
            self.packet_conservation = true;
            self.c.next_rtt_delivered = w.delivered; // start a round now
            cwnd = w.in_flight + acked;
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.c.prior_cwnd);
            self.packet_conservation = false;
        }
        self.c.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(w.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// Linux `bbr_set_cwnd`: slow-start toward the target (2 BDP + allowances), or snap
    /// down to it once the pipe is full; at most 4 packets in PROBE_RTT.
    fn set_cwnd(&mut self, w: &mut Window, rs: &RateSample, acked: u32, bw: u64, gain: u32) {
        let mut cwnd = w.cwnd;
        if acked != 0 {
            let (c, conserving) = self.set_cwnd_to_recover_or_restore(w, rs, acked);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(target);
                if self.c.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || w.delivered < TCP_INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        w.cwnd = cwnd.min(w.cwnd_clamp);
        if self.c.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(CWND_MIN_TARGET);
        }
    }

    /// Linux `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, w: &Window, rs: &RateSample) -> bool {
        let is_full_length =
            self.c.delivered_mstamp.saturating_sub(self.c.cycle_mstamp) > self.c.min_rtt_us as u64;
        if self.c.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(w, rs.prior_in_flight);
        let bw = self.max_bw();
        if self.c.pacing_gain > BBR_UNIT {
            // Probing: hold until inflight reaches gain × BDP, unless packets are lost.
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(bw, self.c.pacing_gain));
        }
        // Draining: stop as soon as the queue is gone.
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT)
    }

    /// Linux `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self) {
        self.c.cycle_idx = (self.c.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.c.cycle_mstamp = self.c.delivered_mstamp;
    }

    /// Linux `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, w: &Window, rs: &RateSample) {
        if self.c.mode == Mode::ProbeBw && self.is_next_cycle_phase(w, rs) {
            self.advance_cycle_phase();
        }
    }

    /// Linux `bbr_reset_probe_bw_mode`: start the cycle at a random phase other than 3/4.
    fn reset_probe_bw_mode(&mut self) {
        self.c.mode = Mode::ProbeBw;
        self.c.cycle_idx = CYCLE_LEN - 1 - self.c.rng.below(CYCLE_RAND) as u32;
        self.advance_cycle_phase();
    }

    /// Linux `bbr_reset_mode`.
    fn reset_mode(&mut self) {
        if !self.c.full_bw_reached {
            self.c.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode();
        }
    }

    /// Linux `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_bw_sampling_interval(&mut self, w: &Window) {
        self.lt_last_stamp = (self.c.delivered_mstamp / 1_000) as u32;
        self.lt_last_delivered = w.delivered;
        self.lt_last_lost = w.lost;
        self.lt_rtt_cnt = 0;
    }

    /// Linux `bbr_reset_lt_bw_sampling`.
    fn reset_lt_bw_sampling(&mut self, w: &Window) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(w);
    }

    /// Linux `bbr_lt_bw_interval_done`: two consistent lossy intervals ⇒ policed.
    fn lt_bw_interval_done(&mut self, w: &Window, bw: u64) {
        if self.lt_bw != 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT as u64 <= LT_BW_RATIO * self.lt_bw
                || self.c.rate_bytes_per_sec(diff, BBR_UNIT) <= LT_BW_DIFF
            {
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.c.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(w);
    }

    /// Linux `bbr_lt_bw_sampling`: detect a token-bucket policer from intervals of 4–16
    /// rounds that start and end with a loss and lose ≥ 20 %.
    fn lt_bw_sampling(&mut self, w: &Window, losses: u32, is_app_limited: bool) {
        if self.lt_use_bw {
            if self.c.mode == Mode::ProbeBw && self.c.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(w);
                    self.reset_probe_bw_mode();
                }
            }
            return;
        }
        // Start at the first loss, once the policer's bucket is empty.
        if !self.lt_is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(w);
            self.lt_is_sampling = true;
        }
        if is_app_limited {
            self.reset_lt_bw_sampling(w);
            return;
        }
        if self.c.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(w);
            return;
        }
        // End the interval at a loss (tokens exhausted).
        if losses == 0 {
            return;
        }
        let lost = w.lost - self.lt_last_lost;
        let delivered = w.delivered - self.lt_last_delivered;
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = ((self.c.delivered_mstamp / 1_000) as u32).wrapping_sub(self.lt_last_stamp);
        if (t as i32) < 1 {
            return;
        }
        if t >= u32::MAX / 1_000 {
            self.reset_lt_bw_sampling(w);
            return;
        }
        let t_us = t as u64 * 1_000;
        let bw = delivered * BW_UNIT / t_us;
        self.lt_bw_interval_done(w, bw);
    }

    /// Linux `bbr_update_bw`: count rounds, run the LT sampler, feed the max-bw filter.
    fn update_bw(&mut self, w: &Window, rs: &RateSample) {
        self.c.round_start = false;
        let (Some(delivered), Some(interval_us)) = (rs.delivered, interval_us(rs)) else {
            return;
        };
        if rs.prior_delivered >= self.c.next_rtt_delivered {
            self.c.next_rtt_delivered = w.delivered;
            self.rtt_cnt += 1;
            self.c.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(w, rs.losses, rs.is_app_limited);
        let bw = delivered * BW_UNIT / interval_us;
        // App-limited samples only count if they raise the estimate.
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.update(CYCLE_LEN as u64 + 2, self.rtt_cnt, bw);
        }
    }

    /// Linux `bbr_update_ack_aggregation` over 5-round windows.
    fn update_ack_aggregation(&mut self, w: &Window, rs: &RateSample) {
        let bw = self.bw();
        self.c
            .update_ack_aggregation(w, rs, bw, EXTRA_ACKED_WIN_RTTS);
    }

    /// Linux `bbr_check_full_bw_reached`: 3 rounds without 25 % growth ⇒ pipe full.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.c.full_bw_reached || !self.c.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = (self.c.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if self.max_bw() >= bw_thresh {
            self.c.full_bw = self.max_bw();
            self.c.full_bw_cnt = 0;
            return;
        }
        self.c.full_bw_cnt += 1;
        self.c.full_bw_reached = self.c.full_bw_cnt >= FULL_BW_CNT;
    }

    /// Linux `bbr_check_drain`: STARTUP → DRAIN → PROBE_BW.
    fn check_drain(&mut self, w: &mut Window) {
        self.enter_drain(w);
        if self.c.mode == Mode::Drain && self.drained(w) {
            self.reset_probe_bw_mode();
        }
    }

    /// Linux `bbr_update_min_rtt`: the 10 s min_rtt filter and PROBE_RTT.
    fn update_min_rtt(&mut self, w: &mut Window, rs: &RateSample) {
        let c = &mut self.c;
        let now = w.jiffies(c.hz);
        let expired = take_min_rtt(
            &mut c.min_rtt_us,
            &mut c.min_rtt_stamp,
            c.min_rtt_win_jiffies,
            now,
            rs,
        );
        c.enter_probe_rtt(w, expired);
        self.hold_probe_rtt(w, rs, now, CWND_MIN_TARGET);
    }

    /// Linux `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.c.pacing_gain, self.c.cwnd_gain) = match self.c.mode {
            Mode::Startup => (self.c.startup_gain, self.c.startup_gain),
            Mode::Drain => (self.drain_gain, self.c.startup_gain),
            Mode::ProbeBw => (
                if self.lt_use_bw {
                    BBR_UNIT
                } else {
                    PACING_GAIN[self.c.cycle_idx as usize]
                },
                self.cwnd_gain_param,
            ),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// Linux `bbr_update_model`.
    fn update_model(&mut self, w: &mut Window, rs: &RateSample) {
        self.update_bw(w, rs);
        self.update_ack_aggregation(w, rs);
        self.update_cycle_phase(w, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(w);
        self.update_min_rtt(w, rs);
        self.update_gains();
    }
}

impl CongestionControl for Bbr {
    fn phase(&self) -> Option<&'static str> {
        Some(self.c.mode.name())
    }

    /// Linux `bbr_ssthresh`: entering loss recovery only saves cwnd (for the restore).
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        self.ensure_init(w);
        self.c.save_cwnd(w);
        w.ssthresh
    }

    /// Linux `bbr_set_state`: an RTO ends the round and restarts full-pipe detection.
    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        self.ensure_init(w);
        if new == CaState::Loss {
            self.c.prev_ca_state = CaState::Loss;
            self.c.full_bw = 0;
            self.c.round_start = true; // treat the RTO like the end of a round
            self.lt_bw_sampling(w, 1, false);
        }
    }

    /// Linux `bbr_undo_cwnd`: a spurious recovery restarts full-pipe detection.
    fn on_spurious_loss(&mut self, w: &mut Window) -> u32 {
        self.ensure_init(w);
        self.c.full_bw = 0;
        self.c.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(w);
        w.cwnd
    }

    /// Linux `bbr_main`.
    fn cong_control(&mut self, w: &mut Window, rs: &RateSample) -> bool {
        self.ensure_init(w);
        if rs.acked_sacked > 0 {
            self.c.delivered_mstamp = w.now_us(); // tcp_rate_gen
        }
        self.update_model(w, rs);
        let bw = self.bw();
        self.c.set_pacing_rate(w, bw, self.c.pacing_gain);
        self.set_cwnd(w, rs, rs.acked_sacked, bw, self.c.cwnd_gain);
        true
    }

    fn min_tso_segs(&self, _w: &Window) -> u32 {
        Bbr::min_tso_segs(self)
    }

    shared_hooks!();
}

impl Model for Bbr {
    common_in_field_c!();

    /// Linux `bbr_init`: the version's part (`Common::init` did the rest).
    fn init(&mut self, w: &mut Window) {
        self.c.prior_cwnd = 0;
        self.rtt_cnt = 0;
        self.packet_conservation = false;
        self.bw.reset(0, 0);
        self.reset_lt_bw_sampling(w);
    }

    /// Bandwidth in use (the LT estimate when policed), packets/µs << 24.
    fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.bw.get()
        }
    }

    /// Max-filtered bandwidth, packets/µs << 24.
    fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// Linux `bbr_tso_segs_goal`: ~1 ms of data at the pacing rate, 1–127 segments.
    fn tso_segs_goal(&self) -> u32 {
        let bytes = tso_autosize_bytes(self.c.pacing_rate, None, GSO_BYTES_MAX);
        let segs = ((bytes / self.c.mss as u64) as u32).max(self.min_tso_segs());
        segs.min(0x7f)
    }

    /// Linux `bbr_quantization_budget`: room for 3 TSO bursts, even, +2 when probing.
    fn quantization_budget(&self, cwnd: u32) -> u32 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal();
        cwnd = (cwnd + 1) & !1;
        if self.c.mode == Mode::ProbeBw && self.c.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// TCP_INIT_CWND: the kernel's constant, whatever the route's initcwnd.
    fn no_rtt_cwnd(&self) -> u32 {
        TCP_INIT_CWND
    }

    /// Linux `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, w: &mut Window) {
        let now = w.jiffies(self.c.hz);
        if self.c.probe_rtt_done(w, now) {
            self.c.min_rtt_stamp = now; // wait a while until the next PROBE_RTT
            self.reset_mode();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::tests::{build, run, Log};
    use super::*;
    use crate::engine::time::{SimDuration, SimTime};

    fn bbr_with(params: &[(&str, f64)], seed: u64) -> (Bbr, Window) {
        build(params, seed, "bbr", PARAMS, Bbr::new)
    }

    /// A sample of `delivered` packets over `interval_ms`, starting a new round.
    fn sample(delivered: u64, interval_ms: u64, prior_delivered: u64) -> RateSample {
        RateSample {
            delivered: Some(delivered),
            interval: Some(SimDuration::from_ms(interval_ms)),
            prior_delivered,
            prior_time: Some(SimTime::ZERO),
            acked_sacked: 1,
            ..Default::default()
        }
    }

    /// Modes in order of appearance, with the time each started.
    fn mode_changes(log: &Log) -> Vec<(u64, Mode)> {
        let mut v: Vec<(u64, Mode)> = Vec::new();
        for &(t, m, ..) in log {
            if v.last().is_none_or(|&(_, last)| last != m) {
                v.push((t, m));
            }
        }
        v
    }

    #[test]
    fn startup_drain_probe_bw_then_probe_rtt_every_10_s() {
        let (_, log) = run(bbr_with(&[], 1), 25);
        let modes = mode_changes(&log);
        let seq: Vec<Mode> = modes.iter().map(|&(_, m)| m).collect();
        use Mode::*;
        assert_eq!(
            seq,
            vec![Startup, Drain, ProbeBw, ProbeRtt, ProbeBw, ProbeRtt, ProbeBw],
            "{modes:?}"
        );
        let at = |i: usize| modes[i].0 as f64 / 1e9;
        // STARTUP: the bandwidth doubles per round from 100 to 1000 packets/s in ~4 rounds
        // and the pipe is declared full 3 rounds later; rounds stretch to ≤ 0.3 s with the
        // STARTUP queue (2.885 BDP in flight), so DRAIN starts well within 2 s.
        assert!(at(1) < 2.0, "DRAIN at {} s", at(1));
        // DRAIN empties a ≤ 1.9 BDP queue at 1 − 0.344 of the link rate: < 0.4 s.
        assert!(at(2) - at(1) < 0.4, "PROBE_BW at {} s", at(2));
        // min_rtt (100 ms) is never beaten, so its 10 s window expires 10 s after the
        // filter was stamped at connection start: the first ACK after t = 10 s.
        assert!((10.0..10.01).contains(&at(3)), "PROBE_RTT at {} s", at(3));
        // Then inflight drains (~0.1 s), 200 ms at 4 packets (≥ 1 round of 0.1 s).
        assert!(
            (10.3..10.45).contains(&at(4)),
            "PROBE_RTT exit at {} s",
            at(4)
        );
        // The next one comes 10 s after the exit restamped the filter.
        let gap = at(5) - at(4);
        assert!((10.0..10.01).contains(&gap), "next PROBE_RTT after {gap} s");
    }

    #[test]
    fn probe_rtt_holds_cwnd_at_4_for_at_least_200_ms() {
        let (_, log) = run(bbr_with(&[], 1), 12);
        let in_rtt: Vec<_> = log.iter().filter(|e| e.1 == Mode::ProbeRtt).collect();
        assert!(!in_rtt.is_empty());
        assert!(in_rtt.iter().all(|e| e.5 == 4), "cwnd above 4 in PROBE_RTT");
        // Time spent with inflight ≤ 4 inside PROBE_RTT: ≥ 200 ms (bbr_probe_rtt_mode_ms).
        // (Measured up to the ACK on which PROBE_RTT ends.)
        let first_low = in_rtt.iter().find(|e| e.6 <= 4).unwrap().0;
        let last = in_rtt.last().unwrap().0;
        let exit = log.iter().find(|e| e.0 > last).unwrap();
        assert!(
            exit.0 - first_low >= 200_000_000,
            "{} ns",
            exit.0 - first_low
        );
        // Pacing gain 1, and the pre-PROBE_RTT cwnd is restored on exit (≥ 2 BDP = 200).
        assert!(in_rtt.iter().all(|e| e.3 == 256));
        assert!(exit.5 >= 200, "cwnd after PROBE_RTT {}", exit.5);
    }

    #[test]
    fn probe_bw_cycles_gains_5_4_then_3_4_then_six_phases_of_1() {
        let (path, log) = run(bbr_with(&[], 3), 9);
        let bw_log: Vec<_> = log.iter().filter(|e| e.1 == Mode::ProbeBw).collect();
        let want = [320, 192, 256, 256, 256, 256, 256, 256];
        for e in &bw_log {
            assert_eq!(e.3, want[e.2 as usize], "phase {} gain {}", e.2, e.3);
        }
        // Phases advance by one (mod 8); every complete phase but the 3/4 one (which ends
        // as soon as inflight ≤ BDP) lasts more than min_rtt = 100 ms.
        let mut phases: Vec<(u32, u64, u64)> = Vec::new();
        for e in &bw_log {
            match phases.last_mut() {
                Some(p) if p.0 == e.2 => p.2 = e.0,
                _ => phases.push((e.2, e.0, e.0)),
            }
        }
        for w in phases.windows(2) {
            assert_eq!(w[1].0, (w[0].0 + 1) % 8, "{phases:?}");
        }
        assert!(phases.len() >= 16, "{}", phases.len());
        for p in &phases[1..phases.len() - 1] {
            if p.0 != 1 {
                assert!(
                    p.2 - p.1 >= 99_000_000,
                    "phase {} lasted {} ns",
                    p.0,
                    p.2 - p.1
                );
            }
        }
        assert_eq!(path.b.c.pacing_gain, want[path.b.c.cycle_idx as usize]);
    }

    #[test]
    fn probe_bw_max_filter_holds_the_bottleneck_rate_and_cwnd_is_2_bdp_plus_budget() {
        let (path, log) = run(bbr_with(&[("extra_acked_gain", 0.0)], 5), 9);
        // 1000 packets/s = 0.001 packets/µs · 2^24 = 16777.2. A sample can't exceed it
        // (each packet needs 1 ms at the bottleneck); one over ≥ 100 packets is ≥ 100/101
        // of it, so the filtered max is in [16611, 16777].
        let bw = path.b.max_bw();
        assert!((16_611..=16_777).contains(&bw), "max_bw {bw}");
        assert_eq!(path.b.c.min_rtt_us, 100_000);
        // cwnd target = ⌈2 · bw · min_rtt⌉ + 3 · tso_goal, rounded up to even, +2 in phase 0:
        // 2 · 16777 · 100000 / 2^24 = 199.9996 → 200 (≥ 199.0 for any bw ≥ 16694). The
        // pacing rate 1.43 MB/s gives 1399 B per 1 ms < 1 MSS, so tso_goal = 2 (the rate is
        // above 1.2 Mbit/s): 200 + 6 = 206, and 208 in the 5/4 phase.
        assert!(bw >= 16_694, "max_bw {bw}");
        let tail: Vec<_> = log.iter().filter(|e| e.0 > 5_000_000_000).collect();
        assert!(tail.iter().all(|e| e.1 == Mode::ProbeBw));
        // (In phase 0 cwnd climbs by one packet per ACK from 206 to 208; it snaps back down.)
        for e in &tail {
            if e.2 == 0 {
                assert!((206..=208).contains(&e.5), "cwnd {} in phase 0", e.5);
            } else {
                assert_eq!(e.5, 206, "cwnd {} in phase {}", e.5, e.2);
            }
        }
        assert!(tail.iter().any(|e| e.2 == 0 && e.5 == 208));
    }

    #[test]
    fn probe_bw_start_phase_is_random_never_3_4_and_fixed_per_seed() {
        let mut seen = [0u32; 8];
        for seed in 0..300 {
            let first = |s| {
                let (mut b, mut w) = bbr_with(&[], s);
                b.ensure_init(&mut w);
                b.c.full_bw_reached = true;
                b.reset_probe_bw_mode();
                b.c.cycle_idx
            };
            let idx = first(seed);
            assert_eq!(idx, first(seed), "seed {seed} not deterministic");
            seen[idx as usize] += 1;
        }
        // cycle_idx = 7 − U{0..6}, then +1 mod 8: phases 2..7 and 0, each ~1/7, never 1.
        assert_eq!(seen[1], 0);
        for (i, n) in seen.iter().enumerate() {
            if i != 1 {
                assert!((20..=70).contains(n), "phase {i} drawn {n} times of 300");
            }
        }
    }

    #[test]
    fn startup_gains_are_2_885_then_drain_0_344() {
        let (mut b, mut w) = bbr_with(&[], 1);
        b.ensure_init(&mut w);
        b.update_gains();
        // 256 · 2885/1000 + 1 = 738 + 1 = 739; 256 · 1000/2885 = 88.
        assert_eq!((b.c.pacing_gain, b.c.cwnd_gain), (739, 739));
        b.c.mode = Mode::Drain;
        b.update_gains();
        assert_eq!((b.c.pacing_gain, b.c.cwnd_gain), (88, 739));
        b.c.mode = Mode::ProbeRtt;
        b.update_gains();
        assert_eq!((b.c.pacing_gain, b.c.cwnd_gain), (256, 256));
    }

    #[test]
    fn startup_initial_pacing_rate_is_high_gain_times_iw_over_srtt() {
        let (mut b, mut w) = bbr_with(&[], 1);
        b.ensure_init(&mut w);
        // bw = 10 · 2^24 / 100000 µs = 1677 (1677.72 truncated);
        // 1677 · 1448 = 2428296; · 739 = 1794510744; >> 8 = 7009807;
        // · 990000 = 6939708930000; >> 24 = 413638 bytes/s (413638.2; ≈ 2.885 · 10 · 1448 B
        // / 0.1 s · 0.99).
        assert_eq!(b.c.pacing_rate, 413_638);
        assert_eq!(b.pacing_rate_bps(&w), Some(413_638 * 8));
    }

    #[test]
    fn startup_exits_after_three_rounds_without_25_percent_growth() {
        let (mut b, mut w) = bbr_with(&[], 1);
        b.ensure_init(&mut w);
        // One round per ACK: each sample's packet was sent after the previous round ended.
        // Rates in packets/s over 1 s: 100, 200, 400 (each ≥ 1.25 × the last full_bw),
        // 450 (< 1.25 · 400 = 500: count 1), 500 (≥ 500: new full_bw, count 0), then 520
        // three times (< 625): full pipe on the third, and DRAIN.
        let mut modes = Vec::new();
        for pkts in [100, 200, 400, 450, 500, 520, 520, 520] {
            let prior = w.delivered;
            w.delivered += pkts;
            w.in_flight = 1000;
            let rs = sample(pkts, 1000, prior);
            b.cong_control(&mut w, &rs);
            modes.push(b.c.mode);
        }
        use Mode::*;
        assert_eq!(
            modes,
            [Startup, Startup, Startup, Startup, Startup, Startup, Startup, Drain]
        );
        // ssthresh exported at DRAIN entry: BDP at gain 1 + budget.
        // bw = 520 · 2^24 / 10^6 = 8724 (8724.15); ⌈8724 · 100000 / 2^24⌉ = ⌈51.998⌉ = 52;
        // pacing rate ≥ 1.2 Mbit/s → tso_goal 2 → 52 + 6 = 58.
        assert_eq!(w.ssthresh, 58);
    }

    #[test]
    fn probe_bw_max_filter_forgets_a_sample_after_10_rounds() {
        let (mut b, mut w) = bbr_with(&[], 1);
        b.ensure_init(&mut w);
        b.c.full_bw_reached = true;
        b.c.mode = Mode::ProbeBw;
        // Round 1: 1000 packets/s (16777); rounds 2..: 500 packets/s (8388).
        let mut max_at = Vec::new();
        for (round, pkts) in [(1, 1000), (2, 500), (3, 500), (11, 500), (12, 500)] {
            while b.rtt_cnt() + 1 < round {
                let prior = w.delivered;
                w.delivered += 1;
                b.update_bw(&w, &sample(500, 1000, prior));
            }
            let prior = w.delivered;
            w.delivered += 1;
            b.update_bw(&w, &sample(pkts, 1000, prior));
            assert_eq!(b.rtt_cnt(), round);
            max_at.push(b.max_bw());
        }
        // The 1000/s sample stays the max while round − 1 ≤ 10 (Linux minmax: a sample
        // expires when more than `win` = 10 rounds old), so through round 11.
        assert_eq!(max_at, [16777, 16777, 16777, 16777, 8388]);
    }

    fn probe_bw_at(phase: u32) -> (Bbr, Window) {
        let (mut b, mut w) = bbr_with(&[("extra_acked_gain", 0.0)], 1);
        b.ensure_init(&mut w);
        b.c.full_bw_reached = true;
        b.c.mode = Mode::ProbeBw;
        b.bw.reset(1, 16_777); // 1000 packets/s
        b.c.min_rtt_us = 100_000;
        b.c.pacing_rate = 1_433_501; // ≥ 150 kB/s → tso_goal 2
        b.c.cycle_idx = phase;
        b.update_gains();
        b.c.cycle_mstamp = 0;
        b.c.delivered_mstamp = 150_000; // 150 ms into the phase (> min_rtt)
        w.now = SimTime(150_000_000);
        w.next_departure = w.now;
        (b, w)
    }

    #[test]
    fn probe_bw_5_4_phase_needs_1_25_bdp_in_flight_or_a_loss_to_end() {
        // inflight(bw, 5/4) = ⌈16777 · 100000 · 320/256 / 2^24⌉ = ⌈124.9997⌉ = 125;
        // + 3 · 2 = 131 → even 132 → +2 in phase 0 = 134. The EDT estimate adds tso_goal = 2
        // when the gain is above 1, so prior_in_flight 132 is enough and 131 is not.
        let (b, w) = probe_bw_at(0);
        let mut rs = sample(1, 1000, 0);
        rs.prior_in_flight = 131;
        assert!(!b.is_next_cycle_phase(&w, &rs));
        rs.prior_in_flight = 132;
        assert!(b.is_next_cycle_phase(&w, &rs));
        // A loss ends it at any inflight ...
        rs.prior_in_flight = 50;
        rs.losses = 1;
        assert!(b.is_next_cycle_phase(&w, &rs));
        // ... but never before min_rtt has elapsed.
        let (mut b, w) = probe_bw_at(0);
        b.c.delivered_mstamp = 100_000;
        rs.prior_in_flight = 200;
        assert!(!b.is_next_cycle_phase(&w, &rs));
    }

    #[test]
    fn probe_bw_3_4_phase_ends_early_once_inflight_is_down_to_bdp() {
        // inflight(bw, 1) = ⌈99.9998⌉ = 100, + 6 = 106 (even; phase 1 gets no +2).
        let (mut b, w) = probe_bw_at(1);
        b.c.delivered_mstamp = 10_000; // only 10 ms into the phase
        let mut rs = sample(1, 1000, 0);
        rs.prior_in_flight = 107;
        assert!(!b.is_next_cycle_phase(&w, &rs));
        rs.prior_in_flight = 106;
        assert!(b.is_next_cycle_phase(&w, &rs));
    }

    #[test]
    fn recovery_conserves_packets_for_a_round_then_restores_prior_cwnd() {
        let (mut b, mut w) = bbr_with(&[], 1);
        b.ensure_init(&mut w);
        w.cwnd = 100;
        w.delivered = 1000;
        // Entering Recovery: ssthresh() only saves cwnd and keeps ssthresh.
        let ss = w.ssthresh;
        assert_eq!(b.on_congestion_event(&mut w, LossKind::Recovery), ss);
        assert_eq!(b.c.prior_cwnd, 100);
        w.ca_state = CaState::Recovery;
        // First ACK: 2 delivered, 3 newly lost, 50 in flight: cwnd = in_flight + acked = 52.
        w.in_flight = 50;
        let mut rs = sample(2, 1000, 0);
        rs.acked_sacked = 2;
        rs.losses = 3;
        b.cong_control(&mut w, &rs);
        assert_eq!(w.cwnd, 52);
        // Next ACK: 1 delivered, 2 lost, 52 in flight: 52 − 2 = 50 < 52 + 1, so 53.
        w.in_flight = 52;
        let mut rs = sample(1, 1000, 0);
        rs.losses = 2;
        b.cong_control(&mut w, &rs);
        assert_eq!(w.cwnd, 53);
        // Back to Open: cwnd = max(cwnd, prior_cwnd) = 100 (no bw yet: the target is only
        // the 4-packet budget, which does not cut cwnd before the pipe is full).
        w.ca_state = CaState::Open;
        let rs = sample(1, 1000, 0);
        b.cong_control(&mut w, &rs);
        assert_eq!(w.cwnd, 100);
    }

    #[test]
    fn loss_state_rto_ends_the_round_and_restarts_full_pipe_detection() {
        let (mut b, mut w) = bbr_with(&[], 1);
        b.ensure_init(&mut w);
        b.c.full_bw = 5_000;
        b.c.full_bw_cnt = 2;
        w.cwnd = 80;
        w.delivered = 1000;
        // tcp_enter_loss: ssthresh() saves cwnd, the core sets cwnd = in_flight + 1.
        b.on_congestion_event(&mut w, LossKind::Rto);
        w.cwnd = 1;
        w.ca_state = CaState::Loss;
        b.on_state_change(&mut w, CaState::Loss);
        assert_eq!(b.c.full_bw, 0);
        assert!(b.c.round_start);
        assert_eq!(b.c.prior_cwnd, 80);
        // ACKs in Loss grow cwnd by the packets delivered while below the target (no bw
        // yet: target = the 3 · 2 packet budget = 6): 1 + 2 = 3, raised to the minimum 4.
        w.in_flight = 0;
        let mut rs = sample(2, 1000, 0);
        rs.acked_sacked = 2;
        b.cong_control(&mut w, &rs);
        assert_eq!(w.cwnd, 4);
        // Leaving Loss restores the cwnd saved at the RTO (80 ≥ target: no growth).
        w.ca_state = CaState::Open;
        b.cong_control(&mut w, &rs);
        assert_eq!(w.cwnd, 80);
    }

    #[test]
    fn undo_restarts_full_pipe_detection_and_keeps_cwnd() {
        let (mut b, mut w) = bbr_with(&[], 1);
        b.ensure_init(&mut w);
        b.c.full_bw = 5_000;
        b.c.full_bw_cnt = 2;
        b.lt_use_bw = true;
        w.cwnd = 77;
        assert_eq!(b.on_spurious_loss(&mut w), 77);
        assert_eq!((b.c.full_bw, b.c.full_bw_cnt, b.lt_use_bw()), (0, 0, false));
    }

    #[test]
    fn probe_bw_extra_acked_measures_ack_aggregation() {
        let (mut b, mut w) = probe_bw_at(2);
        b.c.extra_acked_gain = 256;
        w.cwnd = 100;
        // bw 16777 = 1 packet/ms. ACK 1 (t = 150 ms, 1 packet) opens an epoch; ACK 2 at
        // +1 ms brings 10: expected 16777 · 1000 / 2^24 = 0 (0.99) → extra 11 − 0 = 11;
        // ACK 3 at +2 ms brings 10: expected 1 (1.99) → extra 21 − 1 = 20.
        let mut extra = Vec::new();
        for (t_us, acked) in [(150_000, 1), (151_000, 10), (152_000, 10)] {
            w.now = SimTime(t_us * 1_000);
            b.c.delivered_mstamp = t_us;
            let mut rs = sample(acked as u64, 100, 0);
            rs.acked_sacked = acked;
            b.c.round_start = false;
            b.update_ack_aggregation(&w, &rs);
            extra.push(b.c.extra_acked());
        }
        assert_eq!(extra, [1, 11, 20]);
        // Allowance: min(20, bw · 100 ms = 99.99 → 99) = 20 packets, once the pipe is full.
        assert_eq!(b.ack_aggregation_cwnd(), 20);
    }

    #[test]
    fn probe_bw_policer_detection_paces_at_the_long_term_rate_for_48_rounds() {
        let (mut b, mut w) = bbr_with(&[], 1);
        b.ensure_init(&mut w);
        b.c.full_bw_reached = true;
        b.c.mode = Mode::ProbeBw;
        b.c.cycle_idx = 2;
        // A policer passes 1 packet per 2 ms (500 packets/s) and drops as many (50 % loss);
        // delivery-rate samples see bursts at 1000 packets/s. One round = 50 ACKs.
        let mut lt_from = None;
        for k in 1..=4_000u64 {
            w.now = SimTime(k * 2_000_000);
            w.delivered = k;
            w.lost = k;
            let mut rs = sample(100, 100, k.saturating_sub(50));
            rs.losses = 1;
            b.cong_control(&mut w, &rs);
            if b.lt_use_bw() && lt_from.is_none() {
                lt_from = Some(b.rtt_cnt());
                // 500 packets/s = 0.0005 · 2^24 = 8388.6: two 4-round intervals of
                // 200 packets in 400 ms each give 200 · 2^24 / 400000 = 8388.
                assert_eq!(b.lt_bw(), 8388);
                assert_eq!(b.bw(), 8388);
                assert_eq!(b.max_bw(), 16777);
            }
            if b.lt_use_bw() {
                assert_eq!(b.c.pacing_gain, 256, "gain cycling is off while policed");
            }
            if let (Some(from), false) = (lt_from, b.lt_use_bw()) {
                // Released after 48 rounds in PROBE_BW.
                assert_eq!(b.rtt_cnt() - from, 48);
                return;
            }
        }
        panic!("policer mode never ended (started at round {lt_from:?})");
    }
}
