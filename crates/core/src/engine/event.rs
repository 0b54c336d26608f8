//! The event queue: events in (time, scheduling order), at a cost per event that does not
//! depend on how many are pending.
//!
//! Events at the same instant run in the order they were scheduled (FIFO), so the order
//! never depends on memory addresses or hash seeds, except that arrivals
//! (`schedule_arrival`: a packet reaching the far end of a link) run after every other
//! event of their nanosecond, as the kernel runs expired timers before the packets received
//! in the same tick (its timer softirq before the receive softirq). That rule, not the
//! moment an arrival was scheduled, decides whether a timer due exactly when a packet
//! arrives sees it. Arrivals of one nanosecond run in the order of their rank
//! (`ArrivalRank`: the simulation ranks a delivery by its link's number), and only arrivals
//! of one rank in scheduling order: packets from two links reaching a third in the same
//! nanosecond enter it in an order fixed by the links, not by when the simulation learned
//! of each (which it may learn early, `sim::ahead`). Internally an event's key is its time
//! in nanoseconds doubled, plus one for an arrival. Popping asserts that time never goes
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
//! when the queue was last refilled, an event at `t` sits in `at_last` if `t == last`, else
//! in the bucket of the highest base-16 digit in which `t` and `last` differ (its level)
//! and of `t`'s value of that digit. Scheduling appends to a bucket; popping takes the
//! front of `at_last` and, when that is empty, finds the earliest time in the lowest
//! non-empty bucket (lowest level, then lowest digit: two bit scans), makes it `last`, and
//! spreads that bucket over the lower levels. An event only ever moves to a lower level, so
//! it moves at most once per digit of how far ahead it was scheduled, in keys (twice the
//! nanoseconds, see above: a packet's next hop a few microseconds ahead, 3 or 4 times; a
//! 200 ms timer, at most 8), whatever the number of pending events. (With one bit per level, as in the paper, a 200 ms timer moved up to
//! 28 times; at 1,000 flows the spreading was a sixth of a run's instructions.)
//!
//! FIFO among equal times needs no sequence numbers: events of one time always share a
//! bucket (their bucket is a function of the time), appending puts a later-scheduled event
//! behind them, and spreading a bucket keeps the relative order of what it moves.
//!
//! # Few pending events: a sorted vector
//!
//! With a handful of flows only the heads of a few link pipelines and some timers are
//! pending (about ten on a GEO dumbbell), and the radix heap's spreading of buckets cost
//! more than the whole order: a sixth of a run's instructions. Up to `SMALL_MAX` pending
//! events the queue is a vector sorted latest first: a pop takes the last element, and an
//! event goes in front of every event of its time or earlier, which keeps FIFO among equal
//! times with no sequence number. Most events are scheduled after nearly all others (a
//! packet's arrival a propagation delay ahead), so the place is found from the front in a
//! step or two; the move behind it is a few hundred bytes. (Measured on a GEO dumbbell: a
//! binary search took 6 % more instructions in all, a ring buffer 11 %, a binary heap with
//! sequence numbers 13 %.) Beyond `SMALL_MAX` the events move to the radix heap, in their
//! order; below `SMALL_MIN` they move back. The order of the events is the same either
//! way.
use crate::engine::time::SimTime;
use std::collections::VecDeque;

/// Bits of a radix digit: buckets are (level, digit) of the highest differing digit.
const DIGIT_BITS: u32 = 4;
const DIGITS: usize = 1 << DIGIT_BITS;
const LEVELS: usize = 64 / DIGIT_BITS as usize;
/// Most pending events kept in the sorted vector; one more moves them to the radix heap.
const SMALL_MAX: usize = 48;
/// Fewer pending events than this move back from the radix heap to the sorted vector (the
/// gap keeps a queue that hovers around one size from moving back and forth).
const SMALL_MIN: usize = 16;

/// The order of arrivals due in one nanosecond (see the module note): the lowest rank
/// first, and among equal ranks the first scheduled.
pub trait ArrivalRank {
    fn arrival_rank(&self) -> u32;
}

/// Index of the first event of least rank in `events` (not empty).
#[inline]
fn least_rank<'a, E: ArrivalRank + 'a>(events: impl Iterator<Item = &'a E>) -> usize {
    let mut best = (u32::MAX, 0);
    for (i, e) in events.enumerate() {
        let r = e.arrival_rank();
        if i == 0 || r < best.0 {
            best = (r, i);
        }
    }
    best.1
}

/// A key of an arrival (`EventQueue::schedule_arrival`).
#[inline]
fn is_arrival(key: SimTime) -> bool {
    key.0 & 1 == 1
}

/// A radix heap in base 16: the events in (time, insertion order).
#[derive(Debug)]
struct Radix<E> {
    /// Events at exactly `last`, in scheduling order, or in pop order once `ranked`.
    at_last: VecDeque<(SimTime, E)>,
    /// `at_last` is in the order its events are popped: arrivals by rank (`ArrivalRank`),
    /// sorted once when the first of them is popped rather than searched at every pop (the
    /// SYNs of 10,000 flows that start together arrive in one nanosecond).
    ranked: bool,
    /// `buckets[level * DIGITS + digit]`: events whose time first differs from `last` in
    /// digit `level` (bits `4 level .. 4 level + 3`), where theirs is `digit`.
    buckets: Vec<Vec<(SimTime, E)>>,
    /// Bit `digit` of `digits[level]` set: that bucket is not empty.
    digits: [u16; LEVELS],
    /// Bit `level` set: `digits[level]` is not 0.
    levels: u16,
    last: u64,
}

impl<E> Radix<E> {
    fn new(last: u64) -> Self {
        Radix {
            at_last: VecDeque::new(),
            ranked: true,
            buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
            digits: [0; LEVELS],
            levels: 0,
            last,
        }
    }

    /// Put an event in its bucket relative to `last` (`time >= last`).
    #[inline(always)]
    fn place(&mut self, time: SimTime, event: E) {
        let diff = time.0 ^ self.last;
        if diff == 0 {
            self.ranked = self.at_last.is_empty();
            self.at_last.push_back((time, event));
        } else {
            let level = ((u64::BITS - 1 - diff.leading_zeros()) / DIGIT_BITS) as usize;
            let digit = ((time.0 >> (level as u32 * DIGIT_BITS)) as usize) & (DIGITS - 1);
            self.buckets[level * DIGITS + digit].push((time, event));
            self.digits[level] |= 1 << digit;
            self.levels |= 1 << level;
        }
    }

    #[inline]
    fn schedule(&mut self, time: SimTime, event: E) {
        if time.0 < self.last {
            // Only after a look ahead (`peek_time`) refilled from later events without
            // popping them: count the buckets from `time` instead.
            self.rebase(time.0);
        }
        self.place(time, event);
    }

    /// Re-bucket every pending event against a new, earlier `last`. Events of one time
    /// come out of one bucket in their order, so FIFO among them survives.
    #[cold]
    fn rebase(&mut self, last: u64) {
        let mut all: Vec<(SimTime, E)> = self.at_last.drain(..).collect();
        for bucket in &mut self.buckets {
            all.append(bucket);
        }
        self.digits = [0; LEVELS];
        self.levels = 0;
        self.last = last;
        for (time, event) in all {
            self.place(time, event);
        }
    }

    /// Make `at_last` hold the earliest events, if any are pending. The lowest non-empty
    /// bucket holds them: its events agree with `last` above its level and have the lowest
    /// digit there; once `last` is their minimum, they all differ from it lower down.
    #[inline]
    fn refill(&mut self) {
        if !self.at_last.is_empty() || self.levels == 0 {
            return;
        }
        let level = self.levels.trailing_zeros() as usize;
        let digit = self.digits[level].trailing_zeros() as usize;
        self.digits[level] &= !(1 << digit);
        if self.digits[level] == 0 {
            self.levels &= !(1 << level);
        }
        let b = level * DIGITS + digit;
        if self.buckets[b].len() == 1 {
            // the common case: one event, the next one
            let (time, event) = self.buckets[b].pop().expect("one event");
            self.last = time.0;
            self.ranked = true;
            self.at_last.push_back((time, event));
            return;
        }
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

    /// The earliest event; among arrivals of one time (all in `at_last`), of least rank.
    #[inline]
    fn pop(&mut self) -> Option<(SimTime, E)>
    where
        E: ArrivalRank,
    {
        self.refill();
        let &(key, _) = self.at_last.front()?;
        if !self.ranked {
            if is_arrival(key) {
                // stable: equal ranks stay in scheduling order
                self.at_last
                    .make_contiguous()
                    .sort_by_key(|(_, e)| e.arrival_rank());
            }
            self.ranked = true;
        }
        self.at_last.pop_front()
    }

    /// The event likely popped next, when telling needs no work: the front of `at_last`,
    /// or the lone event of the lowest bucket.
    #[inline]
    fn peek_hint(&self) -> Option<&E> {
        if let Some((_, e)) = self.at_last.front() {
            return Some(e);
        }
        if self.levels == 0 {
            return None;
        }
        let level = self.levels.trailing_zeros() as usize;
        let digit = self.digits[level].trailing_zeros() as usize;
        match self.buckets[level * DIGITS + digit].as_slice() {
            [(_, e)] => Some(e),
            _ => None,
        }
    }

    #[inline]
    fn peek_time(&mut self) -> Option<SimTime> {
        self.refill();
        self.at_last.front().map(|&(t, _)| t)
    }
}

/// Where the pending events are (see the module note).
#[derive(Debug)]
enum Store<E> {
    /// Latest first; among equal times, the last scheduled first (popped last).
    Small(Vec<(SimTime, E)>),
    Radix(Radix<E>),
}

/// Pending events ordered by (time, insertion order).
#[derive(Debug)]
pub struct EventQueue<E> {
    store: Store<E>,
    len: usize,
    now: SimTime,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            store: Store::Small(Vec::with_capacity(SMALL_MAX + 1)),
            len: 0,
            now: SimTime::ZERO,
            popped: 0,
        }
    }
}

impl<E: ArrivalRank> EventQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedule `event` at `time` (never in the past), behind the events of that time
    /// scheduled before it and before its arrivals.
    #[inline]
    pub fn schedule(&mut self, time: SimTime, event: E) {
        self.insert(time, SimTime(time.0 << 1), event);
    }

    /// Schedule arrival `event` at `time`: behind every other event of that time, and
    /// behind the arrivals of that time scheduled before it.
    #[inline]
    pub fn schedule_arrival(&mut self, time: SimTime, event: E) {
        self.insert(time, SimTime(time.0 << 1 | 1), event);
    }

    #[inline]
    fn insert(&mut self, real: SimTime, time: SimTime, event: E) {
        debug_assert!(real >= self.now, "event scheduled in the past");
        debug_assert!(real.0 < 1 << 63, "beyond the queue's range");
        self.len += 1;
        match &mut self.store {
            Store::Small(v) => {
                // The place is behind every event later than `time`. It is searched from
                // the end nearer to it, which the middle event tells: a packet's next hop a
                // few microseconds ahead goes near the back, a propagation delay ahead near
                // the front. Either search finds the same place.
                let n = v.len();
                let at = if n > 2 && v[n / 2].0 > time {
                    n - v.iter().rev().position(|&(t, _)| t > time).unwrap_or(n)
                } else {
                    v.iter().position(|&(t, _)| t <= time).unwrap_or(n)
                };
                v.insert(at, (time, event));
                if v.len() > SMALL_MAX {
                    self.spill_to_radix();
                }
            }
            Store::Radix(r) => r.schedule(time, event),
        }
    }

    /// Move the vector's events to a radix heap, earliest first.
    #[cold]
    fn spill_to_radix(&mut self) {
        let Store::Small(v) = &mut self.store else {
            return;
        };
        let earliest = v.last().map_or(self.now.0 << 1, |e| e.0 .0);
        let mut r = Radix::new(earliest);
        while let Some((time, event)) = v.pop() {
            r.place(time, event);
        }
        self.store = Store::Radix(r);
    }

    /// Move the radix heap's events to a vector, in their order.
    #[cold]
    fn back_to_small(&mut self) {
        let Store::Radix(r) = &mut self.store else {
            return;
        };
        let mut v = Vec::with_capacity(SMALL_MAX + 1);
        while let Some(e) = r.pop() {
            v.push(e);
        }
        v.reverse();
        self.store = Store::Small(v);
    }

    /// Remove and return the earliest event, advancing the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let (time, event) = match &mut self.store {
            Store::Small(v) => pop_small(v)?,
            Store::Radix(r) => {
                let out = r.pop()?;
                if self.len <= SMALL_MIN {
                    self.back_to_small();
                }
                out
            }
        };
        let time = SimTime(time.0 >> 1);
        assert!(time >= self.now, "event queue went back in time");
        self.now = time;
        self.popped += 1;
        self.len -= 1;
        Some((time, event))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<SimTime> {
        match &mut self.store {
            Store::Small(v) => v.last().map(|e| SimTime(e.0 .0 >> 1)),
            Store::Radix(r) => r.peek_time().map(|t| SimTime(t.0 >> 1)),
        }
    }

    /// The event likely popped next, if the queue can tell without work (for cache hints
    /// only: a later schedule may come first).
    #[inline]
    pub fn peek_hint(&self) -> Option<&E> {
        match &self.store {
            Store::Small(v) => v.last().map(|(_, e)| e),
            Store::Radix(r) => r.peek_hint(),
        }
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

/// The sorted vector's earliest event: its last, or among arrivals of one time (the
/// vector's end, the first scheduled last) the one of least rank.
#[inline]
fn pop_small<E: ArrivalRank>(v: &mut Vec<(SimTime, E)>) -> Option<(SimTime, E)> {
    let n = v.len();
    if n < 2 || !is_arrival(v[n - 1].0) || v[n - 2].0 != v[n - 1].0 {
        return v.pop();
    }
    let key = v[n - 1].0;
    let ties = v.iter().rev().take_while(|(t, _)| *t == key).count();
    let i = least_rank(v[n - ties..].iter().rev().map(|(_, e)| e));
    Some(v.remove(n - 1 - i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::SimRng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    // Test events of one rank: arrivals of one time keep their scheduling order.
    impl ArrivalRank for &str {
        fn arrival_rank(&self) -> u32 {
            0
        }
    }
    impl ArrivalRank for u64 {
        fn arrival_rank(&self) -> u32 {
            0
        }
    }
    impl ArrivalRank for char {
        fn arrival_rank(&self) -> u32 {
            0
        }
    }

    /// A delivery over link `link`, ranked by it.
    #[derive(Debug, PartialEq, Clone, Copy)]
    struct Over(u32, u64);
    impl ArrivalRank for Over {
        fn arrival_rank(&self) -> u32 {
            self.0
        }
    }

    /// Arrivals of one nanosecond come out by rank whatever order they were scheduled in,
    /// equal ranks in scheduling order, and other events of that time before all of them;
    /// the same from the sorted vector and from the radix heap.
    #[test]
    fn arrivals_of_one_nanosecond_come_out_by_rank() {
        for pending in [0u64, 100] {
            let mut q = EventQueue::new();
            // far-off events keep the queue in the radix heap when there are 100
            for i in 0..pending {
                q.schedule(SimTime(1_000_000 + i), Over(0, i));
            }
            q.schedule_arrival(SimTime(50), Over(7, 1));
            q.schedule_arrival(SimTime(50), Over(3, 2));
            q.schedule(SimTime(50), Over(9, 3));
            q.schedule_arrival(SimTime(50), Over(7, 4));
            q.schedule_arrival(SimTime(50), Over(1, 5));
            q.schedule_arrival(SimTime(40), Over(8, 6));
            let order: Vec<u64> = (0..6).map(|_| q.pop().unwrap().1 .1).collect();
            assert_eq!(order, [6, 3, 5, 2, 1, 4], "{pending} pending");
        }
    }

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
    fn arrivals_come_after_every_other_event_of_their_time() {
        let mut q = EventQueue::new();
        q.schedule_arrival(SimTime(10), "arrival scheduled first");
        q.schedule(SimTime(10), "timer scheduled second");
        q.schedule_arrival(SimTime(9), "arrival a nanosecond earlier");
        q.schedule_arrival(SimTime(10), "arrival scheduled third");
        q.schedule(SimTime(10), "timer scheduled fourth");
        assert_eq!(q.peek_time(), Some(SimTime(9)));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            [
                (SimTime(9), "arrival a nanosecond earlier"),
                (SimTime(10), "timer scheduled second"),
                (SimTime(10), "timer scheduled fourth"),
                (SimTime(10), "arrival scheduled first"),
                (SimTime(10), "arrival scheduled third"),
            ]
        );
        // the same with more pending than the sorted vector holds (the radix heap)
        let mut q = EventQueue::new();
        for i in 0..100u64 {
            q.schedule_arrival(SimTime(1_000 + i % 3), i);
            q.schedule(SimTime(1_000 + i % 3), 1_000 + i);
        }
        let mut last = (0, false);
        let mut n = 0;
        while let Some((t, e)) = q.pop() {
            let arrival = e < 1_000;
            assert!((t.0, arrival) >= last, "{e} at {t:?} after {last:?}");
            last = (t.0, arrival);
            n += 1;
        }
        assert_eq!(n, 200);
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

    /// The same with the queue kept small (the sorted vector, searched from either end):
    /// times drawn from a few values, so that ties fall before and behind the middle event.
    #[test]
    fn a_small_queue_keeps_time_then_scheduling_order() {
        let mut rng = SimRng::substream(11, "small-event-queue-test");
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let (mut seq, mut now) = (0u64, 0u64);
        for step in 0..100_000 {
            let target = 2 + rng.below(SMALL_MAX as u64 - 2) as usize;
            while reference.len() < target {
                let t = now + 10 * rng.below(6);
                q.schedule(SimTime(t), seq);
                reference.push(Reverse((t, seq)));
                seq += 1;
            }
            while reference.len() > target / 2 {
                let got = q.pop();
                let want = reference.pop().map(|Reverse((t, s))| (SimTime(t), s));
                assert_eq!(got, want, "step {step}");
                now = got.expect("pending").0 .0;
            }
            assert!(matches!(q.store, Store::Small(_)));
        }
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

    /// The same order while the number of pending events swings across both thresholds
    /// again and again (sorted vector ↔ radix heap), with many equal times.
    #[test]
    fn order_survives_moving_between_vector_and_radix_heap() {
        let mut rng = SimRng::substream(11, "event-queue-modes");
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let (mut seq, mut now, mut moves) = (0u64, 0u64, 0);
        let mut was_small = true;
        for phase in 0..400 {
            // grow to 20..120 pending, then shrink to 0..30
            let target = if phase % 2 == 0 {
                20 + rng.below(100) as usize
            } else {
                rng.below(30) as usize
            };
            while q.len() != target {
                if q.len() < target {
                    let t = now + [0, 1, 7, rng.below(1 << 30)][rng.below(4) as usize];
                    q.schedule(SimTime(t), seq);
                    reference.push(Reverse((t, seq)));
                    seq += 1;
                } else {
                    let want = reference.pop().map(|Reverse((t, s))| (SimTime(t), s));
                    let got = q.pop();
                    assert_eq!(got, want, "phase {phase}");
                    now = got.unwrap().0 .0;
                }
                let small = matches!(q.store, Store::Small(_));
                moves += usize::from(small != was_small);
                was_small = small;
            }
        }
        assert!(moves > 50, "the queue changed form {moves} times");
    }
}
