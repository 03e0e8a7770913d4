//! The binary's commands: `core-api` serves, `core-api migrate` migrates and seeds,
//! `core-api seed --check` verifies that the seed is present (exit 1 when not). The two
//! maintenance commands end with one plain line on stdout saying what they found or did
//! (after the JSON log lines); a failure is one line on stderr.

use crate::chaos::ChaosVerifier;
use crate::config::Config;
use crate::db::{self, migrate, seed};
use crate::routes::{AppState, router};

/// What the binary was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Serve HTTP (local or Lambda).
    Serve,
    /// Apply migrations, then the seed (idempotent).
    Migrate,
    /// Check that every seeded id is present.
    SeedCheck,
}

/// Usage line printed on bad arguments.
pub const USAGE: &str = "usage: core-api [migrate | seed --check]";

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
    Pool(#[from] db::pool::PoolBuildError),
    /// Migrating or seeding failed.
    #[error(transparent)]
    Migrate(#[from] migrate::MigrateError),
    /// A query failed.
    #[error(transparent)]
    Db(#[from] db::DbError),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] kosha_runtime::ServeError),
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
            let pool = db::build_pool(&config.database_url, &config.pool)?;
            let mut state = AppState::new(pool).with_postgres(config.pool.postgres);
            // The key is fetched only when chaos is on, so a production cold start (off by
            // default) builds no Secrets Manager client.
            if config.chaos_enabled {
                let sdk = kosha_runtime::aws::sdk_config().await;
                let keys = kosha_state::SecretCache::new(
                    aws_sdk_secretsmanager::Client::new(&sdk),
                    config.chaos_secret_id.clone(),
                );
                state = state.with_chaos(ChaosVerifier::new(true, Some(keys)));
            }
            kosha_runtime::serve(router(state)).await?;
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

#[cfg(test)]
mod tests {
    use super::Command;

    fn parse(args: &[&str]) -> Result<Command, &'static str> {
        Command::parse(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn parses_the_three_commands_and_refuses_others() {
        assert_eq!(parse(&[]), Ok(Command::Serve));
        assert_eq!(parse(&["migrate"]), Ok(Command::Migrate));
        assert_eq!(parse(&["seed", "--check"]), Ok(Command::SeedCheck));
        assert!(parse(&["seed"]).is_err());
        assert!(parse(&["migrate", "--force"]).is_err());
    }
}
