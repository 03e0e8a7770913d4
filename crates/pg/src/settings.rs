//! PostgreSQL settings (seed 004 §1: statement timeout 3 s, pool wait 0.5 s, pool max 2,
//! 1 attempt): no breaker or retry of its own; the statement timeout is derived from the
//! request's deadline like an attempt timeout (SPEC §7).
//!
//! Environment overrides: `KOSHA_POLICY_POSTGRES_STATEMENT_TIMEOUT_MS`, `…_POOL_WAIT_MS`,
//! `…_POOL_MAX`, `…_MARGIN_MS` (unsigned integers).

use std::time::Duration;

use kosha_resilience::config::Env;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::error::ConfigError;
use kosha_resilience::timeout::AttemptTimeout;

/// PostgreSQL settings.
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
            statement_timeout: Duration::from_millis(3_000),
            pool_wait: Duration::from_millis(500),
            pool_max: 2,
            margin: Duration::from_millis(100),
        }
    }

    /// The defaults with `KOSHA_POLICY_POSTGRES_*` overrides read through `lookup`.
    ///
    /// # Errors
    /// [`ConfigError::Parse`] for a non-integer, [`ConfigError::Env`] for a zero statement
    /// timeout or pool size.
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn defaults_follow_seed_004_and_overrides_apply() {
        let pg = PostgresConfig::defaults();
        assert_eq!(
            (pg.statement_timeout, pg.pool_wait, pg.pool_max, pg.margin),
            (ms(3_000), ms(500), 2, ms(100))
        );
        assert_eq!(PostgresConfig::from_lookup(|_| None), Ok(pg));
        let one =
            |k: &'static str, v: &'static str| move |name: &str| (name == k).then(|| v.to_owned());
        let c =
            PostgresConfig::from_lookup(one("KOSHA_POLICY_POSTGRES_STATEMENT_TIMEOUT_MS", "1000"))
                .unwrap();
        assert_eq!(c.statement_timeout, ms(1_000));
        assert!(PostgresConfig::from_lookup(one("KOSHA_POLICY_POSTGRES_POOL_MAX", "0")).is_err());
        assert!(
            PostgresConfig::from_lookup(one("KOSHA_POLICY_POSTGRES_STATEMENT_TIMEOUT_MS", "0"))
                .is_err()
        );
        assert!(PostgresConfig::from_lookup(one("KOSHA_POLICY_POSTGRES_POOL_MAX", "two")).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn the_statement_timeout_follows_the_deadline() {
        let pg = PostgresConfig::defaults();
        // Seed 004 §2: remaining 6.5 s → min(6.5 s − 100 ms, 3 s) = 3 s.
        assert_eq!(
            pg.statement_timeout_for(&Deadline::after(ms(6_500))),
            Some(ms(3_000))
        );
        assert_eq!(
            pg.statement_timeout_for(&Deadline::after(ms(1_000))),
            Some(ms(900))
        );
        assert_eq!(pg.statement_timeout_for(&Deadline::after(ms(50))), None);
    }
}
