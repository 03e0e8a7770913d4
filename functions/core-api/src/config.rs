//! core-api's configuration, read and validated once in `main` (KOSHA_LISTEN is read by
//! `kosha_runtime::serve`).
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `DATABASE_URL` | `postgres://postgres@127.0.0.1:5432/kosha` | PostgreSQL connection URL |
//! | `KOSHA_PG_POOL_MAX` | 2 | pool size (seed 004 §1) |
//! | `KOSHA_PG_POOL_WAIT_MS` | 500 | wait for a free connection before `overloaded` |
//! | `KOSHA_PG_CONNECT_TIMEOUT_MS` | 2000 | opening a connection |
//! | `KOSHA_PG_STATEMENT_TIMEOUT_MS` | 3000 | server-side `statement_timeout` |

use std::time::Duration;

use kosha_runtime::config::{ConfigError, parse_or, string_or};

use crate::db::PoolSettings;

/// Default `DATABASE_URL` (SPEC §2).
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/kosha";

/// Validated configuration.
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    /// PostgreSQL URL; may hold a password, so it is never logged (see the `Debug` impl).
    pub database_url: String,
    /// Pool limits.
    pub pool: PoolSettings,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("database_url", &"<redacted>")
            .field("pool", &self.pool)
            .finish()
    }
}

impl Config {
    /// Reads the environment.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable whose value does not parse or is zero.
    pub fn from_env() -> Result<Self, ConfigError> {
        let defaults = PoolSettings::default();
        let pool = PoolSettings {
            max_size: positive("KOSHA_PG_POOL_MAX", defaults.max_size as u64)? as usize,
            wait: millis("KOSHA_PG_POOL_WAIT_MS", defaults.wait)?,
            create: millis("KOSHA_PG_CONNECT_TIMEOUT_MS", defaults.create)?,
            statement_timeout: millis("KOSHA_PG_STATEMENT_TIMEOUT_MS", defaults.statement_timeout)?,
        };
        Ok(Self {
            database_url: string_or("DATABASE_URL", DEFAULT_DATABASE_URL),
            pool,
        })
    }
}

fn positive(key: &str, default: u64) -> Result<u64, ConfigError> {
    match parse_or(key, default)? {
        0 => Err(ConfigError::new(key, "must be greater than zero")),
        n => Ok(n),
    }
}

fn millis(key: &str, default: Duration) -> Result<Duration, ConfigError> {
    let default_ms = u64::try_from(default.as_millis()).unwrap_or(u64::MAX);
    positive(key, default_ms).map(Duration::from_millis)
}
