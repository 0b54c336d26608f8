//! DCTCP as in Linux `tcp_dctcp.c` (Alizadeh et al., SIGCOMM 2010; RFC 8257).
//!
//! The sender keeps α, a moving average of the fraction of its packets that were CE-marked,
//! in fixed point (1024 = 1):
//!
//! - once per window of data (when `snd_una` reaches the `snd_nxt` recorded at the previous
//!   update), α ← α − α·g + g·F with g = 2^−`shift_g` (1/16) and
//!   F = CE-delivered / delivered over that window. The counts are the core's
//!   `Window.delivered` / `Window.delivered_ce` (Linux `tp->delivered` and
//!   `tp->delivered_ce`: every packet (S)ACKed by an ACK carrying ECE counts as CE, as
//!   `tcp_count_delivered` does);
//! - on an ECN echo the core enters CWR and asks for ssthresh: cwnd·(1 − α/2), at least 2;
//! - a real loss is handled like Reno: entering Recovery (the `set_state` hook) and an RTO
//!   (the `CA_EVENT_LOSS` event) both override ssthresh with cwnd/2, and undo restores
//!   max(cwnd, cwnd at the last cut);
//! - growth is Reno's (`tcp_reno_cong_avoid`).
//!
//! The kernel's integer quirks are kept: α decays by ⌊α/16⌋ (and drops straight to 0 once
//! α < 16, because of `min_not_zero`), F is added as ⌊CE·2^(10−shift_g)/delivered⌋, and the
//! cut is cwnd − ⌊cwnd·α/2048⌋. With those truncations a constant marked fraction F does
//! not settle exactly at 1024·F: α stops where ⌊α·g⌋ = ⌊1024·F·g⌋ (271/1024 for F = ¼).
//!
//! Receiver side: Linux DCTCP also runs at the receiver (`dctcp_ece_ack_update`, through
//! the `CA_EVENT_ECN_IS_CE`/`ECN_NO_CE` events): ECE mirrors the CE bit of each data
//! packet and a CE-state change forces an immediate ACK (after flushing a delayed ACK with
//! the old state). In this simulator that logic lives in the receiver (`EcnEcho::Dctcp` in
//! `tcp/receiver.rs`), which the core selects because `INFO.ecn` is true; the sender-side
//! controller ignores those two events. Because the core always negotiates ECN for DCTCP,
//! Linux's fallback to Reno on a non-ECN connection (`dctcp_reno`) cannot occur here.
//! PLB (protective load balancing, a multipath re-hash) is not modelled: the dumbbell has a
//! single path.
//!
//! Hook timing: Linux ≥ 6.14 calls `in_ack_event` after the retransmission queue has been
//! cleaned, so α is updated with this ACK's delivery counts; this simulator calls it before
//! the scoreboard (the older order), so the window boundary and counts lag by one ACK. The
//! per-window fractions are unchanged (every ACK is counted in exactly one window).
use super::{CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind, ParamSpec};
use super::{Params, Window};
use crate::scenario::ConfigError;

/// Linux `DCTCP_MAX_ALPHA`: α = 1 in fixed point.
pub const DCTCP_MAX_ALPHA: u32 = 1024;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "shift_g",
        default: 4.0,
        unit: "log2",
        help: "EWMA gain g = 1/2^shift_g for alpha (Linux dctcp_shift_g, 0..10)",
    },
    ParamSpec {
        name: "alpha_on_init",
        default: 1024.0,
        unit: "/1024",
        help: "initial alpha (Linux dctcp_alpha_on_init; 1024 = 1: the first mark halves)",
    },
];

pub const INFO: CcInfo = CcInfo {
    name: "dctcp",
    summary: "DCTCP: cut cwnd by alpha/2 per window, alpha = EWMA of the CE-marked fraction",
    feedback: "loss",
    reference: "Alizadeh et al. (SIGCOMM 2010); RFC 8257; Linux net/ipv4/tcp_dctcp.c",
    params: PARAMS,
    sack: None,
    ecn: true,
};

/// Linux DCTCP state (`struct dctcp`, without the receiver-side and PLB fields).
#[derive(Debug, Clone)]
pub struct Dctcp {
    shift_g: u32,
    /// α × 1024.
    alpha: u32,
    /// End of the current observation window (Linux `next_seq`).
    next_seq: u64,
    old_delivered: u64,
    old_delivered_ce: u64,
    /// cwnd at the last reduction, for undo (Linux `loss_cwnd`).
    loss_cwnd: u32,
}

impl Dctcp {
    /// Linux `dctcp_init` at connection establishment: nothing sent or delivered yet, so the
    /// first window ends with the first ACK.
    pub fn new(p: &Params<'_>, _init: &FlowInit) -> Result<Self, ConfigError> {
        let shift_g = p.int("shift_g", 0, 10)? as u32;
        let alpha = p.int("alpha_on_init", 0, DCTCP_MAX_ALPHA as i64)? as u32;
        Ok(Dctcp {
            shift_g,
            alpha,
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            loss_cwnd: 0,
        })
    }

    /// α in fixed point (1024 = 1), for tests and traces.
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// Linux `dctcp_reset`: start a new observation window.
    fn reset(&mut self, w: &Window) {
        self.next_seq = w.snd_nxt;
        self.old_delivered = w.delivered;
        self.old_delivered_ce = w.delivered_ce;
    }

    /// Linux `dctcp_react_to_loss`: a real loss halves like Reno.
    fn react_to_loss(&mut self, w: &mut Window) {
        self.loss_cwnd = w.cwnd;
        w.ssthresh = (w.cwnd >> 1).max(2);
    }
}

impl CongestionControl for Dctcp {
    /// Linux `dctcp_update_alpha` (the `in_ack_event` hook).
    fn on_ack_event(&mut self, w: &mut Window, _flags: super::AckFlags) {
        if w.snd_una < self.next_seq {
            return;
        }
        let delivered = w.delivered - self.old_delivered;
        let mut delivered_ce = w.delivered_ce - self.old_delivered_ce;
        let mut alpha = self.alpha;
        // α −= α·g, where min_not_zero makes α < 2^shift_g fall straight to 0.
        let decay = alpha >> self.shift_g;
        alpha -= if decay == 0 { alpha } else { decay };
        if delivered_ce > 0 {
            // + g·F = CE·2^(10 − shift_g) / delivered.
            delivered_ce <<= 10 - self.shift_g;
            delivered_ce /= delivered.max(1);
            alpha = (alpha as u64 + delivered_ce).min(DCTCP_MAX_ALPHA as u64) as u32;
        }
        self.alpha = alpha;
        self.reset(w);
    }

    /// Linux `dctcp_ssthresh`: cwnd·(1 − α/2) on an ECN echo (and the provisional value on
    /// loss, which `on_state_change` / `on_cwnd_event` then override with cwnd/2).
    fn on_congestion_event(&mut self, w: &mut Window, _kind: LossKind) -> u32 {
        self.loss_cwnd = w.cwnd;
        let cut = ((w.cwnd as u64 * self.alpha as u64) >> 11) as u32;
        (w.cwnd - cut).max(2)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
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
        w.cong_avoid_ai(cwnd, acked);
    }

    /// Linux `dctcp_state`: entering Recovery is a real loss. (Linux compares with the old
    /// state; the core only calls this hook on an actual change.)
    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        if new == CaState::Recovery {
            self.react_to_loss(w);
        }
    }

    /// Linux `dctcp_cwnd_event`: an RTO is a real loss (handled here rather than in the
    /// state hook so it is applied once per RTO episode). The CE events belong to the
    /// receiver side (see the module doc).
    fn on_cwnd_event(&mut self, w: &mut Window, ev: CwndEvent) {
        if ev == CwndEvent::Loss {
            self.react_to_loss(w);
        }
    }

    /// Linux `dctcp_cwnd_undo`.
    fn on_spurious_loss(&mut self, w: &mut Window) -> u32 {
        w.cwnd.max(self.loss_cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::AckFlags;
    use std::collections::BTreeMap;

    fn dctcp() -> (Dctcp, Window) {
        let m = BTreeMap::new();
        let p = Params::new("dctcp", &m, PARAMS).unwrap();
        let d = Dctcp::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        (d, w)
    }

    /// Deliver one window of `n` packets, `ce` of them by ECE ACKs, and end it with the ACK
    /// that reaches the window's end (the ACK that triggers the α update).
    fn window(d: &mut Dctcp, w: &mut Window, n: u64, ce: u64) {
        w.snd_una = d.next_seq;
        w.snd_nxt = d.next_seq + n * 1448;
        d.on_ack_event(w, AckFlags::default());
        // The next window's packets get delivered, then its last ACK closes it.
        w.delivered += n;
        w.delivered_ce += ce;
    }

    #[test]
    fn open_alpha_starts_at_one_and_first_mark_halves() {
        let (mut d, mut w) = dctcp();
        assert_eq!(d.alpha(), 1024);
        w.cwnd = 40;
        // cwnd − ⌊40·1024/2048⌋ = 40 − 20 = 20.
        assert_eq!(d.on_congestion_event(&mut w, LossKind::Cwr), 20);
    }

    #[test]
    fn open_alpha_follows_the_ewma_of_the_marked_fraction() {
        // F = 4/16 = 0.25 every window, g = 1/16. By hand in fixed point (×1024):
        //   α1 = 1024 − ⌊1024/16⌋ + ⌊4·64/16⌋ = 1024 − 64 + 16 = 976  (real 0.953125·1024)
        //   α2 = 976 − 61 + 16 = 931                                  (real 0.909180·1024)
        //   α3 = 931 − ⌊931/16⌋ + 16 = 931 − 58 + 16 = 889            (real 888.81)
        //   α4 = 889 − 55 + 16 = 850                                  (real 849.3)
        let (mut d, mut w) = dctcp();
        // The first ACK closes the empty window opened at connection start: decay only,
        // 1024 − 64 = 960. Restart from α = 1 for the hand sequence.
        window(&mut d, &mut w, 16, 4);
        assert_eq!(d.alpha(), 960);
        d.alpha = 1024;
        let mut got = vec![];
        for _ in 0..4 {
            window(&mut d, &mut w, 16, 4);
            got.push(d.alpha());
        }
        assert_eq!(got, vec![976, 931, 889, 850]);
        // Real-valued α_n = F + (1 − F)(15/16)^n: after 200 windows 0.25 + 0.75·2.5e-6.
        // The kernel's truncating decay stops where ⌊α/16⌋ = 16, i.e. α = 271 from above
        // (from 272: 272 − 17 + 16 = 271; 271 − 16 + 16 = 271) = 0.2646.
        for _ in 0..200 {
            window(&mut d, &mut w, 16, 4);
        }
        assert_eq!(d.alpha(), 271);
    }

    #[test]
    fn open_alpha_decays_to_zero_without_marks() {
        let (mut d, mut w) = dctcp();
        d.alpha = 40;
        // 40 − ⌊40/16⌋ = 38; 38 − 2 = 36; ...; below 16 min_not_zero takes α itself: 15 → 0.
        window(&mut d, &mut w, 10, 0);
        assert_eq!(d.alpha(), 38);
        d.alpha = 15;
        window(&mut d, &mut w, 10, 0);
        assert_eq!(d.alpha(), 0);
    }

    #[test]
    fn open_alpha_is_updated_once_per_window() {
        let (mut d, mut w) = dctcp();
        w.snd_nxt = 20 * 1448;
        d.on_ack_event(&mut w, AckFlags::default()); // closes the initial window
        assert_eq!(d.alpha(), 960);
        // ACKs inside the window (snd_una < next_seq = 20·1448) leave α alone, even marked.
        for i in 1..20u64 {
            w.snd_una = i * 1448;
            w.delivered += 1;
            w.delivered_ce += 1;
            d.on_ack_event(&mut w, AckFlags::default());
            assert_eq!(d.alpha(), 960);
        }
        w.snd_una = 20 * 1448;
        w.delivered += 1;
        w.delivered_ce += 1;
        d.on_ack_event(&mut w, AckFlags::default());
        // All 20 delivered were CE: 960 − 60 + ⌊20·64/20⌋ = 964.
        assert_eq!(d.alpha(), 964);
    }

    #[test]
    fn cwr_ssthresh_is_cwnd_times_one_minus_half_alpha() {
        let (mut d, mut w) = dctcp();
        w.cwnd = 100;
        d.alpha = 512; // α = 0.5: 100·(1 − 0.25) = 75; kernel 100 − ⌊51200/2048⌋ = 75
        assert_eq!(d.on_congestion_event(&mut w, LossKind::Cwr), 75);
        d.alpha = 271; // α = 0.2646: 80·(1 − 0.1323) = 69.4; kernel 80 − ⌊21680/2048⌋ = 70
        w.cwnd = 80;
        assert_eq!(d.on_congestion_event(&mut w, LossKind::Cwr), 70);
        d.alpha = 0; // no marks: no cut
        assert_eq!(d.on_congestion_event(&mut w, LossKind::Cwr), 80);
        w.cwnd = 2;
        d.alpha = 1024;
        assert_eq!(
            d.on_congestion_event(&mut w, LossKind::Cwr),
            2,
            "floor of 2"
        );
    }

    #[test]
    fn recovery_entry_halves_whatever_alpha() {
        let (mut d, mut w) = dctcp();
        w.cwnd = 100;
        d.alpha = 64; // ECN cut would be 100 − 3 = 97
        w.ssthresh = d.on_congestion_event(&mut w, LossKind::Recovery);
        assert_eq!(w.ssthresh, 97);
        d.on_state_change(&mut w, CaState::Recovery);
        assert_eq!(w.ssthresh, 50);
        // Spurious: undo to max(cwnd, loss_cwnd) = max(60, 100).
        w.cwnd = 60;
        assert_eq!(d.on_spurious_loss(&mut w), 100);
        // CWR entry does not override.
        w.ssthresh = 7;
        d.on_state_change(&mut w, CaState::Cwr);
        assert_eq!(w.ssthresh, 7);
    }

    #[test]
    fn loss_rto_event_halves() {
        let (mut d, mut w) = dctcp();
        w.cwnd = 33;
        d.alpha = 0;
        w.ssthresh = d.on_congestion_event(&mut w, LossKind::Rto);
        assert_eq!(w.ssthresh, 33);
        d.on_cwnd_event(&mut w, CwndEvent::Loss);
        assert_eq!(w.ssthresh, 16); // 33 >> 1
                                    // The receiver-side CE events do nothing at the sender.
        d.on_cwnd_event(&mut w, CwndEvent::EcnIsCe);
        assert_eq!(w.ssthresh, 16);
    }

    #[test]
    fn open_grows_like_reno() {
        let (mut d, mut w) = dctcp();
        d.cong_avoid(&mut w, 2);
        assert_eq!(w.cwnd, 12, "slow start: +acked");
        w.ssthresh = 12;
        for _ in 0..12 {
            d.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 13, "congestion avoidance: +1 per cwnd ACKed");
    }

    #[test]
    fn params_are_validated() {
        let mut m = BTreeMap::new();
        m.insert("shift_g".to_string(), 11.0);
        let p = Params::new("dctcp", &m, PARAMS).unwrap();
        let init = FlowInit {
            mss: 1448,
            initial_window: 10,
        };
        let e = Dctcp::new(&p, &init).err().unwrap();
        assert!(e.0.starts_with("cca_params.shift_g: 11 is invalid"), "{e}");
    }
}
