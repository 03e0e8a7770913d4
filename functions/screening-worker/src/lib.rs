//! screening-worker: completes deferred screenings (SPEC §1, §10; issue 12).
//!
//! `screen_entity` records a `pending` `screening#<id>` item and sends `{"screening_id"}` to
//! the screening queue when screening-sim is unavailable; this worker takes those messages,
//! calls screening-sim under its own policy, and finishes the item with a conditional update
//! (only from `pending`), so `get_screening_result` shows the verdict.
//!
//! - [`config`]: the environment, read once in `main`.
//! - [`handler`]: one batch, generic over its dependencies (the rules, in a table).
//! - [`deps`]: the real dependencies (screening-sim under a policy, the state table, SQS).
//! - [`local`]: the polling loop of local mode.
//!
//! On AWS the binary runs under `lambda_runtime` with an SQS event source
//! (`ReportBatchItemFailures`); locally (`AWS_LAMBDA_RUNTIME_API` unset) it polls the queue.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod deps;
pub mod handler;
pub mod local;
