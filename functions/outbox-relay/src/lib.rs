//! outbox-relay: publishes the events core-api's writes put in `ops.outbox` to the events
//! queue (SQS, `KOSHA_EVENTS_QUEUE_URL`) as SPEC §4's JSON, at least once, never losing
//! one and never publishing one from two relays at once (ARCHITECTURE pitfalls 16, 17).
//!
//! - [`relay`]: one run — claim, publish, mark, sweep, gauges.
//! - [`store`]: the SQL of `ops.outbox` (claim with `FOR UPDATE SKIP LOCKED`, mark, backlog,
//!   7-day sweep).
//! - [`publish`]: `SendMessageBatch` and its error classes.
//! - [`mode`]: Lambda (scheduled event) or a local loop every 2 s.
//! - [`config`]: the environment.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod mode;
pub mod publish;
pub mod relay;
pub mod store;

use kosha_resilience::policy::Policy;

/// The name of the relay's policy toward SQS: its breaker's and bulkhead's metric dimension
/// (`dependency="sqs"`). No `breaker#sqs` override exists (SPEC §8), so none is read.
pub const SQS_DEPENDENCY: &str = "sqs";

/// Why the relay could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting is missing or invalid (exit code 2).
    #[error(transparent)]
    Config(#[from] kosha_runtime::config::ConfigError),
    /// The database URL could not be read from Secrets Manager, or the pool not built.
    #[error("database: {0}")]
    Database(String),
}

/// The relay of `config`, publishing to the events queue with an SQS client built from
/// `sdk` without SDK retries (the policy retries).
///
/// # Errors
/// [`StartError`] when the pool or the policy cannot be built.
pub fn build(
    config: &config::RelayConfig,
    sdk: &aws_config::SdkConfig,
) -> Result<relay::Relay<publish::Sqs>, StartError> {
    let sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(sdk)
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build(),
    );
    let pool = kosha_pg::build_pool(&config.database.url, &config.database.pool)
        .map_err(|e| StartError::Database(e.to_string()))?;
    let policy = Policy::try_without_overrides(SQS_DEPENDENCY, config.sqs_policy).map_err(|e| {
        kosha_runtime::config::ConfigError::new(config::SQS_ENV_PREFIX, e.to_string())
    })?;
    Ok(relay::Relay::new(
        pool,
        publish::Sqs::new(sqs, &config.queue_url),
        policy,
        config.settings,
    ))
}
