//! The reads behind `GET /v1/health`, `GET /v1/transactions/{id}` and
//! `GET /v1/accounts/{id}/transactions` (SPEC §4), and the wire's time format.
//!
//! - **What it reads:** readiness (`SELECT 1`), one transaction by id, and one keyset page of
//!   an account's transactions, newest first (`booked_at desc, transaction_id desc`, strictly
//!   after the [`Keyset`] of the previous page, within the inclusive `from`/`to`).
//! - **How:** typed, parameterised statements, prepared once per connection. No user input is
//!   ever spliced into SQL: every value is a bind parameter, so `'`, `%`, `_` and `\` are
//!   plain characters.
//! - **What it returns:** rows as the wire's [`Transaction`], every time as RFC 3339 UTC
//!   (`rfc3339`, also the writes'); `None` for an unknown id or account; [`DbError`] from
//!   the pool or PostgreSQL.
//! - **Neighbours:** each runs in `tx::with_client` and a read-only `tx::begin` (deadline,
//!   statement timeout, chaos faults); the route turns the last row into the next cursor
//!   ([`crate::cursor`]).

use kosha_contract::core_api::Transaction;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio_postgres::Row;

use super::tx::{Access, begin, with_client};
use super::{DbError, PgPool};
use crate::deadline::Budget;

/// A position in an account's list: the last row of the previous page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyset {
    /// `booked_at` of the last row returned.
    pub booked_at: OffsetDateTime,
    /// `transaction_id` of the last row returned.
    pub transaction_id: String,
}

/// One page request for an account's transactions, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// The account.
    pub account_id: String,
    /// Inclusive lower bound on `booked_at`.
    pub from: Option<OffsetDateTime>,
    /// Inclusive upper bound on `booked_at`.
    pub to: Option<OffsetDateTime>,
    /// Rows strictly after this position in (booked_at desc, transaction_id desc) order.
    pub after: Option<Keyset>,
    /// Rows to fetch (the route asks for one more than the page to learn if more exist).
    pub limit: i64,
}

const TRANSACTION_COLUMNS: &str =
    "transaction_id, account_id, amount_minor, currency, merchant, category, status, booked_at";

/// A row as the wire's transaction: `booked_at` as RFC 3339 UTC (`2026-03-04T10:15:00Z`,
/// with a fraction only when the stored time has one), so [`booked_at`] reads it back exactly.
fn transaction(row: &Row) -> Result<Transaction, DbError> {
    let booked_at = rfc3339(row.try_get(7)?)?;
    Ok(Transaction {
        transaction_id: row.try_get(0)?,
        account_id: row.try_get(1)?,
        amount_minor: row.try_get(2)?,
        currency: row.try_get(3)?,
        merchant: row.try_get(4)?,
        category: row.try_get(5)?,
        status: row.try_get(6)?,
        booked_at,
    })
}

/// `at` in UTC as RFC 3339 (`2026-03-04T10:15:00Z`, with a fraction only when `at` has one):
/// how every time is written on the wire.
///
/// # Errors
/// [`DbError::Query`] for a year RFC 3339 cannot write (outside 0–9999).
pub(crate) fn rfc3339(at: OffsetDateTime) -> Result<String, DbError> {
    at.to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        .map_err(|e| DbError::Query(format!("a time out of RFC 3339's range: {e}")))
}

/// The `booked_at` of a transaction `transaction` built, as an instant (for the keyset of
/// the next page).
///
/// # Errors
/// [`DbError::Query`] if the text is not RFC 3339 (it always is when built here).
pub fn booked_at(t: &Transaction) -> Result<OffsetDateTime, DbError> {
    OffsetDateTime::parse(&t.booked_at, &Rfc3339)
        .map_err(|e| DbError::Query(format!("booked_at does not parse back: {e}")))
}

/// `SELECT 1` through the pool (readiness of PostgreSQL), within `budget`.
///
/// # Errors
/// [`DbError`] when no connection can be had in time or the query fails.
pub async fn ping(pool: &PgPool, budget: &Budget) -> Result<(), DbError> {
    with_client(pool, budget, "ping", async |client| {
        client.query_one("SELECT 1", &[]).await?;
        Ok(())
    })
    .await
}

/// The transaction `id`, or `None`.
///
/// # Errors
/// [`DbError`] from the pool or PostgreSQL.
pub async fn get_transaction(
    pool: &PgPool,
    budget: &Budget,
    id: &str,
) -> Result<Option<Transaction>, DbError> {
    with_client(pool, budget, "get_transaction", async |client| {
        let tx = begin(client, budget, Access::ReadOnly).await?;
        let sql = format!(
            "SELECT {TRANSACTION_COLUMNS} FROM core.transactions WHERE transaction_id = $1"
        );
        let statement = tx.prepare_cached(&sql).await?;
        let row = tx.query_opt(&statement, &[&id]).await?;
        tx.commit().await?;
        row.as_ref().map(transaction).transpose()
    })
    .await
}

/// One page of an account's transactions, or `None` when the account does not exist.
///
/// # Errors
/// [`DbError`] from the pool or PostgreSQL.
pub async fn list_transactions(
    pool: &PgPool,
    budget: &Budget,
    q: &ListQuery,
) -> Result<Option<Vec<Transaction>>, DbError> {
    with_client(pool, budget, "list_transactions", async |client| {
        let tx = begin(client, budget, Access::ReadOnly).await?;
        let exists = tx
            .prepare_cached("SELECT 1 FROM core.accounts WHERE account_id = $1")
            .await?;
        if tx.query_opt(&exists, &[&q.account_id]).await?.is_none() {
            tx.commit().await?;
            return Ok(None);
        }
        let sql = format!(
            "SELECT {TRANSACTION_COLUMNS} FROM core.transactions
             WHERE account_id = $1
               AND ($2::timestamptz IS NULL OR booked_at >= $2)
               AND ($3::timestamptz IS NULL OR booked_at <= $3)
               AND ($4::timestamptz IS NULL OR (booked_at, transaction_id) < ($4, $5::text))
             ORDER BY booked_at DESC, transaction_id DESC
             LIMIT $6"
        );
        let statement = tx.prepare_cached(&sql).await?;
        let after_at = q.after.as_ref().map(|k| k.booked_at);
        let after_id = q.after.as_ref().map(|k| k.transaction_id.as_str());
        let rows = tx
            .query(
                &statement,
                &[
                    &q.account_id,
                    &q.from,
                    &q.to,
                    &after_at,
                    &after_id,
                    &q.limit,
                ],
            )
            .await?;
        tx.commit().await?;
        rows.iter()
            .map(transaction)
            .collect::<Result<_, _>>()
            .map(Some)
    })
    .await
}
