//! Gilbert–Elliott burst loss: a two-state Markov chain stepped once per packet.
//!
//! In the good state a packet is lost with `loss_good`, in the bad state with `loss_bad`;
//! before each packet the chain moves good → bad with `p_gb` and bad → good with `p_bg`.
//! The stationary probability of the bad state is π_bad = p_gb / (p_gb + p_bg), so the
//! long-run loss rate is π_bad · loss_bad + (1 − π_bad) · loss_good, and a stay in the bad
//! state lasts 1/p_bg packets on average (geometric). The chain starts in the good state.
use crate::engine::rng::SimRng;

/// Parameters and state of a Gilbert–Elliott channel.
#[derive(Clone, Debug)]
pub struct GilbertElliott {
    pub p_gb: f64,
    pub p_bg: f64,
    pub loss_good: f64,
    pub loss_bad: f64,
    bad: bool,
    rng: SimRng,
}

impl GilbertElliott {
    pub fn new(p_gb: f64, p_bg: f64, loss_good: f64, loss_bad: f64, rng: SimRng) -> Self {
        GilbertElliott {
            p_gb,
            p_bg,
            loss_good,
            loss_bad,
            bad: false,
            rng,
        }
    }

    /// Step the chain for one packet and tell whether that packet is lost.
    #[inline]
    pub fn lose(&mut self) -> bool {
        let flip = if self.bad { self.p_bg } else { self.p_gb };
        if self.rng.bernoulli(flip) {
            self.bad = !self.bad;
        }
        let p = if self.bad {
            self.loss_bad
        } else {
            self.loss_good
        };
        self.rng.bernoulli(p)
    }

    /// The chain is in the bad state (after the last packet).
    pub fn is_bad(&self) -> bool {
        self.bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_run_loss_and_burst_length_match_the_chain() {
        // p_gb = 0.01, p_bg = 0.1: π_bad = 0.01/0.11 = 0.090909; loss = π_bad·0.5 +
        // π_good·0.001 = 0.045455 + 0.000909 = 0.046364; mean bad stay 1/0.1 = 10 packets.
        let mut ge = GilbertElliott::new(0.01, 0.1, 0.001, 0.5, SimRng::substream(3, "ge"));
        let n = 2_000_000u64;
        let (mut lost, mut bad, mut stays, mut was_bad) = (0u64, 0u64, 0u64, false);
        for _ in 0..n {
            lost += ge.lose() as u64;
            if ge.is_bad() {
                bad += 1;
                stays += !was_bad as u64;
            }
            was_bad = ge.is_bad();
        }
        let loss = lost as f64 / n as f64;
        let pi_bad = bad as f64 / n as f64;
        let burst = bad as f64 / stays as f64;
        assert!((loss - 0.046_364).abs() < 0.0015, "loss {loss}");
        assert!((pi_bad - 0.090_909).abs() < 0.003, "π_bad {pi_bad}");
        assert!((burst - 10.0).abs() < 0.3, "mean bad stay {burst}");
    }

    #[test]
    fn all_lost_in_bad_state_none_in_good() {
        // Gilbert's original model (loss_good 0, loss_bad 1): losses are exactly the
        // packets sent in the bad state.
        let mut ge = GilbertElliott::new(0.05, 0.5, 0.0, 1.0, SimRng::substream(1, "g"));
        for _ in 0..10_000 {
            let l = ge.lose();
            assert_eq!(l, ge.is_bad());
        }
    }
}
