//! The count-based sliding window of the last N outcomes (seed 004 §4), as a ring buffer with
//! running counters so a push is O(1). Counters are only decremented for an outcome that was
//! counted when pushed, so they can never go negative (pitfall 6).

/// Last `capacity` outcomes (`true` = failure) with running totals.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    outcomes: Vec<bool>,
    next: usize,
    len: usize,
    failures: usize,
}

impl Window {
    /// An empty window of `capacity` ≥ 1 slots (the only allocation it ever makes).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            outcomes: vec![false; capacity.max(1)],
            next: 0,
            len: 0,
            failures: 0,
        }
    }

    /// Records one outcome, evicting the oldest when full.
    pub(crate) fn push(&mut self, failure: bool) {
        let capacity = self.outcomes.len();
        let Some(slot) = self.outcomes.get_mut(self.next) else {
            return;
        };
        if self.len == capacity {
            // The slot at `next` holds the oldest counted outcome: evict it.
            if *slot {
                self.failures = self.failures.saturating_sub(1);
            }
        } else {
            self.len += 1;
        }
        *slot = failure;
        if failure {
            self.failures += 1;
        }
        self.next = (self.next + 1) % capacity;
    }

    /// Forgets every outcome (on every state transition).
    pub(crate) fn reset(&mut self) {
        self.next = 0;
        self.len = 0;
        self.failures = 0;
    }

    /// Outcomes currently in the window.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Failures currently in the window.
    pub(crate) fn failures(&self) -> usize {
        self.failures
    }

    /// Whether the failure rate has reached `threshold_pct` with at least `min_calls` outcomes:
    /// `failures / len ≥ threshold / 100`, computed in integers.
    pub(crate) fn should_trip(&self, min_calls: usize, threshold_pct: u8) -> bool {
        self.len >= min_calls
            && self.len > 0
            && self.failures.saturating_mul(100)
                >= usize::from(threshold_pct).saturating_mul(self.len)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        // The ring buffer agrees with a naive model after any sequence of pushes and resets.
        #[test]
        fn matches_a_naive_model(
            capacity in 1_usize..40,
            ops in proptest::collection::vec(prop_oneof![9 => any::<bool>().prop_map(Some), 1 => Just(None)], 0..400),
            min_calls in 1_usize..40,
            threshold in 1_u8..=100,
        ) {
            let mut window = Window::new(capacity);
            let mut model: VecDeque<bool> = VecDeque::new();
            for op in ops {
                match op {
                    Some(failure) => {
                        window.push(failure);
                        model.push_back(failure);
                        if model.len() > capacity {
                            model.pop_front();
                        }
                    }
                    None => {
                        window.reset();
                        model.clear();
                    }
                }
                let failures = model.iter().filter(|f| **f).count();
                prop_assert_eq!(window.len(), model.len());
                prop_assert_eq!(window.failures(), failures);
                prop_assert!(window.failures() <= window.len());
                let rate_reached = !model.is_empty()
                    && (failures as f64 / model.len() as f64) * 100.0 >= f64::from(threshold) - 1e-9;
                prop_assert_eq!(window.should_trip(min_calls, threshold), model.len() >= min_calls && rate_reached);
            }
        }
    }

    #[test]
    fn trips_exactly_at_the_threshold() {
        let mut w = Window::new(20);
        for i in 0..20 {
            w.push(i % 2 == 0);
        }
        assert!(w.should_trip(20, 50));
        assert!(!w.should_trip(20, 51));
        assert!(!w.should_trip(21, 50));
    }
}
