//! Proportional Rate Reduction (RFC 6937) exactly as Linux `tcp_cwnd_reduction` computes it,
//! in packets.
//!
//! While in CWR or Recovery, each ACK sets `cwnd = in_flight + sndcnt`: while the pipe is
//! above ssthresh, sending is proportional to delivery (`ssthresh/prior_cwnd` of it); once
//! below, slow-start-like catch-up bounded by ssthresh (the SSRB variant, +1 when the ACK
//! advanced snd_una without new losses).

/// PRR state for one reduction episode.
#[derive(Debug, Clone, Default)]
pub struct Prr {
    /// Packets delivered to the receiver since the reduction started.
    pub prr_delivered: u32,
    /// Packets sent since the reduction started.
    pub prr_out: u32,
}

/// Inputs of one ACK during a reduction.
#[derive(Debug, Clone, Copy)]
pub struct PrrAck {
    pub newly_acked_sacked: u32,
    pub newly_lost: u32,
    pub snd_una_advanced: bool,
    pub in_flight: u32,
    pub ssthresh: u32,
    pub prior_cwnd: u32,
}

impl Prr {
    /// Start a reduction (Linux `tcp_init_cwnd_reduction`).
    pub fn enter(&mut self) {
        self.prr_delivered = 0;
        self.prr_out = 0;
    }

    /// Count packets sent during the reduction.
    #[inline]
    pub fn on_sent(&mut self, pkts: u32) {
        self.prr_out += pkts;
    }

    /// The new cwnd for this ACK, or `None` if the ACK delivered nothing.
    pub fn on_ack(&mut self, a: PrrAck) -> Option<u32> {
        if a.newly_acked_sacked == 0 || a.prior_cwnd == 0 {
            return None;
        }
        self.prr_delivered += a.newly_acked_sacked;
        let delta = a.ssthresh as i64 - a.in_flight as i64;
        let mut sndcnt: i64 = if delta < 0 {
            let dividend = a.ssthresh as u64 * self.prr_delivered as u64 + a.prior_cwnd as u64 - 1;
            (dividend / a.prior_cwnd as u64) as i64 - self.prr_out as i64
        } else {
            let mut s =
                (self.prr_delivered as i64 - self.prr_out as i64).max(a.newly_acked_sacked as i64);
            if a.snd_una_advanced && a.newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        // Force the fast retransmit on the ACK that starts the recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        Some((a.in_flight as i64 + sndcnt).max(1) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(delivered: u32, in_flight: u32) -> PrrAck {
        PrrAck {
            newly_acked_sacked: delivered,
            newly_lost: 0,
            snd_una_advanced: false,
            in_flight,
            ssthresh: 10,
            prior_cwnd: 20,
        }
    }

    #[test]
    fn first_ack_forces_one_packet_for_the_fast_retransmit() {
        // RFC 6937 example: cwnd 20 -> ssthresh 10; one SACK, pipe 19 (> ssthresh):
        // sndcnt = ceil(10*1/20) - 0 = 1 -> cwnd = 19 + 1 = 20.
        let mut p = Prr::default();
        p.enter();
        assert_eq!(p.on_ack(ack(1, 19)), Some(20));
    }

    #[test]
    fn proportional_phase_sends_half_as_fast_as_delivery() {
        // With ssthresh/prior_cwnd = 1/2, after 10 deliveries PRR allows 5 sends in total.
        let mut p = Prr::default();
        p.enter();
        let mut in_flight = 19u32;
        let mut sent = 0;
        for _ in 0..10 {
            let cwnd = p.on_ack(ack(1, in_flight)).unwrap();
            let allowed = cwnd.saturating_sub(in_flight);
            p.on_sent(allowed);
            sent += allowed;
            in_flight = in_flight + allowed - 1;
        }
        assert_eq!(sent, 5);
        assert_eq!(in_flight, 14);
    }

    #[test]
    fn below_ssthresh_catches_up_but_not_beyond() {
        let mut p = Prr::default();
        p.enter();
        p.on_sent(1);
        // pipe 6 < ssthresh 10: sndcnt = min(10 - 6, max(4 - 1, 4) + 1) = 4 -> cwnd 10.
        let a = PrrAck {
            newly_acked_sacked: 4,
            snd_una_advanced: true,
            ..ack(4, 6)
        };
        assert_eq!(p.on_ack(a), Some(10));
    }

    #[test]
    fn ack_without_delivery_changes_nothing() {
        let mut p = Prr::default();
        p.enter();
        assert_eq!(p.on_ack(ack(0, 10)), None);
    }
}
