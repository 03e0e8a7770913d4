//! Full-jitter exponential backoff (seed 004 §3; AWS Architecture Blog, "Exponential Backoff
//! and Jitter").
//!
//! - **What it computes:** the delay before retry `n` (n ≥ 1: the wait between attempt `n` and
//!   attempt `n + 1`), drawn uniformly from `[0, min(cap, base · 2^(n−1))]` in whole
//!   milliseconds — never truncated to seconds (pitfall 7).
//! - **When it trips:** never; it only spaces retries. Whether a retry happens at all is decided
//!   by [`crate::retry`] (classification, attempts, budget, deadline).
//! - **What it returns:** a [`Duration`]. The ceiling saturates, so large `n` cannot overflow.
//! - **Neighbours:** [`crate::retry`] takes the larger of this delay and a server's
//!   `Retry-After`, then checks the result against the deadline.

use std::time::Duration;

use rand::Rng;

use crate::error::ConfigError;

/// Backoff settings, validated by [`Backoff::try_new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    base_ms: u64,
    cap_ms: u64,
}

impl Backoff {
    /// Base 50 ms, cap 1 s: the default for every dependency (the seed leaves it open).
    pub const DEFAULT: Self = Self {
        base_ms: 50,
        cap_ms: 1_000,
    };

    /// `base` is the ceiling for the first retry, `cap` bounds every ceiling. Both are kept in
    /// whole milliseconds; `base` must be ≥ 1 ms and `cap` ≥ `base`.
    pub fn try_new(base: Duration, cap: Duration) -> Result<Self, ConfigError> {
        let base_ms = u64::try_from(base.as_millis()).unwrap_or(u64::MAX);
        let cap_ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX);
        if base_ms == 0 {
            return Err(ConfigError::invalid(
                "backoff.base",
                "must be at least 1 ms",
            ));
        }
        if cap_ms < base_ms {
            return Err(ConfigError::invalid(
                "backoff.cap",
                "must be at least backoff.base",
            ));
        }
        Ok(Self { base_ms, cap_ms })
    }

    /// The first retry's ceiling.
    pub fn base(&self) -> Duration {
        Duration::from_millis(self.base_ms)
    }

    /// The largest ceiling.
    pub fn cap(&self) -> Duration {
        Duration::from_millis(self.cap_ms)
    }

    /// The ceiling for retry `n`: `min(cap, base · 2^(n−1))`; `n = 0` is treated as 1.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let exponent = retry.saturating_sub(1).min(63);
        let grown = self.base_ms.saturating_mul(1_u64 << exponent);
        Duration::from_millis(grown.min(self.cap_ms))
    }

    /// A full-jitter delay for retry `n`, uniform over `[0, ceiling(n)]` ms, from the
    /// thread-local generator.
    pub fn delay(&self, retry: u32) -> Duration {
        self.delay_with(retry, &mut rand::rng())
    }

    /// [`Backoff::delay`] drawing from `rng` (tests pass a seeded generator).
    pub fn delay_with<R: Rng + ?Sized>(&self, retry: u32, rng: &mut R) -> Duration {
        let ceiling_ms = u64::try_from(self.ceiling(retry).as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(rng.random_range(0..=ceiling_ms))
    }
}

#[cfg(test)]
mod tests;
