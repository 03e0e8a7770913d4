//! core-api's PostgreSQL access: embedded migrations ([`migrate`]), the deterministic seed
//! ([`seed`]), the transaction plumbing every data query runs in (`tx`: deadline, statement
//! timeout) with its chaos fault points (`faults`), the typed queries behind the transaction
//! reads ([`queries`]) and the knowledge search ([`fulltext`]), the passage vectors
//! ([`vectors`]) and the idempotent write transactions ([`writes`]). The pool, its settings,
//! TLS and the classified [`DbError`] are `kosha_pg`'s, shared with the outbox-relay; the HTTP
//! edge maps a [`DbError`] to an error code.

mod faults;
pub mod fulltext;
pub mod migrate;
pub mod queries;
pub mod seed;
mod tx;
pub mod vectors;
pub mod writes;

// The pool, its settings and the classified error are the workspace's (`kosha_pg`, shared
// with the outbox-relay); core-api's queries name them from here.
pub use kosha_pg::{DbError, PgPool, PoolSettings, PostgresConfig, build_pool, checkout};
