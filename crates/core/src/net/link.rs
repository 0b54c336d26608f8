//! A one-way link: a FIFO transmitter of fixed rate, a propagation delay, a DropTail queue
//! and a random packet-error model.
//!
//! For DropTail the link is solved analytically instead of with a "transmission done"
//! event per packet: when a packet is admitted, its start of service is
//! `max(now, busy_until)` and its arrival at the far end is `start + size/rate + delay`.
//! Packets waiting for service are remembered only by their start times, so the queue
//! length at any instant is the number of remembered starts still in the future. One heap
//! event per packet per hop (the arrival) remains, and arrivals on a link are in FIFO
//! order, so only the head of each link's pipeline sits in the event heap.
use crate::rng::SimRng;
use crate::stats::TimeWeighted;
use crate::time::{serialization_time, SimDuration, SimTime};
use std::collections::VecDeque;

/// Queue size limit (the packet in service is not counted, as in ns-3 and Linux qdiscs).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u64),
    Bytes(u64),
    /// A sending host's own interface: Linux never drops a socket's packets there (TCP
    /// Small Queues back-pressure the socket), so the queue is unbounded.
    Unlimited,
}

/// Loss model of a link direction.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct ErrorModel {
    /// Packet error rate (Bernoulli per packet).
    pub per: f64,
    /// Bit error rate, turned into a per-packet probability from the wire size.
    pub ber: f64,
}

impl ErrorModel {
    /// Probability that a packet of `wire_bytes` is corrupted: 1 − (1 − per)(1 − ber)^bits.
    #[inline]
    pub fn packet_error_prob(&self, wire_bytes: u32) -> f64 {
        if self.ber == 0.0 {
            self.per
        } else {
            let bits = 8.0 * wire_bytes as f64;
            1.0 - (1.0 - self.per) * (1.0 - self.ber).powf(bits)
        }
    }
    pub fn is_lossless(&self) -> bool {
        self.per == 0.0 && self.ber == 0.0
    }
}

/// Counters of a link.
#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    /// Packets and bytes that entered service (errored ones included: they use the link).
    pub packets_tx: u64,
    pub bytes_tx: u64,
    pub queue_drops: u64,
    pub error_drops: u64,
    pub ecn_marks: u64,
    /// Time-weighted queue length (packets waiting, not in service) and bytes.
    pub q_pkts: TimeWeighted,
    pub q_bytes: TimeWeighted,
}

/// Outcome of offering a packet to a link.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The packet will arrive at the far end at `at`; `ce`: mark it Congestion Experienced.
    Arrives { at: SimTime, ce: bool },
    /// The queue was full (DropTail).
    QueueDrop,
    /// The packet used the link but was corrupted (error model).
    ErrorDrop,
}

/// One direction of a link.
#[derive(Debug)]
pub struct Link {
    pub name: String,
    pub rate_bps: u64,
    pub delay: SimDuration,
    pub limit: QueueLimit,
    pub errors: ErrorModel,
    /// ECN marking threshold (packets waiting), if the queue marks.
    pub ecn_threshold_pkts: Option<u64>,
    rng: SimRng,
    busy_until: SimTime,
    /// Start-of-service times (and sizes) of packets waiting in the queue, oldest first.
    waiting: VecDeque<(SimTime, u32)>,
    waiting_bytes: u64,
    /// Packets propagating or in service, with their arrival times (non-decreasing).
    pipeline: VecDeque<(SimTime, u32)>,
    pub stats: LinkStats,
}

impl Link {
    pub fn new(
        name: impl Into<String>,
        rate_bps: u64,
        delay: SimDuration,
        limit: QueueLimit,
        errors: ErrorModel,
        rng: SimRng,
    ) -> Link {
        Link {
            name: name.into(),
            rate_bps,
            delay,
            limit,
            errors,
            ecn_threshold_pkts: None,
            rng,
            busy_until: SimTime::ZERO,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            pipeline: VecDeque::new(),
            stats: LinkStats::default(),
        }
    }

    /// Forget waiting packets whose service has started by `now`, keeping the
    /// time-weighted queue statistics exact at each start instant.
    #[inline]
    fn purge(&mut self, now: SimTime) {
        while let Some(&(start, bytes)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= bytes as u64;
            self.stats.q_pkts.set(start.ns(), self.waiting.len() as u64);
            self.stats.q_bytes.set(start.ns(), self.waiting_bytes);
        }
    }

    /// Offer a packet of `wire_bytes` at `now`; `ect`: it is ECN-capable.
    #[inline]
    pub fn admit(&mut self, now: SimTime, wire_bytes: u32, ect: bool) -> Admission {
        self.purge(now);
        let ce = ect
            && self
                .ecn_threshold_pkts
                .is_some_and(|k| self.waiting.len() as u64 >= k);
        let full = match self.limit {
            QueueLimit::Packets(n) => self.waiting.len() as u64 >= n && self.busy_until > now,
            QueueLimit::Bytes(b) => {
                self.waiting_bytes + wire_bytes as u64 > b && self.busy_until > now
            }
            QueueLimit::Unlimited => false,
        };
        if full {
            self.stats.queue_drops += 1;
            return Admission::QueueDrop;
        }
        let start = if self.busy_until > now {
            self.busy_until
        } else {
            now
        };
        let end = start + serialization_time(wire_bytes as u64, self.rate_bps);
        self.busy_until = end;
        if start > now {
            self.waiting.push_back((start, wire_bytes));
            self.waiting_bytes += wire_bytes as u64;
            self.stats.q_pkts.set(now.ns(), self.waiting.len() as u64);
            self.stats.q_bytes.set(now.ns(), self.waiting_bytes);
        }
        self.stats.packets_tx += 1;
        self.stats.bytes_tx += wire_bytes as u64;
        if ce {
            // Counted only for packets that enter the queue (a full queue drops instead).
            self.stats.ecn_marks += 1;
        }
        if !self.errors.is_lossless() {
            let p = self.errors.packet_error_prob(wire_bytes);
            if self.rng.bernoulli(p) {
                self.stats.error_drops += 1;
                return Admission::ErrorDrop;
            }
        }
        Admission::Arrives {
            at: end + self.delay,
            ce,
        }
    }

    /// Put an admitted packet on the wire. Returns true if it became the pipeline head
    /// (the caller must then schedule a delivery event at `arrive`).
    #[inline]
    pub fn push(&mut self, arrive: SimTime, pkt: u32) -> bool {
        let was_empty = self.pipeline.is_empty();
        // FIFO service with a fixed delay keeps arrivals ordered; assert it in tests.
        debug_assert!(self.pipeline.back().is_none_or(|&(t, _)| t <= arrive));
        self.pipeline.push_back((arrive, pkt));
        was_empty
    }

    /// Take the pipeline head (it arrives now) and return it with the next head's time.
    #[inline]
    pub fn pop(&mut self) -> (u32, Option<SimTime>) {
        let (_, pkt) = self
            .pipeline
            .pop_front()
            .expect("delivery from an empty link");
        (pkt, self.pipeline.front().map(|&(t, _)| t))
    }

    /// Bring the queue statistics up to `now` (for interval sampling and the final report).
    pub fn sample(&mut self, now: SimTime) {
        self.purge(now);
        self.stats.q_pkts.advance(now.ns());
        self.stats.q_bytes.advance(now.ns());
    }

    /// Packets waiting for service at `now`.
    pub fn queue_len(&mut self, now: SimTime) -> usize {
        self.purge(now);
        self.waiting.len()
    }

    /// Handles of packets still on the wire (for the final accounting).
    pub fn in_flight(&self) -> impl Iterator<Item = u32> + '_ {
        self.pipeline.iter().map(|&(_, p)| p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(limit: QueueLimit) -> Link {
        Link::new(
            "t",
            4_000_000,
            SimDuration::from_ms(250),
            limit,
            ErrorModel::default(),
            SimRng::substream(1, "t"),
        )
    }

    #[test]
    fn back_to_back_packets_are_spaced_by_serialization_time() {
        let mut l = link(QueueLimit::Packets(10));
        // 1500 B at 4 Mbit/s = 3 ms; delay 250 ms.
        assert_eq!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives {
                at: SimTime(253_000_000),
                ce: false
            }
        );
        assert_eq!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives {
                at: SimTime(256_000_000),
                ce: false
            }
        );
        assert_eq!(
            l.admit(SimTime(1_000_000), 1500, false),
            Admission::Arrives {
                at: SimTime(259_000_000),
                ce: false
            }
        );
    }

    #[test]
    fn droptail_counts_waiting_packets_only() {
        let mut l = link(QueueLimit::Packets(2));
        // First goes into service, two wait, the fourth is dropped.
        for _ in 0..3 {
            assert!(matches!(
                l.admit(SimTime::ZERO, 1500, false),
                Admission::Arrives { .. }
            ));
        }
        assert_eq!(l.admit(SimTime::ZERO, 1500, false), Admission::QueueDrop);
        // After 3 ms the second packet is in service: one waits, one slot is free.
        assert!(matches!(
            l.admit(SimTime(3_000_000), 1500, false),
            Admission::Arrives { .. }
        ));
        assert_eq!(
            l.admit(SimTime(3_000_000), 1500, false),
            Admission::QueueDrop
        );
        assert_eq!(l.stats.queue_drops, 2);
    }

    #[test]
    fn byte_limit_applies_to_waiting_bytes() {
        let mut l = link(QueueLimit::Bytes(3000));
        assert!(matches!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives { .. }
        )); // in service
        assert!(matches!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives { .. }
        )); // 1500 waiting
        assert!(matches!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives { .. }
        )); // 3000 waiting
        assert_eq!(l.admit(SimTime::ZERO, 40, false), Admission::QueueDrop);
    }

    #[test]
    fn queue_time_average_is_exact() {
        let mut l = link(QueueLimit::Packets(10));
        // Three packets at t=0: queue 2 during [0,3ms), 1 during [3,6ms), 0 after.
        for _ in 0..3 {
            l.admit(SimTime::ZERO, 1500, false);
        }
        l.sample(SimTime(9_000_000));
        // area = 2*3ms + 1*3ms = 9e6 pkt*ns; over 9 ms the mean is 1 packet.
        assert_eq!(l.stats.q_pkts.area, 9_000_000);
        assert_eq!(l.stats.q_pkts.max, 2);
    }

    #[test]
    fn ecn_marks_ect_packets_when_queue_reaches_threshold() {
        let mut l = link(QueueLimit::Packets(100));
        l.ecn_threshold_pkts = Some(2);
        // In service, then 1 waiting, then 2 waiting: the 4th arrival sees 2 waiting.
        let marks: Vec<bool> = (0..4)
            .map(|_| {
                matches!(
                    l.admit(SimTime::ZERO, 1500, true),
                    Admission::Arrives { ce: true, .. }
                )
            })
            .collect();
        assert_eq!(marks, vec![false, false, false, true]);
        // Not ECN-capable: never marked.
        assert!(matches!(
            l.admit(SimTime::ZERO, 1500, false),
            Admission::Arrives { ce: false, .. }
        ));
    }

    #[test]
    fn ber_converts_by_packet_size() {
        let e = ErrorModel {
            per: 0.0,
            ber: 1e-6,
        };
        // 1500 B = 12000 bits: 1 - (1-1e-6)^12000 = 0.011928...
        let p = e.packet_error_prob(1500);
        assert!((p - 0.011_928_5).abs() < 1e-6, "{p}");
    }

    #[test]
    fn error_rate_matches_per() {
        let mut l = Link::new(
            "e",
            1_000_000_000,
            SimDuration::ZERO,
            QueueLimit::Packets(1_000_000),
            ErrorModel {
                per: 0.05,
                ber: 0.0,
            },
            SimRng::substream(9, "e"),
        );
        let n = 200_000u64;
        for i in 0..n {
            l.admit(SimTime(i * 1_000_000), 1500, false);
        }
        // mean 10000, sd = sqrt(n p (1-p)) = 97.5; 5 sd.
        let d = l.stats.error_drops as i64 - 10_000;
        assert!(d.abs() < 490, "{}", l.stats.error_drops);
    }
}
