//! TCP Veno as in Linux `tcp_veno.c` (Fu & Liew, IEEE JSAC 21(2) 2003).
//!
//! Veno estimates the backlog N = cwnd − cwnd·baseRTT/RTT (packets the flow keeps queued,
//! Vegas' "diff") and uses it for two decisions:
//! - **increase**: N < β ⇒ Reno (+1 per RTT); N ≥ β (congestive state) ⇒ +1 per *two*
//!   RTTs (`snd_cwnd_cnt` counts one window of ACKs, `inc` alternates);
//! - **decrease** (`ssthresh`): N < β ⇒ the loss is taken as random (non-congestive) and
//!   cwnd is cut by only 1/5 (ssthresh = cwnd·4/5); else cwnd/2.
//!
//! β = 3 packets, kept ×2 (`V_PARAM_SHIFT` = 1) as in the kernel. Kernel details kept:
//! - RTT samples are taken +1 µs; baseRTT is the minimum ever (reset by `TX_START` /
//!   `CWND_RESTART` only);
//! - `minrtt` is reset after **every** `cong_avoid` call (not once per RTT as in Vegas), so
//!   N is computed from the current ACK's own sample (or from the "infinite" 0x7fffffff µs
//!   if that ACK had none, which makes N ≈ cwnd);
//! - `cntrtt` is a `u16` that is never reset: Veno's rules apply from the 3rd sample of the
//!   connection on (and again 3 samples after the counter wraps at 65536);
//! - the last N computed in `cong_avoid` is what the next `ssthresh` call sees;
//! - Veno is active only in Open (Reno increase in other states), as Vegas.
//!
//! Undo is Reno's.
use super::vegas::{reno_cong_avoid, RTT_INFINITE_US};
use super::{
    AckSample, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind, ParamSpec,
    Params, Window,
};
use crate::scenario::ConfigError;

/// Linux `V_PARAM_SHIFT`: N and β are kept with one fractional bit.
const V_PARAM_SHIFT: u32 = 1;

pub const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "beta",
    default: 3.0,
    unit: "pkts",
    help: "backlog threshold: below it losses count as random (cut 1/5), at or above congestive (cut 1/2)",
}];

pub const INFO: CcInfo = CcInfo {
    name: "veno",
    summary: "Veno: Reno whose backoff is 1/5 for random (small-backlog) losses and 1/2 for congestive ones",
    feedback: "hybrid",
    reference: "Fu & Liew, IEEE JSAC 21(2) 2003; Linux net/ipv4/tcp_veno.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux Veno (`struct veno`).
#[derive(Debug, Clone)]
pub struct Veno {
    /// β ≪ 1.
    beta: u32,
    doing_veno_now: bool,
    cntrtt: u16,
    minrtt_us: u32,
    basertt_us: u32,
    inc: bool,
    /// Last backlog estimate N ≪ 1.
    diff: u32,
}

impl Veno {
    /// Build from the scenario's `beta` (backlog threshold, packets).
    pub fn new(p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        let beta = p.int("beta", 0, 1 << 20)? as u32;
        Ok(Veno {
            beta: beta << V_PARAM_SHIFT,
            doing_veno_now: true,
            cntrtt: 0,
            minrtt_us: RTT_INFINITE_US,
            basertt_us: RTT_INFINITE_US,
            inc: true,
            diff: 0,
        })
    }

    /// Linux `tcp_veno_init` (cntrtt is not touched: the kernel never resets it).
    fn init(&mut self) {
        self.basertt_us = RTT_INFINITE_US;
        self.inc = true;
        self.enable();
    }

    fn enable(&mut self) {
        self.doing_veno_now = true;
        self.minrtt_us = RTT_INFINITE_US;
    }

    /// The last backlog estimate N in packets ×2, as `ssthresh` will use it.
    pub fn backlog_x2(&self) -> u32 {
        self.diff
    }
}

impl CongestionControl for Veno {
    fn on_pkts_acked(&mut self, _w: &mut Window, s: &AckSample) {
        let Some(rtt) = s.rtt else { return };
        let vrtt = (rtt.us().min(i32::MAX as u64) as u32).wrapping_add(1);
        if vrtt < self.basertt_us {
            self.basertt_us = vrtt;
        }
        self.minrtt_us = self.minrtt_us.min(vrtt);
        self.cntrtt = self.cntrtt.wrapping_add(1);
    }

    fn on_state_change(&mut self, _w: &mut Window, new: CaState) {
        if new == CaState::Open {
            self.enable();
        } else {
            self.doing_veno_now = false;
        }
    }

    fn on_cwnd_event(&mut self, _w: &mut Window, ev: CwndEvent) {
        if matches!(ev, CwndEvent::CwndRestart | CwndEvent::TxStart) {
            self.init();
        }
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        if !self.doing_veno_now {
            reno_cong_avoid(w, acked);
            return;
        }
        if !w.is_cwnd_limited() {
            return; // application-limited (minrtt is kept, as in the kernel)
        }
        if self.cntrtt <= 2 {
            reno_cong_avoid(w, acked);
        } else {
            let rtt = self.minrtt_us as u64;
            // Window the path needs at the base RTT, ×2.
            let target = ((w.cwnd as u64 * self.basertt_us as u64) << V_PARAM_SHIFT) / rtt;
            // N ≪ 1 = cwnd ≪ 1 − target, stored in 32 bits like the kernel's u32.
            self.diff = ((w.cwnd as u64) << V_PARAM_SHIFT).wrapping_sub(target) as u32;
            let mut acked = acked;
            let mut done = false;
            if w.in_slow_start() {
                acked = w.slow_start(acked);
                done = acked == 0;
            }
            if !done {
                if self.diff < self.beta {
                    // Non-congestive: Reno, +1 per RTT.
                    let cwnd = w.cwnd;
                    w.cong_avoid_ai(cwnd, acked);
                } else if w.cwnd_cnt >= w.cwnd {
                    // Congestive: one window of ACKs counted; grow every other time.
                    if self.inc && w.cwnd < w.cwnd_clamp {
                        w.cwnd += 1;
                        self.inc = false;
                    } else {
                        self.inc = true;
                    }
                    w.cwnd_cnt = 0;
                } else {
                    w.cwnd_cnt += acked;
                }
            }
            if w.cwnd < 2 {
                w.cwnd = 2;
            } else if w.cwnd > w.cwnd_clamp {
                w.cwnd = w.cwnd_clamp;
            }
        }
        // Wiped after every ACK (cntrtt is deliberately not reset in the kernel).
        self.minrtt_us = RTT_INFINITE_US;
    }

    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        if self.diff < self.beta {
            // Small backlog: the loss is probably not from congestion.
            (w.cwnd.wrapping_mul(4) / 5).max(2)
        } else {
            (w.cwnd >> 1).max(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::SimDuration;
    use std::collections::BTreeMap;

    fn veno() -> (Veno, Window) {
        let m = BTreeMap::new();
        let p = Params::new("veno", &m, PARAMS).unwrap();
        let v = Veno::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (v, w)
    }

    fn ack(v: &mut Veno, w: &mut Window, rtt_us: u64) {
        v.on_pkts_acked(
            w,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(SimDuration::from_us(rtt_us)),
                in_flight: 0,
            },
        );
        v.cong_avoid(w, 1);
    }

    /// Congestion avoidance at cwnd 50 with baseRTT = 100 ms (+1 µs) from three earlier
    /// samples, then one ACK with `rtt_us`.
    fn at_50_then(rtt_us: u64) -> (Veno, Window) {
        let (mut v, mut w) = veno();
        w.cwnd = 50;
        w.ssthresh = 10;
        for _ in 0..3 {
            ack(&mut v, &mut w, 100_000);
        }
        ack(&mut v, &mut w, rtt_us);
        (v, w)
    }

    #[test]
    fn loss_with_backlog_below_beta_cuts_to_four_fifths() {
        // rtt 104000 µs (+1): target = 50·100001·2/104001 = 96 (96.15), N·2 = 100 − 96 = 4
        // < β·2 = 6 (N = 2 packets): random loss, ssthresh = 50·4/5 = 40.
        let (mut v, mut w) = at_50_then(104_000);
        assert_eq!(v.backlog_x2(), 4);
        assert_eq!(v.on_congestion_event(&mut w, LossKind::Recovery), 40);
    }

    #[test]
    fn loss_with_backlog_at_or_above_beta_halves() {
        // rtt 110000 µs (+1): target = 10000100/110001 = 90 (90.9), N·2 = 10 ≥ 6 (N = 5):
        // congestive loss, ssthresh = 50/2 = 25.
        let (mut v, mut w) = at_50_then(110_000);
        assert_eq!(v.backlog_x2(), 10);
        assert_eq!(v.on_congestion_event(&mut w, LossKind::Recovery), 25);
        // Exactly β: rtt 106383 µs (+1): target = 10000100/106384 = 94 (94.0), N·2 = 6,
        // not below 6: congestive.
        let (mut v, mut w) = at_50_then(106_383);
        assert_eq!(v.backlog_x2(), 6);
        assert_eq!(v.on_congestion_event(&mut w, LossKind::Recovery), 25);
    }

    #[test]
    fn congestion_avoidance_congestive_state_grows_every_other_window() {
        // rtt 150 ms vs base 100 ms at cwnd 50: target = 10000100/150001 = 66, N·2 = 34 ≥ 6
        // (congestive) on every ACK. The first three ACKs were Reno-counted (cnt = 3), the
        // 4th counted in the congestive branch: cnt = 4. An ACK that finds cnt ≥ cwnd resets
        // it and grows only if `inc`; otherwise it adds 1.
        let (mut v, mut w) = at_50_then(150_000);
        assert_eq!(w.cwnd_cnt, 4);
        let mut acks = 0;
        while w.cwnd == 50 {
            ack(&mut v, &mut w, 150_000);
            acks += 1;
        }
        // cnt 4 → 50 takes 46 ACKs; the 47th finds cnt = 50 and grows (inc was 1).
        assert_eq!(acks, 47);
        acks = 0;
        while w.cwnd == 51 {
            ack(&mut v, &mut w, 150_000);
            acks += 1;
        }
        // At 51 (N·2 = 102 − 68 = 34): 51 counting ACKs + 1 that only flips inc, then
        // 51 + 1 that grows: 104 ACKs, i.e. +1 per two windows.
        assert_eq!(acks, 104);
    }

    #[test]
    fn congestion_avoidance_non_congestive_state_is_reno() {
        // N·2 = 4 < 6 on every ACK: Reno, cnt 4 → 50 takes 46 ACKs, then cwnd 51 (and at 51,
        // target = 10200102/104001 = 98, N·2 = 4: still Reno).
        let (mut v, mut w) = at_50_then(104_000);
        assert_eq!(w.cwnd_cnt, 4);
        let mut acks = 0;
        while w.cwnd == 50 {
            ack(&mut v, &mut w, 104_000);
            acks += 1;
        }
        assert_eq!(acks, 46);
        assert_eq!(w.cwnd, 51);
    }

    #[test]
    fn open_first_two_samples_are_reno_and_cntrtt_is_never_reset() {
        let (mut v, mut w) = veno();
        w.cwnd = 50;
        w.ssthresh = 10;
        ack(&mut v, &mut w, 100_000);
        ack(&mut v, &mut w, 200_000);
        assert_eq!(v.backlog_x2(), 0, "no estimate before the 3rd sample");
        v.on_cwnd_event(&mut w, CwndEvent::TxStart);
        ack(&mut v, &mut w, 200_000);
        // 3rd sample of the connection (the restart did not reset the count), baseRTT was
        // reset to this sample: N = 0.
        assert_eq!(v.cntrtt, 3);
        assert_eq!(v.backlog_x2(), 0);
    }

    #[test]
    fn open_ack_without_rtt_sample_sees_infinite_minrtt() {
        // minrtt is wiped after every ACK: an ACK without a sample computes
        // target = 50·100001·2/0x7fffffff = 0 and N·2 = 100: congestive.
        let (mut v, mut w) = at_50_then(100_000);
        v.on_pkts_acked(&mut w, &AckSample::default());
        v.cong_avoid(&mut w, 1);
        assert_eq!(v.backlog_x2(), 100);
        assert_eq!(v.on_congestion_event(&mut w, LossKind::Recovery), 25);
    }
}
