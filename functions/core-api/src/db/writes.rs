//! The write transactions of `POST /v1/disputes` and `POST /v1/reviews` (SPEC §4, §7).
//!
//! Each runs in one read-write transaction under the request's statement timeout:
//!
//! 1. Claim the idempotency key: `INSERT … ON CONFLICT DO UPDATE … WHERE expired` (ARCHITECTURE
//!    pitfall 14). A concurrent holder of the same key makes this statement wait for that
//!    transaction to end; if it committed, the claim fails and the committed response is
//!    replayed (or refused as a conflict when the body hash differs); if it rolled back, the
//!    claim succeeds. An expired key (older than 24 h) is reclaimed in place, so expiry is lazy.
//! 2. The business rules and the row ([`NewDispute`], [`NewReview`]).
//! 3. The response into the key's row and one `ops.outbox` event, then commit. The event's
//!    payload is the response with `created_by`, the user (SPEC §5 "The user").
//!
//! A refusal, an error or a timeout at any step rolls everything back: no row, no key, no event.

use kosha_contract::core_api::{
    DISPUTE_OPEN, DISPUTE_OPENED, Dispute, IDEMPOTENCY_KEY_TTL_S, REVIEW_PENDING, REVIEW_REQUESTED,
    Review,
};
use serde_json::Value;

use super::queries::rfc3339;
use super::tx::{Access, begin, with_client};
use super::{DbError, PgPool};
use crate::deadline::Budget;

/// Who asked, where, with which key and body: the identity of one idempotent request.
#[derive(Debug, Clone, Copy)]
pub struct KeyScope<'a> {
    /// `X-Kosha-Principal`.
    pub principal: &'a str,
    /// `X-Kosha-User` (the principal when absent): the record's `created_by`.
    pub user: &'a str,
    /// The endpoint, e.g. `POST /v1/disputes`.
    pub endpoint: &'a str,
    /// `Idempotency-Key`.
    pub key: &'a str,
    /// SHA-256 (lowercase hex) of the canonical body.
    pub request_hash: &'a str,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// This request created the record; its 201 body (`T` as JSON), as stored for replays.
    Created(String),
    /// An earlier request with the same key and body did; its status and body.
    Replayed {
        /// The first response's HTTP status.
        status: u16,
        /// The first response's body, byte for byte (JSON).
        body: String,
    },
}

/// Why a write was refused (nothing was written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The key was used (by this principal and user, on this endpoint) with a different body.
    KeyReused,
    /// The transaction does not exist.
    TransactionNotFound,
    /// The requested amount exceeds the transaction's absolute amount `max` (minor units).
    AmountAboveTransaction {
        /// The transaction's absolute amount.
        max: i64,
    },
    /// The transaction already has the open dispute `dispute_id`.
    OpenDispute {
        /// The open dispute.
        dispute_id: String,
    },
}

/// A dispute to raise; fields already checked for shape by the route.
#[derive(Debug, Clone)]
pub struct NewDispute<'a> {
    /// `txn_…`.
    pub transaction_id: &'a str,
    /// 1–1000 characters.
    pub reason: &'a str,
    /// Positive, or `None` for the transaction's absolute amount.
    pub amount_minor: Option<i64>,
}

/// A review to request; fields already checked for shape by the route.
#[derive(Debug, Clone)]
pub struct NewReview<'a> {
    /// `txn_…`.
    pub transaction_id: &'a str,
    /// 1–1000 characters.
    pub reason: &'a str,
}

/// One outbox event: what the record is and its id.
struct Event<'a> {
    aggregate: &'a str,
    aggregate_id: String,
    event_type: &'a str,
}

type Outcome = Result<Result<Written, Refusal>, DbError>;

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, DbError> {
    serde_json::to_value(value).map_err(|e| DbError::Query(format!("response not JSON: {e}")))
}

/// The idempotent frame around `create` (steps 1 and 3 of the module doc).
async fn idempotent<T: serde::Serialize>(
    pool: &PgPool,
    budget: &Budget,
    scope: &KeyScope<'_>,
    create: impl AsyncFnOnce(
        &deadpool_postgres::Transaction<'_>,
    ) -> Result<Result<(T, Event<'static>), Refusal>, DbError>,
) -> Outcome {
    with_client(pool, budget, "idempotent_write", async |client| {
        let tx = begin(client, budget, Access::ReadWrite).await?;
        let claim = tx
            .prepare_cached(
                "INSERT INTO ops.idempotency_keys
                     (principal, endpoint, key, request_hash, expires_at, user_id)
                 VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5), $6)
                 ON CONFLICT (principal, user_id, endpoint, key) DO UPDATE
                     SET request_hash = EXCLUDED.request_hash, status_code = NULL,
                         response = NULL, created_at = now(), expires_at = EXCLUDED.expires_at
                     WHERE ops.idempotency_keys.expires_at <= now()
                 RETURNING 1",
            )
            .await?;
        let ttl = f64::from(u32::try_from(IDEMPOTENCY_KEY_TTL_S).unwrap_or(u32::MAX));
        let claimed = tx
            .query_opt(
                &claim,
                &[
                    &scope.principal,
                    &scope.endpoint,
                    &scope.key,
                    &scope.request_hash,
                    &ttl,
                    &scope.user,
                ],
            )
            .await?
            .is_some();
        if !claimed {
            let first = tx
                .prepare_cached(
                    "SELECT request_hash, status_code, response FROM ops.idempotency_keys
                     WHERE principal = $1 AND endpoint = $2 AND key = $3 AND user_id = $4",
                )
                .await?;
            let row = tx
                .query_opt(
                    &first,
                    &[&scope.principal, &scope.endpoint, &scope.key, &scope.user],
                )
                .await?
                .ok_or_else(|| DbError::Query("claimed key vanished".to_owned()))?;
            tx.commit().await?;
            let hash: String = row.try_get(0)?;
            if hash != scope.request_hash {
                return Ok(Err(Refusal::KeyReused));
            }
            let status: Option<i32> = row.try_get(1)?;
            let body: Option<String> = row.try_get(2)?;
            return match (status.and_then(|s| u16::try_from(s).ok()), body) {
                (Some(status), Some(body)) => Ok(Ok(Written::Replayed { status, body })),
                _ => Err(DbError::Query(
                    "committed key without a response".to_owned(),
                )),
            };
        }
        let (body, event) = match create(&tx).await? {
            Ok(created) => created,
            // Dropping `tx` rolls back the claim too.
            Err(refusal) => return Ok(Err(refusal)),
        };
        let mut payload = to_json(&body)?;
        let text = payload.to_string();
        let record = tx
            .prepare_cached(
                "UPDATE ops.idempotency_keys SET status_code = 201, response = $4
                 WHERE principal = $1 AND endpoint = $2 AND key = $3 AND user_id = $5",
            )
            .await?;
        tx.execute(
            &record,
            &[
                &scope.principal,
                &scope.endpoint,
                &scope.key,
                &text,
                &scope.user,
            ],
        )
        .await?;
        // The event names the person; the response does not (SPEC §4 shapes, §5).
        if let Value::Object(fields) = &mut payload {
            fields.insert("created_by".to_owned(), Value::from(scope.user));
        }
        let outbox = tx
            .prepare_cached(
                "INSERT INTO ops.outbox (event_id, aggregate, aggregate_id, event_type, payload)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .await?;
        let event_id = ulid::Ulid::new().to_string();
        tx.execute(
            &outbox,
            &[
                &event_id,
                &event.aggregate,
                &event.aggregate_id,
                &event.event_type,
                &payload,
            ],
        )
        .await?;
        tx.commit().await?;
        Ok(Ok(Written::Created(text)))
    })
    .await
}

/// The transaction's absolute amount, or `None` when it does not exist.
async fn transaction_amount(
    tx: &deadpool_postgres::Transaction<'_>,
    transaction_id: &str,
) -> Result<Option<i64>, DbError> {
    let lookup = tx
        .prepare_cached("SELECT amount_minor FROM core.transactions WHERE transaction_id = $1")
        .await?;
    let Some(row) = tx.query_opt(&lookup, &[&transaction_id]).await? else {
        return Ok(None);
    };
    let amount: i64 = row.try_get(0)?;
    // |i64::MIN| does not fit; no seeded amount comes near it.
    Ok(Some(amount.checked_abs().unwrap_or(i64::MAX)))
}

/// Raises a dispute idempotently.
///
/// # Errors
/// [`DbError`] from the pool or PostgreSQL; the business refusals are the inner `Err`.
pub async fn raise_dispute(
    pool: &PgPool,
    budget: &Budget,
    scope: &KeyScope<'_>,
    new: &NewDispute<'_>,
) -> Outcome {
    idempotent(pool, budget, scope, async |tx| {
        let Some(max) = transaction_amount(tx, new.transaction_id).await? else {
            return Ok(Err(Refusal::TransactionNotFound));
        };
        let amount = new.amount_minor.unwrap_or(max);
        if amount > max || amount < 1 {
            return Ok(Err(Refusal::AmountAboveTransaction { max }));
        }
        let dispute_id = format!("dsp_{}", ulid::Ulid::new());
        // The partial unique index decides between racing disputes under different keys: the
        // loser waits for the winner's commit, inserts nothing, then reads the winner's id.
        let insert = tx
            .prepare_cached(
                "INSERT INTO core.disputes
                     (dispute_id, transaction_id, reason, amount_minor, status, created_by,
                      client_id)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (transaction_id) WHERE status = 'open' DO NOTHING
                 RETURNING created_at",
            )
            .await?;
        let inserted = tx
            .query_opt(
                &insert,
                &[
                    &dispute_id,
                    &new.transaction_id,
                    &new.reason,
                    &amount,
                    &DISPUTE_OPEN,
                    &scope.user,
                    &scope.principal,
                ],
            )
            .await?;
        let Some(row) = inserted else {
            let open = tx
                .prepare_cached(
                    "SELECT dispute_id FROM core.disputes
                     WHERE transaction_id = $1 AND status = 'open'",
                )
                .await?;
            let row = tx
                .query_opt(&open, &[&new.transaction_id])
                .await?
                .ok_or_else(|| DbError::Query("open dispute vanished".to_owned()))?;
            return Ok(Err(Refusal::OpenDispute {
                dispute_id: row.try_get(0)?,
            }));
        };
        let dispute = Dispute {
            dispute_id: dispute_id.clone(),
            transaction_id: new.transaction_id.to_owned(),
            status: DISPUTE_OPEN.to_owned(),
            amount_minor: amount,
            reason: new.reason.to_owned(),
            created_at: rfc3339(row.try_get(0)?)?,
        };
        let event = Event {
            aggregate: "dispute",
            aggregate_id: dispute_id,
            event_type: DISPUTE_OPENED,
        };
        Ok(Ok((dispute, event)))
    })
    .await
}

/// Requests a review idempotently.
///
/// # Errors
/// [`DbError`] from the pool or PostgreSQL; the business refusals are the inner `Err`.
pub async fn request_review(
    pool: &PgPool,
    budget: &Budget,
    scope: &KeyScope<'_>,
    new: &NewReview<'_>,
) -> Outcome {
    idempotent(pool, budget, scope, async |tx| {
        if transaction_amount(tx, new.transaction_id).await?.is_none() {
            return Ok(Err(Refusal::TransactionNotFound));
        }
        let review_id = format!("rev_{}", ulid::Ulid::new());
        let insert = tx
            .prepare_cached(
                "INSERT INTO core.reviews
                     (review_id, transaction_id, reason, status, created_by, client_id)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 RETURNING created_at",
            )
            .await?;
        let row = tx
            .query_one(
                &insert,
                &[
                    &review_id,
                    &new.transaction_id,
                    &new.reason,
                    &REVIEW_PENDING,
                    &scope.user,
                    &scope.principal,
                ],
            )
            .await?;
        let review = Review {
            review_id: review_id.clone(),
            transaction_id: new.transaction_id.to_owned(),
            status: REVIEW_PENDING.to_owned(),
            reason: new.reason.to_owned(),
            created_at: rfc3339(row.try_get(0)?)?,
        };
        let event = Event {
            aggregate: "review",
            aggregate_id: review_id,
            event_type: REVIEW_REQUESTED,
        };
        Ok(Ok((review, event)))
    })
    .await
}
