//! A log throttle: at most one line per `(key, reason)` per interval, with the count of the
//! occurrences folded into it (issue 42: the one throttle behind the audit events a caller can
//! provoke at will and the rate limiter's fail-open WARNs).
//!
//! - **What it counts:** occurrences per `(key, reason)` since the last line written for it,
//!   remembering at most `max_keys` pairs; past that, the pair logged longest ago is forgotten
//!   (its next occurrence is written at once), so memory stays bounded whatever keys callers
//!   make up.
//! - **When it writes:** the first occurrence of a pair, and the first one at least `every`
//!   after the last written; one on a clock that went backwards is written too.
//! - **What it returns:** [`Throttle::occurred`] is `Some(n)` when a line is due, `n` the
//!   occurrences since the last line, this one included; `None` when this one is folded.
//! - **Time:** tokio's clock ([`Throttle::occurred`], paused in tests), or the caller's own
//!   ([`Throttle::occurred_at`]: the rate limiter's `Clock`, set by hand in its tests).
//! - **Neighbours:** [`crate::audit`]'s events (`auth_rejected`, `chaos_header_rejected`, per
//!   source or principal), core-api's chaos refusals and `kosha_state`'s rate-limit WARNs.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// At most one line per `(key, reason)` per interval (see the module doc).
#[derive(Debug)]
pub struct Throttle {
    every: Duration,
    max_keys: usize,
    /// The zero of [`Throttle::occurred`]'s times.
    origin: Instant,
    seen: Mutex<HashMap<(String, &'static str), Seen>>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    /// When its last line was written, on the caller's clock.
    logged_at: Option<Duration>,
    /// Occurrences since that line.
    since: u64,
}

impl Throttle {
    /// A throttle writing once per `every` per pair, for at most `max_keys` pairs (at least 1).
    pub fn new(every: Duration, max_keys: usize) -> Self {
        Self {
            every,
            max_keys: max_keys.max(1),
            origin: Instant::now(),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one occurrence for `(key, reason)` now, on tokio's clock: `Some(n)` when a line
    /// is due (`n` occurrences since the last one, this one included), `None` when folded.
    pub fn occurred(&self, key: &str, reason: &'static str) -> Option<u64> {
        self.occurred_at(key, reason, Instant::now().duration_since(self.origin))
    }

    /// [`Throttle::occurred`] at `now` on the caller's clock (any origin, the same for every
    /// call to this throttle, e.g. epoch milliseconds).
    pub fn occurred_at(&self, key: &str, reason: &'static str, now: Duration) -> Option<u64> {
        let mut seen = self.seen.lock();
        let pair = (key.to_owned(), reason);
        if seen.len() >= self.max_keys && !seen.contains_key(&pair) {
            let oldest = seen
                .iter()
                .min_by_key(|(_, s)| s.logged_at)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                seen.remove(&k);
            }
        }
        let entry = seen.entry(pair).or_insert(Seen {
            logged_at: None,
            since: 0,
        });
        entry.since += 1;
        let due = entry
            .logged_at
            .is_none_or(|t| now < t || now - t >= self.every);
        if !due {
            return None;
        }
        let count = entry.since;
        *entry = Seen {
            logged_at: Some(now),
            since: 0,
        };
        Some(count)
    }

    /// Occurrences folded since the last line for `(key, reason)`, if it is remembered.
    pub fn pending(&self, key: &str, reason: &'static str) -> Option<u64> {
        self.seen
            .lock()
            .get(&(key.to_owned(), reason))
            .map(|s| s.since)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Throttle;

    #[tokio::test(start_paused = true)]
    async fn one_event_per_key_and_reason_per_interval_with_the_folded_count() {
        let t = Throttle::new(Duration::from_secs(60), 2);
        assert_eq!(t.occurred("10.0.0.1", "invalid_token"), Some(1));
        assert_eq!(t.occurred("10.0.0.1", "invalid_token"), None);
        assert_eq!(t.occurred("10.0.0.1", "invalid_token"), None);
        assert_eq!(t.occurred("10.0.0.1", "missing"), Some(1));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(t.occurred("10.0.0.1", "invalid_token"), Some(3));
        // Past max_keys the oldest pair is forgotten, so memory stays bounded.
        assert_eq!(t.occurred("10.0.0.2", "missing"), Some(1));
        assert_eq!(t.seen.lock().len(), 2);
    }

    #[test]
    fn on_the_callers_clock_a_clock_that_went_back_writes() {
        let t = Throttle::new(Duration::from_secs(60), 4);
        let at = Duration::from_millis;
        assert_eq!(t.occurred_at("", "write_error", at(100_000)), Some(1));
        assert_eq!(t.occurred_at("", "write_error", at(159_999)), None);
        assert_eq!(t.occurred_at("", "write_error", at(99_000)), Some(2));
        assert_eq!(t.occurred_at("", "write_error", at(99_500)), None);
        assert_eq!(t.pending("", "write_error"), Some(1));
    }
}
