//! The `postgres` chaos fault points (SPEC §9): where a verified chaos header's faults meet
//! core-api's PostgreSQL, inside the one transaction starter ([`super::tx::begin`]).
//!
//! - **What it draws:** one fault per transaction (the attempt), from the plan the request's
//!   [`crate::chaos::Chaos`] gives for [`Target::Postgres`] (its probability `p`), carried in
//!   the statement [`Budget`]. No verified header, no plan, no fault: this is unreachable
//!   without a header signed with the chaos key and `CHAOS_ENABLED`.
//! - **What each fault does:**
//!   - `latency`: sleeps `ms` before `BEGIN`, at most until the deadline's margin, so the
//!     statement timeout is what is left after it (or `deadline_exceeded` when nothing is);
//!   - `error`: PostgreSQL unavailable (503 `dependency_unavailable`, `dependency: "postgres"`);
//!   - `reset`: a dropped connection, classified the same way;
//!   - `timeout`: after `BEGIN`, a statement that outlasts the statement timeout
//!     (`pg_sleep`, [`outlast`]), so PostgreSQL itself cancels it (SQLSTATE 57014) and the
//!     real slow-query path answers.
//! - **What it returns:** the drawn fault, for [`super::tx::begin`] to finish the `timeout`
//!   one after `BEGIN`; or the injected failure as a [`DbError`].
//! - **Neighbours:** the fault's name is recorded on the current `db` span (`fault`) that
//!   [`super::tx::with_client`] opened.

use std::time::Duration;

use kosha_resilience::chaos::{FaultAction, InjectedFault, Target};

use super::DbError;
use crate::deadline::Budget;

/// Draws this transaction's fault and applies what comes before `BEGIN`: the `latency` sleep,
/// or the `error` and `reset` failures. Returns the fault drawn.
///
/// # Errors
/// [`DbError`] for an injected `error` (unavailable) or `reset` (a dropped connection).
pub(super) async fn before_begin(budget: &Budget) -> Result<Option<FaultAction>, DbError> {
    let fault = budget
        .chaos
        .faults(Target::Postgres)
        .and_then(|mut plan| plan.draw());
    if let Some(action) = fault {
        tracing::Span::current().record("fault", action.fault().as_str());
    }
    match fault {
        Some(FaultAction::Latency(ms)) => {
            let room = budget
                .deadline
                .map(|d| d.child(budget.postgres.margin).remaining());
            tokio::time::sleep(room.map_or(ms, |room| ms.min(room))).await;
        }
        Some(FaultAction::Error) => return Err(InjectedFault::Unavailable.into()),
        Some(FaultAction::Reset) => return Err(InjectedFault::Reset.into()),
        Some(FaultAction::Timeout) | None => {}
    }
    Ok(fault)
}

/// The `timeout` fault: a statement that sleeps a second past `left`, the statement timeout
/// just set, so PostgreSQL cancels it as it would a real slow query.
///
/// # Errors
/// [`DbError`] from PostgreSQL: the cancellation (SQLSTATE 57014) when the timeout holds.
pub(super) async fn outlast(
    tx: &deadpool_postgres::Transaction<'_>,
    left: Duration,
) -> Result<(), DbError> {
    let secs = left.as_secs_f64() + 1.0;
    tx.execute("SELECT pg_sleep($1)", &[&secs]).await?;
    Ok(())
}
