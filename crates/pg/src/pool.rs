//! The connection pool (seed 004 §1 "PostgreSQL": pool max 2, wait 0.5 s, statement timeout 3 s).
//! Those three settings are the shared [`PostgresConfig`] (`KOSHA_POLICY_POSTGRES_*`), the
//! same values core-api's per-statement budget is derived from.
//!
//! The pool is small on purpose: Lambda's reserved concurrency × pool max must stay below the
//! database's `max_connections`. A request that cannot get a connection within `wait` fails fast
//! with `overloaded` instead of queueing; a connection that cannot be opened within `create`
//! fails with `dependency_unavailable`.
//!
//! [`checkout`] bounds all of it by the request's deadline too (SPEC §7): waiting, connecting
//! and recycling together end `margin` (100 ms) before `X-Request-Deadline`. Whichever limit
//! runs out first names the error: the deadline's gives `deadline_exceeded` (504) — the request
//! has no time left, whatever the pool's state — and the pool's own limits keep their codes
//! (`overloaded`, `dependency_unavailable`, 503 with `retry_after_s`), which tell the caller
//! that a retry later may succeed.

use std::time::Duration;

use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use kosha_resilience::deadline::Deadline;

use crate::DbError;
use crate::settings::PostgresConfig;
use crate::tls::{self, CaBundle};

/// The pool type the routes share (cheap to clone: an `Arc` inside).
pub type PgPool = Pool;

/// Default [`PoolSettings::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Pool limits and timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSettings {
    /// Pool size (`pool_max`, 2), wait for a free connection (`pool_wait`, 500 ms) and the
    /// server-side `statement_timeout` for every statement (3 s); seed 004 §1.
    pub postgres: PostgresConfig,
    /// How long opening (or recycling) a connection may take (2 s); the policy has no
    /// equivalent.
    pub connect_timeout: Duration,
    /// The CA bundle TLS connections trust (`KOSHA_DATABASE_CA_FILE`); `None` = Mozilla's
    /// roots for `verify-*` ([`tls`]).
    pub ca: Option<CaBundle>,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            postgres: PostgresConfig::defaults(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            ca: None,
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

/// Parses `url` and applies the connect and statement timeouts of `settings`; returns it with
/// the TLS connector its `sslmode` asks for ([`tls`]: `verify-*` is taken off the URL, which
/// tokio-postgres would refuse, and enforced by the connector).
///
/// # Errors
/// [`PoolBuildError::Url`] when `url` does not parse or names an unsupported `sslmode`.
pub fn pg_config(
    url: &str,
    settings: &PoolSettings,
) -> Result<(tokio_postgres::Config, MakeRustlsConnect), PoolBuildError> {
    let (url, mode) = tls::take_sslmode(url).map_err(PoolBuildError::Url)?;
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| PoolBuildError::Url(crate::error_chain(&e)))?;
    let mode = mode.unwrap_or_else(|| tls::SslMode::from_tokio_postgres(config.get_ssl_mode()));
    config.ssl_mode(mode.for_tokio_postgres());
    config.connect_timeout(settings.connect_timeout);
    config.application_name("kosha-core-api");
    config.options(format!(
        "-c statement_timeout={}",
        settings.postgres.statement_timeout.as_millis()
    ));
    Ok((config, tls::connector(mode, settings.ca.as_ref())))
}

/// Builds the pool. No connection is opened until the first request needs one, so a database
/// that is down at start-up does not stop the function from serving `dependency_unavailable`.
///
/// # Errors
/// [`PoolBuildError`] for a bad URL or a zero size or timeout.
pub fn build_pool(url: &str, settings: &PoolSettings) -> Result<PgPool, PoolBuildError> {
    let postgres = &settings.postgres;
    if postgres.pool_max == 0 {
        return Err(PoolBuildError::Setting("pool_max must be at least 1"));
    }
    if postgres.pool_wait.is_zero()
        || settings.connect_timeout.is_zero()
        || postgres.statement_timeout.is_zero()
    {
        return Err(PoolBuildError::Setting("timeouts must be positive"));
    }
    let (config, tls) = pg_config(url, settings)?;
    let manager = Manager::from_config(
        config,
        tls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(postgres.pool_max)
        .wait_timeout(Some(postgres.pool_wait))
        .create_timeout(Some(settings.connect_timeout))
        .recycle_timeout(Some(settings.connect_timeout))
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| PoolBuildError::Build(e.to_string()))
}

/// A pooled connection for a request with `deadline` (SPEC §7), keeping `margin` (the
/// PostgreSQL margin, [`PostgresConfig::margin`], 100 ms) of it.
///
/// Without a deadline, the pool's own limits apply (wait, create and recycle timeouts). With
/// one, the whole checkout (wait, then recycle or create) also ends at the deadline less
/// `margin` (`Deadline::child`).
///
/// # Errors
/// [`DbError::DeadlineExceeded`] when the deadline's limit ran out first (or no time is left
/// at all); otherwise the pool's error ([`DbError::PoolExhausted`], [`DbError::Unavailable`]).
pub async fn checkout(
    pool: &PgPool,
    deadline: Option<Deadline>,
    margin: Duration,
) -> Result<Object, DbError> {
    let Some(deadline) = deadline else {
        return Ok(pool.get().await?);
    };
    let limit = deadline.child(margin);
    if limit.is_expired() {
        return Err(DbError::DeadlineExceeded);
    }
    match tokio::time::timeout_at(limit.instant(), pool.get()).await {
        Ok(Ok(client)) => Ok(client),
        // Timers never fire early: a pool timeout at the limit is the deadline's.
        Ok(Err(PoolError::Timeout(_))) if limit.is_expired() => Err(DbError::DeadlineExceeded),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err(DbError::DeadlineExceeded),
    }
}
