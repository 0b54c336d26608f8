//! CoDel, Controlled Delay (RFC 8289; Linux `include/net/codel_impl.h`).
//!
//! CoDel decides when a packet leaves the queue, from the time that packet spent in it
//! (its sojourn time), so a link running CoDel keeps a real FIFO of packet handles and
//! asks `Codel::dequeue` for the next packet each time its transmitter becomes free.
//!
//! - `should_drop`: the sojourn time has stayed at or above `target` for at least
//!   `interval` (RFC 8289 §5.2 `dodequeue`), unless at most one MTU (the largest packet
//!   seen) is left in the queue, in which case a queue is needed to keep the link busy.
//! - Entering the dropping state drops (or CE-marks) one packet and schedules the next
//!   drop at `now + interval/√count`; while still above target, each drop advances
//!   `drop_next` by `interval/√count` with `count` incremented (the control law, §5.3).
//! - On re-entry soon after leaving (`now − drop_next < 16·interval`), `count` restarts at
//!   `count − lastcount` (the drop rate that controlled the queue last time), as Linux.
//! - With `ecn`, ECN-capable packets are marked instead of dropped; a mark ends the work
//!   of a dequeue (Linux `goto end`).
//!
//! `interval/√count` is computed in integer nanoseconds (`isqrt(interval² / count)`), not
//! with Linux's Newton-step reciprocal square root.
use crate::engine::time::{SimDuration, SimTime};
use crate::scenario::CodelConfig;
use std::collections::VecDeque;

/// A packet waiting in an event-driven queue.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Queued {
    /// Packet-pool handle.
    pub pkt: u32,
    pub bytes: u32,
    /// Enqueue instant.
    pub enq: SimTime,
    /// ECN-capable transport.
    pub ect: bool,
    /// Marked Congestion Experienced by this queue.
    pub ce: bool,
}

/// FIFO of waiting packets with its byte count.
#[derive(Clone, Debug, Default)]
pub struct PacketQueue {
    q: VecDeque<Queued>,
    bytes: u64,
}

impl PacketQueue {
    #[inline]
    pub fn push(&mut self, p: Queued) {
        self.bytes += p.bytes as u64;
        self.q.push_back(p);
    }
    #[inline]
    pub fn pop(&mut self) -> Option<Queued> {
        let p = self.q.pop_front()?;
        self.bytes -= p.bytes as u64;
        Some(p)
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn iter(&self) -> impl Iterator<Item = &Queued> + '_ {
        self.q.iter()
    }
}

/// CoDel state of one queue (RFC 8289 §5 variable names).
#[derive(Clone, Debug)]
pub struct Codel {
    pub target: SimDuration,
    pub interval: SimDuration,
    pub ecn: bool,
    /// When the sojourn time will have been above target for an interval.
    first_above_time: Option<SimTime>,
    /// Next drop (while dropping).
    drop_next: SimTime,
    /// Drops since entering the dropping state.
    count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    dropping: bool,
    /// Largest packet seen (RFC 8289 `maxpacket`), the "one MTU" of the exit test.
    maxpacket: u32,
}

impl Codel {
    pub fn new(cfg: &CodelConfig) -> Codel {
        Codel {
            target: SimDuration(cfg.target_ns),
            interval: SimDuration(cfg.interval_ns),
            ecn: cfg.ecn,
            first_above_time: None,
            drop_next: SimTime::ZERO,
            count: 0,
            lastcount: 0,
            dropping: false,
            maxpacket: 0,
        }
    }

    /// In the dropping state.
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// Drops (or marks) since entering the dropping state.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The control law: `t + interval/√count` (RFC 8289 §5.3).
    #[inline]
    pub fn control_law(&self, t: SimTime, count: u32) -> SimTime {
        let i = self.interval.ns() as u128;
        let step = (i * i / count.max(1) as u128).isqrt();
        t + SimDuration(step as u64)
    }

    /// RFC 8289 `dodequeue`'s test for packet `p`, with `backlog` bytes left behind it.
    #[inline]
    fn should_drop(&mut self, p: &Queued, now: SimTime, backlog: u64) -> bool {
        let sojourn = now.since(p.enq);
        self.maxpacket = self.maxpacket.max(p.bytes);
        if sojourn < self.target || backlog <= self.maxpacket as u64 {
            // Went below: stay below for at least an interval.
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + self.interval);
                false
            }
            Some(t) => now > t,
        }
    }

    /// Take the next packet to transmit at `now` from `q`, passing each packet CoDel drops
    /// to `dropped`. The packet returned has `ce` set if CoDel marked it. `None`: the queue
    /// ran empty.
    pub fn dequeue(
        &mut self,
        now: SimTime,
        q: &mut PacketQueue,
        mut dropped: impl FnMut(Queued),
    ) -> Option<Queued> {
        let Some(mut p) = q.pop() else {
            self.dropping = false;
            return None;
        };
        let drop = self.should_drop(&p, now, q.bytes());
        if self.dropping {
            if !drop {
                // Sojourn time below target: leave the dropping state.
                self.dropping = false;
            } else {
                // Time for the next drop(s)? A large backlog can need several at once.
                while self.dropping && now >= self.drop_next {
                    self.count = self.count.saturating_add(1);
                    if self.ecn && p.ect {
                        p.ce = true;
                        self.drop_next = self.control_law(self.drop_next, self.count);
                        return Some(p);
                    }
                    dropped(p);
                    let Some(next) = q.pop() else {
                        self.first_above_time = None;
                        self.dropping = false;
                        return None;
                    };
                    p = next;
                    if !self.should_drop(&p, now, q.bytes()) {
                        self.dropping = false;
                    } else {
                        self.drop_next = self.control_law(self.drop_next, self.count);
                    }
                }
            }
        } else if drop {
            let out;
            if self.ecn && p.ect {
                p.ce = true;
                out = Some(p);
            } else {
                dropped(p);
                out = q.pop();
                if let Some(n) = &out {
                    self.should_drop(n, now, q.bytes());
                } else {
                    self.first_above_time = None;
                }
            }
            self.dropping = true;
            // Re-entering soon after the last dropping state: resume near its drop rate.
            let delta = self.count.wrapping_sub(self.lastcount);
            let since_next = now.ns() as i128 - self.drop_next.ns() as i128;
            self.count = if delta > 1 && since_next < 16 * self.interval.ns() as i128 {
                delta
            } else {
                1
            };
            self.lastcount = self.count;
            self.drop_next = self.control_law(now, self.count);
            return out;
        }
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codel() -> Codel {
        Codel::new(&CodelConfig {
            ecn: false,
            ..CodelConfig::default()
        })
    }

    fn pkt(i: u32, enq_ns: u64) -> Queued {
        Queued {
            pkt: i,
            bytes: 1500,
            enq: SimTime(enq_ns),
            ect: false,
            ce: false,
        }
    }

    #[test]
    fn control_law_divides_interval_by_sqrt_count() {
        let c = codel();
        let t = SimTime(1_000_000_000);
        // 100 ms / √1, √2, √4, √100.
        assert_eq!(c.control_law(t, 1).since(t).ns(), 100_000_000);
        assert_eq!(c.control_law(t, 2).since(t).ns(), 70_710_678);
        assert_eq!(c.control_law(t, 4).since(t).ns(), 50_000_000);
        assert_eq!(c.control_law(t, 100).since(t).ns(), 10_000_000);
    }

    #[test]
    fn below_target_nothing_is_dropped() {
        let mut c = codel();
        let mut q = PacketQueue::default();
        for i in 0..100 {
            q.push(pkt(i, i as u64 * 1_000_000));
        }
        // Each packet waited 4 ms < 5 ms.
        for i in 0..100u64 {
            let p = c.dequeue(SimTime(i * 1_000_000 + 4_000_000), &mut q, |_| {
                panic!("drop")
            });
            assert_eq!(p.map(|p| p.pkt), Some(i as u32));
        }
    }

    #[test]
    fn drops_start_after_an_interval_above_target() {
        let mut c = codel();
        let mut q = PacketQueue::default();
        // A standing queue: packets enqueued 10 ms before they are dequeued, one per ms.
        for i in 0..600u64 {
            q.push(pkt(i as u32, i * 1_000_000));
        }
        let mut drops = Vec::new();
        for k in 0..400u64 {
            let now = SimTime(k * 1_000_000 + 10_000_000);
            c.dequeue(now, &mut q, |_| drops.push(now.ns() / 1_000_000));
        }
        // First above target at 10 ms, so ok to drop after 110 ms: the first drop is at
        // 111 ms (count 1), then drop_next = 111 + 100/√1 = 211, + 100/√2 = 281.71,
        // + 100/√3 = 339.45 → the dequeues at 211, 282 and 340 ms.
        assert_eq!(drops, vec![111, 211, 282, 340, 390]);
    }

    #[test]
    fn ecn_marks_instead_of_dropping() {
        let mut c = Codel::new(&CodelConfig::default());
        let mut q = PacketQueue::default();
        for i in 0..400u64 {
            q.push(Queued {
                ect: true,
                ..pkt(i as u32, i * 1_000_000)
            });
        }
        let mut marked = 0;
        for k in 0..300u64 {
            let now = SimTime(k * 1_000_000 + 10_000_000);
            let p = c.dequeue(now, &mut q, |_| panic!("ECT packet dropped"));
            marked += p.is_some_and(|p| p.ce) as u32;
        }
        assert!(marked >= 2, "{marked}");
    }
}
