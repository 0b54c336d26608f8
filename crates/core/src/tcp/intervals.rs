//! A set of disjoint half-open ranges `[start, end)` that merges what it is given: the
//! receiver's out-of-order queue and the sender's record of SACKed segments.
//!
//! Both grow almost always at their top end (the next out-of-order segment extends the
//! highest block; a SACK block extends the highest SACKed run), so `insert` first looks at
//! the last range and handles that case in place, without a search for neighbours below.
use std::collections::BTreeMap;

/// Disjoint ranges, never touching (a range ending where another starts is merged with it).
#[derive(Clone, Debug, Default)]
pub struct IntervalSet {
    /// start → end
    ranges: BTreeMap<u64, u64>,
}

impl IntervalSet {
    pub fn new() -> Self {
        IntervalSet::default()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Number of ranges.
    #[inline]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// The lowest range.
    #[inline]
    pub fn first(&self) -> Option<(u64, u64)> {
        self.ranges.first_key_value().map(|(&s, &e)| (s, e))
    }

    /// The highest range.
    #[inline]
    pub fn last(&self) -> Option<(u64, u64)> {
        self.ranges.last_key_value().map(|(&s, &e)| (s, e))
    }

    /// The ranges in ascending order (`.rev()` for descending).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(&s, &e)| (s, e))
    }

    /// Remove and return the lowest range.
    #[inline]
    pub fn pop_first(&mut self) -> Option<(u64, u64)> {
        self.ranges.pop_first()
    }

    /// Forget everything below `floor`: ranges ending at or below it go, one straddling it
    /// is cut to start there.
    pub fn trim_below(&mut self, floor: u64) {
        while let Some((start, end)) = self.first() {
            if start >= floor {
                return;
            }
            self.ranges.remove(&start);
            if end > floor {
                self.ranges.insert(floor, end);
                return;
            }
        }
    }

    /// Add `[start, end)` (`start < end`), merging every range it overlaps or touches.
    /// `absorbed(s, e)` sees each of those ranges as it was, in ascending order. Returns the
    /// merged range now in the set.
    pub fn insert(
        &mut self,
        start: u64,
        end: u64,
        mut absorbed: impl FnMut(u64, u64),
    ) -> (u64, u64) {
        debug_assert!(start < end);
        if let Some(mut top) = self.ranges.last_entry() {
            let (s, e) = (*top.key(), *top.get());
            if start > e {
                // Above everything.
                self.ranges.insert(start, end);
                return (start, end);
            }
            if start >= s {
                // Meets the highest range only: the one below it ends before `s`.
                absorbed(s, e);
                let merged_end = e.max(end);
                *top.get_mut() = merged_end;
                return (s, merged_end);
            }
        } else {
            self.ranges.insert(start, end);
            return (start, end);
        }
        // The range reaching `start` from below, if any, and all starting up to `end`.
        let below = self.ranges.range(..=start).next_back();
        if let Some((&s, &e)) = below.filter(|(_, &e)| e >= end) {
            // Already covered (a SACK block repeated by every ACK until its hole fills).
            absorbed(s, e);
            return (s, e);
        }
        let from = below
            .filter(|(_, &e)| e >= start)
            .map_or(start, |(&s, _)| s);
        let (mut merged_start, mut merged_end) = (start, end);
        while let Some((&s, &e)) = self.ranges.range(from..=end).next() {
            self.ranges.remove(&s);
            absorbed(s, e);
            merged_start = merged_start.min(s);
            merged_end = merged_end.max(e);
        }
        self.ranges.insert(merged_start, merged_end);
        (merged_start, merged_end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The set as a bitmap over 0..64, for comparison with a plain model.
    fn bits(set: &IntervalSet) -> u64 {
        set.iter().fold(0, |acc, (s, e)| {
            acc | ((1u64 << e) - 1) & !((1u64 << s) - 1)
        })
    }

    #[test]
    fn merges_touching_and_overlapping_ranges_and_reports_them() {
        let mut set = IntervalSet::new();
        assert_eq!(
            set.insert(10, 12, |_, _| panic!("nothing to absorb")),
            (10, 12)
        );
        assert_eq!(
            set.insert(20, 25, |_, _| panic!("nothing to absorb")),
            (20, 25)
        );
        assert_eq!(set.insert(2, 4, |_, _| panic!("nothing to absorb")), (2, 4));
        // Extends the top range in place.
        let mut seen = vec![];
        assert_eq!(set.insert(25, 27, |s, e| seen.push((s, e))), (20, 27));
        assert_eq!(seen, [(20, 25)]);
        // Bridges 2..4 and 10..12 (touching both ends) without reaching 20.
        seen.clear();
        assert_eq!(set.insert(4, 10, |s, e| seen.push((s, e))), (2, 12));
        assert_eq!(seen, [(2, 4), (10, 12)]);
        // Covers everything.
        seen.clear();
        assert_eq!(set.insert(0, 40, |s, e| seen.push((s, e))), (0, 40));
        assert_eq!(seen, [(2, 12), (20, 27)]);
        assert_eq!(set.len(), 1);
        // Inside the top range: no change, the range reported.
        seen.clear();
        assert_eq!(set.insert(5, 6, |s, e| seen.push((s, e))), (0, 40));
        assert_eq!(seen, [(0, 40)]);
    }

    #[test]
    fn trim_below_cuts_a_straddling_range() {
        let mut set = IntervalSet::new();
        for (s, e) in [(1, 3), (5, 9), (12, 14)] {
            set.insert(s, e, |_, _| {});
        }
        set.trim_below(6);
        assert_eq!(set.iter().collect::<Vec<_>>(), [(6, 9), (12, 14)]);
        set.trim_below(9);
        assert_eq!(set.iter().collect::<Vec<_>>(), [(12, 14)]);
        set.trim_below(20);
        assert!(set.is_empty());
    }

    #[test]
    fn agrees_with_a_bitmap_on_random_inserts() {
        // A small xorshift, so the test needs no generator of the crate.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200 {
            let mut set = IntervalSet::new();
            let mut model = 0u64;
            for _ in 0..12 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let start = x % 60;
                let end = start + 1 + (x >> 8) % 4;
                let mut absorbed = 0u64;
                let (ms, me) = set.insert(start, end, |s, e| {
                    absorbed |= ((1u64 << e) - 1) & !((1u64 << s) - 1)
                });
                let new = ((1u64 << end) - 1) & !((1u64 << start) - 1);
                assert_eq!(absorbed & !model, 0, "absorbed only what was there");
                model |= new;
                assert_eq!(bits(&set), model);
                // The merged range is a maximal run of the model containing the new one.
                assert!(ms <= start && me >= end);
                assert!(ms == 0 || model & (1 << (ms - 1)) == 0);
                assert!(me == 64 || model & (1 << me) == 0);
                // Ranges are disjoint and never touch.
                let v: Vec<_> = set.iter().collect();
                assert!(v.windows(2).all(|w| w[0].1 < w[1].0));
            }
        }
    }
}
