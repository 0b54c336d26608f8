//! The event queue: a binary heap keyed by (time, sequence number).
//!
//! The sequence number is a per-queue counter, so events at the same instant run in the
//! order they were scheduled (FIFO) and the order never depends on memory addresses or hash
//! seeds. Popping asserts that time never goes backwards.
use crate::engine::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Which side of a TCP connection a timer belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

/// Timer slots of a connection endpoint. Each slot has at most one live deadline; stale
/// heap entries are recognised and ignored when they fire (lazy cancellation).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TimerSlot {
    /// Sender: RTO, TLP or RACK reorder timer (Linux multiplexes them on one slot too).
    Retransmit,
    /// Sender: pacing release time.
    Pacing,
    /// Receiver: delayed or compressed ACK.
    Ack,
    /// Either side: handshake retransmission.
    Handshake,
}

/// Something that happens at an instant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The first packet in flight on `link` reaches the far end.
    LinkDeliver { link: u32 },
    /// An event-driven link's transmitter is free: dequeue (`Link::on_wake`).
    LinkWake { link: u32 },
    /// A connection endpoint's timer.
    Timer {
        flow: u32,
        side: Side,
        slot: TimerSlot,
    },
    /// A flow's application starts.
    FlowStart { flow: u32 },
    /// A constant-bit-rate source sends its next datagram(s).
    UdpSend { flow: u32 },
    /// End of a series interval: sample the counters.
    Sample,
}

#[derive(Debug)]
struct Entry {
    time: SimTime,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.time.cmp(&self.time).then_with(|| o.seq.cmp(&self.seq))
    }
}

/// Pending events ordered by (time, insertion sequence).
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    now: SimTime,
    popped: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedule `event` at `time` (never in the past).
    #[inline]
    pub fn schedule(&mut self, time: SimTime, event: Event) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time, seq, event });
    }

    /// Remove and return the earliest event, advancing the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let e = self.heap.pop()?;
        assert!(e.time >= self.now, "event queue went back in time");
        self.now = e.time;
        self.popped += 1;
        Some((e.time, e.event))
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_fifo_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), Event::FlowStart { flow: 2 });
        q.schedule(SimTime(5), Event::Sample);
        q.schedule(SimTime(10), Event::FlowStart { flow: 1 });
        assert_eq!(q.pop(), Some((SimTime(5), Event::Sample)));
        assert_eq!(q.pop(), Some((SimTime(10), Event::FlowStart { flow: 2 })));
        assert_eq!(q.pop(), Some((SimTime(10), Event::FlowStart { flow: 1 })));
        assert_eq!(q.pop(), None);
        assert_eq!(q.events_processed(), 3);
    }
}
