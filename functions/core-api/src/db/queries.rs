//! The typed, parameterised queries behind the routes. No user input is ever spliced into SQL:
//! every value is a bind parameter, so `'`, `%`, `_` and `\` are plain characters.
//!
//! Each runs in `with_client`: a connection from [`super::checkout`] (bounded by the
//! deadline) and, with a deadline, a client-side bound on the whole exchange, so a PostgreSQL
//! that stops answering mid-session cannot hold the request past its deadline.

use deadpool_postgres::Object;
use kosha_contract::core_api::{ArticleHit, Transaction};
use kosha_resilience::chaos::{FaultAction, InjectedFault, Target};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio_postgres::Row;
use tracing::Instrument as _;

use super::{DbError, PgPool, checkout};
use crate::deadline::Budget;
use crate::search::index::PassageRow;

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
        db.system.name = "postgresql",
        db.operation.name = operation,
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
/// `postgres` faults apply (SPEC §9; one draw per transaction, the attempt):
/// - `latency`: sleeps `ms` first, at most until the deadline's margin, so the statement
///   timeout is what is left after it (or `deadline_exceeded` when nothing is);
/// - `error`: PostgreSQL unavailable (503 `dependency_unavailable`, `dependency: "postgres"`);
/// - `reset`: a dropped connection, classified the same way;
/// - `timeout`: a statement that outlasts the statement timeout (`pg_sleep`), so PostgreSQL
///   itself cancels it (SQLSTATE 57014) and the real slow-query path answers.
pub(crate) async fn begin<'a>(
    client: &'a mut deadpool_postgres::Object,
    budget: &Budget,
    access: Access,
) -> Result<deadpool_postgres::Transaction<'a>, DbError> {
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
    let timeout = budget
        .statement_timeout()
        .ok_or(DbError::StatementTimeout)?;
    let tx = client
        .build_transaction()
        .read_only(access == Access::ReadOnly)
        .start()
        .await?;
    // An integer we computed, not user input.
    tx.batch_execute(&format!(
        "SET LOCAL statement_timeout = {}",
        timeout.as_millis().max(1)
    ))
    .await?;
    if fault == Some(FaultAction::Timeout) {
        // The slow statement gets what is left now (BEGIN and SET took some), and sleeps a
        // second past it, so PostgreSQL cancels it as it would a real slow query.
        let left = budget
            .statement_timeout()
            .ok_or(DbError::StatementTimeout)?;
        tx.batch_execute(&format!(
            "SET LOCAL statement_timeout = {}",
            left.as_millis().max(1)
        ))
        .await?;
        let secs = left.as_secs_f64() + 1.0;
        tx.execute("SELECT pg_sleep($1)", &[&secs]).await?;
    }
    Ok(tx)
}

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

/// The `booked_at` of a transaction [`transaction`] built, as an instant (for the keyset of
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

/// What the vector side of a search needs read in the full-text transaction: the configured
/// model and length, and the version of the cached vectors (`None`: nothing cached).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorRead<'a> {
    /// `KOSHA_EMBEDDINGS_MODEL`.
    pub model: &'a str,
    /// `KOSHA_EMBEDDINGS_DIMENSIONS`.
    pub dimensions: i32,
    /// `kb.embedding_state.version` of the cached index.
    pub cached_version: Option<i64>,
}

/// What one search transaction read.
#[derive(Debug, Clone, PartialEq)]
pub struct FullText {
    /// Articles matching all terms (`websearch_to_tsquery`), best first, at most `depth`.
    pub all_terms: Vec<ArticleHit>,
    /// When `all_terms` is empty: articles matching any term, at most `top_k`.
    pub any_term: Vec<ArticleHit>,
    /// The vectors at the current version, when they were not cached at it (`VectorRead`).
    pub vectors: Option<(i64, Vec<PassageRow>)>,
}

impl FullText {
    /// The full-text ranking on its own (a degraded answer): the all-terms list, or when it
    /// matched nothing the any-term list; at most `top_k`.
    pub fn ranking(mut self, top_k: usize) -> Vec<ArticleHit> {
        let mut hits = if self.all_terms.is_empty() {
            self.any_term
        } else {
            std::mem::take(&mut self.all_terms)
        };
        hits.truncate(top_k);
        hits
    }
}

/// Full-text search over the knowledge base, in one read-only transaction:
/// `websearch_to_tsquery` (all terms must match, at most `depth` articles), and when that
/// finds nothing, any of the terms (the `&`s of `plainto_tsquery` turned into `|`s, at most
/// `top_k`). Ranked by `ts_rank_cd`, ties by article id. With `vectors`, it also reads
/// `kb.embedding_state.version` and, when it differs from the cached one, the passages of the
/// configured model ([`super::vectors::load`]).
///
/// # Errors
/// [`DbError`] from the pool or PostgreSQL.
pub async fn search_articles(
    pool: &PgPool,
    budget: &Budget,
    query: &str,
    depth: i64,
    top_k: i64,
    vectors: Option<VectorRead<'_>>,
) -> Result<FullText, DbError> {
    with_client(pool, budget, "search_articles", async |client| {
        let tx = begin(client, budget, Access::ReadOnly).await?;
        let strict = tx
            .prepare_cached(&search_sql("websearch_to_tsquery('english', $1)"))
            .await?;
        let all_terms = hits(&tx.query(&strict, &[&query, &depth]).await?)?;
        let any_term = if all_terms.is_empty() {
            let loose = tx
                .prepare_cached(&search_sql(
                    "NULLIF(regexp_replace(plainto_tsquery('english', $1)::text, \
                     ' (&|<->|<[0-9]+>) ', ' | ', 'g'), '')::tsquery",
                ))
                .await?;
            hits(&tx.query(&loose, &[&query, &top_k]).await?)?
        } else {
            Vec::new()
        };
        let vectors = match vectors {
            None => None,
            Some(read) => {
                let version = super::vectors::version(&tx).await?;
                if read.cached_version == Some(version) {
                    None
                } else {
                    let rows = super::vectors::load(&tx, read.model, read.dimensions).await?;
                    Some((version, rows))
                }
            }
        };
        tx.commit().await?;
        Ok(FullText {
            all_terms,
            any_term,
            vectors,
        })
    })
    .await
}

fn hits(rows: &[Row]) -> Result<Vec<ArticleHit>, DbError> {
    rows.iter()
        .map(|row| {
            Ok(ArticleHit {
                article_id: row.try_get(0)?,
                title: row.try_get(1)?,
                snippet: row.try_get(2)?,
                score: row.try_get(3)?,
            })
        })
        .collect()
}

fn search_sql(tsquery: &str) -> String {
    format!(
        "WITH q AS (SELECT {tsquery} AS tsq)
         SELECT a.article_id, a.title,
                regexp_replace(
                    ts_headline('english', a.body, q.tsq,
                        'StartSel=\"\", StopSel=\"\", MaxWords=35, MinWords=15, MaxFragments=1'),
                    '\\s+', ' ', 'g'),
                ts_rank_cd(a.search, q.tsq, 32)::float8 AS score
         FROM kb.articles a, q
         WHERE a.search @@ q.tsq
         ORDER BY score DESC, a.article_id ASC
         LIMIT $2"
    )
}
