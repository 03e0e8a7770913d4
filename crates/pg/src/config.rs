//! The database's environment, read and validated once at start-up (core-api and the
//! outbox-relay read the same variables the same way):
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `DATABASE_URL` | `postgres://postgres@127.0.0.1:5432/kosha` | PostgreSQL connection URL; `sslmode=` `disable`, `prefer` (default), `require`, `verify-ca` or `verify-full` ([`crate::tls`]) |
//! | `DATABASE_URL_SECRET_ARN` | unset | deployed: the Secrets Manager secret holding the URL, which then replaces `DATABASE_URL` ([`crate::secret_url`], SPEC §13) |
//! | `KOSHA_DATABASE_CA_FILE` | none (Mozilla's roots) | PEM bundle of the CAs PostgreSQL's certificate must chain to (RDS: its global bundle) |
//! | `KOSHA_POLICY_POSTGRES_POOL_MAX` | 2 | pool size (seed 004 §1) |
//! | `KOSHA_POLICY_POSTGRES_POOL_WAIT_MS` | 500 | wait for a free connection before `overloaded` |
//! | `KOSHA_POLICY_POSTGRES_STATEMENT_TIMEOUT_MS` | 3000 | `statement_timeout` cap |
//! | `KOSHA_POLICY_POSTGRES_MARGIN_MS` | 100 | kept from the request deadline per statement |
//! | `KOSHA_PG_CONNECT_TIMEOUT_MS` | 2000 | opening a connection |

use std::time::Duration;

use kosha_runtime::config::{parse_or, string_or, var};

use crate::pool::{DEFAULT_CONNECT_TIMEOUT, PoolSettings};
use crate::settings::PostgresConfig;
use crate::tls::{self, CaBundle};

/// Default `DATABASE_URL` (SPEC §2).
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/kosha";

/// The variable naming the Secrets Manager secret that holds the deployed URL (SPEC §13).
pub const DATABASE_URL_SECRET_ENV: &str = "DATABASE_URL_SECRET_ARN";

/// A setting that cannot be used; the message names the variable, never its value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A variable (`KOSHA_PG_CONNECT_TIMEOUT_MS`, `KOSHA_DATABASE_CA_FILE`) is invalid.
    #[error(transparent)]
    Env(#[from] kosha_runtime::config::ConfigError),
    /// A `KOSHA_POLICY_POSTGRES_*` variable is invalid.
    #[error(transparent)]
    Postgres(#[from] kosha_resilience::error::ConfigError),
}

/// The database a function connects to: its URL and pool settings.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseConfig {
    /// PostgreSQL URL; may hold a password, so it is never logged (see the `Debug` impl).
    pub url: String,
    /// Pool limits, timeouts and the CA bundle.
    pub pool: PoolSettings,
}

impl std::fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("url", &"<redacted>")
            .field("pool", &self.pool)
            .finish()
    }
}

impl DatabaseConfig {
    /// Reads the environment (the table in the module docs), except
    /// `DATABASE_URL_SECRET_ARN`, which the caller fetches with [`crate::secret_url::fetch`]
    /// once it has an AWS configuration.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable whose value does not parse or is out of range.
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            url: string_or("DATABASE_URL", DEFAULT_DATABASE_URL),
            pool: PoolSettings {
                postgres: PostgresConfig::from_lookup(var)?,
                connect_timeout: millis("KOSHA_PG_CONNECT_TIMEOUT_MS", DEFAULT_CONNECT_TIMEOUT)?,
                ca: database_ca(var)?,
            },
        })
    }
}

/// The CA bundle `KOSHA_DATABASE_CA_FILE` names, read and checked; `None` when unset.
///
/// # Errors
/// [`ConfigError::Env`] naming the variable when the file is unreadable or holds no usable
/// certificate.
pub fn database_ca(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<CaBundle>, ConfigError> {
    let Some(path) = lookup(tls::CA_FILE_ENV) else {
        return Ok(None);
    };
    CaBundle::from_file(path.trim())
        .map(Some)
        .map_err(|reason| kosha_runtime::config::ConfigError::new(tls::CA_FILE_ENV, reason).into())
}

fn millis(key: &str, default: Duration) -> Result<Duration, kosha_runtime::config::ConfigError> {
    let default_ms = u64::try_from(default.as_millis()).unwrap_or(u64::MAX);
    match parse_or(key, default_ms)? {
        0 => Err(kosha_runtime::config::ConfigError::new(
            key,
            "must be greater than zero",
        )),
        n => Ok(Duration::from_millis(n)),
    }
}
