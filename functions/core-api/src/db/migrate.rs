//! Schema migrations (refinery, embedded from `migrations/`) and the `core-api migrate` command.
//!
//! Migrations run on a dedicated connection (not the request pool) under a PostgreSQL advisory
//! lock, so two deploys or dev scripts migrating at once take turns instead of racing.
//! `migrate` then applies the seed; both steps are idempotent.

use tokio_postgres::Client;

use super::DbError;
use super::seed::{self, SeedCounts};
use kosha_pg::pool::{PoolSettings, pg_config};

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
    Config(#[from] kosha_pg::PoolBuildError),
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
    /// Names of the migrations applied by this run, e.g. `V3__ops` (empty when up to date).
    pub applied: Vec<String>,
    /// The schema version after the run (the last applied migration's, `3` for `V3__ops`);
    /// `None` only if no migration exists at all.
    pub version: Option<i32>,
    /// Rows the seed inserted (zeros when already seeded).
    pub seeded: SeedCounts,
    /// Rows the seed holds, to tell "already present" from a partial insert.
    pub seed_size: SeedCounts,
}

impl std::fmt::Display for MigrateReport {
    /// One line saying what the run did, e.g. `schema: applied 3 migrations (V1__schemas,
    /// V2__knowledge_base, V3__ops), now at V3; seed: inserted 50 accounts, 5000 transactions,
    /// 40 articles`, and on a re-run `schema: already up to date at V3; seed: already present
    /// (50 accounts, 5000 transactions, 40 articles)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let version = self
            .version
            .map_or_else(|| "no version".to_owned(), |v| format!("V{v}"));
        match self.applied.len() {
            0 => write!(f, "schema: already up to date at {version}")?,
            n => write!(
                f,
                "schema: applied {n} migration{} ({}), now at {version}",
                if n == 1 { "" } else { "s" },
                self.applied.join(", ")
            )?,
        }
        if self.seeded.is_zero() {
            write!(f, "; seed: already present ({})", self.seed_size)
        } else if self.seeded == self.seed_size {
            write!(f, "; seed: inserted {}", self.seeded)
        } else {
            write!(
                f,
                "; seed: inserted {} (the rest were present)",
                self.seeded
            )
        }
    }
}

/// Opens one connection to `url` with the default [`PoolSettings`] (no CA bundle: `verify-*`
/// trusts Mozilla's roots); the connection task ends when the client is dropped.
///
/// # Errors
/// [`MigrateError`] when the URL is bad or PostgreSQL cannot be reached.
pub async fn connect(url: &str) -> Result<Client, MigrateError> {
    connect_with(url, &PoolSettings::default()).await
}

/// [`connect`] with `settings`' connect timeout, statement timeout and CA bundle.
///
/// # Errors
/// As [`connect`].
pub async fn connect_with(url: &str, settings: &PoolSettings) -> Result<Client, MigrateError> {
    let (config, tls) = pg_config(url, settings)?;
    let (client, connection) = config.connect(tls).await.map_err(DbError::from)?;
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
    let runner = embedded::migrations::runner();
    let report = runner
        .run_async(client)
        .await
        .map_err(|e| MigrateError::Migration(e.to_string()))?;
    let applied = report
        .applied_migrations()
        .iter()
        .map(ToString::to_string)
        .collect();
    let version = runner
        .get_last_applied_migration_async(client)
        .await
        .map_err(|e| MigrateError::Migration(e.to_string()))?
        .map(|m| m.version());
    let data = seed::generate();
    let seeded = seed::apply(client, &data).await?;
    Ok(MigrateReport {
        applied,
        version,
        seeded,
        seed_size: data.counts(),
    })
}

#[cfg(test)]
mod tests {
    use super::{MigrateReport, SeedCounts};

    const FULL: SeedCounts = SeedCounts {
        accounts: 50,
        transactions: 5_000,
        articles: 40,
    };

    fn report(applied: &[&str], seeded: SeedCounts) -> String {
        MigrateReport {
            applied: applied.iter().map(|s| (*s).to_owned()).collect(),
            version: Some(3),
            seeded,
            seed_size: FULL,
        }
        .to_string()
    }

    #[test]
    fn says_what_the_first_run_did() {
        assert_eq!(
            report(&["V1__schemas", "V2__knowledge_base", "V3__ops"], FULL),
            "schema: applied 3 migrations (V1__schemas, V2__knowledge_base, V3__ops), now at V3; \
             seed: inserted 50 accounts, 5000 transactions, 40 articles"
        );
    }

    #[test]
    fn says_a_rerun_found_everything_in_place() {
        assert_eq!(
            report(&[], SeedCounts::default()),
            "schema: already up to date at V3; \
             seed: already present (50 accounts, 5000 transactions, 40 articles)"
        );
    }

    #[test]
    fn says_when_only_part_of_the_seed_was_missing() {
        let one = SeedCounts {
            articles: 1,
            ..SeedCounts::default()
        };
        assert_eq!(
            report(&["V3__ops"], one),
            "schema: applied 1 migration (V3__ops), now at V3; \
             seed: inserted 0 accounts, 0 transactions, 1 articles (the rest were present)"
        );
    }
}
