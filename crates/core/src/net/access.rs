//! The state a packet's hop over a flow's access link reads, in one cache line.
//!
//! Every flow has four access links (its hosts' NICs and the routers' ports facing them). They
//! are plain DropTail links, lossless and without ECN marking, so the event loop forwards over
//! them with this compact twin of `Link`'s analytic path instead of the `Link` itself: with
//! thousands of flows each flow's state is cold when its next packet comes, and a `Link` hop
//! reads three cache lines of the struct plus the buffers of its two queues (five misses),
//! where this reads one line and a per-packet record (`OnAccess`) kept beside the packet
//! pool, which the packet's own handling has just warmed.
//!
//! The packets on a link form a FIFO list threaded through those records (arrival times are
//! non-decreasing on a fixed-rate, fixed-delay link). The packets still waiting for service
//! are a suffix of that list; a router-side port (a packet limit) counts them to drop when
//! its queue is full, as `Link` does, and a host-side port (no limit) never drops, so it does
//! not count them. The computation is `Link`'s: service starts at `max(now, busy_until)`,
//! lasts `serialization_time(wire_bytes, rate)`, and the packet arrives `delay` later; a
//! packet is refused when the link is busy and `limit` packets wait. The `Link` of each access
//! link stays in the topology for its name and configuration; its counters are not reported
//! (the results report the path's segments), so they are not kept.
use crate::engine::time::{remembered_serialization, SimDuration, SimTime};

/// No packet (end of a list).
pub const NIL: u32 = u32::MAX;

/// A packet on an access link, by pool handle: when its service starts, when it arrives at
/// the far end, and the packet behind it on the same link.
#[derive(Copy, Clone, Debug)]
pub struct OnAccess {
    start: SimTime,
    arrive: SimTime,
    next: u32,
}

impl Default for OnAccess {
    fn default() -> Self {
        OnAccess {
            start: SimTime::ZERO,
            arrive: SimTime::ZERO,
            next: NIL,
        }
    }
}

/// One direction of a flow's access link (see the module note). 64 bytes, one cache line.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct AccessLink {
    busy_until: SimTime,
    rate_bps: u64,
    delay: SimDuration,
    /// Packets that may wait for service; `u64::MAX`: no limit (a host's own interface).
    limit_pkts: u64,
    /// First and last packet on the link (arrival order), and how many there are.
    head: u32,
    tail: u32,
    len: u32,
    /// Limited links: the first packet whose service had not started when last checked, and
    /// how many packets from it on wait.
    waiting_head: u32,
    waiting: u32,
    /// The size of the last packet sent and its serialization time
    /// (`remembered_serialization`).
    last_wire_bytes: u32,
    last_serialization: SimDuration,
}

const _: () = assert!(std::mem::size_of::<AccessLink>() == 64);

impl AccessLink {
    /// A link of `rate_bps` and `delay` whose queue holds `limit_pkts` waiting packets
    /// (`None`: unlimited).
    pub fn new(rate_bps: u64, delay: SimDuration, limit_pkts: Option<u64>) -> AccessLink {
        AccessLink {
            busy_until: SimTime::ZERO,
            rate_bps,
            delay,
            limit_pkts: limit_pkts.unwrap_or(u64::MAX),
            head: NIL,
            tail: NIL,
            len: 0,
            waiting_head: NIL,
            waiting: 0,
            last_wire_bytes: 0,
            last_serialization: SimDuration::ZERO,
        }
    }

    /// `serialization_time(wire_bytes, rate_bps)`, remembered for the last size.
    #[inline]
    fn serialization(&mut self, wire_bytes: u32) -> SimDuration {
        remembered_serialization(
            &mut self.last_wire_bytes,
            &mut self.last_serialization,
            wire_bytes,
            self.rate_bps,
        )
    }

    /// Offer packet `pkt` of `wire_bytes` at `now` (`at[pkt]` is its record). `None`: the
    /// queue is full and the packet is dropped. Else when it arrives at the far end, and
    /// whether it is the only packet on the link (its delivery is then the next one).
    #[inline]
    pub fn offer(
        &mut self,
        now: SimTime,
        pkt: u32,
        wire_bytes: u32,
        at: &mut [OnAccess],
    ) -> Option<(SimTime, bool)> {
        let limited = self.limit_pkts != u64::MAX;
        let start = if self.busy_until > now {
            if limited {
                self.purge(now, at);
                if self.waiting as u64 >= self.limit_pkts {
                    return None;
                }
            }
            self.busy_until
        } else {
            // idle: every packet on the link has started its service
            self.waiting = 0;
            now
        };
        let end = start + self.serialization(wire_bytes);
        self.busy_until = end;
        let arrive = end + self.delay;
        at[pkt as usize] = OnAccess {
            start,
            arrive,
            next: NIL,
        };
        if limited && start > now {
            if self.waiting == 0 {
                self.waiting_head = pkt;
            }
            self.waiting += 1;
        }
        let was_empty = self.head == NIL;
        if was_empty {
            self.head = pkt;
        } else {
            at[self.tail as usize].next = pkt;
        }
        self.tail = pkt;
        self.len += 1;
        Some((arrive, was_empty))
    }

    /// Send a packet of `wire_bytes` at `now` without keeping it on the link, when it would
    /// reach the far end before `before`: its arrival time, or `None` (nothing changes).
    /// Only for an unlimited link with no packet on it (`Topology::access_feeds`): such a
    /// link never refuses a packet, and a packet it keeps would have to arrive first.
    #[inline]
    pub fn pass(&mut self, now: SimTime, wire_bytes: u32, before: SimTime) -> Option<SimTime> {
        debug_assert!(self.is_unlimited() && self.head == NIL);
        let arrive = self.arrival_if_sent(now, wire_bytes);
        if arrive >= before {
            return None;
        }
        self.sent(arrive);
        Some(arrive)
    }

    /// No packet is on the link and it is idle at `now`: a packet offered then starts its
    /// service at once, so it never waits and never counts against the queue limit.
    #[inline]
    pub fn idle_at(&self, now: SimTime) -> bool {
        self.head == NIL && self.busy_until <= now
    }

    /// When a packet of `wire_bytes` sent at `now` on a link with no packet on it would
    /// reach the far end (its service starts when the last one's ended); nothing changes
    /// until `sent`.
    #[inline]
    pub fn arrival_if_sent(&mut self, now: SimTime, wire_bytes: u32) -> SimTime {
        debug_assert!(self.head == NIL);
        self.busy_until.max(now) + self.serialization(wire_bytes) + self.delay
    }

    /// A packet that arrives at `arrive` (`arrival_if_sent`) went over the link without
    /// being kept on it: the link is busy until its service ends.
    #[inline]
    pub fn sent(&mut self, arrive: SimTime) {
        self.busy_until = SimTime(arrive.ns() - self.delay.0);
    }

    /// The link has no queue limit (a host's own interface): it never refuses a packet.
    pub fn is_unlimited(&self) -> bool {
        self.limit_pkts == u64::MAX
    }

    /// Stop counting the waiting packets whose service has started by `now`.
    #[inline]
    fn purge(&mut self, now: SimTime, at: &[OnAccess]) {
        while self.waiting > 0 && at[self.waiting_head as usize].start <= now {
            self.waiting -= 1;
            self.waiting_head = at[self.waiting_head as usize].next;
        }
    }

    /// Take the first packet (it arrives now) and return it with the next one's arrival time.
    #[inline]
    pub fn pop(&mut self, at: &[OnAccess]) -> (u32, Option<SimTime>) {
        let pkt = self.head;
        debug_assert!(pkt != NIL, "delivery from an empty access link");
        let next = at[pkt as usize].next;
        if self.waiting > 0 && self.waiting_head == pkt {
            // it has arrived, so its service started long ago; its record may be reused now
            self.waiting -= 1;
            self.waiting_head = next;
        }
        self.head = next;
        self.len -= 1;
        if next == NIL {
            self.tail = NIL;
            return (pkt, None);
        }
        (pkt, Some(at[next as usize].arrive))
    }

    /// Propagation delay.
    #[inline]
    pub fn delay(&self) -> SimDuration {
        self.delay
    }

    /// The first packet on the link, if any.
    #[inline]
    pub fn first(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// The first packet may leave the link before it arrives: it does not count among the
    /// packets waiting for service, so no later offer, which comes no earlier than it did,
    /// would count it (it never waited, or had started its service by an earlier offer).
    #[inline]
    pub fn first_may_leave_early(&self) -> bool {
        self.waiting == 0 || self.waiting_head != self.head
    }

    /// When packet `pkt`, on this link, arrives at the far end.
    #[inline]
    pub fn arrival_of(&self, pkt: u32, at: &[OnAccess]) -> SimTime {
        at[pkt as usize].arrive
    }

    /// The packet behind `pkt` on its link, if any.
    #[inline]
    pub fn behind(pkt: u32, at: &[OnAccess]) -> Option<u32> {
        let next = at[pkt as usize].next;
        (next != NIL).then_some(next)
    }

    /// Packets on the link (in service, waiting or propagating).
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::SimRng;
    use crate::net::link::{Admission, ErrorModel, Link, QueueLimit};

    const US: u64 = 1_000;

    /// 1500 B at 12 Mbit/s take 1 ms; `delay_ms` of delay.
    fn pair(limit: Option<u64>, delay_ms: u64) -> (AccessLink, Link) {
        let q = limit.map_or(QueueLimit::Unlimited, QueueLimit::Packets);
        let link = Link::new(
            "a",
            12_000_000,
            SimDuration::from_ms(delay_ms),
            q,
            ErrorModel::default(),
            SimRng::substream(1, "a"),
        );
        (
            AccessLink::new(12_000_000, SimDuration::from_ms(delay_ms), limit),
            link,
        )
    }

    #[test]
    fn back_to_back_packets_leave_one_service_time_apart() {
        let (mut a, _) = pair(None, 10);
        let mut at = vec![OnAccess::default(); 4];
        // three at t=0: services end at 1, 2, 3 ms; arrivals 10 ms later
        let got: Vec<_> = (0..3)
            .map(|p| a.offer(SimTime::ZERO, p, 1500, &mut at))
            .collect();
        let ms = |m: u64| SimTime(m * 1_000 * US);
        assert_eq!(
            got,
            vec![
                Some((ms(11), true)),
                Some((ms(12), false)),
                Some((ms(13), false))
            ]
        );
        assert_eq!(a.pop(&at), (0, Some(ms(12))));
        assert_eq!(a.pop(&at), (1, Some(ms(13))));
        assert_eq!(a.pop(&at), (2, None));
        assert!(a.is_empty());
    }

    #[test]
    fn a_full_router_port_drops_while_busy_only() {
        // limit 2: at t=0 one packet in service and two waiting; the fourth is refused
        let (mut a, _) = pair(Some(2), 10);
        let mut at = vec![OnAccess::default(); 8];
        let r: Vec<bool> = (0..4)
            .map(|p| a.offer(SimTime::ZERO, p, 1500, &mut at).is_some())
            .collect();
        assert_eq!(r, vec![true, true, true, false]);
        // at 1 ms the second packet enters service: one waits, so one more fits
        assert!(a.offer(SimTime(1_000 * US), 4, 1500, &mut at).is_some());
        assert!(a.offer(SimTime(1_000 * US), 5, 1500, &mut at).is_none());
    }

    /// The same offers and deliveries as `Link`'s analytic path, packet for packet, on a
    /// pseudo-random schedule that fills and drains a small queue many times. Without
    /// delay a packet can arrive while it still counts as waiting (no offer came since its
    /// service started), and its handle is reused at once.
    #[test]
    fn matches_the_link_it_stands_for() {
        for (limit, delay_ms) in [(None, 10), (Some(3), 10), (Some(3), 0), (Some(1), 0)] {
            let (mut a, mut l) = pair(limit, delay_ms);
            let mut at = vec![OnAccess::default(); 64];
            let mut free: Vec<u32> = (0..64).rev().collect();
            let mut rng = SimRng::substream(7, "offers");
            let mut now = 0u64;
            let mut next_delivery: Option<SimTime> = None;
            let (mut sent, mut dropped) = (0, 0);
            for _ in 0..20_000 {
                // bursts (a third of the gaps are 0) and pauses: the queue fills and drains
                if rng.below(3) > 0 {
                    now += rng.below(2_000) * US;
                }
                let t = SimTime(now);
                // deliver whatever arrives by now, from both, in order
                while let Some(d) = next_delivery.filter(|&d| d <= t) {
                    let (p, n) = a.pop(&at);
                    let (q, m) = l.pop();
                    assert_eq!((p, n), (q, m), "delivery at {d:?}");
                    free.push(p);
                    next_delivery = n;
                }
                let Some(pkt) = free.pop() else { continue };
                let bytes = 40 + rng.below(1_460) as u32;
                let mine = a.offer(t, pkt, bytes, &mut at);
                match l.offer(t, pkt, bytes, false) {
                    Admission::Arrives { at: when, .. } => {
                        let first = l.push(when, pkt);
                        assert_eq!(mine, Some((when, first)), "offer at {now}");
                        if first {
                            next_delivery = Some(when);
                        }
                        sent += 1;
                    }
                    Admission::QueueDrop => {
                        assert_eq!(mine, None, "drop at {now}");
                        free.push(pkt);
                        dropped += 1;
                    }
                    other => panic!("{other:?}"),
                }
                assert_eq!(a.len(), l.in_flight().count());
            }
            assert!(sent > 10_000, "{sent}");
            assert_eq!(dropped > 0, limit.is_some(), "{dropped}");
        }
    }
}
