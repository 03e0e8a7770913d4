//! At most one WARN per reason per interval for the rate limiter's fail-open paths.
//!
//! While DynamoDB is unreachable every `tools/call` fails open (SPEC §6), and a WARN per call
//! would flood the log at request rate. The `rate_limit{decision}` metric still counts every
//! call; the log only needs to say that it is happening and how often: the first WARN of a
//! reason is logged, the next ones within [`WARN_INTERVAL_MS`] are counted, and the next logged
//! WARN of that reason carries that count as `suppressed`. Time comes from the limiter's
//! [`crate::Clock`], so tests set it by hand.

use std::collections::HashMap;

use parking_lot::Mutex;

/// At most one WARN per reason in this many milliseconds (60 s).
pub const WARN_INTERVAL_MS: i64 = 60_000;

/// Per reason: when its last WARN was logged and how many were suppressed since.
#[derive(Debug, Default)]
pub struct WarnThrottle {
    reasons: Mutex<HashMap<&'static str, Logged>>,
}

#[derive(Debug, Clone, Copy)]
struct Logged {
    at_ms: i64,
    suppressed: u64,
}

impl WarnThrottle {
    /// Whether a WARN for `reason` may be logged at `now_ms` (epoch ms): `Some(n)` with the
    /// number suppressed since the last one logged, or `None` when this one is suppressed (and
    /// counted). A clock that went backwards allows the WARN.
    pub fn admit(&self, reason: &'static str, now_ms: i64) -> Option<u64> {
        let mut reasons = self.reasons.lock();
        match reasons.get_mut(reason) {
            Some(last) if (0..WARN_INTERVAL_MS).contains(&(now_ms - last.at_ms)) => {
                last.suppressed += 1;
                None
            }
            Some(last) => {
                let suppressed = last.suppressed;
                *last = Logged {
                    at_ms: now_ms,
                    suppressed: 0,
                };
                Some(suppressed)
            }
            None => {
                reasons.insert(
                    reason,
                    Logged {
                        at_ms: now_ms,
                        suppressed: 0,
                    },
                );
                Some(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warn_per_reason_per_interval_with_the_suppressed_count() {
        let t = WarnThrottle::default();
        assert_eq!(t.admit("write_error", 1_000), Some(0));
        for ms in [1_000, 1_001, 30_000, 60_999] {
            assert_eq!(t.admit("write_error", ms), None, "{ms}");
        }
        // Another reason has its own allowance.
        assert_eq!(t.admit("write_timeout", 2_000), Some(0));
        assert_eq!(t.admit("write_error", 61_000), Some(4));
        assert_eq!(t.admit("write_error", 61_001), None);
        assert_eq!(t.admit("write_error", 200_000), Some(1));
        assert_eq!(t.admit("write_error", 260_000), Some(0));
    }

    #[test]
    fn a_clock_that_went_back_allows_the_warn() {
        let t = WarnThrottle::default();
        assert_eq!(t.admit("write_error", 100_000), Some(0));
        assert_eq!(t.admit("write_error", 99_000), Some(0));
        assert_eq!(t.admit("write_error", 99_500), None);
    }
}
