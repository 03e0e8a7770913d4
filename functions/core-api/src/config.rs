//! core-api's configuration, read and validated once in `main` (KOSHA_LISTEN is read by
//! `kosha_runtime::serve`).
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `DATABASE_URL` | `postgres://postgres@127.0.0.1:5432/kosha` | PostgreSQL connection URL; `sslmode=` `disable`, `prefer` (default), `require`, `verify-ca` or `verify-full` ([`crate::db::tls`]) |
//! | `KOSHA_DATABASE_CA_FILE` | none (Mozilla's roots) | PEM bundle of the CAs PostgreSQL's certificate must chain to (RDS: its global bundle) |
//! | `KOSHA_POLICY_POSTGRES_POOL_MAX` | 2 | pool size (seed 004 §1) |
//! | `KOSHA_POLICY_POSTGRES_POOL_WAIT_MS` | 500 | wait for a free connection before `overloaded` |
//! | `KOSHA_POLICY_POSTGRES_STATEMENT_TIMEOUT_MS` | 3000 | `statement_timeout` cap |
//! | `KOSHA_POLICY_POSTGRES_MARGIN_MS` | 100 | kept from the request deadline per statement |
//! | `KOSHA_PG_CONNECT_TIMEOUT_MS` | 2000 | opening a connection |
//! | `CHAOS_ENABLED` | `false` | verify forwarded `X-Kosha-Chaos` headers and apply `postgres`/`openai` faults (SPEC §9) |
//! | `KOSHA_CHAOS_SECRET_ID` | `kosha/chaos-hmac-key` | the Secrets Manager secret holding the chaos HMAC key |
//! | `KOSHA_EMBEDDINGS_URL` | unset (full text only) | embeddings API base, including `/v1` |
//! | `KOSHA_EMBEDDINGS_MODEL` | `text-embedding-3-small` | model of every vector |
//! | `KOSHA_EMBEDDINGS_DIMENSIONS` | 1536 | length of every vector |
//! | `KOSHA_EMBEDDINGS_API_KEY_SECRET_ARN` | unset | Secrets Manager id of the API key (AWS) |
//! | `KOSHA_POLICY_OPENAI_*` | seed 004 §1 | the `openai` policy ([`crate::embeddings`]) |
//! | `KOSHA_STATE_TABLE` | unset (no overrides) | state table of `breaker#openai` / `breaker#postgres` (SPEC §8) |
//!
//! The `KOSHA_POLICY_POSTGRES_*` settings are [`crate::db::PostgresConfig`], parsed and
//! validated there.

use std::time::Duration;

use crate::db::PostgresConfig;
use crate::embeddings::{ApiKey, EmbeddingsConfig};
use kosha_runtime::config::{bool_or, parse_or, string_or, var};

use crate::db::PoolSettings;
use crate::db::pool::DEFAULT_CONNECT_TIMEOUT;
use crate::db::tls::{self, CaBundle};

/// Default `DATABASE_URL` (SPEC §2).
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/kosha";

/// A setting that cannot be used; the message names the variable, never its value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A core-api variable (`KOSHA_PG_CONNECT_TIMEOUT_MS`) is invalid.
    #[error(transparent)]
    Env(#[from] kosha_runtime::config::ConfigError),
    /// A `KOSHA_POLICY_POSTGRES_*` variable is invalid.
    #[error(transparent)]
    Postgres(#[from] kosha_resilience::error::ConfigError),
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

/// Validated configuration.
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    /// PostgreSQL URL; may hold a password, so it is never logged (see the `Debug` impl).
    pub database_url: String,
    /// Pool limits.
    pub pool: PoolSettings,
    /// Whether forwarded chaos headers are verified and honoured (`CHAOS_ENABLED`, SPEC §9).
    pub chaos_enabled: bool,
    /// The Secrets Manager secret holding the chaos HMAC key (`KOSHA_CHAOS_SECRET_ID`).
    pub chaos_secret_id: String,
    /// The embeddings API; `None` when `KOSHA_EMBEDDINGS_URL` is unset.
    pub embeddings: Option<EmbeddingsConfig>,
    /// Its key, read by `main` from `KOSHA_EMBEDDINGS_API_KEY_SECRET_ARN` (redacted in `Debug`).
    pub embeddings_api_key: Option<ApiKey>,
    /// The state table whose `breaker#` items core-api honours; `None` without
    /// `KOSHA_STATE_TABLE` (no overrides).
    pub state_table: Option<String>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("database_url", &"<redacted>")
            .field("pool", &self.pool)
            .field("chaos_enabled", &self.chaos_enabled)
            .field("chaos_secret_id", &self.chaos_secret_id)
            .field("embeddings", &self.embeddings)
            .field("embeddings_api_key", &self.embeddings_api_key)
            .field("state_table", &self.state_table)
            .finish()
    }
}

impl Config {
    /// Reads the environment.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable whose value does not parse or is out of range.
    pub fn from_env() -> Result<Self, ConfigError> {
        let pool = PoolSettings {
            postgres: PostgresConfig::from_lookup(var)?,
            connect_timeout: millis("KOSHA_PG_CONNECT_TIMEOUT_MS", DEFAULT_CONNECT_TIMEOUT)?,
            ca: database_ca(var)?,
        };
        Ok(Self {
            database_url: string_or("DATABASE_URL", DEFAULT_DATABASE_URL),
            pool,
            chaos_enabled: bool_or("CHAOS_ENABLED", false)?,
            chaos_secret_id: string_or(
                kosha_state::CHAOS_SECRET_ENV,
                kosha_state::DEFAULT_CHAOS_SECRET_ID,
            ),
            embeddings: EmbeddingsConfig::from_lookup(var)?,
            embeddings_api_key: None,
            state_table: var(kosha_state::STATE_TABLE_ENV).filter(|t| !t.trim().is_empty()),
        })
    }
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
