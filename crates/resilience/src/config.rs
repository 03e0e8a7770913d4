//! The settings of one [`crate::policy::Policy`]: a [`Profile`] (what differs between
//! dependencies, one row of seed 004 §1's table, chosen by the binary that calls that
//! dependency) completed with the choices below, then overridable from the environment and
//! validated once at start-up.
//!
//! Settings the seed leaves open, chosen here: breaker `min_calls` = half the window;
//! 3 half-open probes (seed 004 §4); probe lease = attempt cap × max attempts + 1 s (the
//! longest a healthy probe can take); backoff base 50 ms, cap 1 s; bulkhead wait 10 ms;
//! failure threshold 50 %; minimum retry attempt 100 ms; retry budget 10 tokens with a floor
//! of 1 retry per second.
//!
//! ## Environment overrides
//!
//! `<PREFIX>_<SETTING>`, where the binary names the prefix (`KOSHA_POLICY_CORE_API_READ`, …)
//! and `<SETTING>` is one of `ATTEMPT_CAP_MS`, `ATTEMPT_MARGIN_MS`, `MIN_ATTEMPT_MS`,
//! `MAX_ATTEMPTS`, `BACKOFF_BASE_MS`, `BACKOFF_CAP_MS`, `BULKHEAD_CAPACITY`,
//! `BULKHEAD_WAIT_MS`, `BREAKER_WINDOW`, `BREAKER_MIN_CALLS`, `BREAKER_FAILURE_RATE_PCT`,
//! `BREAKER_OPEN_MS`, `BREAKER_HALF_OPEN_PROBES`, `BREAKER_PROBE_LEASE_MS`,
//! `BUDGET_CAP_TOKENS`, `BUDGET_MIN_RETRIES_PER_SEC` (all unsigned integers). Example:
//! `KOSHA_POLICY_CORE_API_READ_ATTEMPT_CAP_MS=1500`. Values are read through a lookup closure
//! (`kosha_runtime::config::var` in `main`), so tests never set process environment variables.

use std::time::Duration;

use crate::backoff::Backoff;
use crate::breaker::BreakerConfig;
use crate::budget::BudgetConfig;
use crate::bulkhead::BulkheadConfig;
use crate::error::ConfigError;
use crate::retry::RetryConfig;
use crate::timeout::AttemptTimeout;

/// What differs between dependencies: one row of seed 004 §1's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Longest one attempt may take (before the deadline shortens it).
    pub attempt_cap: Duration,
    /// Margin kept from the deadline for the caller's own work (seed 004 §2: 100 ms; 150 ms
    /// on the gateway → core-api hop, SPEC §7).
    pub attempt_margin: Duration,
    /// Attempts per logical call, the first included.
    pub max_attempts: u32,
    /// Concurrent calls allowed (bulkhead capacity).
    pub bulkhead: usize,
    /// Calls in the breaker's sliding window.
    pub breaker_window: usize,
    /// How long the breaker stays open before half-open probes.
    pub open_for: Duration,
}

/// Everything a [`crate::policy::Policy`] needs for one dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Per-attempt cap and the margin kept from the deadline.
    pub attempt: AttemptTimeout,
    /// Attempts, backoff and the shortest worthwhile retry.
    pub retry: RetryConfig,
    /// Concurrency cap.
    pub bulkhead: BulkheadConfig,
    /// Circuit breaker.
    pub breaker: BreakerConfig,
    /// Retry budget.
    pub budget: BudgetConfig,
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

impl PolicyConfig {
    /// `profile` completed with the choices of the module docs.
    pub fn from_profile(profile: Profile) -> Self {
        let lease = profile
            .attempt_cap
            .saturating_mul(profile.max_attempts)
            .saturating_add(ms(1_000));
        Self {
            attempt: AttemptTimeout {
                cap: profile.attempt_cap,
                margin: profile.attempt_margin,
            },
            retry: RetryConfig {
                max_attempts: profile.max_attempts,
                backoff: Backoff::DEFAULT,
                min_attempt: ms(100),
            },
            bulkhead: BulkheadConfig {
                capacity: profile.bulkhead,
                wait: ms(10),
            },
            breaker: BreakerConfig {
                window: profile.breaker_window,
                min_calls: profile.breaker_window / 2,
                failure_rate_pct: 50,
                open_duration: profile.open_for,
                half_open_probes: 3,
                probe_lease: lease,
            },
            budget: BudgetConfig {
                cap_tokens: 10,
                min_retries_per_sec: 1,
            },
        }
    }

    /// `profile`'s settings with overrides `<prefix>_<SETTING>` read through `lookup` (see the
    /// module docs for names), validated.
    ///
    /// # Errors
    /// [`ConfigError::Parse`] for a non-integer, [`ConfigError::Env`] for a value out of
    /// range.
    pub fn from_lookup(
        profile: Profile,
        prefix: &'static str,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let env = Env {
            prefix,
            lookup: &lookup,
        };
        let mut c = Self::from_profile(profile);
        env.duration("ATTEMPT_CAP_MS", &mut c.attempt.cap)?;
        env.duration("ATTEMPT_MARGIN_MS", &mut c.attempt.margin)?;
        env.duration("MIN_ATTEMPT_MS", &mut c.retry.min_attempt)?;
        env.int("MAX_ATTEMPTS", &mut c.retry.max_attempts)?;
        let (mut base, mut cap) = (c.retry.backoff.base(), c.retry.backoff.cap());
        env.duration("BACKOFF_BASE_MS", &mut base)?;
        env.duration("BACKOFF_CAP_MS", &mut cap)?;
        c.retry.backoff = Backoff::try_new(base, cap).map_err(|e| env.wrap(e))?;
        env.int("BULKHEAD_CAPACITY", &mut c.bulkhead.capacity)?;
        env.duration("BULKHEAD_WAIT_MS", &mut c.bulkhead.wait)?;
        env.int("BREAKER_WINDOW", &mut c.breaker.window)?;
        env.int("BREAKER_MIN_CALLS", &mut c.breaker.min_calls)?;
        env.int("BREAKER_FAILURE_RATE_PCT", &mut c.breaker.failure_rate_pct)?;
        env.duration("BREAKER_OPEN_MS", &mut c.breaker.open_duration)?;
        env.int("BREAKER_HALF_OPEN_PROBES", &mut c.breaker.half_open_probes)?;
        env.duration("BREAKER_PROBE_LEASE_MS", &mut c.breaker.probe_lease)?;
        env.int("BUDGET_CAP_TOKENS", &mut c.budget.cap_tokens)?;
        env.int(
            "BUDGET_MIN_RETRIES_PER_SEC",
            &mut c.budget.min_retries_per_sec,
        )?;
        c.validate().map_err(|e| env.wrap(e))?;
        Ok(c)
    }

    /// Checks every part.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the first setting out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.attempt.cap.is_zero() {
            return Err(ConfigError::invalid("attempt.cap", "must be positive"));
        }
        self.retry.validate()?;
        self.bulkhead.validate()?;
        self.breaker.validate()?;
        self.budget.validate()
    }
}

/// Reads `<prefix>_<SETTING>` overrides through a lookup closure; shared by every settings
/// type of the binaries (the policies here, PostgreSQL's in core-api).
pub struct Env<'a> {
    /// `KOSHA_POLICY_OPENAI`, …
    pub prefix: &'static str,
    /// `|name| value`, `None` when unset.
    pub lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Env<'_> {
    /// Overwrites `slot` with `<prefix>_<setting>` parsed as `T`, when set.
    ///
    /// # Errors
    /// [`ConfigError::Parse`] naming the variable (never its value).
    pub fn int<T: std::str::FromStr>(
        &self,
        setting: &str,
        slot: &mut T,
    ) -> Result<(), ConfigError> {
        let var = format!("{}_{setting}", self.prefix);
        if let Some(raw) = (self.lookup)(&var) {
            *slot = raw.trim().parse().map_err(|_| ConfigError::Parse { var })?;
        }
        Ok(())
    }

    /// Overwrites `slot` with `<prefix>_<setting>` read as whole milliseconds, when set.
    ///
    /// # Errors
    /// [`ConfigError::Parse`] naming the variable.
    pub fn duration(&self, setting: &str, slot: &mut Duration) -> Result<(), ConfigError> {
        let mut millis = u64::try_from(slot.as_millis()).unwrap_or(u64::MAX);
        self.int(setting, &mut millis)?;
        *slot = ms(millis);
        Ok(())
    }

    /// `source` as a [`ConfigError::Env`] under this prefix.
    pub fn wrap(&self, source: ConfigError) -> ConfigError {
        ConfigError::Env {
            prefix: self.prefix,
            source: Box::new(source),
        }
    }
}

#[cfg(test)]
mod tests;
