//! The connection pool (seed 004 §1 "PostgreSQL": pool max 2, wait 0.5 s, statement timeout 3 s).
//!
//! The pool is small on purpose: Lambda's reserved concurrency × pool max must stay below the
//! database's `max_connections`. A request that cannot get a connection within `wait` fails fast
//! with `overloaded` instead of queueing; a connection that cannot be opened within `create`
//! fails with `dependency_unavailable`.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

/// The pool type the routes share (cheap to clone: an `Arc` inside).
pub type PgPool = Pool;

/// Pool limits and timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSettings {
    /// Maximum open connections (seed 004: 2).
    pub max_size: usize,
    /// How long a request waits for a free connection (seed 004: 500 ms).
    pub wait: Duration,
    /// How long opening a new connection may take.
    pub create: Duration,
    /// Server-side `statement_timeout` for every statement (seed 004: 3 s).
    pub statement_timeout: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            max_size: 2,
            wait: Duration::from_millis(500),
            create: Duration::from_secs(2),
            statement_timeout: Duration::from_secs(3),
        }
    }
}

/// Why a pool could not be built.
#[derive(Debug, thiserror::Error)]
pub enum PoolBuildError {
    /// `DATABASE_URL` is not a valid PostgreSQL connection string.
    #[error("DATABASE_URL is not a valid postgres URL: {0}")]
    Url(String),
    /// A setting is out of range.
    #[error("invalid pool setting: {0}")]
    Setting(&'static str),
    /// deadpool refused the configuration.
    #[error("cannot build pool: {0}")]
    Build(String),
}

/// Parses `url` and applies the connect and statement timeouts of `settings`.
///
/// # Errors
/// [`PoolBuildError::Url`] when `url` does not parse.
pub fn pg_config(
    url: &str,
    settings: &PoolSettings,
) -> Result<tokio_postgres::Config, PoolBuildError> {
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| PoolBuildError::Url(e.to_string()))?;
    config.connect_timeout(settings.create);
    config.application_name("kosha-core-api");
    config.options(format!(
        "-c statement_timeout={}",
        settings.statement_timeout.as_millis()
    ));
    Ok(config)
}

/// Builds the pool. No connection is opened until the first request needs one, so a database
/// that is down at start-up does not stop the function from serving `dependency_unavailable`.
///
/// # Errors
/// [`PoolBuildError`] for a bad URL or a zero size or timeout.
pub fn build_pool(url: &str, settings: &PoolSettings) -> Result<PgPool, PoolBuildError> {
    if settings.max_size == 0 {
        return Err(PoolBuildError::Setting("max_size must be at least 1"));
    }
    if settings.wait.is_zero() || settings.create.is_zero() || settings.statement_timeout.is_zero()
    {
        return Err(PoolBuildError::Setting("timeouts must be positive"));
    }
    let config = pg_config(url, settings)?;
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(settings.max_size)
        .wait_timeout(Some(settings.wait))
        .create_timeout(Some(settings.create))
        .recycle_timeout(Some(settings.create))
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| PoolBuildError::Build(e.to_string()))
}
