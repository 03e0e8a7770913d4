//! core-api: Kosha's REST API over PostgreSQL (SPEC §1, §4, §7).
//!
//! - [`routes`]: the axum router — transactions, account listing, knowledge search, health.
//! - [`db`]: pool, migrations, the deterministic seed and the queries.
//! - [`error`]: the one error enum and its JSON wire shape.
//! - [`cursor`], [`ids`], [`text`]: the opaque pagination cursor, id shape checks and
//!   free-text checks.
//! - [`deadline`]: `X-Request-Deadline` and the per-statement budget (SPEC §7).
//! - [`chaos`]: the forwarded `X-Kosha-Chaos` header, verified again (SPEC §9).
//! - [`embeddings`]: the embeddings API client under the `openai` policy; [`search`]: hybrid
//!   ranking and its degradation to full text; [`backfill`]: `core-api embed`.
//! - [`tasks`]: the Lambda task events (`{"task": "migrate" | "embed"}`).
//! - [`config`], [`cli`]: environment and the binary's commands.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backfill;
pub mod chaos;
pub mod cli;
pub mod config;
pub mod cursor;
pub mod db;
pub mod deadline;
pub mod embeddings;
pub mod error;
pub mod ids;
pub mod routes;
pub mod search;
pub mod tasks;
pub mod text;
