//! Delivery-rate sampling (Linux `tcp_rate.c`, draft-cheng-iccrg-delivery-rate-estimation).
//!
//! Each transmitted segment is stamped with the connection's delivered count and times;
//! when it is (S)ACKed, the most recently sent delivered segment gives a sample
//! `delivered / max(send interval, ack interval)`. BBR consumes these samples; every other
//! algorithm may ignore them.
use crate::engine::time::{SimDuration, SimTime};

/// Per-segment stamp taken at transmission.
#[derive(Copy, Clone, Debug, Default)]
pub struct TxStamp {
    pub delivered: u64,
    pub delivered_ce: u64,
    /// `None` once the segment was SACKed (so a later cumulative ACK does not reuse it).
    pub delivered_time: Option<SimTime>,
    pub first_tx_time: SimTime,
    pub app_limited: bool,
    /// Packets in flight right after this transmission (Linux v3 `tx.in_flight`).
    pub in_flight: u32,
    /// Connection's lost count when sent (Linux v3 `tx.lost`).
    pub lost: u64,
}

/// A delivery-rate sample for one ACK.
#[derive(Copy, Clone, Debug, Default)]
pub struct RateSample {
    /// Packets delivered over `interval` (None = invalid sample).
    pub delivered: Option<u64>,
    pub delivered_ce: u64,
    pub interval: Option<SimDuration>,
    pub prior_delivered: u64,
    pub prior_time: Option<SimTime>,
    /// Packets newly (S)ACKed by this ACK and newly marked lost.
    pub acked_sacked: u32,
    pub losses: u32,
    pub is_app_limited: bool,
    pub is_retrans: bool,
    pub is_ack_delayed: bool,
    /// RTT of the most recently (S)ACKed segment, if measurable.
    pub rtt: Option<SimDuration>,
    pub prior_in_flight: u32,
    /// In flight when the sample's packet was sent (Linux BBRv3 `rs->tx_in_flight`).
    pub tx_in_flight: u32,
    /// Lost count when the sample's packet was sent, and packets marked lost since then
    /// (Linux BBRv3 `rs->prior_lost`, `rs->lost`).
    pub prior_lost: u64,
    pub lost: u64,
    pub(crate) last_end_seq: u64,
    pub(crate) send_interval: SimDuration,
}

impl RateSample {
    /// Delivery rate in bits per second given the segment size.
    pub fn rate_bps(&self, mss_bytes: u32) -> Option<u64> {
        let d = self.delivered?;
        let i = self.interval?;
        if i.ns() == 0 {
            return None;
        }
        Some(((d as u128 * mss_bytes as u128 * 8 * 1_000_000_000) / i.ns() as u128) as u64)
    }
}

/// Connection-level rate-sampling state.
#[derive(Debug, Clone, Default)]
pub struct RateSampler {
    /// Packets delivered (ACKed or SACKed) so far, and those with CE marks.
    pub delivered: u64,
    pub delivered_ce: u64,
    pub delivered_time: SimTime,
    first_tx_time: SimTime,
    /// Non-zero while application-limited: the delivered count at which that ends.
    pub app_limited_until: u64,
    /// Last non-app-limited (or highest app-limited) sample, Linux `rate_delivered`.
    pub rate_delivered: u64,
    pub rate_interval: SimDuration,
    pub rate_app_limited: bool,
}

impl RateSampler {
    /// Stamp a segment being transmitted at `now` with `packets_out` before the send.
    pub fn on_send(&mut self, now: SimTime, packets_out: u32) -> TxStamp {
        if packets_out == 0 {
            self.first_tx_time = now;
            self.delivered_time = now;
        }
        TxStamp {
            delivered: self.delivered,
            delivered_ce: self.delivered_ce,
            delivered_time: Some(self.delivered_time),
            first_tx_time: self.first_tx_time,
            app_limited: self.app_limited_until != 0,
            in_flight: 0,
            lost: 0,
        }
    }

    /// A segment with `stamp`, sent at `tx_time` and ending at `end_seq`, was delivered.
    /// Keeps the stamp of the most recently sent delivered segment in `rs`.
    pub fn on_delivered(
        &mut self,
        stamp: &mut TxStamp,
        tx_time: SimTime,
        end_seq: u64,
        retrans: bool,
        sacked: bool,
        rs: &mut RateSample,
    ) {
        let Some(dtime) = stamp.delivered_time else {
            return;
        };
        let newer = rs.prior_time.is_none()
            || tx_time > self.first_tx_time
            || (tx_time == self.first_tx_time && end_seq > rs.last_end_seq);
        if newer {
            rs.prior_delivered = stamp.delivered;
            rs.delivered_ce = stamp.delivered_ce;
            rs.prior_time = Some(dtime);
            rs.is_app_limited = stamp.app_limited;
            rs.is_retrans = retrans;
            rs.last_end_seq = end_seq;
            rs.tx_in_flight = stamp.in_flight;
            rs.prior_lost = stamp.lost;
            self.first_tx_time = tx_time;
            rs.send_interval = tx_time.saturating_since(stamp.first_tx_time);
        }
        if sacked {
            stamp.delivered_time = None;
        }
    }

    /// Finish the sample for this ACK (Linux `tcp_rate_gen`).
    pub fn generate(
        &mut self,
        now: SimTime,
        delivered_now: u32,
        lost_now: u32,
        min_rtt: Option<SimDuration>,
        rs: &mut RateSample,
    ) {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if delivered_now > 0 {
            self.delivered_time = now;
        }
        rs.acked_sacked = delivered_now;
        rs.losses = lost_now;
        let Some(prior_time) = rs.prior_time else {
            rs.delivered = None;
            rs.interval = None;
            return;
        };
        let delivered = self.delivered - rs.prior_delivered;
        rs.delivered_ce = self.delivered_ce.saturating_sub(rs.delivered_ce);
        // The longer of the send phase and the ACK phase, so ACK compression cannot
        // inflate the rate.
        let ack_interval = now.saturating_since(prior_time);
        let interval = rs.send_interval.max(ack_interval);
        rs.delivered = Some(delivered);
        if min_rtt.is_some_and(|m| interval < m) {
            rs.interval = None;
            return;
        }
        rs.interval = Some(interval);
        if !rs.is_app_limited
            || (delivered as u128) * (self.rate_interval.ns() as u128)
                >= (self.rate_delivered as u128) * (interval.ns() as u128)
        {
            self.rate_delivered = delivered;
            self.rate_interval = interval;
            self.rate_app_limited = rs.is_app_limited;
        }
    }

    /// Mark the connection application-limited (Linux `tcp_rate_check_app_limited`).
    pub fn set_app_limited(&mut self, in_flight: u32) {
        let v = self.delivered + in_flight as u64;
        self.app_limited_until = if v == 0 { 1 } else { v };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_packets_acked_over_100ms_give_their_rate() {
        // Send 10 packets at t=0 (nothing in flight), all ACKed at t = 100 ms.
        let mut r = RateSampler::default();
        let mut stamps: Vec<TxStamp> = (0..10).map(|i| r.on_send(SimTime(0), i)).collect();
        let mut rs = RateSample::default();
        let now = SimTime(100_000_000);
        for (i, s) in stamps.iter_mut().enumerate() {
            r.delivered += 1;
            r.on_delivered(s, SimTime(0), (i as u64 + 1) * 1000, false, false, &mut rs);
        }
        r.generate(now, 10, 0, Some(SimDuration::from_ms(50)), &mut rs);
        assert_eq!(rs.delivered, Some(10));
        assert_eq!(rs.interval, Some(SimDuration::from_ms(100)));
        // 10 * 1000 B * 8 / 0.1 s = 800 kbit/s.
        assert_eq!(rs.rate_bps(1000), Some(800_000));
    }

    #[test]
    fn interval_shorter_than_min_rtt_is_invalid() {
        let mut r = RateSampler::default();
        let mut s = r.on_send(SimTime(0), 0);
        let mut rs = RateSample::default();
        r.delivered += 1;
        r.on_delivered(&mut s, SimTime(0), 1000, false, false, &mut rs);
        r.generate(
            SimTime(10_000_000),
            1,
            0,
            Some(SimDuration::from_ms(50)),
            &mut rs,
        );
        assert_eq!(rs.interval, None);
    }
}
