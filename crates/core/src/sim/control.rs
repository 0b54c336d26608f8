//! Watching a run from outside and stopping it early (`Simulation::run_controlled`).
//!
//! The event loop hands control to the caller every `CHECK_EVERY_EVENTS` events, counted
//! (not timed), so where it asks depends on the run alone and a run that is not stopped is
//! the same run. What the caller does with the chance — read a cancellation flag, look at
//! the wall clock, report progress — is its business; the core has no clock and no I/O.

/// Events between two questions. At the core's 3–25 M events/s (`make bench`) that is
/// at most a few milliseconds of wall time, so a stop request is obeyed at once, while
/// one question per 4,096 events costs nothing measurable.
pub const CHECK_EVERY_EVENTS: u64 = 1 << 12;

/// Where a run is when it asks whether to go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Simulated time reached.
    pub now_ns: u64,
    /// The run's end (its duration).
    pub end_ns: u64,
    /// Events processed so far.
    pub events: u64,
}

#[cfg(test)]
mod tests {
    use crate::result::summarize;
    use crate::scenario::ScenarioConfig;
    use crate::sim::Simulation;

    /// One Reno flow over 4 Mbit/s for 100 s: about 20,000 events.
    fn small_scenario() -> ScenarioConfig {
        let text = crate::scenario::tests::base().replace(
            r#""duration_ns": 1000000000"#,
            r#""duration_ns": 100000000000"#,
        );
        ScenarioConfig::from_json(&text).unwrap()
    }

    #[test]
    fn a_controlled_run_that_goes_on_equals_a_plain_run() {
        let mut plain = Simulation::new(small_scenario()).unwrap();
        plain.run();
        let mut asked = 0u64;
        let mut watched = Simulation::new(small_scenario()).unwrap();
        assert!(watched.run_controlled(&mut |p| {
            asked += 1;
            assert_eq!(p.events % super::CHECK_EVERY_EVENTS, 0);
            assert!(p.now_ns <= p.end_ns);
            true
        }));
        assert!(asked > 2, "the run asks along the way ({asked} times)");
        assert_eq!(plain.events(), watched.events());
        let (a, b) = (summarize(&plain), summarize(&watched));
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }

    #[test]
    fn a_stopped_run_ends_at_the_next_question() {
        let mut sim = Simulation::new(small_scenario()).unwrap();
        let mut asked = 0;
        let finished = sim.run_controlled(&mut |_| {
            asked += 1;
            asked < 2
        });
        assert!(!finished);
        assert_eq!(asked, 2);
        assert_eq!(sim.events(), 2 * super::CHECK_EVERY_EVENTS);
    }
}
