//! Audit events (SPEC §12, issue 15): JSON log lines an auditor filters on, each with
//! `"audit": true` and a distinct `event` name from [`events`]. Write them with [`audit!`]
//! (`kosha_runtime::audit!(events::WRITE, principal = %p, …)`): the one seam, so every
//! function's audit lines have the same shape. Events a caller can provoke at will (a bad
//! token, a forged chaos header) go through a [`Throttle`]: at most one line per key and
//! reason per interval, with the count of the ones folded into it.
//!
//! No audit line carries a token, a signature, a key or a password: only names, ids and
//! reasons, clipped where they come from a caller.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// The audit event names, one per kind of event (the `event` field).
pub mod events {
    /// A request refused for its credentials (gateway; per source address and reason, at most
    /// once a minute): `reason` (`missing`, `invalid_token`, `no_role`), `source`, `count`.
    pub const AUTH_REJECTED: &str = "auth_rejected";
    /// A chaos header honoured (gateway): `principal`, `target`, `fault`.
    pub const CHAOS_APPLIED: &str = "chaos_applied";
    /// A chaos header ignored (gateway; per principal and reason, at most once a minute):
    /// `reason`, `principal`, `count`.
    pub const CHAOS_HEADER_REJECTED: &str = "chaos_header_rejected";
    /// A forced-open override as this instance first reads it, or its lifting (gateway):
    /// `dependency`, `state` (`forced_open` | `cleared`), `set_by`, `set_at`, `expires_at`,
    /// `reason`.
    pub const OVERRIDE_OBSERVED: &str = "breaker_override_observed";
    /// An operator action of `kosha-ops` (stderr of the CLI): `action`, `operator`, and the
    /// action's subject (`dependency`, `ttl_s`, `target`, …).
    pub const OPS_ACTION: &str = "ops_action";
    /// A write tool's effect (core-api / gateway writes): `principal`, `tool`,
    /// `idempotency_key`, `created` (the new record's id), `replayed`.
    pub const WRITE: &str = "write_recorded";
}

/// Writes an audit event: `audit!(events::NAME, field = value, …; "message")` is
/// `tracing::info!(audit = true, event = NAME, field = value, …, "message")`.
#[macro_export]
macro_rules! audit {
    ($event:expr, $($rest:tt)+) => {
        ::tracing::info!(audit = true, event = $event, $($rest)+)
    };
}

/// At most one event per `(key, reason)` per interval, remembering at most `max_keys` pairs
/// (past it, the oldest is forgotten and its next event is written at once): memory stays
/// bounded whatever keys callers make up.
#[derive(Debug)]
pub struct Throttle {
    every: Duration,
    max_keys: usize,
    seen: Mutex<HashMap<(String, &'static str), Seen>>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    logged_at: Option<Instant>,
    /// Occurrences since the last written event.
    since: u64,
}

impl Throttle {
    /// A throttle writing once per `every` per pair, for at most `max_keys` pairs.
    pub fn new(every: Duration, max_keys: usize) -> Self {
        Self {
            every,
            max_keys: max_keys.max(1),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one occurrence for `(key, reason)`; returns `Some(n)` when the event is due
    /// (`n` occurrences since the last one, this one included), `None` when it is folded.
    pub fn occurred(&self, key: &str, reason: &'static str) -> Option<u64> {
        let now = Instant::now();
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
            .is_none_or(|t| now.saturating_duration_since(t) >= self.every);
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

    /// Occurrences folded since the last event for `(key, reason)`, if it is remembered.
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
}
