//! TCP Wave (Abdelsalam, Luglio, Roseti, Zampognaro et al., "TCP Wave: a new reliable
//! transport approach for future internetworking research", Computer Networks 112, 2017),
//! following the Linux implementation by N. Patriciello (kronat/linux
//! `net/ipv4/tcp_wave.c`, module version 0.2, the last one, with its `tcp_output.c` hooks).
//!
//! # Design
//! Wave replaces the ACK-clocked window with self-scheduled **bursts**. A send timer fires
//! every `min(TxTime, TxTime0)`; each expiry opens cwnd by one burst (`BURST0` = 10
//! segments, never adapted) and the burst leaves back to back. Every ACK then *closes* the
//! window again (cwnd = packets in flight, in `pkts_acked`), so ACKs never clock data out.
//! The sending rate is therefore `BURST0 · MSS / TxTime`, and all the control is in TxTime.
//!
//! The receiver answers a burst with an **ACK train**. Per ACK (`cong_control`) Wave
//! follows the train of the oldest burst in a FIFO history of burst sizes:
//! - the first ACK of a round records `first` (time) and `first_rtt`; min/max RTT are
//!   updated from `first_rtt` only;
//! - later ACKs whose RTT is not smaller than the previous one extend the train (`last`,
//!   `n` = aligned ACKs); a smaller RTT means a new train began: the round restarts there;
//! - the round ends when the (S)ACKed count reaches the head burst (popped; bursts of at
//!   most `min_burst` segments are skipped).
//!
//! At the end of a round:
//! - `avg_rtt` = `min_rtt` the first time, else `a·avg + (1 − a)·first_rtt` with
//!   `a = (first_rtt − min_rtt)/first_rtt` (fixed point 2^20);
//! - a stability countdown skips decisions while positive;
//! - Δ = avg − min_rtt; the ACK-train dispersion ATD = (last − first)·n/(n − 1) (scaled to
//!   the full burst for a short one; fallbacks: the previous ATD, then a heuristic from
//!   the delivery-rate sample);
//! - Δ > β ⇒ **Adjustment mode**: stability = avg/TxTime, min_rtt forgotten,
//!   avg = max_rtt, TxTime = TxTime0;
//! - else **Tracking mode**: TxTime = ATD + Δ/2 (1 ms if that is 0).
//!
//! Loss is not a congestion signal: `ssthresh()` returns 0 (Wave is "always in congestion
//! avoidance"), undo keeps cwnd, entering Open resets the burst accounting
//! (`delta_segments`). An RTO does nothing Wave-specific: Linux sets cwnd = in flight + 1
//! and retransmits the head; TxTime is kept, and the remaining lost segments leave at the
//! next timer expiries, inside the bursts (lost segments first, then new data).
//!
//! # Mapping onto this engine
//! - Timer (kronat `get_pacing_time` / `pacing_timer_expired`, armed in
//!   `tcp_internal_pacing`): the first transmission after an expiry arms the next expiry
//!   `min(TxTime, TxTime0)` later; an expiry consumes it. If an expiry sent nothing, kronat
//!   starts a round at the next `tcp_write_xmit`, i.e. the next ACK; here the next ACK arms
//!   an immediate expiry.
//! - Round size (kronat `get_segs_per_round` = burst): the window opened by an expiry is
//!   capped at `in_flight + burst`.
//! - End of round (kronat `segments_sent(sent)` after the write loop): the sender has no
//!   such hook, so the round is closed by the next controller hook (the next ACK, RTO or
//!   expiry), with the segments counted by `on_packet_sent` at the expiry instant.
//! - Fast retransmission runs **in parallel** to the burst schedule: cwnd = in flight is
//!   set in `pkts_acked`, before Linux marks segments lost in the same ACK, so the segments
//!   just marked lost fit in cwnd and are retransmitted at once (the hook order of a stock
//!   kernel). kronat 0.2 additionally blocks every transmission while its pacing timer is
//!   armed, which would delay them to the next burst; the paper (and this tool's issue) has
//!   them sent immediately.
//! - No rate pacing: `pacing_rate_bps` is None and, as in Linux, a `cong_control` module
//!   that sets no rate is not paced even with `tcp.pacing` (the sender skips its
//!   cwnd/srtt-based rate for such modules), so a burst leaves back to back.
//! - Loss probes and RTOs are the sender's (Linux's): since every burst re-arms the loss
//!   probe, a short outage passes without an RTO (the bursts go on and SACKs repair the
//!   hole afterwards); an RTO only fires once the bursts stop (e.g. the receive window is
//!   full).
//!
//! # Deviations from kronat 0.2 (all where the C code relies on unsigned wrap-around or
//! reads uninitialized memory)
//! - `current_burst + delta_segments` is computed signed (u32 wrap-around in C) and then
//!   floored at `min_burst`, as the spec states.
//! - An unknown `min_rtt` (after an Adjustment, before a new sample) gives weight a = 0 and
//!   skips the decision, instead of u32 wrap-around arithmetic.
//! - An empty burst history ends processing of the ACK (C dereferences the list head).
//! - The heuristic's blind-search shift saturates (C shifts by ≥ 32 after 32 misses).
//!
//! Kept quirks: `stab_factor` is a u8 (`avg/TxTime` truncated mod 256); `max_rtt` never
//! decreases; the burst size is never adapted; TxTime0 = 200 ms (final code; the early
//! code used 500 ms, selectable with `tx_time0_ns`); a round that spans an outage yields a
//! huge ATD that is kept as "previous ATD" while the following rounds are not full bursts
//! (e.g. the 9-segment bursts left by a loss probe), so TxTime can stay above TxTime0 —
//! sending one burst per TxTime0 — for a long time after a long outage; the delayed-ACK
//! receiver makes Δ = one serialization time (the minimum is taken on a quick-ACKed single
//! segment, later trains start with a 2-segment ACK), so Wave settles ~5 % below capacity
//! until an Adjustment re-learns the minimum.
use super::{
    AckFlags, AckSample, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind,
    ParamSpec, Params, Window,
};
use crate::engine::time::{SimDuration, SimTime};
use crate::scenario::ConfigError;
use crate::tcp::linux::rate::RateSample;
use std::collections::VecDeque;

/// Fixed-point shift of the RTT weight and of the ATD ratio (kronat `AVG_SCALE`).
const AVG_SCALE: u32 = 20;
const AVG_UNIT: u64 = 1 << AVG_SCALE;
/// TxTime used when Tracking mode computes 0 (µs).
const TX_TIMER_FLOOR_US: u32 = 1_000;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "burst0",
        default: 10.0,
        unit: "pkts",
        help: "burst size BURST0 (kronat init_burst); constant for the whole connection",
    },
    ParamSpec {
        name: "min_burst",
        default: 3.0,
        unit: "pkts",
        help: "smallest burst; shorter bursts do not end a measurement round",
    },
    ParamSpec {
        name: "tx_time0_ns",
        default: 200_000_000.0,
        unit: "ns",
        help: "initial and maximum burst period TxTime0 (final kronat code 200 ms; early 500 ms)",
    },
    ParamSpec {
        name: "beta_ns",
        default: 150_000_000.0,
        unit: "ns",
        help: "delay threshold beta: avg - min RTT above it switches to Adjustment mode",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "wave",
    summary: "TCP Wave: timer-scheduled bursts; TxTime from ACK-train dispersion + RTT growth",
    feedback: "rate",
    reference: "Abdelsalam et al., Computer Networks 112 (2017); kronat/linux tcp_wave.c v0.2",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// TCP Wave state (kronat `struct wavetcp`) plus the engine glue for its timer.
#[derive(Debug, Clone)]
pub struct Wave {
    // parameters
    /// Burst size (segments); kronat `burst`, never changed after init.
    burst: u32,
    min_burst: u32,
    tx_time0_us: u32,
    beta_us: u32,
    // kronat flags
    initialized: bool,
    /// FLAG_START: the first transmission happened (TX_START).
    started: bool,
    /// FLAG_SAVE: the next round's size goes into the history.
    save: bool,
    // kronat state
    /// Current TxTime (µs).
    tx_timer_us: u32,
    /// Difference between the window opened and the segments sent (kronat s8).
    delta_segments: i32,
    /// Segments (S)ACKed in the current round.
    pkts_acked: u32,
    backup_pkts_acked: u32,
    /// ACKs of the current train with non-decreasing RTT.
    aligned_acks: u32,
    heuristic_scale: u32,
    /// Last measured ATD (ns), 0 = none.
    previous_atd_ns: u64,
    first_ack: Option<SimTime>,
    last_ack: Option<SimTime>,
    /// First valid delivery-rate interval of the round (µs).
    backup_first_ack_us: u32,
    previous_rtt_us: u32,
    first_rtt_us: u32,
    /// u32::MAX = unknown ("a lot of time").
    min_rtt_us: u32,
    avg_rtt_us: u32,
    max_rtt_us: u32,
    stab_factor: u8,
    /// Sizes of the bursts sent and not yet fully acknowledged, oldest first.
    history: VecDeque<u32>,
    // engine glue
    /// Next timer expiry, None when the timer is idle.
    next_tick: Option<SimTime>,
    /// A round (timer expiry or the first transmission) whose segments are being counted.
    round_open: bool,
    /// Instant of the round (None: the initial round, set by its first segment).
    round_at: Option<SimTime>,
    round_sent: u32,
    // counters (observability)
    rounds: u64,
    adjustments: u64,
    trackings: u64,
}

impl Wave {
    pub fn new(p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        let burst = p.int("burst0", 1, 255)? as u32;
        let min_burst = p.int("min_burst", 1, 255)? as u32;
        if min_burst > burst {
            return Err(ConfigError(format!(
                "cca_params.min_burst: {min_burst} is invalid for wave; allowed: 1 ..= burst0 ({burst})"
            )));
        }
        let tx_time0_us = (p.int("tx_time0_ns", 1_000, 10_000_000_000)? / 1_000) as u32;
        let beta_us = (p.int("beta_ns", 0, 10_000_000_000)? / 1_000) as u32;
        Ok(Wave {
            burst,
            min_burst,
            tx_time0_us,
            beta_us,
            initialized: false,
            started: false,
            // wavetcp_init: FLAG_INIT | FLAG_SAVE; delta_segments = init_burst.
            save: true,
            tx_timer_us: tx_time0_us,
            delta_segments: burst as i32,
            pkts_acked: 0,
            backup_pkts_acked: 0,
            aligned_acks: 0,
            heuristic_scale: 0,
            previous_atd_ns: 0,
            first_ack: None,
            last_ack: None,
            backup_first_ack_us: 0,
            previous_rtt_us: 0,
            first_rtt_us: 0,
            min_rtt_us: u32::MAX,
            avg_rtt_us: 0,
            max_rtt_us: 0,
            stab_factor: 0,
            history: VecDeque::new(),
            next_tick: None,
            // The first write (at connection set-up) is a round: kronat calls
            // pacing_timer_expired (a no-op before TX_START) and then segments_sent.
            round_open: true,
            round_at: None,
            round_sent: 0,
            rounds: 0,
            adjustments: 0,
            trackings: 0,
        })
    }

    /// Current TxTime (kronat `tx_timer`).
    pub fn tx_time(&self) -> SimDuration {
        SimDuration::from_us(self.tx_timer_us as u64)
    }

    /// Period of the burst timer: min(TxTime, TxTime0) (kronat `wavetcp_get_timer`).
    pub fn period(&self) -> SimDuration {
        SimDuration::from_us(self.tx_timer_us.min(self.tx_time0_us) as u64)
    }

    /// Sending rate BURST0 · MSS / period, in bit/s.
    pub fn rate_bps(&self, mss: u32) -> u64 {
        (self.burst as u64 * mss as u64 * 8 * 1_000_000_000) / self.period().ns().max(1)
    }

    /// Rounds that reached a decision point, Adjustment-mode and Tracking-mode decisions.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }
    pub fn adjustments(&self) -> u64 {
        self.adjustments
    }
    pub fn trackings(&self) -> u64 {
        self.trackings
    }

    /// min, average and max RTT (µs) as Wave sees them (u32::MAX min = unknown).
    pub fn rtts_us(&self) -> (u32, u32, u32) {
        (self.min_rtt_us, self.avg_rtt_us, self.max_rtt_us)
    }

    /// Burst sizes not yet fully acknowledged, oldest first.
    pub fn history(&self) -> &VecDeque<u32> {
        &self.history
    }

    // --- the burst timer -------------------------------------------------------------

    /// kronat `wavetcp_timer_expired`: open cwnd by one burst (less the previous round's
    /// overshoot, at least `min_burst`).
    fn timer_expired(&mut self, w: &mut Window) {
        if !self.started {
            return;
        }
        let mut current = self.burst as i64;
        if self.delta_segments < 0 {
            // The previous round sent more than allowed: take it off this one.
            current += self.delta_segments as i64;
            if w.in_flight > w.cwnd {
                // Segments left outside the window (e.g. a loss probe): let the burst
                // still go out in full.
                current += (w.in_flight - w.cwnd) as i64;
            }
        }
        self.delta_segments = current as i32;
        if current < self.min_burst as i64 {
            self.delta_segments += (self.min_burst as i64 - current) as i32;
            current = self.min_burst as i64;
        }
        let opened = w.cwnd.saturating_add(current as u32);
        // kronat sends at most get_segs_per_round() = burst segments per expiry.
        w.cwnd = opened.min(w.in_flight.saturating_add(self.burst));
        self.save = true;
    }

    /// kronat `wavetcp_segment_sent`: account the round that sent `sent` segments.
    /// `w` is None when the round is closed from `on_packet_sent` (no window access).
    fn segments_sent(&mut self, sent: u32, w: Option<&mut Window>) {
        if !self.started {
            return;
        }
        if self.save && sent > 0 {
            self.history.push_back(sent);
            self.save = false;
        }
        self.delta_segments -= sent as i32;
        if let Some(w) = w {
            if self.delta_segments >= 0 && self.burst > sent && w.in_flight <= w.cwnd {
                // Application/receiver-limited round: take back what was not used.
                w.cwnd = w.cwnd.saturating_sub(self.burst - sent);
            }
        }
    }

    /// Close the open round, if any, before acting on a new event.
    fn close_round(&mut self, w: Option<&mut Window>) {
        if !self.round_open || self.round_at.is_none() {
            return;
        }
        self.round_open = false;
        let sent = self.round_sent;
        self.round_sent = 0;
        self.round_at = None;
        self.segments_sent(sent, w);
    }

    // --- ACK-train measurement --------------------------------------------------------

    /// kronat `wavetcp_rtt_measurements`.
    fn rtt_measurements(&mut self, rtt_us: i64, interval_us: i64) {
        if self.backup_first_ack_us == 0 && interval_us > 0 {
            self.backup_first_ack_us = interval_us as u32;
        }
        if rtt_us <= 0 {
            return;
        }
        let rtt = rtt_us as u32;
        self.previous_rtt_us = rtt;
        if self.first_rtt_us == 0 {
            self.first_rtt_us = rtt;
            self.min_rtt_us = self.min_rtt_us.min(rtt);
            self.max_rtt_us = self.max_rtt_us.max(rtt);
        }
    }

    fn begin_round(&mut self, now: SimTime) {
        self.first_ack = Some(now);
        self.last_ack = Some(now);
    }

    fn reset_round(&mut self) {
        self.first_ack = None;
        self.last_ack = None;
        self.backup_first_ack_us = 0;
        self.aligned_acks = 0;
        self.first_rtt_us = 0;
    }

    /// kronat `calculate_avg_rtt`: 0 means "cannot compute, keep the old value".
    fn calculate_avg_rtt(&self) -> u32 {
        if self.avg_rtt_us == 0 {
            return if self.min_rtt_us == u32::MAX {
                0
            } else {
                self.min_rtt_us
            };
        }
        if self.first_rtt_us == 0 {
            return 0;
        }
        let first = self.first_rtt_us as u64;
        let min = if self.min_rtt_us == u32::MAX {
            first
        } else {
            self.min_rtt_us as u64
        };
        // a = (first − min)/first in units of 2^-20.
        let a = (first.saturating_sub(min) * AVG_UNIT) / first;
        let left = (a * self.avg_rtt_us as u64) / AVG_UNIT;
        let right = ((AVG_UNIT - a) * first) / AVG_UNIT;
        (left as u32).wrapping_add(right as u32)
    }

    /// kronat `get_ack_train_disp` (ns).
    fn get_ack_train_disp(&self, round_burst: u32) -> u64 {
        let (Some(first), Some(last)) = (self.first_ack, self.last_ack) else {
            return 0;
        };
        let mut left = last.saturating_since(first).ns();
        let right = if round_burst == self.burst {
            // (last − first)·n/(n − 1): n ACKs span n − 1 gaps of the train.
            (self.aligned_acks as u64 * AVG_UNIT) / (self.aligned_acks as u64 - 1)
        } else {
            // A short burst: scale its spread to a full burst.
            left = left * AVG_UNIT / round_burst as u64;
            self.burst as u64
        };
        left * right / AVG_UNIT
    }

    /// kronat `heuristic_ack_train_disp` (ns): no usable train, no previous ATD.
    fn heuristic_ack_train_disp(&mut self, interval_us: i64) -> u64 {
        if interval_us <= 0 {
            return 0;
        }
        let interval_ns = interval_us as u64 * 1_000;
        let backup_ns = self.backup_first_ack_us as u64 * 1_000;
        let atd = interval_ns.abs_diff(backup_ns);
        if atd != 0 {
            return atd;
        }
        // Blind search: half the interval more at every miss.
        let blind_us = (interval_us as u32)
            .checked_shr(self.heuristic_scale)
            .unwrap_or(0);
        self.heuristic_scale = self.heuristic_scale.saturating_add(1);
        blind_us as u64 * 1_000
    }

    /// kronat `calculate_ack_train_disp` (ns).
    fn calculate_ack_train_disp(&mut self, interval_us: i64, burst: u32) -> u64 {
        if self.first_ack.is_none() || self.aligned_acks <= 1 {
            if self.previous_atd_ns == 0 {
                return self.heuristic_ack_train_disp(interval_us);
            }
            return self.previous_atd_ns;
        }
        // A complete burst gives a safe value; a short one only if nothing better exists.
        if burst != self.burst && self.previous_atd_ns != 0 {
            return self.previous_atd_ns;
        }
        let atd = self.get_ack_train_disp(burst);
        if atd == 0 {
            return self.previous_atd_ns;
        }
        self.heuristic_scale = 0;
        self.previous_atd_ns = atd;
        atd
    }

    /// kronat `wavetcp_adj_mode`.
    fn adjustment_mode(&mut self) {
        self.adjustments += 1;
        // u8 in kronat: the quotient is truncated modulo 256.
        self.stab_factor = (self.avg_rtt_us / self.tx_timer_us.max(1)) as u8;
        self.min_rtt_us = u32::MAX;
        self.avg_rtt_us = self.max_rtt_us;
        self.tx_timer_us = self.tx_time0_us;
    }

    /// kronat `wavetcp_tracking_mode`.
    fn tracking_mode(&mut self, delta_rtt_us: u64, atd_ns: u64) {
        if atd_ns == 0 {
            return; // impossible to track without a dispersion
        }
        self.trackings += 1;
        let t = atd_ns / 1_000 + delta_rtt_us / 2;
        self.tx_timer_us = t.min(u32::MAX as u64) as u32;
        if self.tx_timer_us == 0 {
            self.tx_timer_us = TX_TIMER_FLOOR_US;
        }
    }

    /// kronat `wavetcp_round_terminated`.
    fn round_terminated(&mut self, interval_us: i64, burst: u32) {
        let avg = self.calculate_avg_rtt();
        if avg != 0 {
            self.avg_rtt_us = avg;
        }
        if self.stab_factor > 0 {
            self.stab_factor -= 1;
            return;
        }
        if self.min_rtt_us == u32::MAX {
            return; // no RTT sample since min_rtt was forgotten
        }
        self.rounds += 1;
        let delta_rtt_us = self.avg_rtt_us.saturating_sub(self.min_rtt_us) as u64;
        let atd_ns = self.calculate_ack_train_disp(interval_us, burst);
        if delta_rtt_us > self.beta_us as u64 {
            self.adjustment_mode();
        } else {
            self.tracking_mode(delta_rtt_us, atd_ns);
        }
    }

    /// kronat `wavetcp_end_round`.
    fn end_round(&mut self, now: SimTime, rtt_us: i64, interval_us: i64, burst: u32) {
        if rtt_us >= self.previous_rtt_us as i64 {
            self.aligned_acks += 1;
            self.last_ack = Some(now);
        }
        if self.first_rtt_us == 0 {
            self.first_rtt_us = self.avg_rtt_us;
        }
        if burst > self.min_burst {
            self.round_terminated(interval_us, burst);
        }
        self.reset_round();
        if rtt_us > 0 && rtt_us < self.previous_rtt_us as i64 {
            // This ACK already belongs to the next train: start its round here.
            self.begin_round(now);
            self.rtt_measurements(rtt_us, interval_us);
            self.aligned_acks = 1;
        } else if rtt_us > 0 {
            self.previous_rtt_us = rtt_us as u32;
        }
    }

    /// kronat `wavetcp_cong_control`: follow the ACK train of the oldest burst.
    fn track(&mut self, now: SimTime, rs: &RateSample) {
        let Some(&head) = self.history.front() else {
            return;
        };
        // Linux rate-sample fields in µs, −1 when absent.
        let rtt_us = rs.rtt.map_or(-1, |d| (d.ns() / 1_000) as i64);
        let interval_us = rs.interval.map_or(-1, |d| (d.ns() / 1_000) as i64);
        self.pkts_acked += rs.acked_sacked;
        if self.pkts_acked < head {
            if self.first_ack.is_none() {
                self.begin_round(now);
                self.aligned_acks += 1;
                self.backup_pkts_acked = self.pkts_acked - rs.acked_sacked;
            } else if rtt_us >= self.previous_rtt_us as i64 {
                self.last_ack = Some(now);
                self.aligned_acks += 1;
            } else if rtt_us > 0 {
                // A smaller RTT: the real beginning of the train is this ACK.
                self.aligned_acks = 1;
                self.pkts_acked = self.backup_pkts_acked + rs.acked_sacked;
                self.begin_round(now);
            }
            self.rtt_measurements(rtt_us, interval_us);
        } else {
            self.end_round(now, rtt_us, interval_us, head);
            // A cumulative ACK may cover several bursts.
            while let Some(&h) = self.history.front() {
                if self.pkts_acked < h {
                    break;
                }
                self.pkts_acked -= h;
                self.history.pop_front();
            }
        }
    }
}

impl CongestionControl for Wave {
    fn on_ack_event(&mut self, w: &mut Window, _flags: AckFlags) {
        self.close_round(Some(w));
    }

    /// kronat `wavetcp_acked`: close the window to what is in flight, so the ACK cannot
    /// release data (only the timer can).
    fn on_pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
        self.close_round(Some(w));
        if w.cwnd < s.pkts_acked {
            // Scattered segments: the ACKs are not aligned with the bursts.
            self.delta_segments += (s.pkts_acked - w.cwnd) as i32;
        }
        w.cwnd = w.in_flight;
    }

    /// Wave is always in "congestion avoidance": ssthresh 0, no window reduction.
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        self.close_round(Some(w));
        0
    }

    /// Never called: `cong_control` owns cwnd.
    fn cong_avoid(&mut self, _w: &mut Window, _acked: u32) {}

    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        self.close_round(Some(w));
        if new == CaState::Open {
            // Fully recovered: forget the burst overshoot.
            self.delta_segments = 0;
        }
    }

    fn on_cwnd_event(&mut self, w: &mut Window, ev: CwndEvent) {
        if ev == CwndEvent::TxStart {
            if !self.initialized {
                // wavetcp_init: ssthresh 0 (always CA), cwnd = the initial burst.
                self.initialized = true;
                w.ssthresh = 0;
                w.cwnd = self.burst;
            }
            self.started = true;
        }
    }

    /// Undo keeps the current decision (kronat `wavetcp_undo_cwnd`).
    fn on_spurious_loss(&mut self, w: &mut Window) -> u32 {
        w.cwnd
    }

    fn cong_control(&mut self, w: &mut Window, rs: &RateSample) -> bool {
        self.close_round(Some(w));
        self.track(w.now, rs);
        if self.started && self.next_tick.is_none() {
            // The timer is idle (its last expiry sent nothing): kronat starts a round at
            // the next write attempt, which this ACK triggers.
            self.next_tick = Some(w.now);
        }
        true
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    fn on_packet_sent(&mut self, w: &Window, _bytes: u32) {
        if self.round_open {
            match self.round_at {
                None => {
                    self.round_at = Some(w.now);
                    self.round_sent = 1;
                }
                Some(t) if t == w.now => self.round_sent += 1,
                Some(_) => self.close_round(None),
            }
        }
        if self.next_tick.is_none() {
            // tcp_internal_pacing: a transmission arms the idle timer.
            self.next_tick = Some(w.now + self.period());
        }
    }

    fn send_timer(&self) -> Option<SimTime> {
        self.next_tick
    }

    fn on_send_timer(&mut self, w: &mut Window) {
        self.close_round(Some(w));
        self.next_tick = None;
        self.timer_expired(w);
        self.round_open = true;
        self.round_at = Some(w.now);
        self.round_sent = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const MS: u64 = 1_000_000;

    fn wave_with(params: &[(&str, f64)]) -> (Wave, Window) {
        let m: BTreeMap<String, f64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let p = Params::new("wave", &m, PARAMS).unwrap();
        let c = Wave::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        (c, Window::new(10, 1448))
    }

    fn wave() -> (Wave, Window) {
        wave_with(&[])
    }

    /// Set the clock to `t_us` microseconds.
    fn at(w: &mut Window, t_us: u64) {
        w.now = SimTime(t_us * 1_000);
    }

    /// Connection start at t = 0: TX_START, then `n` segments leave.
    fn start(c: &mut Wave, w: &mut Window, n: u32) {
        at(w, 0);
        c.on_cwnd_event(w, CwndEvent::TxStart);
        for _ in 0..n {
            c.on_packet_sent(w, 1448);
            w.in_flight += 1;
        }
    }

    /// One ACK at `t_us` acknowledging `acked` segments, with RTT `rtt_us`.
    fn ack(c: &mut Wave, w: &mut Window, t_us: u64, acked: u32, rtt_us: u64) {
        at(w, t_us);
        c.on_ack_event(w, AckFlags::default());
        w.in_flight -= acked;
        c.on_pkts_acked(
            w,
            &AckSample {
                pkts_acked: acked,
                rtt: Some(SimDuration::from_us(rtt_us)),
                in_flight: w.in_flight + acked,
            },
        );
        let rs = RateSample {
            acked_sacked: acked,
            rtt: Some(SimDuration::from_us(rtt_us)),
            ..Default::default()
        };
        assert!(c.cong_control(w, &rs));
    }

    /// A burst of 10 sent at 0 and its delayed-ACK train: 5 ACKs of 2 segments starting
    /// at `t0_us` with spacing `gap_us`; every segment was sent at `sent_us`, so each
    /// ACK's RTT is its arrival time minus `sent_us`.
    fn train(c: &mut Wave, w: &mut Window, sent_us: u64, t0_us: u64, gap_us: u64) {
        for i in 0..5 {
            let t = t0_us + i * gap_us;
            ack(c, w, t, 2, t - sent_us);
        }
    }

    /// A timer expiry at `t_us` followed by `n` segments sent back to back.
    fn tick(c: &mut Wave, w: &mut Window, t_us: u64, n: u32) {
        at(w, t_us);
        c.on_send_timer(w);
        for _ in 0..n {
            c.on_packet_sent(w, 1448);
            w.in_flight += 1;
        }
    }

    // --- start ---------------------------------------------------------------------------

    #[test]
    fn start_sets_burst0_window_zero_ssthresh_and_arms_txtime0() {
        let (mut c, _) = wave();
        let mut w = Window::new(4, 1448); // whatever the initial window, Wave starts at 10
        start(&mut c, &mut w, 10);
        assert_eq!(w.cwnd, 10);
        assert_eq!(w.ssthresh, 0);
        // First transmission at 0 arms the timer TxTime0 = 200 ms later.
        assert_eq!(c.send_timer(), Some(SimTime(200 * MS)));
        // The initial write is the first round: 10 segments recorded when it closes.
        tick(&mut c, &mut w, 200_000, 0);
        assert_eq!(c.history().iter().copied().collect::<Vec<_>>(), vec![10]);
    }

    // --- burst accounting ------------------------------------------------------------

    #[test]
    fn timer_expiry_opens_cwnd_to_in_flight_plus_burst() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        // An ACK for 3 segments: cwnd closes to in flight = 7.
        ack(&mut c, &mut w, 150_000, 3, 150_000);
        assert_eq!(w.cwnd, 7);
        // Expiry at 200 ms: cwnd = 7 + 10 = 17; the 10 segments leave and the next expiry
        // is armed one period (still TxTime0 = 200 ms) later.
        tick(&mut c, &mut w, 200_000, 10);
        assert_eq!(w.cwnd, 17);
        assert_eq!(w.in_flight, 17);
        assert_eq!(c.send_timer(), Some(SimTime(400 * MS)));
        // The round closes at the next hook: history [10, 10].
        ack(&mut c, &mut w, 210_000, 1, 210_000);
        assert_eq!(
            c.history().iter().copied().collect::<Vec<_>>(),
            vec![10, 10]
        );
        assert_eq!(w.cwnd, 16);
    }

    #[test]
    fn acks_never_open_the_window() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        for i in 1..=5 {
            ack(&mut c, &mut w, 100_000 + i, 2, 100_000);
            assert_eq!(w.cwnd, w.in_flight, "cwnd = in flight after every ACK");
        }
        assert_eq!(w.cwnd, 0);
    }

    #[test]
    fn overshoot_is_taken_off_the_next_burst_down_to_min_burst() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10); // delta = 10 − 10 = 0
                                   // Expiry at 200 ms: delta = 10; suppose 18 segments leave in that round.
        tick(&mut c, &mut w, 200_000, 18);
        // Next expiry at 400 ms: the round closed with delta = 10 − 18 = −8, so
        // current = 10 − 8 = 2 < min_burst 3 → burst of 3: cwnd = 28 + 3 = 31.
        w.cwnd = w.in_flight; // 28
        tick(&mut c, &mut w, 400_000, 0);
        assert_eq!(w.cwnd, 31);
        // delta = 2 then raised to 3 by the floor.
        assert_eq!(c.delta_segments, 3);
    }

    #[test]
    fn receiver_limited_round_gives_back_the_unused_window() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        w.cwnd = 10;
        // Expiry: cwnd 20, but only 4 segments can leave.
        tick(&mut c, &mut w, 200_000, 4);
        // The next event closes the round: delta = 10 − 4 = 6 ≥ 0, burst 10 > 4 sent,
        // in flight 14 ≤ cwnd 20: cwnd −= 10 − 4 → 14.
        at(&mut w, 300_000);
        c.on_ack_event(&mut w, AckFlags::default());
        assert_eq!(w.cwnd, 14);
        assert_eq!(c.history().iter().copied().collect::<Vec<_>>(), vec![10, 4]);
    }

    #[test]
    fn idle_timer_is_restarted_by_the_next_ack() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        tick(&mut c, &mut w, 200_000, 0); // nothing could be sent: timer idle
        assert_eq!(c.send_timer(), None);
        ack(&mut c, &mut w, 250_000, 2, 250_000);
        assert_eq!(c.send_timer(), Some(SimTime(250 * MS)));
    }

    // --- measurement rounds ----------------------------------------------------------

    #[test]
    fn first_round_sets_txtime_to_the_ack_train_dispersion() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        // ACKs at 600, 606, 612, 618, 624 ms, RTTs equal to the arrival times.
        // min = first_rtt = 600 ms; avg = min (first round) → Δ = 0.
        // ATD = (624 − 600)·5/4 = 30 ms → TxTime = 30 ms + 0/2 = 30 ms.
        train(&mut c, &mut w, 0, 600_000, 6_000);
        assert_eq!(c.tx_time(), SimDuration::from_ms(30));
        assert_eq!(c.rtts_us(), (600_000, 600_000, 600_000));
        assert!(c.history().is_empty());
        assert_eq!(c.trackings(), 1);
    }

    #[test]
    fn tracking_mode_adds_half_the_rtt_growth_to_the_dispersion() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        tick(&mut c, &mut w, 200_000, 10);
        train(&mut c, &mut w, 0, 600_000, 6_000); // TxTime 30 ms, min = avg = 600 ms
                                                  // Burst 2 (sent at 200 ms) comes back with first RTT 640 ms and 8 ms spacing.
                                                  // a = (640 − 600)/640 = 1/16 → 65 536/2^20;
                                                  // avg = 600·1/16 + 640·15/16 = 37.5 + 600 = 637.5 ms; Δ = 37.5 ms.
                                                  // ATD = (32 ms)·5/4 = 40 ms → TxTime = 40 + 37.5/2 = 58.75 ms.
        train(&mut c, &mut w, 200_000, 840_000, 8_000);
        assert_eq!(c.rtts_us(), (600_000, 637_500, 640_000));
        assert_eq!(c.tx_time(), SimDuration::from_us(58_750));
        assert_eq!(c.period(), SimDuration::from_us(58_750));
    }

    /// Two rounds where the second has first RTT 800 ms after a 600 ms minimum:
    /// a = 200/800 = 1/4 → avg = 600/4 + 800·3/4 = 150 + 600 = 750 ms, Δ = 150 ms.
    fn two_rounds_with_delta_150ms(c: &mut Wave, w: &mut Window) {
        start(c, w, 10);
        tick(c, w, 200_000, 10);
        train(c, w, 0, 600_000, 6_000); // TxTime = 30 ms
        train(c, w, 200_000, 1_000_000, 6_000);
    }

    #[test]
    fn delta_equal_to_beta_stays_in_tracking_mode() {
        let (mut c, mut w) = wave();
        two_rounds_with_delta_150ms(&mut c, &mut w);
        // Δ = 150 ms = β (not greater): Tracking, TxTime = 30 + 150/2 = 105 ms.
        assert_eq!(c.adjustments(), 0);
        assert_eq!(c.tx_time(), SimDuration::from_ms(105));
        assert_eq!(c.rtts_us(), (600_000, 750_000, 800_000));
    }

    #[test]
    fn delta_above_beta_switches_to_adjustment_mode() {
        // Same trace with β = 149.999 ms: Δ = 150 ms > β.
        let (mut c, mut w) = wave_with(&[("beta_ns", 149_999_000.0)]);
        two_rounds_with_delta_150ms(&mut c, &mut w);
        assert_eq!(c.adjustments(), 1);
        // TxTime back to TxTime0, avg = max RTT = 800 ms, min forgotten,
        // stability = avg/old TxTime = 750/30 = 25 rounds.
        assert_eq!(c.tx_time(), SimDuration::from_ms(200));
        assert_eq!(c.rtts_us(), (u32::MAX, 800_000, 800_000));
        assert_eq!(c.stab_factor, 25);
        // The next round only counts down the stability factor (TxTime unchanged).
        tick(&mut c, &mut w, 1_100_000, 10);
        train(&mut c, &mut w, 1_100_000, 1_700_000, 6_000);
        assert_eq!(c.stab_factor, 24);
        assert_eq!(c.tx_time(), SimDuration::from_ms(200));
        // But the round's first RTT (600 ms) became the new minimum.
        assert_eq!(c.rtts_us().0, 600_000);
    }

    #[test]
    fn short_round_dispersion_is_scaled_to_a_full_burst() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 5); // a round of 5 > min_burst 3
                                  // One ACK per segment, 3 ms apart: first 600 ms, last 612 ms.
        for i in 0..5 {
            ack(&mut c, &mut w, 600_000 + i * 3_000, 1, 600_000);
        }
        // kronat scales the spread to the full burst without the n/(n − 1) factor:
        // ATD = 12 ms / 5 · 10 = 24 ms; Δ = 0 (first round) → TxTime = 24 ms.
        assert_eq!(c.tx_time(), SimDuration::from_ms(24));
    }

    #[test]
    fn heuristic_dispersion_from_rate_sample_intervals_without_a_train() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        let sample = |c: &mut Wave, w: &mut Window, t_us: u64, acked: u32, rtt_us: u64| {
            at(w, t_us);
            c.on_ack_event(w, AckFlags::default());
            w.in_flight -= acked;
            let rs = RateSample {
                acked_sacked: acked,
                rtt: Some(SimDuration::from_us(rtt_us)),
                interval: Some(SimDuration::from_us(t_us)),
                ..Default::default()
            };
            c.cong_control(w, &rs);
        };
        // 1 segment at 600 ms (RTT 600 ms, rate interval 600 ms), then 9 at 627 ms with a
        // smaller RTT: the train never has two aligned ACKs and no ATD exists yet, so
        // kronat falls back to |interval(last) − interval(first)| = 627 − 600 = 27 ms.
        sample(&mut c, &mut w, 600_000, 1, 600_000);
        sample(&mut c, &mut w, 627_000, 9, 599_000);
        assert_eq!(c.tx_time(), SimDuration::from_ms(27));
    }

    #[test]
    fn recovery_room_from_loss_marking_survives_the_ack() {
        // The sender calls pkts_acked, then marks losses, then cong_control. Wave closes
        // cwnd in pkts_acked only, so segments marked lost afterwards can be retransmitted
        // by this very ACK (fast retransmission in parallel to the bursts).
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        tick(&mut c, &mut w, 200_000, 10);
        at(&mut w, 600_000);
        c.on_ack_event(&mut w, AckFlags::default());
        w.in_flight -= 1; // one segment SACKed
        c.on_pkts_acked(
            &mut w,
            &AckSample {
                pkts_acked: 0,
                rtt: None,
                in_flight: 20,
            },
        );
        assert_eq!(w.cwnd, 19);
        w.in_flight -= 2; // two segments marked lost
        assert_eq!(c.on_congestion_event(&mut w, LossKind::Recovery), 0);
        c.on_state_change(&mut w, CaState::Recovery);
        c.cong_control(
            &mut w,
            &RateSample {
                acked_sacked: 1,
                ..Default::default()
            },
        );
        assert_eq!(w.cwnd - w.in_flight, 2, "room for the two retransmissions");
    }

    #[test]
    fn smaller_rtt_mid_round_restarts_the_train() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        tick(&mut c, &mut w, 200_000, 10);
        // A straggler ACK (RTT 700 ms) precedes the train: it begins a round...
        ack(&mut c, &mut w, 590_000, 2, 700_000);
        // ...but the next ACK has a smaller RTT (600 ms): the real train starts there, and
        // the round count restarts from the straggler's base (0) + 2.
        train(&mut c, &mut w, 0, 600_000, 6_000);
        // The train of 5 ACKs then ends the 10-segment round at 624 ms after the restart
        // at 600: pkts 2 + 2·4 = 10. ATD = 24·5/4 = 30 ms.
        // first RTT of the round is the straggler's 700 ms (taken before the restart),
        // min = avg = 700 ms on this first round → Δ = 0.
        assert_eq!(c.tx_time(), SimDuration::from_ms(30));
        assert_eq!(c.history().iter().copied().collect::<Vec<_>>(), vec![10]);
    }

    #[test]
    fn short_bursts_do_not_end_a_measurement_round() {
        let (mut c, mut w) = wave_with(&[("burst0", 3.0), ("min_burst", 3.0)]);
        start(&mut c, &mut w, 3);
        // Round of 3 = min_burst: skipped (no decision), TxTime stays TxTime0.
        ack(&mut c, &mut w, 600_000, 1, 600_000);
        ack(&mut c, &mut w, 603_000, 1, 603_000);
        ack(&mut c, &mut w, 606_000, 1, 606_000);
        assert!(c.history().is_empty());
        assert_eq!(c.rounds(), 0);
        assert_eq!(c.tx_time(), SimDuration::from_ms(200));
    }

    // --- loss ------------------------------------------------------------------------

    #[test]
    fn loss_returns_zero_ssthresh_and_undo_keeps_cwnd() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        w.cwnd = 37;
        assert_eq!(c.on_congestion_event(&mut w, LossKind::Recovery), 0);
        assert_eq!(c.on_congestion_event(&mut w, LossKind::Rto), 0);
        w.prior_cwnd = 80;
        assert_eq!(c.on_spurious_loss(&mut w), 37);
    }

    #[test]
    fn open_resets_the_burst_overshoot() {
        let (mut c, mut w) = wave();
        start(&mut c, &mut w, 10);
        tick(&mut c, &mut w, 200_000, 18);
        c.on_state_change(&mut w, CaState::Recovery); // closes the round: delta −8
        assert_eq!(c.delta_segments, -8);
        c.on_state_change(&mut w, CaState::Open);
        assert_eq!(c.delta_segments, 0);
        // So the next expiry opens a full burst.
        w.cwnd = w.in_flight;
        tick(&mut c, &mut w, 400_000, 0);
        assert_eq!(w.cwnd, w.in_flight + 10);
    }

    #[test]
    fn parameters_are_validated() {
        let m: BTreeMap<String, f64> = [("min_burst".to_string(), 11.0)].into();
        let p = Params::new("wave", &m, PARAMS).unwrap();
        let init = FlowInit {
            mss: 1448,
            initial_window: 10,
        };
        let e = Wave::new(&p, &init).err().unwrap();
        assert!(e.0.starts_with("cca_params.min_burst: 11"), "{e}");
        let m: BTreeMap<String, f64> = [("tx_time0_ns".to_string(), 10.0)].into();
        let p = Params::new("wave", &m, PARAMS).unwrap();
        assert!(Wave::new(&p, &init).is_err());
    }
}
