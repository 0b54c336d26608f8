//! The event queue: events in (time, scheduling order), at a cost per event that does not
//! depend on how many are pending.
//!
//! Events at the same instant run in the order they were scheduled (FIFO), so the order
//! never depends on memory addresses or hash seeds. Popping asserts that time never goes
//! backwards. The queue is generic over what an event is: the simulation defines its events
//! (`sim::Event`).
//!
//! # A radix heap
//!
//! A binary heap costs O(log n) per event with n pending events, and n grows with the
//! number of flows (each has timers and links with packets on them): with 1,000 flows its
//! sift-downs were a third of a run's instructions. Event times only ever grow (nothing is
//! scheduled before the event being processed), which a radix heap (Ahuja, Mehlhorn, Orlin
//! and Tarjan, J. ACM 37(2), 1990) exploits. Against `last`, the time of the earliest event
//! when the queue was last refilled, an event at `t` sits in bucket 0 if `t == last`, else
//! in bucket `b` = the position of the highest bit in which `t` and `last` differ, plus one.
//! Scheduling appends to a bucket; popping takes the front of bucket 0 and, when that is
//! empty, finds the earliest time in the lowest non-empty bucket, makes it `last`, and
//! spreads that bucket over the lower ones. An event only ever moves to a lower bucket, so
//! it moves at most as many times as the bit length of how far ahead it was scheduled
//! (a packet's next hop a few microseconds ahead: about 12; a 200 ms timer: at most 28),
//! whatever the number of pending events.
//!
//! FIFO among equal times needs no sequence numbers: events of one time always share a
//! bucket (their bucket is a function of the time), appending puts a later-scheduled event
//! behind them, and spreading a bucket keeps the relative order of what it moves.
use crate::engine::time::SimTime;
use std::collections::VecDeque;

/// Buckets 1..=64 (bucket 0, the events at `last`, is `at_last`).
const BUCKETS: usize = 64;

/// Pending events ordered by (time, insertion order).
#[derive(Debug)]
pub struct EventQueue<E> {
    /// Events at exactly `last`, in scheduling order.
    at_last: VecDeque<(SimTime, E)>,
    /// `buckets[b - 1]`: events whose time first differs from `last` in bit `b - 1`.
    buckets: Vec<Vec<(SimTime, E)>>,
    /// Bit `b - 1` set: `buckets[b - 1]` is not empty.
    nonempty: u64,
    last: u64,
    len: usize,
    now: SimTime,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            at_last: VecDeque::new(),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            nonempty: 0,
            last: 0,
            len: 0,
            now: SimTime::ZERO,
            popped: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Put an event in its bucket relative to `last` (`time >= last`).
    #[inline]
    fn place(&mut self, time: SimTime, event: E) {
        let diff = time.0 ^ self.last;
        if diff == 0 {
            self.at_last.push_back((time, event));
        } else {
            let b = (u64::BITS - diff.leading_zeros()) as usize;
            self.buckets[b - 1].push((time, event));
            self.nonempty |= 1 << (b - 1);
        }
    }

    /// Schedule `event` at `time` (never in the past).
    #[inline]
    pub fn schedule(&mut self, time: SimTime, event: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        if time.0 < self.last {
            // Only after a look ahead (`peek_time`) refilled from later events without
            // popping them: count the buckets from `time` instead.
            self.rebase(time.0);
        }
        self.place(time, event);
        self.len += 1;
    }

    /// Re-bucket every pending event against a new, earlier `last`. Events of one time
    /// come out of one bucket in their order, so FIFO among them survives.
    #[cold]
    fn rebase(&mut self, last: u64) {
        let mut all: Vec<(SimTime, E)> = self.at_last.drain(..).collect();
        for bucket in &mut self.buckets {
            all.append(bucket);
        }
        self.nonempty = 0;
        self.last = last;
        for (time, event) in all {
            self.place(time, event);
        }
    }

    /// Make `at_last` hold the earliest events, if any are pending.
    #[inline]
    fn refill(&mut self) {
        if !self.at_last.is_empty() || self.nonempty == 0 {
            return;
        }
        let b = self.nonempty.trailing_zeros() as usize;
        self.nonempty &= !(1 << b);
        let mut moving = std::mem::take(&mut self.buckets[b]);
        self.last = moving
            .iter()
            .map(|(t, _)| t.0)
            .min()
            .expect("a non-empty bucket");
        for (time, event) in moving.drain(..) {
            self.place(time, event);
        }
        // Keep the allocation: the bucket is empty now, and refilling it is common.
        self.buckets[b] = moving;
    }

    /// Remove and return the earliest event, advancing the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.refill();
        let (time, event) = self.at_last.pop_front()?;
        assert!(time >= self.now, "event queue went back in time");
        self.now = time;
        self.popped += 1;
        self.len -= 1;
        Some((time, event))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<SimTime> {
        self.refill();
        self.at_last.front().map(|&(t, _)| t)
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::SimRng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn equal_times_pop_in_fifo_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), "second");
        q.schedule(SimTime(5), "first");
        q.schedule(SimTime(10), "third");
        assert_eq!(q.pop(), Some((SimTime(5), "first")));
        assert_eq!(q.pop(), Some((SimTime(10), "second")));
        assert_eq!(q.pop(), Some((SimTime(10), "third")));
        assert_eq!(q.pop(), None);
        assert_eq!(q.events_processed(), 3);
    }

    #[test]
    fn an_event_scheduled_before_a_peeked_one_comes_first() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(100), 'b');
        q.schedule(SimTime(100), 'c');
        assert_eq!(q.peek_time(), Some(SimTime(100)));
        q.schedule(SimTime(40), 'a');
        q.schedule(SimTime(100), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ['a', 'b', 'c', 'd']);
    }

    /// The order is the one of a binary heap keyed by (time, scheduling sequence), the
    /// definition of the queue, over a random mix of near, far and equal times, pushes
    /// while popping, and look-aheads followed by earlier events.
    #[test]
    fn pops_in_time_then_scheduling_order() {
        let mut rng = SimRng::substream(7, "event-queue-test");
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        for step in 0..200_000 {
            let pushes = rng.below(3);
            for _ in 0..pushes {
                let ahead = match rng.below(4) {
                    0 => 0,
                    1 => rng.below(1_000),
                    2 => rng.below(50_000_000),
                    _ => rng.below(1 << 40),
                };
                let t = now + ahead;
                q.schedule(SimTime(t), seq);
                reference.push(Reverse((t, seq)));
                seq += 1;
            }
            if step % 1000 == 999 {
                // A look ahead, then an event earlier than what it saw.
                if let Some(next) = q.peek_time() {
                    let t = now + (next.0 - now) / 2;
                    q.schedule(SimTime(t), seq);
                    reference.push(Reverse((t, seq)));
                    seq += 1;
                }
            }
            if rng.below(2) == 0 || pushes == 0 {
                let got = q.pop();
                let want = reference.pop().map(|Reverse((t, s))| (SimTime(t), s));
                assert_eq!(got, want, "step {step}");
                if let Some((t, _)) = got {
                    now = t.0;
                }
            }
            assert_eq!(q.len(), reference.len());
        }
        while let Some(Reverse((t, s))) = reference.pop() {
            assert_eq!(q.pop(), Some((SimTime(t), s)));
        }
        assert!(q.is_empty());
    }
}
