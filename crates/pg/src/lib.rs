//! kosha-pg: how a Kosha function talks to PostgreSQL (SPEC §2, §13; seed 004 §1, §2).
//!
//! - [`pool`]: the deadpool pool, its limits and the deadline-bounded [`checkout`].
//! - [`settings`]: `KOSHA_POLICY_POSTGRES_*` ([`PostgresConfig`]).
//! - [`tls`]: `sslmode` and `KOSHA_DATABASE_CA_FILE` on the workspace's rustls policy.
//! - [`secret_url`]: `DATABASE_URL` from Secrets Manager (`DATABASE_URL_SECRET_ARN`).
//! - [`config`]: the database's environment, read once ([`DatabaseConfig`]).
//! - [`error`]: every failure classified once ([`DbError`]).
//!
//! Used by core-api and the outbox-relay; neither depends on the other for it.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod error;
pub mod pool;
pub mod secret_url;
pub mod settings;
pub mod tls;

pub use config::DatabaseConfig;
pub use error::{DbError, error_chain};
pub use pool::{PgPool, PoolBuildError, PoolSettings, build_pool, checkout};
pub use settings::PostgresConfig;
