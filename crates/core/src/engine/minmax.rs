//! A windowed minimum or maximum over a sliding time window: Kathleen Nichols' algorithm,
//! as Linux `lib/win_minmax.c` implements it.
//!
//! The filter keeps the best, second-best and third-best samples of three sub-windows, so
//! the best value of the last `window` is known in O(1) time and space. Time is any
//! monotone `u64` clock: nanoseconds for TCP's min RTT (`tcp_min_rtt_wlen`), packet-timed
//! round trips for BBR's max bandwidth. Which order counts as "best" is the type parameter:
//! `WindowedMin` (Linux `minmax_running_min`) or `WindowedMax` (`minmax_running_max`).
use std::marker::PhantomData;

/// What "better" means for a filter.
pub trait Order {
    /// The value of an empty filter (every real sample is at least as good).
    const EMPTY: u64;
    /// `a` is at least as good as `b`.
    fn at_least_as_good(a: u64, b: u64) -> bool;
}

/// Smaller is better.
#[derive(Debug, Clone, Copy)]
pub struct Min;
/// Larger is better.
#[derive(Debug, Clone, Copy)]
pub struct Max;

impl Order for Min {
    const EMPTY: u64 = u64::MAX;
    #[inline]
    fn at_least_as_good(a: u64, b: u64) -> bool {
        a <= b
    }
}

impl Order for Max {
    const EMPTY: u64 = 0;
    #[inline]
    fn at_least_as_good(a: u64, b: u64) -> bool {
        a >= b
    }
}

/// The windowed best of samples `(t, v)`.
#[derive(Debug, Clone, Copy)]
pub struct Windowed<O: Order> {
    s: [(u64, u64); 3],
    order: PhantomData<O>,
}

/// Windowed minimum (Linux `minmax_running_min`).
pub type WindowedMin = Windowed<Min>;
/// Windowed maximum (Linux `minmax_running_max`).
pub type WindowedMax = Windowed<Max>;

impl<O: Order> Default for Windowed<O> {
    fn default() -> Self {
        Windowed {
            s: [(0, O::EMPTY); 3],
            order: PhantomData,
        }
    }
}

impl<O: Order> Windowed<O> {
    /// The best value in the window (`O::EMPTY` before any sample).
    #[inline]
    pub fn get(&self) -> u64 {
        self.s[0].1
    }

    /// Forget everything but sample `v` at `t` (Linux `minmax_reset`).
    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [(t, v); 3];
        v
    }

    /// Insert sample `v` at time `t`; returns the best value of the last `window`.
    pub fn update(&mut self, window: u64, t: u64, v: u64) -> u64 {
        let val = (t, v);
        if O::at_least_as_good(v, self.s[0].1) || t.saturating_sub(self.s[2].0) > window {
            return self.reset(t, v); // a new best, or nothing left in the window
        }
        if O::at_least_as_good(v, self.s[1].1) {
            self.s[2] = val;
            self.s[1] = val;
        } else if O::at_least_as_good(v, self.s[2].1) {
            self.s[2] = val;
        }
        self.subwin_update(window, val)
    }

    /// Linux `minmax_subwin_update`: age the sub-windows.
    fn subwin_update(&mut self, window: u64, val: (u64, u64)) -> u64 {
        let dt = val.0.saturating_sub(self.s[0].0);
        if dt > window {
            // The best expired: promote the others and the new sample.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.0.saturating_sub(self.s[0].0) > window {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > window / 4 {
            // A quarter of the window passed without a second choice: take one.
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > window / 2 {
            // Half the window passed without a third choice.
            self.s[2] = val;
        }
        self.s[0].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn min_is_empty_until_a_sample_and_a_smaller_sample_wins_at_once() {
        let mut m = WindowedMin::default();
        assert_eq!(m.get(), u64::MAX);
        assert_eq!(m.update(10 * S, 0, 50), 50);
        assert_eq!(m.update(10 * S, S, 40), 40);
    }

    #[test]
    fn min_expires_the_old_minimum_for_the_best_kept_choice() {
        // Window 10 s. 50 @ 0 s resets. 80 @ 1 s: no slot takes it (a second choice is
        // only taken after a quarter window, 2.5 s). 90 @ 6 s: 6 s > 2.5 s, so it becomes
        // the second and third choice. At 11 s the 50 is 11 s old: the choices move up and
        // the minimum is the 90 (the 80 was never kept; Nichols' filter is approximate).
        let w = 10 * S;
        let mut m = WindowedMin::default();
        assert_eq!(m.update(w, 0, 50), 50);
        assert_eq!(m.update(w, S, 80), 50);
        assert_eq!(m.update(w, 6 * S, 90), 50);
        assert_eq!(m.update(w, 11 * S, 95), 90);
    }

    #[test]
    fn max_forgets_a_sample_older_than_the_window() {
        // Window 10 rounds. 100 @ 1; 60 @ 2 is kept nowhere (1 round < 10/4); 70 @ 5 is
        // the second and third choice (4 > 2); at round 12 the 100 is 11 rounds old and
        // the 70 of round 5 is the maximum.
        let mut m = WindowedMax::default();
        assert_eq!(m.update(10, 1, 100), 100);
        assert_eq!(m.update(10, 2, 60), 100);
        assert_eq!(m.update(10, 5, 70), 100);
        assert_eq!(m.update(10, 12, 65), 70);
    }

    #[test]
    fn a_gap_longer_than_the_window_resets_to_the_new_sample() {
        let mut m = WindowedMax::default();
        m.update(10, 0, 100);
        m.update(10, 3, 90);
        assert_eq!(m.update(10, 30, 5), 5);
    }
}
