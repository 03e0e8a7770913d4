//! Per-dependency policy settings: the defaults of seed 004 §1, overridable from the
//! environment, validated once at start-up.
//!
//! | dependency | attempt cap | max attempts | bulkhead | window / threshold | open |
//! |---|---|---|---|---|---|
//! | core-api reads | 2.0 s | 3 | 32 | 20 / 50 % | 15 s |
//! | core-api writes | 4.0 s | 1 | 16 | 20 / 50 % | 15 s |
//! | screening-sim | 1.5 s | 2 | 8 | 10 / 50 % | 30 s |
//! | OpenAI embeddings | 2.0 s | 2 | 8 | 10 / 50 % | 30 s |
//! | PostgreSQL | statement timeout 3 s, pool wait 0.5 s, pool max 2, 1 attempt | | | | |
//!
//! Settings the seed leaves open, chosen here: breaker `min_calls` = half the window (10, 5);
//! 3 half-open probes (seed 004 §4); probe lease = attempt cap × max attempts + 1 s (the
//! longest a healthy probe can take); backoff base 50 ms, cap 1 s; bulkhead wait 10 ms;
//! attempt margin 150 ms toward core-api (the gateway → core-api hop, SPEC §7) and 100 ms
//! toward other dependencies (seed 004 §2); minimum retry attempt 100 ms; retry budget 10
//! tokens with a floor of 1 retry per second.
//!
//! ## Environment overrides
//!
//! `KOSHA_POLICY_<DEPENDENCY>_<SETTING>`, where `<DEPENDENCY>` is `CORE_API_READ`,
//! `CORE_API_WRITE`, `SCREENING_SIM` or `OPENAI` and `<SETTING>` is one of `ATTEMPT_CAP_MS`,
//! `ATTEMPT_MARGIN_MS`, `MIN_ATTEMPT_MS`, `MAX_ATTEMPTS`, `BACKOFF_BASE_MS`, `BACKOFF_CAP_MS`,
//! `BULKHEAD_CAPACITY`, `BULKHEAD_WAIT_MS`, `BREAKER_WINDOW`, `BREAKER_MIN_CALLS`,
//! `BREAKER_FAILURE_RATE_PCT`, `BREAKER_OPEN_MS`, `BREAKER_HALF_OPEN_PROBES`,
//! `BREAKER_PROBE_LEASE_MS`, `BUDGET_CAP_TOKENS`, `BUDGET_MIN_RETRIES_PER_SEC` (all unsigned
//! integers). PostgreSQL: `KOSHA_POLICY_POSTGRES_STATEMENT_TIMEOUT_MS`, `…_POOL_WAIT_MS`,
//! `…_POOL_MAX`, `…_MARGIN_MS`. Example: `KOSHA_POLICY_CORE_API_READ_ATTEMPT_CAP_MS=1500`.
//! Values are read through a lookup closure (`|name| std::env::var(name).ok()` in `main`), so
//! tests never set process environment variables.

use std::time::Duration;

use crate::backoff::Backoff;
use crate::breaker::BreakerConfig;
use crate::budget::BudgetConfig;
use crate::bulkhead::BulkheadConfig;
use crate::deadline::Deadline;
use crate::retry::RetryConfig;
use crate::timeout::AttemptTimeout;

/// A setting that cannot be used. Raised at start-up, never on the request path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A value outside its allowed range.
    #[error("invalid setting {field}: {reason}")]
    Invalid {
        /// The setting (e.g. `breaker.window`).
        field: &'static str,
        /// What is allowed.
        reason: &'static str,
    },
    /// An environment variable that is not an unsigned integer.
    #[error("environment variable {var} must be an unsigned integer")]
    Parse {
        /// The variable's name (its value is not echoed).
        var: String,
    },
    /// A setting made invalid by environment overrides under `prefix`.
    #[error("{prefix}_*: {source}")]
    Env {
        /// The dependency's variable prefix, e.g. `KOSHA_POLICY_OPENAI`.
        prefix: &'static str,
        /// The validation failure.
        #[source]
        source: Box<ConfigError>,
    },
}

impl ConfigError {
    pub(crate) fn invalid(field: &'static str, reason: &'static str) -> Self {
        Self::Invalid { field, reason }
    }
}

/// A dependency with a policy of its own (seed 004 §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dependency {
    /// core-api read endpoints.
    CoreApiRead,
    /// core-api write endpoints (idempotency key, one attempt).
    CoreApiWrite,
    /// screening-sim.
    ScreeningSim,
    /// OpenAI embeddings.
    OpenAi,
}

impl Dependency {
    /// Every dependency with a [`PolicyConfig`].
    pub const ALL: [Self; 4] = [
        Self::CoreApiRead,
        Self::CoreApiWrite,
        Self::ScreeningSim,
        Self::OpenAi,
    ];

    /// The dependency name of SPEC §8 (metrics dimension, override key): reads and writes
    /// share `core-api`.
    pub fn name(self) -> &'static str {
        match self {
            Self::CoreApiRead | Self::CoreApiWrite => "core-api",
            Self::ScreeningSim => "screening-sim",
            Self::OpenAi => "openai",
        }
    }

    /// Prefix of this dependency's environment variables.
    pub fn env_prefix(self) -> &'static str {
        match self {
            Self::CoreApiRead => "KOSHA_POLICY_CORE_API_READ",
            Self::CoreApiWrite => "KOSHA_POLICY_CORE_API_WRITE",
            Self::ScreeningSim => "KOSHA_POLICY_SCREENING_SIM",
            Self::OpenAi => "KOSHA_POLICY_OPENAI",
        }
    }
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
    /// The seed 004 §1 defaults for `dependency`.
    pub fn defaults(dependency: Dependency) -> Self {
        // (attempt cap ms, attempts, bulkhead, window, open ms, margin ms)
        let (cap, attempts, capacity, window, open, margin) = match dependency {
            Dependency::CoreApiRead => (2_000, 3, 32, 20, 15_000, 150),
            Dependency::CoreApiWrite => (4_000, 1, 16, 20, 15_000, 150),
            Dependency::ScreeningSim => (1_500, 2, 8, 10, 30_000, 100),
            Dependency::OpenAi => (2_000, 2, 8, 10, 30_000, 100),
        };
        Self {
            attempt: AttemptTimeout {
                cap: ms(cap),
                margin: ms(margin),
            },
            retry: RetryConfig {
                max_attempts: attempts,
                backoff: Backoff::DEFAULT,
                min_attempt: ms(100),
            },
            bulkhead: BulkheadConfig {
                capacity,
                wait: ms(10),
            },
            breaker: BreakerConfig {
                window,
                min_calls: window / 2,
                failure_rate_pct: 50,
                open_duration: ms(open),
                half_open_probes: 3,
                probe_lease: ms(cap * u64::from(attempts) + 1_000),
            },
            budget: BudgetConfig {
                cap_tokens: 10,
                min_retries_per_sec: 1,
            },
        }
    }

    /// The defaults with overrides read through `lookup` (see the module docs for names).
    /// Errors: [`ConfigError::Parse`] for a non-integer, [`ConfigError::Env`] for a value out
    /// of range.
    pub fn from_lookup(
        dependency: Dependency,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let prefix = dependency.env_prefix();
        let env = Env {
            prefix,
            lookup: &lookup,
        };
        let mut c = Self::defaults(dependency);
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

/// PostgreSQL settings (seed 004 §1): no breaker or retry of its own; the statement timeout
/// is derived from the deadline like an attempt timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostgresConfig {
    /// Longest a statement may run (3 s).
    pub statement_timeout: Duration,
    /// Longest a request waits for a pooled connection (0.5 s); a timeout maps to `overloaded`.
    pub pool_wait: Duration,
    /// Pool size (2).
    pub pool_max: usize,
    /// Margin kept from the deadline (100 ms).
    pub margin: Duration,
}

impl PostgresConfig {
    /// Env prefix of the PostgreSQL settings.
    pub const ENV_PREFIX: &'static str = "KOSHA_POLICY_POSTGRES";

    /// The seed 004 §1 defaults.
    pub fn defaults() -> Self {
        Self {
            statement_timeout: ms(3_000),
            pool_wait: ms(500),
            pool_max: 2,
            margin: ms(100),
        }
    }

    /// The defaults with `KOSHA_POLICY_POSTGRES_*` overrides read through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env {
            prefix: Self::ENV_PREFIX,
            lookup: &lookup,
        };
        let mut c = Self::defaults();
        env.duration("STATEMENT_TIMEOUT_MS", &mut c.statement_timeout)?;
        env.duration("POOL_WAIT_MS", &mut c.pool_wait)?;
        env.int("POOL_MAX", &mut c.pool_max)?;
        env.duration("MARGIN_MS", &mut c.margin)?;
        if c.statement_timeout.is_zero() {
            return Err(env.wrap(ConfigError::invalid(
                "postgres.statement_timeout",
                "must be positive",
            )));
        }
        if c.pool_max == 0 {
            return Err(env.wrap(ConfigError::invalid(
                "postgres.pool_max",
                "must be at least 1",
            )));
        }
        Ok(c)
    }

    /// `SET LOCAL statement_timeout` for a query starting now: `min(remaining − margin,
    /// statement timeout)`, or `None` when the deadline leaves nothing (answer
    /// `deadline_exceeded` without querying).
    pub fn statement_timeout_for(&self, deadline: &Deadline) -> Option<Duration> {
        AttemptTimeout {
            cap: self.statement_timeout,
            margin: self.margin,
        }
        .for_attempt(deadline)
        .map(|b| b.timeout)
    }
}

struct Env<'a> {
    prefix: &'static str,
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Env<'_> {
    fn int<T: std::str::FromStr>(&self, setting: &str, slot: &mut T) -> Result<(), ConfigError> {
        let var = format!("{}_{setting}", self.prefix);
        if let Some(raw) = (self.lookup)(&var) {
            *slot = raw.trim().parse().map_err(|_| ConfigError::Parse { var })?;
        }
        Ok(())
    }

    fn duration(&self, setting: &str, slot: &mut Duration) -> Result<(), ConfigError> {
        let mut millis = u64::try_from(slot.as_millis()).unwrap_or(u64::MAX);
        self.int(setting, &mut millis)?;
        *slot = ms(millis);
        Ok(())
    }

    fn wrap(&self, source: ConfigError) -> ConfigError {
        ConfigError::Env {
            prefix: self.prefix,
            source: Box::new(source),
        }
    }
}

#[cfg(test)]
mod tests;
