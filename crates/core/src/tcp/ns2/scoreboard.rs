//! The two SACK scoreboards of ns-2, in packet numbers.
//!
//! - `RqScoreboard` (`scoreboard-rq.cc` over the reassembly queue `rq.cc`), used by Sack1:
//!   the SACKed ranges as a sorted union, a retransmission pointer `h_seqno`, and
//!   `next_retran` = the lowest hole at or above the pointer that has SACKed data above it.
//!   Every such hole counts as lost (there is no per-hole DupThresh); each is retransmitted
//!   once until the scoreboard is cleared.
//! - `FackScoreboard` (`scoreboard.cc`, the PSC version for FACK): one entry per packet from
//!   the cumulative ACK up to the highest SACK, with SACKed / retransmitted flags and the
//!   `snd_nxt` at the time of each retransmission, so a retransmission that is itself lost
//!   can be noticed (`check_snd_nxt`).

/// Sack1's scoreboard: the SACKed blocks `[left, right)` (packet numbers).
#[derive(Clone, Debug)]
pub struct RqScoreboard {
    blocks: Vec<(i64, i64)>,
    total: i64,
    /// Next candidate for retransmission (`h_seqno_`).
    pub h_seqno: i64,
    /// The cumulative ACK plus one (`sack_min`).
    pub sack_min: i64,
    changed: bool,
}

impl Default for RqScoreboard {
    fn default() -> Self {
        RqScoreboard {
            blocks: Vec::new(),
            total: 0,
            h_seqno: -1,
            sack_min: -1,
            changed: false,
        }
    }
}

impl RqScoreboard {
    /// `ClearScoreBoard`: forget the SACKs and the retransmission pointer.
    pub fn clear(&mut self) {
        self.blocks.clear();
        self.total = 0;
        self.h_seqno = -1;
    }

    /// The SACKed blocks (for tests and traces).
    pub fn blocks(&self) -> &[(i64, i64)] {
        &self.blocks
    }

    /// `UpdateScoreBoard`: advance to the cumulative ACK `last_ack`, add the ACK's blocks.
    pub fn update(&mut self, last_ack: i64, sacks: &[(i64, i64)]) {
        let old_total = self.total;
        self.changed = false;
        if self.sack_min <= last_ack {
            self.sack_min = last_ack + 1;
            if !self.blocks.is_empty() {
                self.clear_to(self.sack_min);
                self.changed = true;
            }
        }
        for &(l, r) in sacks {
            self.add(l, r);
        }
        self.changed = self.changed || old_total != self.total;
    }

    /// `CheckUpdate`: the last update changed the scoreboard (new data SACKed).
    pub fn changed(&self) -> bool {
        self.changed
    }

    fn clear_to(&mut self, seq: i64) {
        let mut total = 0;
        self.blocks.retain_mut(|b| {
            if b.1 <= seq {
                return false;
            }
            if b.0 < seq {
                b.0 = seq;
            }
            total += b.1 - b.0;
            true
        });
        self.total = total;
    }

    /// Merge `[l, r)` into the union (touching blocks coalesce, as `rq.cc` does).
    fn add(&mut self, l: i64, r: i64) {
        if r <= l {
            return;
        }
        // Blocks [i0, i1) overlap or touch [l, r].
        let i0 = self.blocks.partition_point(|b| b.1 < l);
        let i1 = i0 + self.blocks[i0..].partition_point(|b| b.0 <= r);
        let (ml, mr) = if i0 == i1 {
            self.blocks.insert(i0, (l, r));
            (l, r)
        } else {
            let merged = (l.min(self.blocks[i0].0), r.max(self.blocks[i1 - 1].1));
            self.blocks[i0] = merged;
            self.blocks.drain(i0 + 1..i1);
            merged
        };
        self.total = self.blocks.iter().map(|b| b.1 - b.0).sum();
        // The queue's rcv_nxt is sack_min: a block reaching it moves it (never happens
        // with a correct receiver, whose blocks start above the cumulative ACK).
        if self.sack_min >= ml && self.sack_min <= mr {
            self.sack_min = mr;
        }
    }

    /// `nexthole`: the first hole at or above `seq` and the number of SACKed blocks above
    /// it (−1 if none); (−1, −1) if no block lies at or above `seq`.
    fn next_hole(&self, seq: i64) -> (i64, i64) {
        for (i, &(bl, br)) in self.blocks.iter().enumerate() {
            if bl > seq {
                return (seq, (self.blocks.len() - i) as i64);
            }
            if bl <= seq && br >= seq {
                let after = self.blocks.len() - i - 1;
                return (br, if after > 0 { after as i64 } else { -1 });
            }
        }
        (-1, -1)
    }

    /// `GetNextRetran`: the next hole below SACKed data not yet retransmitted, or −1.
    pub fn next_retran(&mut self) -> i64 {
        if self.h_seqno < self.sack_min {
            self.h_seqno = self.sack_min;
        }
        let (seq, cnt) = self.next_hole(self.h_seqno);
        if seq > 0 {
            if cnt <= 0 {
                return -1;
            }
            if seq > self.h_seqno {
                self.h_seqno = seq;
            }
            return seq;
        }
        -1
    }

    /// `MarkRetran`: packet `seq` was retransmitted.
    pub fn mark_retran(&mut self, seq: i64) {
        if seq >= self.h_seqno {
            self.h_seqno = seq + 1;
        }
    }

    /// `GetNextUnacked`: the first packet at or above `seq` that is not SACKed, or −1.
    pub fn next_unacked(&self, seq: i64) -> i64 {
        self.next_hole(seq).0
    }
}

/// FACK's scoreboard: packets `first .. end` (from the cumulative ACK up to the highest
/// SACK), kept as the SACKed ranges plus the retransmitted packets with their `snd_nxt`, so
/// an ACK costs O(blocks + retransmissions), not O(window).
#[derive(Clone, Debug, Default)]
pub struct FackScoreboard {
    first: i64,
    end: i64,
    /// SACKed ranges `[l, r)` within `first .. end`, sorted, disjoint.
    sacked: Vec<(i64, i64)>,
    /// Retransmitted, not yet (S)ACKed packets and `snd_nxt` when each was sent.
    retran: std::collections::BTreeMap<i64, i64>,
}

impl FackScoreboard {
    /// `ClearScoreBoard`.
    pub fn clear(&mut self) {
        self.end = self.first;
        self.sacked.clear();
        self.retran.clear();
    }

    /// Number of packets tracked (`length_`).
    pub fn len(&self) -> usize {
        (self.end - self.first) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.first
    }

    fn is_sacked(&self, seq: i64) -> Option<i64> {
        let i = self.sacked.partition_point(|b| b.1 <= seq);
        self.sacked.get(i).filter(|b| b.0 <= seq).map(|b| b.1)
    }

    /// `UpdateScoreBoard`: drop packets up to `last_ack`, create entries up to the highest
    /// SACK, flag SACKed ones. Returns how many retransmitted packets left the network
    /// (cumulatively ACKed or SACKed), which the caller subtracts from `retran_data`.
    pub fn update(&mut self, last_ack: i64, sacks: &[(i64, i64)]) -> i64 {
        let mut retran_decr = 0;
        if !self.is_empty() && self.first <= last_ack {
            self.first = (last_ack + 1).min(self.end);
            let keep = self.retran.split_off(&self.first);
            retran_decr += self.retran.len() as i64;
            self.retran = keep;
            let first = self.first;
            self.sacked.retain_mut(|b| {
                b.0 = b.0.max(first);
                b.1 > b.0
            });
        }
        if self.is_empty() && !sacks.is_empty() {
            self.first = last_ack + 1;
            self.end = self.first + 1;
            self.sacked.clear();
            self.retran.clear();
        }
        for &(l, r) in sacks {
            self.end = self.end.max(r);
            let l = l.max(self.first);
            if r <= l {
                continue;
            }
            let covered: Vec<i64> = self.retran.range(l..r).map(|(&k, _)| k).collect();
            for k in covered {
                self.retran.remove(&k);
                retran_decr += 1;
            }
            let i0 = self.sacked.partition_point(|b| b.1 < l);
            let i1 = i0 + self.sacked[i0..].partition_point(|b| b.0 <= r);
            if i0 == i1 {
                self.sacked.insert(i0, (l, r));
            } else {
                let merged = (l.min(self.sacked[i0].0), r.max(self.sacked[i1 - 1].1));
                self.sacked[i0] = merged;
                self.sacked.drain(i0 + 1..i1);
            }
        }
        retran_decr
    }

    /// `CheckSndNxt`: a SACK above the `snd_nxt` of an outstanding retransmission means the
    /// retransmission was lost again; clears its flag and returns true (the sender then
    /// stops and waits for the RTO).
    pub fn check_snd_nxt(&mut self, sacks: &[(i64, i64)]) -> bool {
        let mut force_timeout = false;
        for &(_, r) in sacks {
            let hi = r.min(self.end);
            self.retran.retain(|&seq, &mut snd_nxt| {
                let lost = seq < hi && snd_nxt < r;
                force_timeout |= lost;
                !lost
            });
        }
        force_timeout
    }

    /// `GetNextRetran`: the first packet neither SACKed nor retransmitted, or −1.
    pub fn next_retran(&self) -> i64 {
        let mut seq = self.first;
        while seq < self.end {
            if let Some(end) = self.is_sacked(seq) {
                seq = end;
            } else if self.retran.contains_key(&seq) {
                seq += 1;
            } else {
                return seq;
            }
        }
        -1
    }

    /// `MarkRetran(seq, snd_nxt)`.
    pub fn mark_retran(&mut self, seq: i64, snd_nxt: i64) {
        if seq >= self.first && seq < self.end {
            self.retran.insert(seq, snd_nxt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rq_holes_below_the_highest_sack_are_retransmitted_in_order_once() {
        // ACK 10, blocks [12,14) and [16,17): holes 11, 14, 15; 17+ has nothing above.
        let mut sb = RqScoreboard::default();
        sb.update(10, &[(12, 14), (16, 17)]);
        assert!(sb.changed());
        assert_eq!(sb.next_retran(), 11);
        sb.mark_retran(11);
        assert_eq!(sb.next_retran(), 14);
        sb.mark_retran(14);
        assert_eq!(sb.next_retran(), 15);
        sb.mark_retran(15);
        assert_eq!(sb.next_retran(), -1);
    }

    #[test]
    fn rq_duplicate_sack_is_not_a_change_and_blocks_coalesce() {
        let mut sb = RqScoreboard::default();
        sb.update(10, &[(12, 14)]);
        sb.update(10, &[(12, 14)]);
        assert!(!sb.changed());
        sb.update(10, &[(14, 15), (12, 14)]);
        assert!(sb.changed());
        assert_eq!(sb.blocks(), &[(12, 15)]);
        // The cumulative ACK moves past the block: cleared.
        sb.update(15, &[]);
        assert!(sb.changed());
        assert!(sb.blocks().is_empty());
    }

    #[test]
    fn fack_scoreboard_counts_retransmissions_leaving_the_network() {
        let mut sb = FackScoreboard::default();
        // ACK 10, SACK [12, 15): entries 11..14, 11 is the hole.
        assert_eq!(sb.update(10, &[(12, 15)]), 0);
        assert_eq!(sb.len(), 4);
        assert_eq!(sb.next_retran(), 11);
        sb.mark_retran(11, 20);
        assert_eq!(sb.next_retran(), -1);
        // A SACK of [16, 19) (sent before snd_nxt 20): the retransmission may still come.
        assert!(!sb.check_snd_nxt(&[(16, 19)]));
        // The cumulative ACK covers 11..15: one retransmission left the network.
        assert_eq!(sb.update(15, &[(16, 19)]), 1);
    }

    #[test]
    fn fack_scoreboard_detects_a_lost_retransmission() {
        let mut sb = FackScoreboard::default();
        sb.update(10, &[(12, 15)]);
        sb.mark_retran(11, 20);
        // Packet 21 (sent after the retransmission of 11) is SACKed while 11 is not.
        sb.update(10, &[(21, 22), (12, 15)]);
        assert!(sb.check_snd_nxt(&[(21, 22), (12, 15)]));
        assert_eq!(sb.next_retran(), 11);
    }
}
