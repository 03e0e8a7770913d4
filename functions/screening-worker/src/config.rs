//! The worker's configuration, read and validated once in `main` before any client is built.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `KOSHA_SCREENING_URL`, `KOSHA_SCREENING_AUTH` | `http://127.0.0.1:8082`, `none` | screening-sim ([`kosha_clients::config`]) |
//! | `KOSHA_SCREENING_QUEUE_URL` | required | the screening queue (SPEC §10) |
//! | `KOSHA_SCREENING_DLQ_URL` | required | its dead-letter queue |
//! | `KOSHA_STATE_TABLE` | as every function | the state table ([`kosha_state`]) |
//! | `KOSHA_POLICY_SCREENING_WORKER_*` | [`PROFILE`] | the policy toward screening-sim ([`kosha_resilience::config`]) |
//!
//! Each error is a [`ConfigError`] naming the variable (never its value); `main` logs it and
//! exits with code 2.

use kosha_clients::config::{SCREENING_QUEUE_URL_ENV, ScreeningConfig};
use kosha_resilience::config::PolicyConfig;
use kosha_runtime::config::{self, ConfigError};
use kosha_state::StateTable;

use crate::deps::{POLICY_ENV_PREFIX, PROFILE};

/// The dead-letter queue's URL, where a message goes after its last failed attempt.
pub const DLQ_URL_ENV: &str = "KOSHA_SCREENING_DLQ_URL";

/// Validated configuration.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// screening-sim's URL and how requests to it are signed.
    pub screening: ScreeningConfig,
    /// `KOSHA_SCREENING_QUEUE_URL`.
    pub queue_url: String,
    /// `KOSHA_SCREENING_DLQ_URL`.
    pub dlq_url: String,
    /// The state table's name (`KOSHA_STATE_TABLE`).
    pub table_name: String,
    /// The policy toward screening-sim.
    pub policy: PolicyConfig,
}

impl WorkerConfig {
    /// Reads the environment.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable that is missing or invalid.
    pub fn from_env() -> Result<Self, ConfigError> {
        let screening = ScreeningConfig::from_env()?;
        let queue_url = screening
            .queue_url
            .clone()
            .ok_or_else(|| ConfigError::new(SCREENING_QUEUE_URL_ENV, "is required"))?;
        let dlq_url = required(DLQ_URL_ENV)?;
        let table_name = StateTable::name_from_env()
            .map_err(|e| ConfigError::new(kosha_state::STATE_TABLE_ENV, e.to_string()))?;
        let policy = PolicyConfig::from_lookup(PROFILE, POLICY_ENV_PREFIX, config::var)
            .map_err(|e| ConfigError::new(POLICY_ENV_PREFIX, e.to_string()))?;
        Ok(Self {
            screening,
            queue_url,
            dlq_url,
            table_name,
            policy,
        })
    }
}

/// `key`'s value, trimmed; an unset or blank variable is an error.
fn required(key: &str) -> Result<String, ConfigError> {
    config::var(key)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ConfigError::new(key, "is required"))
}
