//! The sender's retransmission queue and SACK scoreboard.
//!
//! Segments are MSS-sized and never re-packetized, so segment *numbers* (`seq / mss`)
//! index a `VecDeque` directly: cumulative ACKs pop from the front, new data is pushed at
//! the back, both O(1). Per-ACK work is independent of the window:
//! - SACK blocks are merged into an interval set of already-SACKed segment numbers, and only
//!   the newly covered part of a block is walked (each segment is SACKed at most once);
//! - lost-and-not-yet-retransmitted segments sit in an ordered set, so the next one to
//!   retransmit is found in O(log n);
//! - segments in flight are also threaded on a list in transmission order (Linux's
//!   `tsorted_sent_queue`), which RACK walks from the oldest send and stops early.
//!
//! Counters follow Linux: `packets_out`, `sacked_out`, `lost_out`, `retrans_out`, so
//! `in_flight = packets_out − sacked_out − lost_out + retrans_out`.
use crate::engine::time::SimTime;
use crate::tcp::intervals::IntervalSet;
use crate::tcp::linux::rate::TxStamp;
use std::collections::{BTreeSet, VecDeque};

/// Segment state bits (Linux `TCPCB_*`).
pub mod segflags {
    /// SACKed by the receiver.
    pub const SACKED: u8 = 1;
    /// Considered lost (needs, or got, a retransmission).
    pub const LOST: u8 = 2;
    /// A retransmission of it is in flight (Linux `TCPCB_SACKED_RETRANS`).
    pub const RETRANS: u8 = 4;
    /// Retransmitted at least once (Linux `TCPCB_EVER_RETRANS`); Karn's rule uses it.
    pub const EVER_RETRANS: u8 = 8;
}
use segflags::*;

const NIL: u64 = u64::MAX;

/// One segment in the retransmission queue.
#[derive(Clone, Debug)]
pub struct Seg {
    pub len: u32,
    pub flags: u8,
    /// Time of the latest transmission.
    pub tx_time: SimTime,
    pub stamp: TxStamp,
    /// Transmission-order list links; the head's `prev` is stale (never read).
    prev: u64,
    next: u64,
    in_ts: bool,
}

impl Seg {
    #[inline]
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// RACK's verdict on one segment sent before the most recently delivered one.
pub enum RackVerdict {
    Lost,
    /// Not yet: it would be lost after this many more ns.
    Wait(u64),
}

/// Retransmission queue + scoreboard.
#[derive(Debug)]
pub struct Scoreboard {
    mss: u64,
    segs: VecDeque<Seg>,
    /// Segment number of `segs[0]` (the one holding `snd_una`).
    front: u64,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// SACKed segment-number ranges `[start, end)`, disjoint and merged.
    sacked: IntervalSet,
    /// Lost segments waiting for a retransmission.
    lost_q: BTreeSet<u64>,
    ts_head: u64,
    ts_tail: u64,
}

impl Scoreboard {
    /// Ask for the first `n` segments' records (those the next cumulative ACK takes off)
    /// ahead of the ACK (`engine::cache`).
    #[inline]
    pub fn prefetch_front(&self, n: usize) {
        let (a, b) = self.segs.as_slices();
        for seg in a.iter().chain(b).take(n) {
            crate::engine::cache::prefetch(seg);
        }
    }

    pub fn new(mss_bytes: u32) -> Self {
        Scoreboard {
            mss: mss_bytes as u64,
            segs: VecDeque::new(),
            front: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            sacked: IntervalSet::new(),
            lost_q: BTreeSet::new(),
            ts_head: NIL,
            ts_tail: NIL,
        }
    }

    #[inline]
    pub fn packets_out(&self) -> u32 {
        self.segs.len() as u32
    }

    #[inline]
    pub fn in_flight(&self) -> u32 {
        self.packets_out() + self.retrans_out - self.sacked_out - self.lost_out
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// First byte of segment `no`.
    #[inline]
    pub fn seq_of(&self, no: u64) -> u64 {
        no * self.mss
    }

    /// Segment number of the head (lowest unacknowledged segment).
    #[inline]
    pub fn front(&self) -> u64 {
        self.front
    }

    /// One past the last segment number in the queue.
    #[inline]
    pub fn back(&self) -> u64 {
        self.front + self.segs.len() as u64
    }

    #[inline]
    pub fn get(&self, no: u64) -> Option<&Seg> {
        no.checked_sub(self.front)
            .and_then(|i| self.segs.get(i as usize))
    }

    #[inline]
    fn at(&mut self, no: u64) -> &mut Seg {
        let i = (no - self.front) as usize;
        &mut self.segs[i]
    }

    // --- transmission-order list -------------------------------------------------------

    fn ts_unlink(&mut self, no: u64) {
        let (prev, next, in_ts) = {
            let s = self.at(no);
            (s.prev, s.next, s.in_ts)
        };
        if !in_ts {
            return;
        }
        if no == self.ts_head {
            // The usual case (the oldest transmission is acknowledged first): the new head's
            // `prev` is left as it is, never read, so its record is not written.
            self.ts_head = next;
            if next == NIL {
                self.ts_tail = NIL;
            }
        } else {
            self.at(prev).next = next;
            if next == NIL {
                self.ts_tail = prev;
            } else {
                self.at(next).prev = prev;
            }
        }
        let s = self.at(no);
        s.in_ts = false;
        s.prev = NIL;
        s.next = NIL;
    }

    fn ts_push_back(&mut self, no: u64) {
        let tail = self.ts_tail;
        {
            let s = self.at(no);
            debug_assert!(!s.in_ts);
            s.prev = tail;
            s.next = NIL;
            s.in_ts = true;
        }
        if tail == NIL {
            self.ts_head = no;
        } else {
            self.at(tail).next = no;
        }
        self.ts_tail = no;
    }

    // --- transmissions -----------------------------------------------------------------

    /// Append a newly transmitted segment of `len` bytes; returns its number.
    pub fn push_new(&mut self, len: u32, now: SimTime, stamp: TxStamp) -> u64 {
        let no = self.back();
        self.segs.push_back(Seg {
            len,
            flags: 0,
            tx_time: now,
            stamp,
            prev: NIL,
            next: NIL,
            in_ts: false,
        });
        self.ts_push_back(no);
        no
    }

    /// Record a retransmission of segment `no` at `now`.
    pub fn on_retransmit(&mut self, no: u64, now: SimTime, stamp: TxStamp) {
        debug_assert!(!self
            .get(no)
            .expect("retransmit of a segment not in queue")
            .has(SACKED));
        self.lost_q.remove(&no);
        self.ts_unlink(no);
        let counted = self.at(no).has(RETRANS);
        if !counted {
            self.retrans_out += 1;
        }
        let s = self.at(no);
        s.flags |= RETRANS | EVER_RETRANS;
        s.tx_time = now;
        s.stamp = stamp;
        self.ts_push_back(no);
    }

    /// Lowest-numbered lost segment that still needs a retransmission.
    #[inline]
    pub fn next_lost(&self) -> Option<u64> {
        self.lost_q.first().copied()
    }

    // --- acknowledgments ---------------------------------------------------------------

    /// Remove segments below `new_front` (cumulatively ACKed). `visit` sees each one
    /// before removal.
    pub fn ack_through(&mut self, new_front: u64, mut visit: impl FnMut(u64, &mut Seg)) {
        while self.front < new_front && !self.segs.is_empty() {
            let no = self.front;
            self.ts_unlink(no);
            let mut s = self.segs.pop_front().expect("non-empty");
            // Only a lost segment not yet retransmitted waits in `lost_q`.
            if s.flags & (LOST | RETRANS) == LOST {
                self.lost_q.remove(&no);
            }
            if s.has(SACKED) {
                self.sacked_out -= 1;
            }
            if s.has(LOST) {
                self.lost_out -= 1;
            }
            if s.has(RETRANS) {
                self.retrans_out -= 1;
            }
            visit(no, &mut s);
            self.front += 1;
        }
        // Drop SACK intervals now below the cumulative ACK.
        self.sacked.trim_below(self.front);
    }

    /// Mark segments `[start, end)` SACKed. `visit(no, seg)` is called for each newly SACKed
    /// segment with its flags as they were before this SACK. Returns the number newly SACKed.
    pub fn sack(&mut self, start: u64, end: u64, mut visit: impl FnMut(u64, &Seg)) -> u32 {
        let start = start.max(self.front);
        let end = end.min(self.back());
        if start >= end {
            return 0;
        }
        // Collect the uncovered gaps of [start, end) between the intervals it merges with.
        let mut gaps: [(u64, u64); 8] = [(0, 0); 8];
        let mut n_gaps = 0;
        let mut overflow_gaps: Vec<(u64, u64)> = Vec::new();
        let mut add_gap = |g: (u64, u64)| {
            if n_gaps < gaps.len() {
                gaps[n_gaps] = g;
                n_gaps += 1;
            } else {
                overflow_gaps.push(g);
            }
        };
        let mut cursor = start;
        self.sacked.insert(start, end, |s, e| {
            if s > cursor {
                let g = (cursor, s.min(end));
                if g.0 < g.1 {
                    add_gap(g);
                }
            }
            cursor = cursor.max(e);
        });
        if cursor < end {
            add_gap((cursor, end));
        }
        let mut newly = 0;
        for &(gs, ge) in gaps[..n_gaps].iter().chain(overflow_gaps.iter()) {
            for no in gs..ge {
                let flags = self.at(no).flags;
                if flags & SACKED != 0 {
                    continue;
                }
                visit(no, self.get(no).expect("in range"));
                if flags & RETRANS != 0 {
                    // A retransmission that was not deemed lost may still be in flight:
                    // Linux keeps counting it (RETRANS stays) unless the segment was LOST.
                    if flags & LOST != 0 {
                        self.lost_out -= 1;
                        self.retrans_out -= 1;
                        self.at(no).flags &= !(LOST | RETRANS);
                    }
                } else if flags & LOST != 0 {
                    self.lost_out -= 1;
                    self.at(no).flags &= !LOST;
                }
                self.at(no).flags |= SACKED;
                self.sacked_out += 1;
                if flags & (LOST | RETRANS) == LOST {
                    self.lost_q.remove(&no);
                }
                self.ts_unlink(no);
                newly += 1;
            }
        }
        newly
    }

    /// A D-SACK reported a duplicate of `no`: if its retransmission was counted in flight,
    /// stop counting it (Linux clears `SACKED_RETRANS` on D-SACK).
    pub fn dsack_clear_retrans(&mut self, no: u64) {
        if let Some(s) = self.get(no) {
            if s.has(SACKED) && s.has(RETRANS) {
                self.retrans_out -= 1;
                self.at(no).flags &= !RETRANS;
            }
        }
    }

    /// Highest SACKed segment number + 1 (0 if nothing SACKed).
    pub fn highest_sacked_end(&self) -> Option<u64> {
        self.sacked.last().map(|(_, e)| e)
    }

    /// Number of SACKed blocks (holes + 1) currently on the scoreboard.
    pub fn sack_intervals(&self) -> usize {
        self.sacked.len()
    }

    /// RFC 6675 IsLost boundary: the number of the `dupthresh`-th highest SACKed segment.
    /// Every un-SACKed segment below it has ≥ dupthresh SACKed segments above it.
    pub fn dupthresh_boundary(&self, dupthresh: u32) -> Option<u64> {
        let mut need = dupthresh as u64;
        for (s, e) in self.sacked.iter().rev() {
            let n = e - s;
            if n >= need {
                return Some(e - need);
            }
            need -= n;
        }
        None
    }

    // --- loss marking ------------------------------------------------------------------

    /// Linux `tcp_mark_skb_lost`. Returns true if this is a loss event (a new loss or a
    /// retransmission found lost again).
    pub fn mark_lost(&mut self, no: u64) -> bool {
        let Some(s) = self.get(no) else { return false };
        let flags = s.flags;
        if flags & SACKED != 0 {
            return false;
        }
        if flags & LOST != 0 {
            if flags & RETRANS != 0 {
                // The retransmission was lost too: it must be sent again.
                self.retrans_out -= 1;
                self.at(no).flags &= !RETRANS;
                self.ts_unlink(no);
                self.lost_q.insert(no);
                return true;
            }
            return false;
        }
        self.lost_out += 1;
        self.at(no).flags |= LOST;
        if flags & RETRANS == 0 {
            self.ts_unlink(no);
            self.lost_q.insert(no);
        }
        true
    }

    /// RTO: every un-SACKed segment is lost again and its retransmission (if any) is
    /// forgotten, except segments for which `keep(no, seg)` says they were sent too recently
    /// (RACK keeps those in flight). Returns the number of segments marked.
    pub fn mark_all_lost(&mut self, mut keep: impl FnMut(u64, &Seg) -> bool) -> u32 {
        let mut n = 0;
        for no in self.front..self.back() {
            let s = self.get(no).expect("in range");
            if s.has(SACKED) || (no != self.front && keep(no, s)) {
                continue;
            }
            let flags = s.flags;
            if flags & RETRANS != 0 {
                self.retrans_out -= 1;
                self.at(no).flags &= !RETRANS;
            }
            if flags & LOST == 0 {
                self.lost_out += 1;
                self.at(no).flags |= LOST;
            }
            self.ts_unlink(no);
            self.lost_q.insert(no);
            n += 1;
        }
        n
    }

    /// Clear all LOST marks (undo after a spurious timeout or recovery).
    pub fn unmark_all_lost(&mut self) {
        let lost: Vec<u64> = (self.front..self.back())
            .filter(|&no| self.get(no).is_some_and(|s| s.has(LOST)))
            .collect();
        for no in lost {
            let flags = self.at(no).flags;
            self.at(no).flags &= !LOST;
            self.lost_out -= 1;
            if flags & RETRANS == 0 && self.lost_q.remove(&no) {
                // Back in flight, in transmission order.
                self.reinsert_ts(no);
            }
        }
    }

    fn reinsert_ts(&mut self, no: u64) {
        // Insert keeping the list sorted by tx_time (rare path: undo only).
        let t = self.at(no).tx_time;
        let mut cur = self.ts_tail;
        while cur != NIL && self.get(cur).is_some_and(|s| s.tx_time > t) {
            cur = if cur == self.ts_head {
                NIL
            } else {
                self.get(cur).map_or(NIL, |s| s.prev)
            };
        }
        if cur == NIL {
            let head = self.ts_head;
            {
                let s = self.at(no);
                s.prev = NIL;
                s.next = head;
                s.in_ts = true;
            }
            if head == NIL {
                self.ts_tail = no;
            } else {
                self.at(head).prev = no;
            }
            self.ts_head = no;
        } else {
            let next = self.get(cur).map_or(NIL, |s| s.next);
            {
                let s = self.at(no);
                s.prev = cur;
                s.next = next;
                s.in_ts = true;
            }
            self.at(cur).next = no;
            if next == NIL {
                self.ts_tail = no;
            } else {
                self.at(next).prev = no;
            }
        }
    }

    /// RACK walk (Linux `tcp_rack_detect_loss`): visit segments in flight from the oldest
    /// transmission while `sent_before(seg)` holds; `verdict` decides each. Lost ones are
    /// marked; returns (number of loss events, longest remaining wait in ns).
    pub fn rack_walk(
        &mut self,
        mut sent_before: impl FnMut(u64, &Seg) -> bool,
        mut verdict: impl FnMut(&Seg) -> RackVerdict,
    ) -> (u32, u64) {
        let mut cur = self.ts_head;
        let mut lost = 0;
        let mut wait = 0;
        while cur != NIL {
            let s = self.get(cur).expect("ts list holds queued segments");
            let next = s.next;
            if !sent_before(cur, s) {
                break;
            }
            match verdict(s) {
                RackVerdict::Lost => {
                    if self.mark_lost(cur) {
                        lost += 1;
                    }
                    // A LOST|RETRANS segment marked lost again left the list in mark_lost;
                    // a LOST segment that was only TLP-retransmitted stays (in flight).
                    if self
                        .get(cur)
                        .is_some_and(|s| s.in_ts && s.has(LOST) && !s.has(RETRANS))
                    {
                        self.ts_unlink(cur);
                    }
                }
                RackVerdict::Wait(ns) => wait = wait.max(ns),
            }
            cur = next;
        }
        (lost, wait)
    }

    /// Check internal consistency (tests and debug builds).
    pub fn check_invariants(&self) {
        let (mut sacked, mut lost, mut retrans) = (0, 0, 0);
        for s in &self.segs {
            sacked += s.has(SACKED) as u32;
            lost += s.has(LOST) as u32;
            retrans += s.has(RETRANS) as u32;
        }
        assert_eq!(sacked, self.sacked_out, "sacked_out");
        assert_eq!(lost, self.lost_out, "lost_out");
        assert_eq!(retrans, self.retrans_out, "retrans_out");
        let covered: u64 = self.sacked.iter().map(|(s, e)| e - s).sum();
        assert_eq!(
            covered, sacked as u64,
            "sack intervals cover exactly the SACKed segments"
        );
        let mut n_ts = 0;
        let mut cur = self.ts_head;
        let mut last_t = SimTime::ZERO;
        let mut before = NIL;
        while cur != NIL {
            let s = self.get(cur).expect("ts entry in queue");
            assert!(s.tx_time >= last_t, "ts list out of transmission order");
            assert!(
                cur == self.ts_head || s.prev == before,
                "ts list: a segment after the head links back to its predecessor"
            );
            last_t = s.tx_time;
            n_ts += 1;
            before = cur;
            cur = s.next;
        }
        assert_eq!(before, self.ts_tail, "ts list ends at its tail");
        let expect_ts = self.segs.iter().filter(|s| s.in_ts).count();
        assert_eq!(n_ts, expect_ts);
        for &no in &self.lost_q {
            let s = self.get(no).expect("lost_q entry in queue");
            assert!(s.has(LOST) && !s.has(RETRANS) && !s.has(SACKED) && !s.in_ts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::new(1000);
        for i in 0..n {
            b.push_new(1000, SimTime(i), TxStamp::default());
        }
        b
    }

    #[test]
    fn sack_marks_only_newly_covered_segments() {
        let mut b = board(10);
        assert_eq!(b.sack(3, 5, |_, _| {}), 2);
        // Overlapping block extends the interval: only 5 and 6 are new.
        let mut seen = vec![];
        assert_eq!(b.sack(3, 7, |no, _| seen.push(no)), 2);
        assert_eq!(seen, vec![5, 6]);
        assert_eq!(b.sacked_out, 4);
        assert_eq!(b.in_flight(), 6);
        b.check_invariants();
    }

    #[test]
    fn disjoint_sacks_merge_when_the_hole_fills() {
        let mut b = board(10);
        b.sack(2, 3, |_, _| {});
        b.sack(5, 6, |_, _| {});
        assert_eq!(b.sack_intervals(), 2);
        assert_eq!(b.sack(1, 7, |_, _| {}), 4); // 1, 3, 4, 6
        assert_eq!(b.sack_intervals(), 1);
        b.check_invariants();
    }

    #[test]
    fn dupthresh_boundary_counts_sacked_segments_from_the_top() {
        let mut b = board(20);
        b.sack(10, 12, |_, _| {}); // 2 segments
        assert_eq!(b.dupthresh_boundary(3), None);
        b.sack(15, 16, |_, _| {}); // 3rd highest sacked segment is number 10
        assert_eq!(b.dupthresh_boundary(3), Some(10));
        b.sack(16, 19, |_, _| {}); // now 15..19 has 4: boundary 16
        assert_eq!(b.dupthresh_boundary(3), Some(16));
    }

    #[test]
    fn lost_segment_retransmit_and_ack_keep_counts_consistent() {
        let mut b = board(5);
        b.sack(2, 5, |_, _| {});
        assert!(b.mark_lost(0));
        assert!(b.mark_lost(1));
        assert_eq!(b.in_flight(), 0); // 5 out - 3 sacked - 2 lost
        assert_eq!(b.next_lost(), Some(0));
        b.on_retransmit(0, SimTime(100), TxStamp::default());
        assert_eq!(b.in_flight(), 1);
        assert_eq!(b.next_lost(), Some(1));
        // The retransmission of 0 is lost again (RACK): back in the queue.
        assert!(b.mark_lost(0));
        assert_eq!(b.next_lost(), Some(0));
        b.check_invariants();
        b.ack_through(5, |_, _| {});
        assert_eq!(
            (b.sacked_out, b.lost_out, b.retrans_out, b.packets_out()),
            (0, 0, 0, 0)
        );
        b.check_invariants();
    }

    #[test]
    fn rack_walk_stops_at_first_segment_not_sent_before() {
        let mut b = board(6);
        // Segments 0..6 sent at t = 0..6. Deliver (SACK) 4: walk sees 0..3 only.
        b.sack(4, 5, |_, _| {});
        let mut visited = vec![];
        let (lost, wait) = b.rack_walk(
            |no, _| no < 4,
            |s| {
                visited.push(s.tx_time.ns());
                if s.tx_time.ns() < 2 {
                    RackVerdict::Lost
                } else {
                    RackVerdict::Wait(7)
                }
            },
        );
        assert_eq!(visited, vec![0, 1, 2, 3]);
        assert_eq!((lost, wait), (2, 7));
        assert_eq!(b.lost_out, 2);
        b.check_invariants();
    }

    /// Random sends, SACKs, losses, retransmissions, cumulative ACKs, timeouts and undos:
    /// after each, the counters match the segments' flags, the SACK intervals cover exactly
    /// the SACKed segments and the transmission-order list links every segment in flight
    /// both ways in time order (`check_invariants`).
    #[test]
    fn random_operations_keep_the_board_consistent() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut b = Scoreboard::new(1000);
        let mut now = 0;
        for _ in 0..20_000 {
            now += 1;
            match rnd(16) {
                0..=4 => {
                    b.push_new(1000, SimTime(now), TxStamp::default());
                }
                5..=6 => {
                    let start = b.front() + rnd(b.packets_out() as u64 + 1);
                    b.sack(start, start + 1 + rnd(4), |_, _| {});
                }
                7..=8 if !b.is_empty() => {
                    b.mark_lost(b.front() + rnd(b.packets_out() as u64));
                }
                9..=10 => {
                    if let Some(no) = b.next_lost() {
                        b.on_retransmit(no, SimTime(now), TxStamp::default());
                    }
                }
                11..=12 => {
                    let through = b.front() + rnd(b.packets_out() as u64 / 2 + 1);
                    b.ack_through(through, |_, _| {});
                }
                13 => {
                    let newest = SimTime(now.saturating_sub(rnd(8)));
                    b.rack_walk(
                        |_, s| s.tx_time < newest,
                        |s| {
                            if s.tx_time.ns() + 4 < now {
                                RackVerdict::Lost
                            } else {
                                RackVerdict::Wait(1)
                            }
                        },
                    );
                }
                14 if rnd(8) == 0 => {
                    b.mark_all_lost(|no, _| no % 3 == 0);
                }
                15 if rnd(4) == 0 => b.unmark_all_lost(),
                _ => {}
            }
            b.check_invariants();
        }
    }

    #[test]
    fn rto_marks_everything_unsacked_lost_and_forgets_retransmissions() {
        let mut b = board(4);
        b.sack(2, 3, |_, _| {});
        b.mark_lost(0);
        b.on_retransmit(0, SimTime(10), TxStamp::default());
        assert_eq!(b.mark_all_lost(|_, _| false), 3);
        assert_eq!((b.lost_out, b.retrans_out, b.sacked_out), (3, 0, 1));
        assert_eq!(b.in_flight(), 0);
        b.check_invariants();
        b.unmark_all_lost();
        assert_eq!(b.in_flight(), 3);
        b.check_invariants();
    }
}
