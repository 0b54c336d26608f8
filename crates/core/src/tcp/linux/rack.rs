//! RACK (RFC 8985) state as Linux `tcp_recovery.c` keeps it: the transmit time and end of
//! the most recently *sent* segment that was delivered, its RTT, and the reordering window.
//!
//! A segment is lost once it was sent before that segment and more than
//! `rack.rtt + reo_wnd` has elapsed since its own transmission. Linux's reordering window is
//! 0 while no reordering has been seen and the connection is already recovering (or has
//! ≥ DupThresh SACKed segments); otherwise `min_rtt/4 × steps`, capped at srtt.
use crate::engine::time::{SimDuration, SimTime};

/// RACK state.
#[derive(Debug, Clone, Default)]
pub struct Rack {
    /// Transmit time and end sequence of the most recently sent delivered segment.
    pub xmit_time: SimTime,
    pub end_seq: u64,
    pub rtt: SimDuration,
    /// A newer delivered segment was seen since the last detection run.
    pub advanced: bool,
    /// Reordering window multiplier (grows with D-SACKs).
    pub reo_wnd_steps: u32,
    /// Recoveries the inflated window persists for.
    pub reo_wnd_persist: u32,
    /// Reordering observed on this connection.
    pub reord_seen: bool,
    /// A D-SACK arrived since the last window adaptation.
    pub dsack_seen: bool,
}

/// Linux `tcp_skb_sent_after`: (t1, seq1) was sent after (t2, seq2).
#[inline]
pub fn sent_after(t1: SimTime, t2: SimTime, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    pub fn new() -> Self {
        Rack {
            reo_wnd_steps: 1,
            ..Default::default()
        }
    }

    /// Linux `tcp_rack_advance`: a segment sent at `xmit_time`, ending at `end_seq`, was
    /// (S)ACKed at `now`. `retransmitted` segments whose RTT is below min_rtt are ambiguous
    /// (the ACK may be for the original) and are ignored.
    pub fn advance(
        &mut self,
        now: SimTime,
        xmit_time: SimTime,
        end_seq: u64,
        retransmitted: bool,
        min_rtt: Option<SimDuration>,
    ) {
        let rtt = now.saturating_since(xmit_time);
        if retransmitted && min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.advanced = true;
        self.rtt = rtt;
        if sent_after(xmit_time, self.xmit_time, end_seq, self.end_seq) {
            self.xmit_time = xmit_time;
            self.end_seq = end_seq;
        }
    }

    /// Linux `tcp_rack_reo_wnd`.
    pub fn reo_wnd(
        &self,
        recovering: bool,
        sacked_out: u32,
        reordering: u32,
        min_rtt: Option<SimDuration>,
        srtt: Option<SimDuration>,
    ) -> SimDuration {
        if !self.reord_seen && (recovering || sacked_out >= reordering) {
            return SimDuration::ZERO;
        }
        let m = min_rtt.unwrap_or(SimDuration::ZERO) / 4 * self.reo_wnd_steps as u64;
        m.min(srtt.unwrap_or(SimDuration::ZERO))
    }

    /// Linux `tcp_rack_update_reo_wnd`, called per ACK: adapt the window to D-SACKs.
    pub fn update_reo_wnd(&mut self, dsack_now: bool, recovery_ended_without_dsack: bool) {
        if dsack_now {
            self.dsack_seen = true;
        }
        if self.dsack_seen {
            self.reo_wnd_steps = (self.reo_wnd_steps + 1).min(0xff);
            self.dsack_seen = false;
            self.reo_wnd_persist = 16;
            self.reord_seen = true;
        } else if recovery_ended_without_dsack {
            if self.reo_wnd_persist > 0 {
                self.reo_wnd_persist -= 1;
            } else {
                self.reo_wnd_steps = 1;
            }
        }
    }

    /// Time left (ns, may be ≤ 0) before a segment sent at `xmit_time` counts as lost.
    #[inline]
    pub fn remaining_ns(&self, now: SimTime, xmit_time: SimTime, reo_wnd: SimDuration) -> i64 {
        let deadline = xmit_time.ns() as i64 + self.rtt.ns() as i64 + reo_wnd.ns() as i64;
        deadline - now.ns() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reo_wnd_is_zero_when_recovering_without_reordering() {
        let r = Rack::new();
        let w = r.reo_wnd(
            true,
            0,
            3,
            Some(SimDuration::from_ms(100)),
            Some(SimDuration::from_ms(120)),
        );
        assert_eq!(w, SimDuration::ZERO);
        // Open with 1 SACKed segment: min_rtt/4 = 25 ms.
        let w = r.reo_wnd(
            false,
            1,
            3,
            Some(SimDuration::from_ms(100)),
            Some(SimDuration::from_ms(120)),
        );
        assert_eq!(w, SimDuration::from_ms(25));
    }

    #[test]
    fn advance_keeps_most_recently_sent_and_skips_ambiguous_retransmissions() {
        let mut r = Rack::new();
        r.advance(SimTime(500), SimTime(100), 2000, false, None);
        r.advance(SimTime(510), SimTime(50), 1000, false, None); // older send: rtt updated only
        assert_eq!(
            (r.xmit_time, r.end_seq, r.rtt),
            (SimTime(100), 2000, SimDuration(460))
        );
        // Retransmission ACKed faster than min_rtt: ignored.
        r.advance(
            SimTime(520),
            SimTime(515),
            3000,
            true,
            Some(SimDuration(400)),
        );
        assert_eq!(r.xmit_time, SimTime(100));
    }

    #[test]
    fn dsack_inflates_the_window_in_steps() {
        let mut r = Rack::new();
        r.update_reo_wnd(true, false);
        assert_eq!(r.reo_wnd_steps, 2);
        assert!(r.reord_seen);
        let w = r.reo_wnd(
            true,
            5,
            3,
            Some(SimDuration::from_ms(100)),
            Some(SimDuration::from_ms(200)),
        );
        assert_eq!(w, SimDuration::from_ms(50));
    }
}
