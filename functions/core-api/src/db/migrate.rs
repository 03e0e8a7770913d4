//! Schema migrations (refinery, embedded from `migrations/`) and the `core-api migrate` command.
//!
//! Migrations run on a dedicated connection (not the request pool) under a PostgreSQL advisory
//! lock, so two deploys or dev scripts migrating at once take turns instead of racing.
//! `migrate` then applies the seed; both steps are idempotent.

use tokio_postgres::{Client, NoTls};

use super::DbError;
use super::pool::{PoolSettings, pg_config};
use super::seed::{self, SeedReport};

/// The SQL files of `functions/core-api/migrations`, compiled in.
mod embedded {
    refinery::embed_migrations!("migrations");
}

/// Advisory lock key held while migrating ("kosha" in ASCII).
const MIGRATION_LOCK: i64 = 0x6B_6F73_6861;

/// Why `migrate` failed.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The URL is invalid.
    #[error(transparent)]
    Config(#[from] super::pool::PoolBuildError),
    /// PostgreSQL failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A migration failed to apply.
    #[error("migration failed: {0}")]
    Migration(String),
}

/// What one `migrate` run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrateReport {
    /// Names of the migrations applied by this run (empty when up to date).
    pub applied: Vec<String>,
    /// Rows the seed inserted (zeros when already seeded).
    pub seeded: SeedReport,
}

/// Opens one connection to `url`; the connection task ends when the client is dropped.
///
/// # Errors
/// [`MigrateError`] when the URL is bad or PostgreSQL cannot be reached.
pub async fn connect(url: &str) -> Result<Client, MigrateError> {
    let config = pg_config(url, &PoolSettings::default())?;
    let (client, connection) = config.connect(NoTls).await.map_err(DbError::from)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "migration connection closed");
        }
    });
    Ok(client)
}

/// Applies pending migrations, then the seed.
///
/// # Errors
/// [`MigrateError`] when a migration or the seed fails (the seed then writes nothing).
pub async fn migrate_and_seed(client: &mut Client) -> Result<MigrateReport, MigrateError> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(DbError::from)?;
    let outcome = run(client).await;
    // Released explicitly; the lock would also end with the session.
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await;
    outcome
}

async fn run(client: &mut Client) -> Result<MigrateReport, MigrateError> {
    let report = embedded::migrations::runner()
        .run_async(client)
        .await
        .map_err(|e| MigrateError::Migration(e.to_string()))?;
    let applied = report
        .applied_migrations()
        .iter()
        .map(ToString::to_string)
        .collect();
    let seeded = seed::apply(client, &seed::generate()).await?;
    Ok(MigrateReport { applied, seeded })
}
