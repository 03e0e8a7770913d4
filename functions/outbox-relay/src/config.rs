//! The relay's configuration, read and validated once in `main`.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `DATABASE_URL`, `DATABASE_URL_SECRET_ARN`, `KOSHA_POLICY_POSTGRES_*`, `KOSHA_PG_CONNECT_TIMEOUT_MS` | as core-api | the database ([`kosha_pg::config`]) |
//! | `KOSHA_EVENTS_QUEUE_URL` | required | the events queue (SPEC §4) |
//! | `KOSHA_RELAY_BATCH` | 100 | rows claimed per transaction, 1–1000 |
//! | `KOSHA_RELAY_INTERVAL_MS` | 2000 | local mode: pause between runs |
//! | `KOSHA_RELAY_RUN_BUDGET_MS` | 50000 | longest run; on Lambda also bounded by the invocation deadline − 50 ms |
//! | `KOSHA_RELAY_RETENTION_S` | 604800 (7 days) | published events are deleted after this |
//! | `KOSHA_POLICY_SQS_*` | [`SQS_PROFILE`] | the policy toward SQS ([`kosha_resilience::config`]) |

use std::time::Duration;

use kosha_resilience::config::{PolicyConfig, Profile};
use kosha_runtime::config::{ConfigError, parse_or, var};

use crate::relay::Settings;

/// Prefix of the SQS policy's overrides (`KOSHA_POLICY_SQS_MAX_ATTEMPTS=2`).
pub const SQS_ENV_PREFIX: &str = "KOSHA_POLICY_SQS";

/// The relay's policy toward SQS, in the shape of seed 004 §1's rows (SQS has no row
/// there): a `SendMessageBatch` answers in tens of ms, so 2 s is an outage; 3 attempts, as
/// a repeated batch only repeats messages consumers dedupe anyway; the relay sends one call
/// at a time, so a bulkhead of 4 only guards against a bug; a breaker of 10 calls open for
/// 30 s, so a run during an outage fails fast and the events wait in `ops.outbox`.
pub const SQS_PROFILE: Profile = Profile {
    attempt_cap: Duration::from_millis(2_000),
    attempt_margin: Duration::from_millis(100),
    max_attempts: 3,
    bulkhead: 4,
    breaker_window: 10,
    open_for: Duration::from_secs(30),
};

/// Validated configuration.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// The database: URL (redacted in `Debug`) and pool.
    pub database: kosha_pg::DatabaseConfig,
    /// `KOSHA_EVENTS_QUEUE_URL`.
    pub queue_url: String,
    /// Database settings of a run.
    pub settings: Settings,
    /// Local mode: pause between runs.
    pub interval: Duration,
    /// Longest run.
    pub run_budget: Duration,
    /// The policy toward SQS.
    pub sqs_policy: PolicyConfig,
}

impl RelayConfig {
    /// Reads the environment.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable that is missing or invalid (never its value).
    pub fn from_env() -> Result<Self, ConfigError> {
        let database = kosha_pg::DatabaseConfig::from_env()
            .map_err(|e| ConfigError::new("DATABASE_URL", e.to_string()))?;
        let queue_url = var("KOSHA_EVENTS_QUEUE_URL")
            .ok_or_else(|| ConfigError::new("KOSHA_EVENTS_QUEUE_URL", "is required"))?;
        let batch = parse_or("KOSHA_RELAY_BATCH", 100i64)?;
        if !(1..=1_000).contains(&batch) {
            return Err(ConfigError::new("KOSHA_RELAY_BATCH", "must be 1 to 1000"));
        }
        let settings = Settings {
            batch,
            statement_timeout: database.pool.postgres.statement_timeout,
            retention: secs("KOSHA_RELAY_RETENTION_S", 7 * 24 * 3600)?,
            ..Settings::default()
        };
        let sqs_policy = PolicyConfig::from_lookup(SQS_PROFILE, SQS_ENV_PREFIX, var)
            .map_err(|e| ConfigError::new(SQS_ENV_PREFIX, e.to_string()))?;
        Ok(Self {
            database,
            queue_url,
            settings,
            interval: millis("KOSHA_RELAY_INTERVAL_MS", 2_000)?,
            run_budget: millis("KOSHA_RELAY_RUN_BUDGET_MS", 50_000)?,
            sqs_policy,
        })
    }
}

fn millis(key: &str, default: u64) -> Result<Duration, ConfigError> {
    match parse_or(key, default)? {
        0 => Err(ConfigError::new(key, "must be greater than zero")),
        n => Ok(Duration::from_millis(n)),
    }
}

fn secs(key: &str, default: u64) -> Result<Duration, ConfigError> {
    match parse_or(key, default)? {
        0 => Err(ConfigError::new(key, "must be greater than zero")),
        n => Ok(Duration::from_secs(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sqs_profile_validates_and_retries() {
        let c = PolicyConfig::from_profile(SQS_PROFILE);
        assert!(c.validate().is_ok());
        assert_eq!(c.retry.max_attempts, 3);
        assert_eq!(c.attempt.cap, Duration::from_secs(2));
        assert_eq!(c.bulkhead.capacity, 4);
    }
}
