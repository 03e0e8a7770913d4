//! Per-attempt timeout: each attempt gets `min(remaining − margin, attempt cap)`
//! (seed 004 §1 and §2, SPEC §7).
//!
//! - **What it computes:** from the request [`Deadline`], the time one attempt may take. Early
//!   attempts usually get the full cap; as the deadline nears, the value shrinks, so a late
//!   (third) attempt gets what is actually left rather than the cap (pitfall 11).
//! - **When it trips:** when nothing remains after the margin the attempt is not started
//!   ([`AttemptTimeout::for_attempt`] returns `None`, the policy answers `DeadlineExceeded`).
//!   When an attempt outlives its timeout, the policy drops its future and reports
//!   `AttemptTimeout` — or `DeadlineExceeded` if the timeout had been shrunk by the deadline.
//! - **What it returns:** an [`AttemptBudget`]: the timeout and whether it was shrunk below the
//!   cap. A shrunk attempt that times out was cut short by the caller's own deadline, not by
//!   the dependency, so the breaker records it as neutral rather than as a failure.
//! - **Neighbours:** [`crate::retry`] uses the same rule to decide whether a retry still has a
//!   useful amount of time; the margin is the time this hop keeps for answering (100 ms
//!   toward a dependency, seed 004 §2).

use std::time::Duration;

use crate::deadline::Deadline;

/// The time one attempt may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptBudget {
    /// `min(remaining − margin, cap)`, > 0.
    pub timeout: Duration,
    /// Whether the deadline made it shorter than the cap.
    pub shrunk: bool,
}

/// Per-attempt timeout settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptTimeout {
    /// Longest any attempt may take (seed 004 §1 table).
    pub cap: Duration,
    /// Time kept back from the deadline for this hop to answer.
    pub margin: Duration,
}

impl AttemptTimeout {
    /// The timeout for an attempt starting now; `None` when the deadline leaves nothing.
    pub fn for_attempt(&self, deadline: &Deadline) -> Option<AttemptBudget> {
        self.with_remaining(deadline.remaining())
    }

    /// The timeout for an attempt that starts with `remaining` left before the deadline.
    pub fn with_remaining(&self, remaining: Duration) -> Option<AttemptBudget> {
        let left = remaining.saturating_sub(self.margin);
        if left.is_zero() {
            return None;
        }
        Some(AttemptBudget {
            timeout: left.min(self.cap),
            shrunk: left < self.cap,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    const T: AttemptTimeout = AttemptTimeout {
        cap: Duration::from_secs(2),
        margin: Duration::from_millis(100),
    };

    #[test]
    fn seed_004_section_2_example() {
        // remaining 7.7 s: min(7.7 s − 100 ms, 2 s) = 2 s.
        assert_eq!(
            T.with_remaining(ms(7_700)),
            Some(AttemptBudget {
                timeout: ms(2_000),
                shrunk: false
            })
        );
        // remaining 1.3 s: 1.2 s, shrunk.
        assert_eq!(
            T.with_remaining(ms(1_300)),
            Some(AttemptBudget {
                timeout: ms(1_200),
                shrunk: true
            })
        );
        assert_eq!(T.with_remaining(ms(100)), None);
        assert_eq!(T.with_remaining(Duration::ZERO), None);
    }

    #[tokio::test(start_paused = true)]
    async fn shrinks_as_the_deadline_nears() {
        let d = Deadline::after(ms(3_000));
        assert_eq!(T.for_attempt(&d).map(|b| b.timeout), Some(ms(2_000)));
        tokio::time::advance(ms(2_000)).await;
        assert_eq!(T.for_attempt(&d).map(|b| b.timeout), Some(ms(900)));
        tokio::time::advance(ms(950)).await;
        assert_eq!(T.for_attempt(&d), None);
    }
}
