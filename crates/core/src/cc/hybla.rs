//! TCP Hybla (Caini & Firrincieli, 2004) as in Linux `tcp_hybla.c`.
//!
//! Hybla removes Reno's bias against long-RTT paths (satellites) by making the window grow
//! as if the RTT were a reference `RTT0` (25 ms). With ρ = max(SRTT/RTT0, 1):
//! - slow start adds 2^ρ − 1 packets per ACK (instead of 1), clamped to ssthresh;
//! - congestion avoidance adds ρ²/cwnd per ACK (instead of 1/cwnd);
//! - losses and timeouts are handled like Reno (halve; `tcp_reno_ssthresh`).
//!
//! Kernel arithmetic kept here:
//! - ρ is held ×8 (`rho_3ls`), computed from Linux's `srtt_us` (which is 8 × SRTT in µs)
//!   divided by RTT0 in µs, floored at 8 (ρ ≥ 1). It is recomputed only when SRTT reaches a
//!   new minimum. ρ² is held ×128 (`rho2_7ls` = 2·rho_3ls², so its low bits are kept).
//! - 2^ρ = 2^⌊ρ⌋ · 2^(frac) with the fractional part in eighths from a table ×128; the
//!   integer exponent is capped at 16, so slow start adds at most 2^16 − 1 per ACK.
//! - Sub-packet increments are carried in `snd_cwnd_cents` (×128). In CA, an increment
//!   below one packet also counts in `snd_cwnd_cnt`, with a fallback +1 once it reaches
//!   cwnd and nothing else was added.
//! - The increment is per ACK, whatever the number of packets it covers (`acked` unused).
//! - Hybla's rules apply only in the Open state (`set_state`); in every other state the
//!   ACK is handled by `tcp_reno_cong_avoid`.
//! - Init sets cwnd = ⌊ρ⌋ from the handshake SRTT and the clamp to 65535. Linux runs it
//!   after the initial window was set, so a path with RTT < 2·RTT0 starts at cwnd 1 and a
//!   500 ms path at 20.
//!
//! Lazy init: our sender has no `init` hook; the controller initialises itself on the first
//! hook that sees an SRTT. Normally that is `TX_START` at the first data transmission,
//! right after the handshake sample, i.e. the moment Linux runs `hybla_init`. If the
//! handshake was retransmitted (no Karn-valid sample), the first SRTT appears with the first
//! data ACK (`pkts_acked`), and cwnd = ρ is applied then (Linux with timestamps would have
//! a TS-based handshake sample; without, it would keep ρ = 1 forever).
use super::reno::Reno;
use super::{
    AckFlags, AckSample, CaState, CcInfo, CongestionControl, CwndEvent, FlowInit, LossKind,
    ParamSpec, Params, Window,
};
use crate::scenario::ConfigError;

/// `snd_cwnd_clamp` set by `hybla_init`.
const HYBLA_CWND_CLAMP: u32 = 65_535;
/// 2^(k/8) × 128 for k = 0..7 (the fractional part of ρ, in eighths).
const FRACTIONS: [u32; 8] = [128, 139, 152, 165, 181, 197, 215, 234];

pub const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "rtt0_ns",
    default: 25_000_000.0,
    unit: "ns",
    help: "reference RTT RTT0: rho = SRTT/RTT0 (Linux module parameter rtt0 = 25 ms)",
}];

pub const INFO: CcInfo = CcInfo {
    name: "hybla",
    summary:
        "Hybla: Reno made RTT-independent, rho = SRTT/RTT0; SS +2^rho-1, CA +rho^2/cwnd per ACK",
    feedback: "loss",
    reference: "Caini, Firrincieli, Int. J. Satell. Commun. 22 (2004); Linux net/ipv4/tcp_hybla.c",
    params: PARAMS,
    sack: None,
    ecn: false,
};

/// Linux `struct hybla`.
#[derive(Debug, Clone)]
pub struct Hybla {
    /// RTT0 in µs (Linux: `rtt0 * USEC_PER_MSEC`).
    rtt0_us: u32,
    initialized: bool,
    hybla_en: bool,
    /// Sub-packet increments ×128.
    snd_cwnd_cents: u32,
    rho: u32,
    rho2: u32,
    rho_3ls: u32,
    rho2_7ls: u32,
    /// Smallest `srtt_us` (×8 scale) seen.
    minrtt_us: u32,
    reno: Reno,
}

/// Linux `tp->srtt_us`: SRTT in µs scaled by 8 (0 before the first sample).
fn srtt_us_x8(w: &Window) -> u32 {
    w.srtt
        .map_or(0, |d| (d.ns() * 8 / 1_000).min(u32::MAX as u64) as u32)
}

impl Hybla {
    pub fn new(p: &Params<'_>, init: &FlowInit) -> Result<Self, ConfigError> {
        let rtt0_ns = p.int("rtt0_ns", 1_000, 10_000_000_000)? as u64;
        Ok(Hybla {
            rtt0_us: (rtt0_ns / 1_000) as u32,
            initialized: false,
            hybla_en: true,
            snd_cwnd_cents: 0,
            rho: 0,
            rho2: 0,
            rho_3ls: 0,
            rho2_7ls: 0,
            minrtt_us: 0,
            reno: Reno::new(p, init)?,
        })
    }

    /// ρ (integer part) and ρ ×8, for tests and traces.
    pub fn rho(&self) -> (u32, u32) {
        (self.rho, self.rho_3ls)
    }

    /// Linux `hybla_recalc_param`.
    fn recalc_param(&mut self, w: &Window) {
        self.rho_3ls = (srtt_us_x8(w) / self.rtt0_us).max(8);
        self.rho = self.rho_3ls >> 3;
        self.rho2_7ls = self.rho_3ls.wrapping_mul(self.rho_3ls) << 1;
        self.rho2 = self.rho2_7ls >> 7;
    }

    /// Linux `hybla_init`, run on the first hook that sees an SRTT (see the module doc).
    fn ensure_init(&mut self, w: &mut Window) {
        if self.initialized || w.srtt.is_none() {
            return;
        }
        self.initialized = true;
        self.rho = 0;
        self.rho2 = 0;
        self.rho_3ls = 0;
        self.rho2_7ls = 0;
        self.snd_cwnd_cents = 0;
        self.hybla_en = w.ca_state == CaState::Open;
        w.cwnd_clamp = HYBLA_CWND_CLAMP;
        self.recalc_param(w);
        self.minrtt_us = srtt_us_x8(w);
        w.cwnd = self.rho;
    }
}

impl CongestionControl for Hybla {
    fn on_ack_event(&mut self, w: &mut Window, _flags: AckFlags) {
        self.ensure_init(w);
    }

    fn on_pkts_acked(&mut self, w: &mut Window, _s: &AckSample) {
        self.ensure_init(w);
    }

    fn on_cwnd_event(&mut self, w: &mut Window, _ev: CwndEvent) {
        self.ensure_init(w);
    }

    fn on_state_change(&mut self, w: &mut Window, new: CaState) {
        self.ensure_init(w);
        // Hybla's growth only in Open; Disorder/CWR/Recovery/Loss fall back to Reno.
        self.hybla_en = new == CaState::Open;
    }

    fn on_congestion_event(&mut self, w: &mut Window, kind: LossKind) -> u32 {
        self.ensure_init(w);
        self.reno.on_congestion_event(w, kind)
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32) {
        self.ensure_init(w);
        let srtt = srtt_us_x8(w);
        // ρ follows the smallest SRTT only: queueing delay must not inflate it.
        if srtt < self.minrtt_us {
            self.recalc_param(w);
            self.minrtt_us = srtt;
        }
        if !w.is_cwnd_limited() {
            return;
        }
        if !self.hybla_en {
            self.reno.cong_avoid(w, acked);
            return;
        }
        if self.rho == 0 {
            self.recalc_param(w);
        }
        let rho_fractions = self.rho_3ls - (self.rho << 3);
        let slow_start = w.in_slow_start();
        let increment = if slow_start {
            // 2^ρ ×128 = 2^⌊ρ⌋ · (2^frac ×128); minus 1 packet (128).
            let frac = FRACTIONS
                .get(rho_fractions as usize)
                .copied()
                .unwrap_or(128);
            ((1u32 << self.rho.min(16)) * frac) - 128
        } else {
            // ρ²/cwnd, already ×128.
            let inc = self.rho2_7ls / w.cwnd.max(1);
            if inc < 128 {
                w.cwnd_cnt += 1;
            }
            inc
        };
        let odd = increment % 128;
        w.cwnd += increment >> 7;
        self.snd_cwnd_cents += odd;
        while self.snd_cwnd_cents >= 128 {
            w.cwnd += 1;
            self.snd_cwnd_cents -= 128;
            w.cwnd_cnt = 0;
        }
        // Fallback when ρ²/cwnd rounds to zero: +1 packet per cwnd ACKs, like Reno.
        if increment == 0 && odd == 0 && w.cwnd_cnt >= w.cwnd {
            w.cwnd += 1;
            w.cwnd_cnt = 0;
        }
        if slow_start {
            w.cwnd = w.cwnd.min(w.ssthresh);
        }
        w.cwnd = w.cwnd.min(w.cwnd_clamp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::SimDuration;
    use std::collections::BTreeMap;

    /// A Hybla flow initialised (TX_START) with an SRTT of `srtt_ms`, IW 10.
    fn hybla(srtt_ms: u64) -> (Hybla, Window) {
        let m = BTreeMap::new();
        let p = Params::new("hybla", &m, PARAMS).unwrap();
        let init = FlowInit {
            mss: 1448,
            initial_window: 10,
        };
        let mut h = Hybla::new(&p, &init).unwrap();
        let mut w = Window::new(10, 1448);
        w.cwnd_limited = true;
        w.srtt = Some(SimDuration::from_ms(srtt_ms));
        h.on_cwnd_event(&mut w, CwndEvent::TxStart);
        (h, w)
    }

    #[test]
    fn open_init_sets_cwnd_to_rho_from_handshake_srtt() {
        // 500 ms / 25 ms = 20: rho_3ls = 8·500000/25000 = 160, rho = 20.
        let (h, w) = hybla(500);
        assert_eq!(h.rho(), (20, 160));
        assert_eq!(w.cwnd, 20);
        assert_eq!(w.cwnd_clamp, 65_535);
        // 40 ms: rho_3ls = 8·40000/25000 = 12.8 -> 12, rho = 1: cwnd 1, not IW 10.
        let (h, w) = hybla(40);
        assert_eq!(h.rho(), (1, 12));
        assert_eq!(w.cwnd, 1);
        // 10 ms: rho_3ls = 3 is floored at 8 (rho >= 1).
        let (h, _) = hybla(10);
        assert_eq!(h.rho(), (1, 8));
    }

    #[test]
    fn open_init_waits_for_the_first_srtt() {
        let m = BTreeMap::new();
        let p = Params::new("hybla", &m, PARAMS).unwrap();
        let init = FlowInit {
            mss: 1448,
            initial_window: 10,
        };
        let mut h = Hybla::new(&p, &init).unwrap();
        let mut w = Window::new(1, 1448); // retransmitted handshake: cwnd 1, no sample
        h.on_cwnd_event(&mut w, CwndEvent::TxStart);
        assert_eq!(w.cwnd, 1);
        w.srtt = Some(SimDuration::from_ms(100)); // first data ACK: rho = 4
        h.on_pkts_acked(&mut w, &AckSample::default());
        assert_eq!((h.rho().0, w.cwnd), (4, 4));
    }

    #[test]
    fn slow_start_at_rtt_500ms_adds_2_pow_rho_minus_1_capped() {
        // rho = 20 but the kernel caps the exponent at 16: +2^16 - 1 = 65535 per ACK
        // ((65536·128 - 128) >> 7 = 65535, no fraction), then clamped to ssthresh.
        let (mut h, mut w) = hybla(500);
        w.ssthresh = 1000;
        h.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 1000);
        // With infinite ssthresh the clamp 65535 is the limit: 20 + 65535 -> 65535.
        let (mut h, mut w) = hybla(500);
        h.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 65_535);
    }

    #[test]
    fn slow_start_uses_the_fraction_table_and_carries_cents() {
        // 62 ms: rho_3ls = 8·62000/25000 = 19.84 -> 19: rho = 2, fraction 3/8;
        // 2^2.375·128 = 4·165 = 660; minus 128 -> 532 = 4 packets + 20/128 per ACK.
        let (mut h, mut w) = hybla(62);
        assert_eq!(h.rho(), (2, 19));
        assert_eq!(w.cwnd, 2);
        h.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 6);
        assert_eq!(h.snd_cwnd_cents, 20);
        // 7 ACKs: 7·532 = 3724 = 29 packets + 12/128 (cents 20 + 7·20 = 160 -> 1 carry).
        for _ in 0..6 {
            h.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 2 + 29);
        assert_eq!(h.snd_cwnd_cents, 12);
    }

    #[test]
    fn congestion_avoidance_at_rtt_500ms_adds_rho_squared_over_cwnd() {
        // rho² ×128 = 2·160² = 51200 = 400·128. At cwnd 100: 51200/100 = 512 = +4 packets
        // per ACK (400/100).
        let (mut h, mut w) = hybla(500);
        w.cwnd = 100;
        w.ssthresh = 50;
        h.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 104);
        // At cwnd 300: 51200/300 = 170 = 1 packet + 42/128 per ACK; after 3 ACKs:
        // 301 (cents 42) -> 51200/301 = 170 -> 302 (84) -> 51200/302 = 169 -> 303 + 41
        // = 125 cents.
        w.cwnd = 300;
        h.snd_cwnd_cents = 0;
        for _ in 0..3 {
            h.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 303);
        assert_eq!(h.snd_cwnd_cents, 125);
        // Reno at the same RTT would add 1/cwnd per ACK: 400 times less.
    }

    #[test]
    fn congestion_avoidance_per_ack_not_per_packet() {
        // An ACK for 2 packets (delayed ACK) adds the same ρ²/cwnd as an ACK for 1.
        let (mut h, mut w) = hybla(500);
        w.cwnd = 100;
        w.ssthresh = 50;
        h.cong_avoid(&mut w, 2);
        assert_eq!(w.cwnd, 104);
    }

    #[test]
    fn recovery_falls_back_to_reno() {
        // Outside Open the ACK goes to tcp_reno_cong_avoid: +1 per cwnd packets in CA.
        let (mut h, mut w) = hybla(500);
        w.cwnd = 100;
        w.ssthresh = 50;
        h.on_state_change(&mut w, CaState::Loss);
        for _ in 0..99 {
            h.cong_avoid(&mut w, 1);
        }
        assert_eq!(w.cwnd, 100);
        h.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 101);
        // Back in Open: Hybla again (51200/101 = 506 -> +3 packets, 122 cents).
        h.on_state_change(&mut w, CaState::Open);
        h.cong_avoid(&mut w, 1);
        assert_eq!(w.cwnd, 104);
    }

    #[test]
    fn loss_halves_like_reno() {
        let (mut h, mut w) = hybla(500);
        w.cwnd = 301;
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Recovery), 150);
        w.cwnd = 3;
        assert_eq!(h.on_congestion_event(&mut w, LossKind::Rto), 2);
    }

    #[test]
    fn open_rho_follows_new_minimum_srtt_only() {
        let (mut h, mut w) = hybla(500);
        w.ssthresh = 10;
        w.cwnd = 100;
        // Queueing raises SRTT to 800 ms: rho unchanged (20).
        w.srtt = Some(SimDuration::from_ms(800));
        h.cong_avoid(&mut w, 1);
        assert_eq!(h.rho().0, 20);
        // A new minimum of 250 ms: rho = 10.
        w.srtt = Some(SimDuration::from_ms(250));
        h.cong_avoid(&mut w, 1);
        assert_eq!(h.rho(), (10, 80));
    }

    #[test]
    fn rtt0_parameter_is_validated() {
        let mut m = BTreeMap::new();
        m.insert("rtt0_ns".to_string(), 0.0);
        let p = Params::new("hybla", &m, PARAMS).unwrap();
        let e = Hybla::new(
            &p,
            &FlowInit {
                mss: 1448,
                initial_window: 10,
            },
        )
        .err()
        .unwrap();
        assert!(e.0.starts_with("cca_params.rtt0_ns"), "{e}");
    }
}
