//! core-api: Kosha's REST API over PostgreSQL (SPEC §1, §4, §7).
//!
//! - [`routes`]: the axum router — transactions, account listing, knowledge search, health.
//! - [`db`]: pool, migrations, the deterministic seed and the queries.
//! - [`error`]: the one error enum and its JSON wire shape.
//! - [`cursor`], [`ids`], [`text`]: the opaque pagination cursor, id shape checks and
//!   free-text checks.
//! - [`deadline`]: `X-Request-Deadline` and the per-statement budget (SPEC §7).
//! - [`chaos`]: the forwarded `X-Kosha-Chaos` header, verified again (SPEC §9).
//! - [`config`], [`cli`]: environment and the binary's commands.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chaos;
pub mod cli;
pub mod config;
pub mod cursor;
pub mod db;
pub mod deadline;
pub mod error;
pub mod ids;
pub mod routes;
pub mod secret_url;
pub mod text;
