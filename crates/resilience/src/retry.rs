//! Retry decisions: whether a failed attempt is tried again, and after what delay
//! (seed 004 §3).
//!
//! - **What it counts:** attempts of one logical call (`max_attempts` includes the first).
//! - **When it retries:** only when all hold, checked in this order:
//!   1. the error is retryable ([`crate::classify`]: connect errors, timeouts, 502/503/504, 429);
//!   2. the call may be repeated: [`Idempotency::Idempotent`] or [`Idempotency::Keyed`]
//!      (a non-idempotent call without an idempotency key is never retried);
//!   3. fewer than `max_attempts` attempts have run;
//!   4. **deadline rule:** with `delay = max(full-jitter backoff, Retry-After)`, the next
//!      attempt's effective timeout `min(remaining − delay − margin, cap)` is at least
//!      `min_attempt` — i.e. `remaining ≥ delay + margin + min_attempt`. This is seed 004's
//!      "skip a retry when delay + attempt cap would exceed the remaining budget", with the cap
//!      replaced by the *shrunken* timeout the attempt would really get (pitfall 11), so a late
//!      retry runs with less than the cap rather than not at all, but never with less than
//!      `min_attempt`;
//!   5. the [`RetryBudget`] grants a token (checked last, so tokens are spent only on retries
//!      that will happen).
//! - **What it returns:** [`RetryDecision`]: retry after a delay, or stop with a
//!   [`StopReason`]; the policy then returns the last error.
//! - **Neighbours:** runs inside the breaker (one logical call = one breaker outcome) and
//!   around the per-attempt [`crate::timeout`]. Bulkhead and breaker rejections happen before
//!   any attempt and never reach it (pitfall 5). Counts `retries` (SPEC §12).

use std::time::Duration;

use crate::backoff::Backoff;
use crate::budget::RetryBudget;
use crate::classify::ErrorClass;
use crate::error::ConfigError;

/// Whether a call may safely run more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotency {
    /// Safe to repeat (reads, PUT-like writes).
    Idempotent,
    /// Not idempotent in itself but carries an `Idempotency-Key`, so the server deduplicates.
    Keyed,
    /// Not safe to repeat: never retried.
    NonIdempotent,
}

impl Idempotency {
    /// Whether a retry is allowed at all.
    pub fn allows_retry(self) -> bool {
        !matches!(self, Self::NonIdempotent)
    }
}

/// Retry settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryConfig {
    /// Attempts per logical call including the first, 1..=10.
    pub max_attempts: u32,
    /// Delay between attempts.
    pub backoff: Backoff,
    /// Shortest timeout worth starting a retry with.
    pub min_attempt: Duration,
}

impl RetryConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=10).contains(&self.max_attempts) {
            return Err(ConfigError::invalid(
                "retry.max_attempts",
                "must be in 1..=10",
            ));
        }
        Ok(())
    }
}

/// Why no further attempt is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The error class is not retryable.
    NotRetryable,
    /// Non-idempotent call without an idempotency key.
    NotIdempotent,
    /// `max_attempts` reached.
    AttemptsExhausted,
    /// The deadline leaves too little time for another attempt.
    DeadlineTooClose,
    /// The retry budget is empty.
    BudgetExhausted,
}

/// The outcome of [`RetryConfig::decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Sleep this long, then run the next attempt.
    RetryAfter(Duration),
    /// Return the last error.
    Stop(StopReason),
}

impl RetryConfig {
    /// Decides after attempt number `attempt` (1-based) failed with `class`, with `remaining`
    /// time before the deadline and `margin` kept back for this hop.
    pub fn decide(
        &self,
        attempt: u32,
        class: &ErrorClass,
        idempotency: Idempotency,
        remaining: Duration,
        margin: Duration,
        budget: &RetryBudget,
    ) -> RetryDecision {
        if !class.retryable() {
            return RetryDecision::Stop(StopReason::NotRetryable);
        }
        if !idempotency.allows_retry() {
            return RetryDecision::Stop(StopReason::NotIdempotent);
        }
        if attempt >= self.max_attempts {
            return RetryDecision::Stop(StopReason::AttemptsExhausted);
        }
        let jitter = self.backoff.delay(attempt);
        let delay = class
            .retry_after()
            .map_or(jitter, |asked| asked.max(jitter));
        let needed = delay
            .saturating_add(margin)
            .saturating_add(self.min_attempt.max(Duration::from_millis(1)));
        if remaining < needed {
            return RetryDecision::Stop(StopReason::DeadlineTooClose);
        }
        if !budget.try_withdraw() {
            return RetryDecision::Stop(StopReason::BudgetExhausted);
        }
        RetryDecision::RetryAfter(delay)
    }
}

#[cfg(test)]
mod tests;
