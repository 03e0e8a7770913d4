//! At most one WARN per reason per interval for the rate limiter's fail-open paths.
//!
//! While DynamoDB is unreachable every `tools/call` fails open (SPEC §6), and a WARN per call
//! would flood the log at request rate. The `rate_limit{decision}` metric still counts every
//! call; the log only needs to say that it is happening and how often: the first WARN of a
//! reason is logged, the next ones within [`WARN_INTERVAL_MS`] are counted, and the next logged
//! WARN of that reason carries that count as `suppressed`. Time comes from the limiter's
//! [`crate::Clock`], so tests set it by hand.

use std::time::Duration;

use kosha_runtime::throttle::Throttle;

/// At most one WARN per reason in this many milliseconds (60 s).
pub const WARN_INTERVAL_MS: i64 = 60_000;

/// The limiter's reasons are a handful of constants; this bounds the memory all the same.
const MAX_REASONS: usize = 16;

/// Per reason: when its last WARN was logged and how many were suppressed since
/// ([`kosha_runtime::throttle::Throttle`] on the limiter's clock).
#[derive(Debug)]
pub struct WarnThrottle(Throttle);

impl Default for WarnThrottle {
    fn default() -> Self {
        let every = Duration::from_millis(WARN_INTERVAL_MS.unsigned_abs());
        Self(Throttle::new(every, MAX_REASONS))
    }
}

impl WarnThrottle {
    /// Whether a WARN for `reason` may be logged at `now_ms` (epoch ms): `Some(n)` with the
    /// number suppressed since the last one logged, or `None` when this one is suppressed (and
    /// counted). A clock that went backwards allows the WARN.
    pub fn admit(&self, reason: &'static str, now_ms: i64) -> Option<u64> {
        let now = Duration::from_millis(u64::try_from(now_ms).unwrap_or(0));
        // The throttle counts this one too; the WARN reports the ones before it.
        self.0
            .occurred_at("", reason, now)
            .map(|n| n.saturating_sub(1))
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
