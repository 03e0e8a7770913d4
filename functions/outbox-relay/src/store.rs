//! The relay's side of `ops.outbox` (migrations V3 and V4 of core-api): claiming unpublished
//! rows, marking the published ones, the backlog gauges and the retention sweep.
//!
//! A batch is claimed with `SELECT … ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED` inside a
//! transaction that stays open while the rows are sent and until the accepted ones are
//! marked (ARCHITECTURE pitfall 16): a second relay skips the locked rows instead of
//! publishing them again, and a relay that dies mid-batch releases its locks when its
//! connection closes, leaving its rows unpublished for the next run (sent but unmarked rows
//! are published again: delivery is at least once, SPEC §4).

use std::time::Duration;

use deadpool_postgres::GenericClient;
use kosha_contract::events::Event;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Why a database step failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No connection within the pool's wait, or the pool is closed.
    #[error("no database connection: {0}")]
    Pool(String),
    /// A statement failed (including a statement timeout, SQLSTATE 57014).
    #[error("database statement failed: {0}")]
    Query(#[from] tokio_postgres::Error),
    /// A row's `created_at` is outside RFC 3339's range (never written by core-api).
    #[error("outbox row {id} has a time RFC 3339 cannot write")]
    Time {
        /// The row's `id`.
        id: i64,
    },
}

/// One claimed, unpublished row.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// `ops.outbox.id`: claim order.
    pub id: i64,
    /// The message to publish.
    pub event: Event,
}

/// The unpublished backlog: the `outbox_pending` and `outbox_lag_seconds` gauges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backlog {
    /// Unpublished rows.
    pub pending: i64,
    /// Age of the oldest unpublished row, in seconds (0 when none).
    pub lag_seconds: f64,
}

/// Server-side guards for a claiming transaction: a statement may take at most
/// `statement`, and a relay frozen or stuck with the transaction open (a Lambda instance
/// frozen mid-batch) loses its locks after `idle`.
pub async fn guard(
    tx: &impl GenericClient,
    statement: Duration,
    idle: Duration,
) -> Result<(), StoreError> {
    let sql = format!(
        "SET LOCAL statement_timeout = {}; SET LOCAL idle_in_transaction_session_timeout = {}",
        statement.as_millis().max(1),
        idle.as_millis().max(1)
    );
    tx.batch_execute(&sql).await?;
    Ok(())
}

/// Claims up to `limit` unpublished rows in id order, skipping rows another relay holds.
///
/// # Errors
/// [`StoreError`].
pub async fn claim(tx: &impl GenericClient, limit: i64) -> Result<Vec<Pending>, StoreError> {
    let rows = tx
        .query(
            "SELECT id, event_id, event_type, created_at, aggregate_id, payload
             FROM ops.outbox WHERE published_at IS NULL
             ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
            &[&limit],
        )
        .await?;
    rows.iter()
        .map(|row| {
            let id: i64 = row.try_get(0)?;
            let at: OffsetDateTime = row.try_get(3)?;
            let occurred_at = at
                .to_offset(time::UtcOffset::UTC)
                .format(&Rfc3339)
                .map_err(|_| StoreError::Time { id })?;
            Ok(Pending {
                id,
                event: Event {
                    event_id: row.try_get(1)?,
                    event_type: row.try_get(2)?,
                    occurred_at,
                    aggregate_id: row.try_get(4)?,
                    payload: row.try_get(5)?,
                },
            })
        })
        .collect()
}

/// Marks rows `ids` published now; returns how many were marked.
///
/// # Errors
/// [`StoreError`].
pub async fn mark(tx: &impl GenericClient, ids: &[i64]) -> Result<u64, StoreError> {
    if ids.is_empty() {
        return Ok(0);
    }
    Ok(tx
        .execute(
            "UPDATE ops.outbox SET published_at = now() WHERE id = ANY($1)",
            &[&ids],
        )
        .await?)
}

/// The unpublished backlog now.
///
/// # Errors
/// [`StoreError`].
pub async fn backlog(client: &impl GenericClient) -> Result<Backlog, StoreError> {
    let row = client
        .query_one(
            "SELECT count(*),
                    coalesce(extract(epoch FROM now() - min(created_at))::float8, 0)
             FROM ops.outbox WHERE published_at IS NULL",
            &[],
        )
        .await?;
    Ok(Backlog {
        pending: row.try_get(0)?,
        lag_seconds: row.try_get::<_, f64>(1)?.max(0.0),
    })
}

/// What one sweep deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Published events older than the retention.
    pub events: u64,
    /// Idempotency keys past `expires_at` (24 h, SPEC §7).
    pub keys: u64,
}

/// Deletes up to `limit` events published more than `retention` ago (7 days by default)
/// and up to `limit` expired idempotency keys, so neither table grows forever. Unpublished
/// events are never deleted, however old.
///
/// # Errors
/// [`StoreError`].
pub async fn sweep(
    client: &impl GenericClient,
    retention: Duration,
    limit: i64,
) -> Result<Swept, StoreError> {
    let secs = retention.as_secs_f64();
    let events = client
        .execute(
            "DELETE FROM ops.outbox WHERE id IN (
                 SELECT id FROM ops.outbox
                 WHERE published_at IS NOT NULL
                   AND published_at < now() - make_interval(secs => $1)
                 LIMIT $2 FOR UPDATE SKIP LOCKED)",
            &[&secs, &limit],
        )
        .await?;
    let keys = client
        .execute(
            "DELETE FROM ops.idempotency_keys WHERE ctid IN (
                 SELECT ctid FROM ops.idempotency_keys WHERE expires_at <= now()
                 LIMIT $1 FOR UPDATE SKIP LOCKED)",
            &[&limit],
        )
        .await?;
    Ok(Swept { events, keys })
}
