//! The binary's commands: `core-api` serves (and on Lambda also runs task events,
//! [`crate::tasks`]), `core-api migrate` migrates and seeds, `core-api embed` embeds the
//! article passages that are missing or made with another model ([`crate::backfill`]),
//! `core-api seed --check` verifies that the seed is present (exit 1 when not). The
//! maintenance commands end with one plain line on stdout saying what they found or did
//! (after the JSON log lines); a failure is one line on stderr.

use std::sync::Arc;

use kosha_resilience::overrides::{NoOverrides, OverrideSource};

use crate::backfill;
use crate::chaos::ChaosVerifier;
use crate::config::Config;
use crate::db::{self, migrate, seed};
use crate::embeddings::Embedder;
use crate::routes::{AppState, router};
use crate::tasks::{self, TaskContext};

/// What the binary was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Serve HTTP (local or Lambda).
    Serve,
    /// Apply migrations, then the seed (idempotent).
    Migrate,
    /// Check that every seeded id is present.
    SeedCheck,
    /// Embed the passages that are missing or made with another model.
    Embed,
}

/// Usage line printed on bad arguments.
pub const USAGE: &str = "usage: core-api [migrate | embed | seed --check]";

impl Command {
    /// Parses the arguments after the program name.
    ///
    /// # Errors
    /// [`USAGE`] for anything unrecognised.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Self, &'static str> {
        let args: Vec<String> = args.into_iter().collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match args.as_slice() {
            [] | ["serve"] => Ok(Self::Serve),
            ["migrate"] => Ok(Self::Migrate),
            ["embed"] => Ok(Self::Embed),
            ["seed", "--check"] => Ok(Self::SeedCheck),
            _ => Err(USAGE),
        }
    }
}

/// Why a command failed (printed as one line by `main`).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Building the pool failed.
    #[error(transparent)]
    Pool(#[from] kosha_pg::PoolBuildError),
    /// Migrating or seeding failed.
    #[error(transparent)]
    Migrate(#[from] migrate::MigrateError),
    /// A query failed.
    #[error(transparent)]
    Db(#[from] db::DbError),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] kosha_runtime::ServeError),
    /// A client could not be built (embedder policy, HTTP client, state table).
    #[error("{0}")]
    Setup(String),
    /// `embed` without `KOSHA_EMBEDDINGS_URL`.
    #[error("KOSHA_EMBEDDINGS_URL is not set: nothing to embed with")]
    NoEmbedder,
    /// `embed` failed.
    #[error(transparent)]
    Backfill(#[from] backfill::BackfillError),
    /// `seed --check` found seeded rows missing.
    #[error(
        "seed data is incomplete: found {found}; the seed has {expected}; run `core-api migrate`"
    )]
    SeedMissing {
        /// Seeded rows present.
        found: seed::SeedCounts,
        /// Rows the seed holds.
        expected: seed::SeedCounts,
    },
}

/// Runs `command` with `config`.
///
/// # Errors
/// [`CliError`] describing the failure.
pub async fn run(command: Command, config: &Config) -> Result<(), CliError> {
    match command {
        Command::Serve => {
            let overrides = overrides(config).await?;
            let embedder = embedder(config, overrides.clone())?;
            let pool = db::build_pool(&config.database_url, &config.pool)?;
            let mut state = AppState::new(pool)
                .with_postgres(config.pool.postgres)
                .with_overrides(overrides);
            if let Some(e) = &embedder {
                state = state.with_embedder(e.clone());
            }
            // The key is fetched only when chaos is on, so a production cold start (off by
            // default) builds no Secrets Manager client.
            if config.chaos_enabled {
                let sdk = kosha_runtime::aws::sdk_config().await;
                let keys = kosha_state::SecretCache::from_sdk(&sdk, config.chaos_secret_id.clone());
                state = state.with_chaos(ChaosVerifier::new(true, Some(keys)));
            }
            let context = TaskContext {
                database_url: config.database_url.as_str().into(),
                pool: config.pool.clone(),
                embedder,
            };
            kosha_runtime::serve_with_tasks(router(state), move |task| {
                tasks::run(context.clone(), task)
            })
            .await?;
        }
        Command::Embed => {
            let embedder = embedder(config, Arc::new(NoOverrides))?.ok_or(CliError::NoEmbedder)?;
            let mut client = migrate::connect_with(&config.database_url, &config.pool).await?;
            let report = backfill::run(&mut client, &embedder).await?;
            tracing::info!(
                embedded = report.embedded,
                kept = report.kept,
                removed = report.removed,
                model = embedder.model(),
                "embedded passages"
            );
            println!(
                "core-api embed: {report} (model {}, {} dimensions)",
                embedder.model(),
                embedder.dimensions()
            );
        }
        Command::Migrate => {
            let mut client = migrate::connect_with(&config.database_url, &config.pool).await?;
            let report = migrate::migrate_and_seed(&mut client).await?;
            tracing::info!(
                migrations_applied = ?report.applied,
                schema_version = report.version,
                accounts_inserted = report.seeded.accounts,
                transactions_inserted = report.seeded.transactions,
                articles_inserted = report.seeded.articles,
                "migrated and seeded"
            );
            println!("core-api migrate: {report}");
        }
        Command::SeedCheck => {
            let client = migrate::connect_with(&config.database_url, &config.pool).await?;
            let data = seed::generate();
            let found = seed::count_present(&client, &data).await?;
            let expected = data.counts();
            if found != expected {
                return Err(CliError::SeedMissing { found, expected });
            }
            println!("core-api seed --check: seed present ({found})");
        }
    }
    Ok(())
}

/// The `breaker#` override source: the state table when `KOSHA_STATE_TABLE` is set (read
/// lazily, at most every 5 s, SPEC §8), else none. Nothing is read here.
async fn overrides(config: &Config) -> Result<Arc<dyn OverrideSource>, CliError> {
    let Some(name) = &config.state_table else {
        return Ok(Arc::new(NoOverrides));
    };
    let sdk = kosha_runtime::aws::sdk_config().await;
    let table = kosha_state::StateTable::from_sdk(&sdk, name)
        .map_err(|e| CliError::Setup(format!("KOSHA_STATE_TABLE: {e}")))?
        .single_attempt();
    Ok(Arc::new(kosha_state::DynamoOverrides::new(
        table,
        kosha_state::OverrideSettings::default(),
        Arc::new(kosha_state::SystemClock),
    )))
}

/// The embedder when `KOSHA_EMBEDDINGS_URL` is set, over the process's HTTP client.
fn embedder(
    config: &Config,
    overrides: Arc<dyn OverrideSource>,
) -> Result<Option<Arc<Embedder>>, CliError> {
    let Some(embeddings) = &config.embeddings else {
        return Ok(None);
    };
    let http = kosha_runtime::tls::http_client()
        .map_err(|e| CliError::Setup(format!("cannot build the HTTP client: {e}")))?;
    let embedder = Embedder::new(
        embeddings,
        config.embeddings_api_key.clone(),
        http,
        overrides,
    )
    .map_err(|e| CliError::Setup(format!("{}: {e}", crate::embeddings::POLICY_ENV_PREFIX)))?;
    Ok(Some(Arc::new(embedder)))
}

#[cfg(test)]
mod tests {
    use super::Command;

    fn parse(args: &[&str]) -> Result<Command, &'static str> {
        Command::parse(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn parses_the_four_commands_and_refuses_others() {
        assert_eq!(parse(&[]), Ok(Command::Serve));
        assert_eq!(parse(&["migrate"]), Ok(Command::Migrate));
        assert_eq!(parse(&["embed"]), Ok(Command::Embed));
        assert!(parse(&["embed", "--all"]).is_err());
        assert_eq!(parse(&["seed", "--check"]), Ok(Command::SeedCheck));
        assert!(parse(&["seed"]).is_err());
        assert!(parse(&["migrate", "--force"]).is_err());
    }
}
