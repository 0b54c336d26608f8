//! TCP Westwood+ (Mascolo et al.; Grieco & Mascolo 2004) as in Linux `tcp_westwood.c`.
//!
//! Westwood+ grows like Reno but, after a loss, sets the window to the bandwidth it has
//! measured times the minimum RTT (the pipe size) instead of blindly halving. A random
//! (non-congestion) loss therefore costs little: the estimate still says the pipe is full.
//!
//! Kernel details kept here:
//! - **Bandwidth sample** once per RTT window: the bytes acknowledged (`bk`) over the
//!   elapsed jiffies, when more than max(last RTT, 50 ms) has passed. Units are bytes per
//!   jiffy (HZ configurable, 1000 by default) with integer division.
//! - **Filter**: `bw_ns_est = (7·bw_ns_est + sample)/8`, `bw_est = (7·bw_est + bw_ns_est)/8`;
//!   the first sample seeds both.
//! - **Byte counting** (`in_ack_event`): on the fast path (pure cumulative ACK) the
//!   advance of snd_una; on the slow path a duplicate ACK counts 1 MSS (`accounted`), and a
//!   later cumulative ACK covering more than 1 MSS is reduced by what was already counted.
//!   The very first ACK only synchronises `snd_una` (its bytes are not counted).
//! - **rtt_min**: min of the per-ACK RTT (in jiffies, rounded up); initially 20 s; after an
//!   RTO the next ACK replaces it with the latest RTT sample.
//! - **COMPLETE_CWR** (end of Recovery/CWR): ssthresh = cwnd = max(bw_est·rtt_min/MSS, 2);
//!   **LOSS** (RTO): ssthresh = the same value (cwnd restarts from 1 as usual).
//! - Increase, `ssthresh` hook and undo are Reno's (during the PRR reduction the window
//!   goes towards cwnd/2; the Westwood value replaces it at the end).
//!
//! Hook timing: Linux calls `in_ack_event` after `snd_una` has been advanced by the ACK.
//! Our sender calls `on_ack_event` before the retransmission queue is cleaned, with the
//! previous snd_una in the window view. So the flags are remembered in `on_ack_event` and the
//! accounting runs at the start of `on_pkts_acked` (called for every ACK right after
//! snd_una moves), before the ACK's RTT sample is taken, as in Linux.
use super::reno::Reno;
use super::{
    AckFlags, AckSample, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind, ParamSpec,
    Params, Window,
};
use crate::scenario::ConfigError;

pub const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "hz",
    default: 1000.0,
    unit: "Hz",
    help: "kernel jiffies rate (CONFIG_HZ): unit of the bandwidth estimate and RTTs",
}];

pub const INFO: CcInfo = CcInfo {
    name: "westwood",
    summary:
        "Westwood+: Reno increase; after a loss cwnd = ssthresh = measured bandwidth x min RTT",
    feedback: "loss",
    reference: "Grieco, Mascolo, ACM CCR 34(2) (2004); Linux net/ipv4/tcp_westwood.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux `struct westwood`.
#[derive(Debug, Clone)]
pub struct Westwood {
    hz: u32,
    initialized: bool,
    /// First, lightly smoothed bandwidth estimate (bytes per jiffy).
    bw_ns_est: u32,
    /// Bandwidth estimate (bytes per jiffy).
    bw_est: u32,
    /// Start of the current sampling window (jiffies).
    rtt_win_sx: u32,
    /// Bytes acknowledged in the current window.
    bk: u32,
    snd_una: u64,
    cumul_ack: u32,
    /// Bytes already counted for duplicate ACKs.
    accounted: u32,
    /// Latest RTT (jiffies).
    rtt: u32,
    /// Minimum RTT (jiffies).
    rtt_min: u32,
    first_ack: bool,
    reset_rtt_min: bool,
    /// Flags of the ACK being processed (see the module doc on hook timing).
    pending: Option<AckFlags>,
    reno: Reno,
}

impl Westwood {
    pub fn new(p: &Params<'_>, init: &FlowInit) -> Result<Self, ConfigError> {
        let hz = p.int("hz", 100, 100_000)? as u32;
        Ok(Westwood {
            hz,
            initialized: false,
            bw_ns_est: 0,
            bw_est: 0,
            rtt_win_sx: 0,
            bk: 0,
            snd_una: 0,
            cumul_ack: 0,
            accounted: 0,
            rtt: 20 * hz,
            rtt_min: 20 * hz,
            first_ack: true,
            reset_rtt_min: true,
            pending: None,
            reno: Reno::new(p, init)?,
        })
    }

    /// Bandwidth estimate in bytes per second (for tests and traces).
    pub fn bw_bytes_per_sec(&self) -> u64 {
        self.bw_est as u64 * self.hz as u64
    }

    /// (bw_est in bytes/jiffy, rtt_min in jiffies).
    pub fn estimate(&self) -> (u32, u32) {
        (self.bw_est, self.rtt_min)
    }

    /// Linux `tcp_westwood_init`, run on the first hook (the connection is established).
    fn ensure_init(&mut self, w: &Window) {
        if self.initialized {
            return;
        }
        self.initialized = true;
        self.rtt_win_sx = w.jiffies(self.hz);
        self.snd_una = w.snd_una;
    }

    /// Linux `usecs_to_jiffies` (rounds up).
    fn usecs_to_jiffies(&self, us: u64) -> u32 {
        let per = 1_000_000 / self.hz as u64;
        us.div_ceil(per).min(u32::MAX as u64) as u32
    }

    /// Linux `westwood_filter`.
    fn filter(&mut self, delta: u32) {
        let sample = self.bk / delta;
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            self.bw_ns_est = sample;
            self.bw_est = sample;
        } else {
            self.bw_ns_est = do_filter(self.bw_ns_est, sample);
            self.bw_est = do_filter(self.bw_est, self.bw_ns_est);
        }
    }

    /// Linux `westwood_update_window`: close the sampling window after an RTT (≥ 50 ms).
    fn update_window(&mut self, w: &Window) {
        let delta = w.jiffies(self.hz).wrapping_sub(self.rtt_win_sx);
        if self.first_ack {
            self.snd_una = w.snd_una;
            self.first_ack = false;
        }
        // Sampling windows shorter than 50 ms are avoided: the sample keeps building.
        if self.rtt != 0 && delta > self.rtt.max(self.hz / 20) {
            self.filter(delta);
            self.bk = 0;
            self.rtt_win_sx = w.jiffies(self.hz);
        }
    }

    fn update_rtt_min(&mut self) {
        if self.reset_rtt_min {
            self.rtt_min = self.rtt;
            self.reset_rtt_min = false;
        } else {
            self.rtt_min = self.rtt_min.min(self.rtt);
        }
    }

    /// Linux `westwood_acked_count` (slow path): bytes this ACK stands for.
    fn acked_count(&mut self, w: &Window) -> u32 {
        let mss = w.mss;
        self.cumul_ack = w.snd_una.wrapping_sub(self.snd_una) as u32;
        if self.cumul_ack == 0 {
            // Duplicate ACK: a segment left the network; count it now, subtract later.
            self.accounted = self.accounted.wrapping_add(mss);
            self.cumul_ack = mss;
        }
        if self.cumul_ack > mss {
            // Partial or delayed ACK: remove what dupACKs already counted.
            if self.accounted >= self.cumul_ack {
                self.accounted -= self.cumul_ack;
                self.cumul_ack = mss;
            } else {
                self.cumul_ack -= self.accounted;
                self.accounted = 0;
            }
        }
        self.snd_una = w.snd_una;
        self.cumul_ack
    }

    /// Linux `tcp_westwood_ack` (`in_ack_event`), run once snd_una is up to date.
    fn account_ack(&mut self, w: &Window, flags: AckFlags) {
        self.update_window(w);
        if flags.slow_path {
            let n = self.acked_count(w);
            self.bk = self.bk.wrapping_add(n);
        } else {
            // Fast path (westwood_fast_bw): a pure in-order advance.
            self.bk = self
                .bk
                .wrapping_add(w.snd_una.wrapping_sub(self.snd_una) as u32);
            self.snd_una = w.snd_una;
        }
        self.update_rtt_min();
    }

    /// Linux `tcp_westwood_bw_rttmin`: the pipe size in packets, at least 2.
    fn bw_rttmin(&self, w: &Window) -> u32 {
        (self.bw_est.wrapping_mul(self.rtt_min) / w.mss).max(2)
    }
}

#[inline]
fn do_filter(a: u32, b: u32) -> u32 {
    (7u32.wrapping_mul(a).wrapping_add(b)) >> 3
}

impl CongestionControl for Westwood {
    fn on_ack_event(&mut self, w: &mut Window, flags: AckFlags) {
        self.ensure_init(w);
        self.pending = Some(flags);
    }

    fn on_pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
        self.ensure_init(w);
        if let Some(flags) = self.pending.take() {
            self.account_ack(w, flags);
        }
        if let Some(rtt) = s.rtt {
            if rtt.us() > 0 {
                self.rtt = self.usecs_to_jiffies(rtt.us());
            }
        }
    }

    fn on_congestion_event(&mut self, w: &mut Window, kind: LossKind) -> u32 {
        self.ensure_init(w);
        self.reno.on_congestion_event(w, kind)
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        self.ensure_init(w);
        self.reno.cong_avoid(w, acked);
    }

    fn on_cwnd_event(&mut self, w: &mut Window, ev: CwndEvent) {
        self.ensure_init(w);
        match ev {
            CwndEvent::CompleteCwr => {
                w.ssthresh = self.bw_rttmin(w);
                w.cwnd = w.ssthresh;
            }
            CwndEvent::Loss => {
                w.ssthresh = self.bw_rttmin(w);
                // The RTT after a timeout may differ: take the next sample as rtt_min.
                self.reset_rtt_min = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::{SimDuration, SimTime};
    use std::collections::BTreeMap;

    const MSS: u32 = 1448;

    fn westwood() -> (Westwood, Window) {
        let m = BTreeMap::new();
        let p = Params::new("westwood", &m, PARAMS).unwrap();
        let mut ww = Westwood::new(
            &p,
            &FlowInit {
                mss: MSS,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, MSS);
        w.cwnd_limited = true;
        // Established at t = 0 (jiffy 0), snd_una 0.
        ww.on_cwnd_event(&mut w, CwndEvent::TxStart);
        (ww, w)
    }

    /// One ACK at `t_ms` moving snd_una to `una`, with an RTT sample of `rtt_ms`.
    fn ack(ww: &mut Westwood, w: &mut Window, t_ms: u64, una: u64, slow: bool, rtt_ms: u64) {
        w.now = SimTime(t_ms * 1_000_000);
        ww.on_ack_event(
            w,
            AckFlags {
                slow_path: slow,
                ..Default::default()
            },
        );
        w.snd_una = una;
        ww.on_pkts_acked(
            w,
            &AckSample {
                pkts_acked: 2,
                rtt: Some(SimDuration::from_ms(rtt_ms)),
                in_flight: 0,
            },
        );
    }

    /// ACK k (k = 1..=n) at k ms, each for 2 segments (2896 B), RTT 100 ms.
    fn steady(ww: &mut Westwood, w: &mut Window, n: u64) {
        for k in 1..=n {
            ack(ww, w, k, k * 2 * MSS as u64, false, 100);
        }
    }

    #[test]
    fn open_first_sample_is_bytes_over_elapsed_jiffies() {
        // ACK 1 only syncs snd_una (not counted) and sets rtt_min = rtt = 20 s (20000
        // jiffies, the initial value) before its own sample gives rtt = 100 jiffies.
        // ACKs 2..100 add 99·2896 = 286704 B. ACK 101 (t = 101 ms): delta = 101 > max(100,
        // 50) -> sample = 286704/101 = 2838 B/jiffy, seeding both filters.
        let (mut ww, mut w) = westwood();
        steady(&mut ww, &mut w, 100);
        assert_eq!(ww.estimate(), (0, 100));
        steady_from(&mut ww, &mut w, 101, 101);
        assert_eq!(ww.estimate(), (2838, 100));
        assert_eq!(ww.bw_bytes_per_sec(), 2_838_000);
    }

    fn steady_from(ww: &mut Westwood, w: &mut Window, from: u64, to: u64) {
        for k in from..=to {
            ack(ww, w, k, k * 2 * MSS as u64, false, 100);
        }
    }

    #[test]
    fn open_filter_smooths_later_samples_twice() {
        // Window 2: ACKs 101..201 add 101·2896 B; at ACK 202 delta = 202 - 101 = 101:
        // sample = 2896. bw_ns = (7·2838 + 2896)/8 = 22762/8 = 2845;
        // bw = (7·2838 + 2845)/8 = 22711/8 = 2838.
        let (mut ww, mut w) = westwood();
        steady(&mut ww, &mut w, 202);
        assert_eq!(ww.bw_ns_est, 2845);
        assert_eq!(ww.estimate(), (2838, 100));
    }

    #[test]
    fn recovery_end_sets_cwnd_to_bandwidth_times_min_rtt() {
        // After the first sample: BWE = 2838 B/ms, RTTmin = 100 ms:
        // cwnd = ssthresh = 2838·100/1448 = 195.99 -> 195 packets (the pipe is 200).
        let (mut ww, mut w) = westwood();
        steady(&mut ww, &mut w, 101);
        w.cwnd = 240;
        w.ssthresh = ww.on_congestion_event(&mut w, LossKind::Recovery);
        assert_eq!(w.ssthresh, 120, "Reno's ssthresh during the PRR reduction");
        w.cwnd = w.ssthresh; // end_cwnd_reduction
        ww.on_cwnd_event(&mut w, CwndEvent::CompleteCwr);
        assert_eq!((w.cwnd, w.ssthresh), (195, 195));
    }

    #[test]
    fn recovery_end_floor_is_two_packets() {
        // No bandwidth sample yet (bw = 0): max(0, 2) = 2.
        let (mut ww, mut w) = westwood();
        ww.on_cwnd_event(&mut w, CwndEvent::CompleteCwr);
        assert_eq!((w.cwnd, w.ssthresh), (2, 2));
    }

    #[test]
    fn loss_rto_sets_ssthresh_and_resets_rtt_min_on_next_ack() {
        let (mut ww, mut w) = westwood();
        steady(&mut ww, &mut w, 101);
        w.cwnd = 240;
        ww.on_cwnd_event(&mut w, CwndEvent::Loss);
        assert_eq!(w.ssthresh, 195);
        assert_eq!(w.cwnd, 240, "cwnd is left to the sender (in_flight + 1)");
        // Next ACK: rtt_min = the latest RTT, which is still ACK 101's 100 ms (this ACK's
        // own 400 ms sample is stored after the accounting).
        ack(&mut ww, &mut w, 102, 102 * 2 * MSS as u64, false, 400);
        assert_eq!(ww.rtt_min, 100);
        // Another RTO: the next ACK takes the latest RTT, now 400 ms, even though it is
        // larger than the old minimum.
        ww.on_cwnd_event(&mut w, CwndEvent::Loss);
        ack(&mut ww, &mut w, 103, 103 * 2 * MSS as u64, false, 400);
        assert_eq!(ww.rtt_min, 400);
    }

    #[test]
    fn disorder_dupacks_count_one_mss_and_are_subtracted_later() {
        let (mut ww, mut w) = westwood();
        ack(&mut ww, &mut w, 1, 10 * MSS as u64, false, 100); // first ACK: sync only
        assert_eq!(ww.bk, 0);
        // 3 dupACKs (slow path, snd_una unchanged): +1448 each, accounted = 4344.
        for t in 2..5 {
            ack(&mut ww, &mut w, t, 10 * MSS as u64, true, 100);
        }
        assert_eq!((ww.bk, ww.accounted), (3 * MSS, 3 * MSS));
        // Partial ACK of 2 segments (2896 <= accounted 4344): counts 1 MSS, accounted 1448.
        ack(&mut ww, &mut w, 5, 12 * MSS as u64, true, 100);
        assert_eq!((ww.bk, ww.accounted), (4 * MSS, MSS));
        // Cumulative ACK of 10 segments: 14480 - 1448 = 13032 counted, accounted 0.
        ack(&mut ww, &mut w, 6, 22 * MSS as u64, true, 100);
        assert_eq!((ww.bk, ww.accounted), (4 * MSS + 9 * MSS, 0));
        // 13 MSS counted for 12 segments delivered: the partial ACK removed its whole 2 MSS
        // from `accounted` while still counting 1 MSS (kernel quirk, kept).
    }

    #[test]
    fn open_short_windows_keep_building_the_sample_for_50ms() {
        // RTT 10 ms: the window closes only after > 50 jiffies. ACKs every ms with 1448 B;
        // ACK 1 syncs; ACKs 2..50 add 49·1448; ACK 51 (delta 51 > 50) samples
        // 70952/51 = 1391.
        let (mut ww, mut w) = westwood();
        for k in 1..=51u64 {
            ack(&mut ww, &mut w, k, k * MSS as u64, false, 10);
        }
        assert_eq!(ww.estimate(), (1391, 10));
    }
}
