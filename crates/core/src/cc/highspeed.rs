//! HighSpeed TCP (RFC 3649) as Linux `tcp_highspeed.c` implements it.
//!
//! RFC 3649 makes the AIMD parameters functions of the window: above Low_Window = 38
//! packets the increase a(w) grows and the decrease b(w) shrinks so that the response
//! function becomes w = 0.12/p^0.835 (reaching 83 000 packets at p = 1e-7), while below
//! 38 packets it is standard TCP (a = 1, b = 1/2).
//!
//! Linux uses the RFC's Appendix B table: 72 rows, row i covering
//! `w_{i−1} < cwnd ≤ w_i`, with a = i + 1 packets per RTT and the decrease stored as
//! md = ⌊256·b(w_i)⌋. The current row (`ai`) is moved up or down only in congestion
//! avoidance, and the loss hook uses whatever row was last selected.
//!
//! Kernel behaviour kept on purpose:
//! - The increase is counted per **ACK**, not per packet ACKed: each `cong_avoid` call
//!   adds a(w) to `snd_cwnd_cnt` and cwnd grows by 1 when the count reaches cwnd. With
//!   delayed ACKs (2 packets per ACK) HighSpeed therefore grows by a(w)/2 per RTT, and by
//!   ½ packet per RTT below 38 packets — half of Linux Reno, which counts packets.
//! - Slow start drops the ACKs left over when cwnd reaches ssthresh (no carry into CA).
//! - ssthresh = max(cwnd − ⌊cwnd·md/256⌋, 2), so row 0 rounds the halved window up.
//! - `init` caps `snd_cwnd_clamp` at 2^32/128 so that cwnd·md cannot overflow.
//!
//! Undo is Reno's.
use super::{CcInfo, CongestionControl, FlowInit, LossKind, Params, Window};
use crate::scenario::ConfigError;

/// RFC 3649 Appendix B, as Linux `hstcp_aimd_vals`: (upper window bound w_i in packets,
/// decrease md_i = ⌊256·b(w_i)⌋). Row i has the increase a = i + 1.
pub const AIMD_TABLE: [(u32, u32); 72] = [
    (38, 128),
    (118, 112),
    (221, 104),
    (347, 98),
    (495, 93),
    (663, 89),
    (851, 86),
    (1058, 83),
    (1284, 81),
    (1529, 78),
    (1793, 76),
    (2076, 74),
    (2378, 72),
    (2699, 71),
    (3039, 69),
    (3399, 68),
    (3778, 66),
    (4177, 65),
    (4596, 64),
    (5036, 62),
    (5497, 61),
    (5979, 60),
    (6483, 59),
    (7009, 58),
    (7558, 57),
    (8130, 56),
    (8726, 55),
    (9346, 54),
    (9991, 53),
    (10661, 52),
    (11358, 52),
    (12082, 51),
    (12834, 50),
    (13614, 49),
    (14424, 48),
    (15265, 48),
    (16137, 47),
    (17042, 46),
    (17981, 45),
    (18955, 45),
    (19965, 44),
    (21013, 43),
    (22101, 43),
    (23230, 42),
    (24402, 41),
    (25618, 41),
    (26881, 40),
    (28193, 39),
    (29557, 39),
    (30975, 38),
    (32450, 38),
    (33986, 37),
    (35586, 36),
    (37253, 36),
    (38992, 35),
    (40808, 35),
    (42707, 34),
    (44694, 33),
    (46776, 33),
    (48961, 32),
    (51258, 32),
    (53677, 31),
    (56230, 30),
    (58932, 30),
    (61799, 29),
    (64851, 28),
    (68113, 28),
    (71617, 27),
    (75401, 26),
    (79517, 26),
    (84035, 25),
    (89053, 24),
];

/// Linux caps the clamp so that `cwnd · md` fits in 32 bits.
const CWND_CLAMP_MAX: u32 = 0xffff_ffff / 128;

pub const INFO: CcInfo = CcInfo {
    name: "highspeed",
    summary: "HighSpeed TCP: AIMD with a(w) up to 72 and b(w) down to 0.1 from the RFC 3649 table",
    feedback: "loss",
    reference: "RFC 3649; Linux net/ipv4/tcp_highspeed.c",
    params: &[],
    sack: None,
    ecn: false,
};

/// Linux HighSpeed TCP state (`struct hstcp`).
#[derive(Debug, Clone, Default)]
pub struct HighSpeed {
    /// Current table row (0-based); the increase is `ai + 1` packets per window of ACKs.
    ai: usize,
    initialized: bool,
}

impl HighSpeed {
    /// Build (no parameters: Linux has none).
    pub fn new(_p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        Ok(HighSpeed::default())
    }

    /// Linux `hstcp_init`, run on the first hook.
    fn ensure_init(&mut self, w: &mut Window) {
        if self.initialized {
            return;
        }
        self.initialized = true;
        self.ai = 0;
        w.cwnd_clamp = w.cwnd_clamp.min(CWND_CLAMP_MAX);
    }

    /// Current table row (0-based), for tests and traces.
    pub fn row(&self) -> usize {
        self.ai
    }
}

impl CongestionControl for HighSpeed {
    fn on_cwnd_event(&mut self, w: &mut Window, _ev: super::CwndEvent) {
        self.ensure_init(w);
    }

    /// Linux `hstcp_ssthresh`: cwnd − cwnd·b(w), b from the last row selected.
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        self.ensure_init(w);
        let md = AIMD_TABLE[self.ai].1;
        w.cwnd.wrapping_sub(w.cwnd.wrapping_mul(md) >> 8).max(2)
    }

    /// Linux `hstcp_cong_avoid`.
    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        self.ensure_init(w);
        if !w.is_cwnd_limited() {
            return;
        }
        if w.in_slow_start() {
            w.slow_start(acked);
            return;
        }
        // Keep AIMD_TABLE[ai − 1].0 < cwnd ≤ AIMD_TABLE[ai].0 (the last row is open-ended).
        let cwnd = w.cwnd;
        if cwnd > AIMD_TABLE[self.ai].0 {
            while cwnd > AIMD_TABLE[self.ai].0 && self.ai < AIMD_TABLE.len() - 1 {
                self.ai += 1;
            }
        } else if self.ai > 0 && cwnd <= AIMD_TABLE[self.ai - 1].0 {
            while self.ai > 0 && cwnd <= AIMD_TABLE[self.ai - 1].0 {
                self.ai -= 1;
            }
        }
        // cwnd += a(w)/cwnd per ACK (per call, whatever `acked` is).
        if w.cwnd < w.cwnd_clamp {
            w.cwnd_cnt += self.ai as u32 + 1;
            if w.cwnd_cnt >= w.cwnd {
                w.cwnd_cnt -= w.cwnd;
                w.cwnd += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn highspeed() -> (HighSpeed, Window) {
        let m = BTreeMap::new();
        let p = Params::new("highspeed", &m, INFO.params).unwrap();
        let h = HighSpeed::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (h, w)
    }

    /// A window of `cwnd` in congestion avoidance with the row already selected.
    fn in_ca(cwnd: u32) -> (HighSpeed, Window) {
        let (mut h, mut w) = highspeed();
        w.cwnd = cwnd;
        w.ssthresh = 2;
        h.cong_avoid(&mut w, 1);
        w.cwnd = cwnd;
        w.cwnd_cnt = 0;
        (h, w)
    }

    #[test]
    fn table_matches_rfc3649_response_function() {
        // RFC 3649 §5: b(w) = 0.5 − 0.4·ln(w/38)/ln(83000/38); p(w) = 0.078/w^1.2;
        // a(w) = w²·p(w)·2b(w)/(2 − b(w)). The table rows are the windows where a(w)
        // reaches i + 1 (to within 0.05), with md = ⌊256·b(w_i)⌋.
        for (i, &(wi, md)) in AIMD_TABLE.iter().enumerate() {
            let w = wi as f64;
            let b = 0.5 - 0.4 * (w / 38.0).ln() / (83000.0f64 / 38.0).ln();
            let a = w * w * (0.078 / w.powf(1.2)) * 2.0 * b / (2.0 - b);
            assert_eq!(md, (256.0 * b).floor() as u32, "row {i}: md");
            assert!(
                (a - (i as f64 + 1.0)).abs() < 0.06,
                "row {i}: a({wi}) = {a}"
            );
        }
    }

    #[test]
    fn congestion_avoidance_row0_is_one_packet_per_cwnd_acks() {
        // cwnd 30 ≤ 38: row 0, a = 1: cnt += 1 per ACK; the 30th ACK gives 31.
        let (mut h, mut w) = in_ca(30);
        assert_eq!(h.row(), 0);
        for _ in 0..29 {
            h.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 30);
        h.cong_avoid(&mut w, 1);
        assert_eq!((w.cwnd, w.cwnd_cnt), (31, 0));
    }

    #[test]
    fn congestion_avoidance_row1_adds_two_packets_per_cwnd_acks() {
        // cwnd 100 in row 1 (38 < 100 ≤ 118), a = 2: cnt += 2 per ACK; after 50 ACKs
        // cnt = 100 ≥ 100 → cwnd 101, cnt 0. Then cnt must reach 101: 51 more ACKs
        // (cnt 102 → 102, cnt 1). So 101 ACKs ≈ one window give +2 packets.
        let (mut h, mut w) = in_ca(100);
        assert_eq!(h.row(), 1);
        for _ in 0..49 {
            h.cong_avoid(&mut w, 1);
        }
        assert_eq!((w.cwnd, w.cwnd_cnt), (100, 98));
        h.cong_avoid(&mut w, 1);
        assert_eq!((w.cwnd, w.cwnd_cnt), (101, 0));
        for _ in 0..51 {
            h.cong_avoid(&mut w, 1);
        }
        assert_eq!((w.cwnd, w.cwnd_cnt), (102, 1));
    }

    #[test]
    fn congestion_avoidance_counts_acks_not_packets() {
        // Row 1, cwnd 100: 50 ACKs of 2 packets each (one window of delayed ACKs) still
        // add 2 per ACK → +1 packet, not +2.
        let (mut h, mut w) = in_ca(100);
        for _ in 0..50 {
            h.cong_avoid(&mut w, 2);
        }
        assert_eq!(w.cwnd, 101);
    }

    #[test]
    fn congestion_avoidance_row7_adds_eight_packets_per_window() {
        // cwnd 1000: 851 < 1000 ≤ 1058 → row 7, a = 8: +1 packet every 1000/8 = 125 ACKs.
        let (mut h, mut w) = in_ca(1000);
        assert_eq!(h.row(), 7);
        for _ in 0..124 {
            h.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 1000);
        h.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 1001);
    }

    #[test]
    fn row_bounds_are_inclusive_above_and_rows_follow_cwnd_down() {
        assert_eq!(in_ca(38).0.row(), 0);
        assert_eq!(in_ca(39).0.row(), 1);
        assert_eq!(in_ca(118).0.row(), 1);
        assert_eq!(in_ca(119).0.row(), 2);
        assert_eq!(in_ca(89053).0.row(), 71);
        assert_eq!(in_ca(200_000).0.row(), 71, "last row is open-ended");
        // From row 7 back down to cwnd 100 → row 1.
        let (mut h, mut w) = in_ca(1000);
        w.cwnd = 100;
        h.cong_avoid(&mut w, 1);
        assert_eq!(h.row(), 1);
    }

    #[test]
    fn loss_uses_md_of_the_current_row() {
        // Row 0 (md 128 = 0.5): 38 − ⌊38·128/256⌋ = 38 − 19 = 19; odd 37 − 18 = 19
        // (the halving rounds up, unlike Reno's 37/2 = 18).
        let (mut h, mut w) = in_ca(38);
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 19);
        let (mut h, mut w) = in_ca(37);
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 19);
        // Row 1 (md 112 = 0.4375): 100 − ⌊11200/256 = 43.75⌋ = 100 − 43 = 57.
        let (mut h, mut w) = in_ca(100);
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 57);
        // Row 7 (md 83): 1000 − ⌊83000/256 = 324.2⌋ = 676.
        let (mut h, mut w) = in_ca(1000);
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 676);
        // Last row (md 24 ≈ 0.094): 100000 − ⌊2400000/256 = 9375⌋ = 90625.
        let (mut h, mut w) = in_ca(100_000);
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 90625);
    }

    #[test]
    fn loss_in_slow_start_before_any_ca_halves() {
        // The row is only chosen in CA: a first loss in slow start at cwnd 500 uses row 0.
        let (mut h, mut w) = highspeed();
        w.cwnd = 500;
        h.cong_avoid(&mut w, 1); // slow start
        assert_eq!(w.cwnd, 501);
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 501 - 250);
    }

    #[test]
    fn loss_after_rto_keeps_the_stale_row() {
        // Row 7 selected at cwnd 1000; after an RTO cwnd restarts at 1 and a second RTO
        // hits in slow start at cwnd 40: md is still row 7's 83 → 40 − ⌊3320/256 = 12⌋ = 28.
        let (mut h, mut w) = in_ca(1000);
        w.ssthresh = h.on_congestion_event(&mut w, LossKind::Rto);
        w.cwnd = 40;
        h.cong_avoid(&mut w, 1); // slow start: row unchanged
        w.cwnd = 40;
        assert_eq!(h.row(), 7);
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Rto), 28);
    }

    #[test]
    fn slow_start_drops_leftover_acks() {
        // cwnd 98, ssthresh 100, stretch ACK of 5: cwnd = min(103, 100) = 100 and the 3
        // extra packets are not credited to CA (Reno would set cnt = 3).
        let (mut h, mut w) = highspeed();
        w.cwnd = 98;
        w.ssthresh = 100;
        h.cong_avoid(&mut w, 5);
        assert_eq!((w.cwnd, w.cwnd_cnt), (100, 0));
    }

    #[test]
    fn init_caps_cwnd_clamp() {
        let (mut h, mut w) = highspeed();
        h.on_cwnd_event(&mut w, super::super::CwndEvent::TxStart);
        assert_eq!(w.cwnd_clamp, 33_554_431); // 0xffffffff / 128
    }
}
