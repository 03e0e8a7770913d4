//! Origin backoff: a dependency's own "not before T", honoured by every call on this instance
//! (seed 000 "Origin-driven Retry-After backoff"; issue #33).
//!
//! - **What it counts:** nothing; it holds one instant per dependency and instance, "no call
//!   before T", in an atomic (nanoseconds after the holder's creation; 0 = none), so the
//!   check on every call is one atomic load and allocates nothing.
//! - **When it trips:** when an attempt ends with HTTP 429 *and* a `Retry-After`
//!   ([`crate::classify::ErrorClass::Status`]), T becomes `now + min(Retry-After, 60 s)`
//!   ([`MAX_HOLD`]), or stays later if another answer already set a later T. A 503, with or
//!   without `Retry-After`, is an ordinary failure (retried, counted by the breaker) and never
//!   holds: a 503 says "I am broken", a 429 says "you are too many".
//! - **What it returns:** until T, [`NotBefore::remaining`] gives the time left; the policy
//!   then refuses the call with [`crate::policy::PolicyError::NotBefore`] (the gateway's
//!   `dependency_unavailable` with `retry_after_s`, or the tool's degraded answer) without
//!   taking a bulkhead slot, a breaker permit or an attempt, so the hold is never a breaker
//!   failure. The first success after T clears the hold ([`NotBefore::clear_if_passed`]); a
//!   success of a call that started before the 429 and answers before T does not.
//! - **Neighbours:** [`crate::policy`] checks it right after the deadline and before the
//!   bulkhead, and records a 429 from any attempt. A retry already waits at least the
//!   `Retry-After` it was given ([`crate::retry`]); a retry that would start while another
//!   caller's later 429 holds the dependency is not made.
//! - **Logs:** `dependency_backoff` (warn) when a 429 sets or extends the hold, with the
//!   dependency and `retry_after_ms`; `dependency_backoff_cleared` (info) when it clears.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// Longest hold a `Retry-After` can set (issue #33: capped at 60 s), whatever the
/// dependency asks for.
pub const MAX_HOLD: Duration = Duration::from_secs(60);

/// "Not before T" for one dependency on this instance. Shared by reference.
#[derive(Debug)]
pub struct NotBefore {
    dependency: String,
    base: Instant,
    /// T as nanoseconds after `base`, plus one; 0 when no hold is set.
    until_ns: AtomicU64,
}

impl NotBefore {
    /// No hold, for `dependency` (named in the logs).
    pub fn new(dependency: &str) -> Self {
        Self {
            dependency: dependency.to_owned(),
            base: Instant::now(),
            until_ns: AtomicU64::new(0),
        }
    }

    fn offset_ns(&self, at: Instant) -> u64 {
        let ns = at.saturating_duration_since(self.base).as_nanos();
        // Shifted by one: 0 means "no hold", and an instant at `base` is 1.
        u64::try_from(ns).unwrap_or(u64::MAX).saturating_add(1)
    }

    /// Holds the dependency until `now + min(retry_after, 60 s)`, unless a later hold is
    /// already set; returns the hold now in force. A zero `retry_after` holds nothing.
    pub fn hold(&self, retry_after: Duration, now: Instant) -> Duration {
        let wait = retry_after.min(MAX_HOLD);
        if wait.is_zero() {
            return self.remaining(now).unwrap_or_default();
        }
        let until = self.offset_ns(now + wait);
        let before = self.until_ns.fetch_max(until, Ordering::AcqRel);
        if before < until {
            tracing::warn!(
                dependency = %self.dependency,
                retry_after_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "dependency_backoff"
            );
        }
        self.remaining(now).unwrap_or_default()
    }

    /// Time left before T, or `None` when no hold is set or T has passed.
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        let until = self.until_ns.load(Ordering::Acquire);
        if until == 0 {
            return None;
        }
        let now_ns = self.offset_ns(now);
        (until > now_ns).then(|| Duration::from_nanos(until - now_ns))
    }

    /// Clears a hold whose T has passed (called on a success); a hold still in force stays.
    pub fn clear_if_passed(&self, now: Instant) {
        let until = self.until_ns.load(Ordering::Acquire);
        if until == 0 || until > self.offset_ns(now) {
            return;
        }
        // Only the value we saw: a newer 429 that moved T on meanwhile keeps its hold.
        if self
            .until_ns
            .compare_exchange(until, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            tracing::info!(dependency = %self.dependency, "dependency_backoff_cleared");
        }
    }

    /// Whether a hold is recorded (in force or passed but not yet cleared).
    pub fn is_set(&self) -> bool {
        self.until_ns.load(Ordering::Acquire) != 0
    }
}

#[cfg(test)]
mod tests;
