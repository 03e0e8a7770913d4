//! Transaction plumbing: every data query runs on a pooled connection within the request's
//! deadline ([`with_client`]) and in a transaction under its statement timeout ([`begin`]).
//!
//! - **What it bounds:** the connection checkout ([`super::checkout`], bounded by the
//!   deadline), each statement (`SET LOCAL statement_timeout`, the [`Budget`]'s: what is left
//!   before `deadline − margin`, capped at 3 s; seed 004 §1–2) and, with a deadline, the whole
//!   exchange on the client side, abandoned at `deadline − margin / 2`.
//! - **When it gives up:** a statement that outlasts its timeout is cancelled by PostgreSQL
//!   itself (SQLSTATE 57014) on a connection that stays reusable; a server that stops
//!   answering mid-session is abandoned at `deadline − margin / 2`, and that connection,
//!   which may still owe an answer, is closed rather than returned to the pool. No budget left
//!   for a statement is [`DbError::StatementTimeout`] before anything is sent.
//! - **What it returns:** the work's value or its [`DbError`];
//!   [`DbError::DeadlineExceeded`] when abandoned. A transaction dropped without commit rolls
//!   back, so a failed request never returns a connection mid-transaction.
//! - **Neighbours:** [`begin`] is the one transaction starter, so the `postgres` chaos faults
//!   of a verified header are applied there ([`super::faults`], one draw per transaction);
//!   the reads ([`super::queries`], [`super::fulltext`]) and the idempotent writes
//!   ([`super::writes`]) all start here. Each exchange is one span (SPEC §12).

use std::time::Duration;

use deadpool_postgres::Object;
use kosha_resilience::chaos::FaultAction;
use kosha_runtime::semconv;
use tracing::Instrument as _;

use super::{DbError, PgPool, checkout, faults};
use crate::deadline::Budget;

/// Runs `work` on a pooled connection within `budget`, in a span named `operation` (SPEC §12,
/// exported only: `db.system.name` `postgresql`, `db.operation.name`, `outcome`, and `fault`
/// when a chaos fault was drawn by [`begin`]; the pool checkout is inside it).
///
/// With a deadline, `work` is abandoned at `deadline − margin / 2`: after the server-side
/// `statement_timeout` (which ends at `deadline − margin`, so a merely slow statement comes back
/// as SQLSTATE 57014 on a reusable connection), in time to answer by the deadline. An abandoned
/// connection may still owe an answer, so it is closed, never returned to the pool.
///
/// # Errors
/// [`DbError`] from the pool or `work`; [`DbError::DeadlineExceeded`] when abandoned.
pub(super) async fn with_client<T>(
    pool: &PgPool,
    budget: &Budget,
    operation: &'static str,
    work: impl AsyncFnOnce(&mut Object) -> Result<T, DbError>,
) -> Result<T, DbError> {
    let span = tracing::info_span!(
        "db",
        otel.name = operation,
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        { semconv::DB_SYSTEM_NAME } = "postgresql",
        { semconv::DB_OPERATION_NAME } = operation,
        outcome = tracing::field::Empty,
        fault = tracing::field::Empty,
    );
    let result = on_client(pool, budget, work).instrument(span.clone()).await;
    if !span.is_disabled() {
        span.record("outcome", if result.is_ok() { "ok" } else { "error" });
        if result.is_err() {
            span.record("otel.status_code", "error");
        }
    }
    result
}

async fn on_client<T>(
    pool: &PgPool,
    budget: &Budget,
    work: impl AsyncFnOnce(&mut Object) -> Result<T, DbError>,
) -> Result<T, DbError> {
    let mut client = checkout(pool, budget.deadline, budget.postgres.margin).await?;
    let Some(deadline) = budget.deadline else {
        return work(&mut client).await;
    };
    let give_up = deadline.child(budget.postgres.margin / 2).instant();
    match tokio::time::timeout_at(give_up, work(&mut client)).await {
        Ok(outcome) => outcome,
        Err(_) => {
            drop(Object::take(client));
            Err(DbError::DeadlineExceeded)
        }
    }
}

/// Whether a transaction may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reads only (`SET TRANSACTION READ ONLY`).
    ReadOnly,
    /// Reads and writes.
    ReadWrite,
}

/// Starts a transaction whose statements may run for the budget's statement timeout
/// (`SET LOCAL`, so it ends with the transaction; seed 004 §2). The transaction rolls back if
/// dropped, so a failed request never returns a connection mid-transaction.
///
/// Every data endpoint's transaction starts here, so this is where a verified chaos header's
/// `postgres` faults apply (SPEC §9; one draw per transaction, the attempt): see
/// [`super::faults`].
///
/// # Errors
/// [`DbError::StatementTimeout`] when no budget is left for a statement, an injected fault's
/// error, or [`DbError`] from PostgreSQL.
pub(crate) async fn begin<'a>(
    client: &'a mut deadpool_postgres::Object,
    budget: &Budget,
    access: Access,
) -> Result<deadpool_postgres::Transaction<'a>, DbError> {
    let fault = faults::before_begin(budget).await?;
    let timeout = budget
        .statement_timeout()
        .ok_or(DbError::StatementTimeout)?;
    let tx = client
        .build_transaction()
        .read_only(access == Access::ReadOnly)
        .start()
        .await?;
    set_statement_timeout(&tx, timeout).await?;
    if fault == Some(FaultAction::Timeout) {
        // The slow statement gets what is left now (BEGIN and SET took some).
        let left = budget
            .statement_timeout()
            .ok_or(DbError::StatementTimeout)?;
        set_statement_timeout(&tx, left).await?;
        faults::outlast(&tx, left).await?;
    }
    Ok(tx)
}

/// `SET LOCAL statement_timeout` to `timeout` (whole milliseconds, at least 1).
async fn set_statement_timeout(
    tx: &deadpool_postgres::Transaction<'_>,
    timeout: Duration,
) -> Result<(), DbError> {
    // An integer we computed, not user input.
    tx.batch_execute(&format!(
        "SET LOCAL statement_timeout = {}",
        timeout.as_millis().max(1)
    ))
    .await?;
    Ok(())
}
