//! core-api's configuration, read and validated once in `main` (KOSHA_LISTEN is read by
//! `kosha_runtime::serve`).
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `DATABASE_URL`, `DATABASE_URL_SECRET_ARN`, `KOSHA_DATABASE_CA_FILE`, `KOSHA_POLICY_POSTGRES_*`, `KOSHA_PG_CONNECT_TIMEOUT_MS` | see [`kosha_pg::config`] | the database |
//! | `CHAOS_ENABLED` | `false` | verify forwarded `X-Kosha-Chaos` headers and apply `postgres`/`openai` faults (SPEC §9) |
//! | `KOSHA_CHAOS_SECRET_ID` | `kosha/chaos-hmac-key` | the Secrets Manager secret holding the chaos HMAC key |
//! | `KOSHA_EMBEDDINGS_URL` | unset (full text only) | embeddings API base, including `/v1` |
//! | `KOSHA_EMBEDDINGS_MODEL` | `text-embedding-3-small` | model of every vector |
//! | `KOSHA_EMBEDDINGS_DIMENSIONS` | 1536 | length of every vector |
//! | `KOSHA_EMBEDDINGS_API_KEY_SECRET_ARN` | unset | Secrets Manager id of the API key (AWS) |
//! | `KOSHA_POLICY_OPENAI_*` | seed 004 §1 | the `openai` policy ([`crate::embeddings`]) |
//! | `KOSHA_STATE_TABLE` | unset (no overrides) | state table of `breaker#openai` / `breaker#postgres` (SPEC §8) |

use crate::embeddings::{ApiKey, EmbeddingsConfig};
use kosha_pg::DatabaseConfig;
use kosha_runtime::config::{bool_or, string_or, var};

use crate::db::PoolSettings;

pub use kosha_pg::config::ConfigError;

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
        let database = DatabaseConfig::from_env()?;
        Ok(Self {
            database_url: database.url,
            pool: database.pool,
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
