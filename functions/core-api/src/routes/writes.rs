//! `POST /v1/disputes` and `POST /v1/reviews` (SPEC §4, §7; issue 11).
//!
//! Headers, checked before the body:
//! - `Idempotency-Key` (required): 1–255 printable ASCII characters (U+0020–U+007E); absent or
//!   malformed is 400 `invalid_argument`.
//! - `X-Kosha-Principal` (required on writes, same rule): keys are scoped by it and by the
//!   endpoint (ARCHITECTURE pitfall 15), so a write without a caller has nothing to scope by.
//!   The gateway always sends it (SPEC §5).
//! - `X-Kosha-User` (optional, same rule when present): the calling person's `sub` (SPEC §5
//!   "The user"). Keys are scoped by it too, so two users of one app client never replay each
//!   other's answers (issue 44); it is stored as the record's `created_by` and in the outbox
//!   event's payload. Absent (a gateway from before issue 44), the user is the principal, as
//!   a machine client's is: such a write is attributed to its client.
//!
//! The body's canonical JSON ([`kosha_contract::canonical`]) is hashed with SHA-256 and stored
//! with the key: the same key and body replay the first response (same status and body, plus
//! `Idempotent-Replayed: true`), the same key with another body is 409 `conflict`. Refusals
//! (400, 404, 409) store nothing, so a corrected request may reuse its key.
//!
//! Business rules: the transaction must exist (404); `reason` is 1–1000 characters without
//! control characters ([`crate::text::plain`]); a dispute's `amount_minor` defaults to the
//! transaction's absolute amount and must be 1 to that amount (400); a transaction has at most
//! one open dispute (409 naming it).

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kosha_contract::core_api::{Dispute, Review};
use kosha_contract::core_api::{
    DisputeRequest, IDEMPOTENCY_KEY_MAX_CHARS, REASON_MAX_CHARS, ReviewRequest,
};
use kosha_contract::error::ErrorBody;
use kosha_contract::headers::{IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED, PRINCIPAL, USER};
use kosha_contract::ids::TRANSACTION;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::AppState;
use super::extract::ApiJson;
use super::openapi::{PostgresFailures, WriteHeaders};
use crate::db::writes::{self, KeyScope, NewDispute, NewReview, Refusal, Written};
use crate::deadline::Budget;
use crate::error::ApiError;
use crate::{ids, text};

/// Scope name of `POST /v1/disputes` in `ops.idempotency_keys`.
pub const DISPUTES_ENDPOINT: &str = "POST /v1/disputes";
/// Scope name of `POST /v1/reviews` in `ops.idempotency_keys`.
pub const REVIEWS_ENDPOINT: &str = "POST /v1/reviews";

/// The value of header `name`, required, 1–255 printable ASCII characters.
fn printable_header<'a>(
    headers: &'a HeaderMap,
    name: &str,
    label: &str,
) -> Result<&'a str, ApiError> {
    let Some(value) = headers.get(name) else {
        return Err(ApiError::invalid(format!("{label} header is required")));
    };
    let bytes = value.as_bytes();
    if bytes.is_empty()
        || bytes.len() > IDEMPOTENCY_KEY_MAX_CHARS
        || !bytes.iter().all(|b| (0x20..=0x7e).contains(b))
    {
        return Err(ApiError::invalid(format!(
            "{label} must be 1 to {IDEMPOTENCY_KEY_MAX_CHARS} printable ASCII characters"
        )));
    }
    value
        .to_str()
        .map_err(|_| ApiError::invalid(format!("{label} must be printable ASCII")))
}

/// `body` as `T`, naming the offending field on failure (`amount_minor: invalid value …`).
fn typed<T: DeserializeOwned>(body: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(body).map_err(|e| {
        let path = e.path().to_string();
        let path = kosha_contract::echo::clip(&path);
        let inner = e.into_inner().to_string();
        let inner = kosha_contract::echo::clip_serde_message(&inner);
        if path == "." {
            ApiError::invalid(format!("request body has the wrong shape: {inner}"))
        } else {
            ApiError::invalid(format!(
                "request body has the wrong shape at {path}: {inner}"
            ))
        }
    })
}

fn reason(value: &str) -> Result<(), ApiError> {
    let chars = value.chars().count();
    if chars == 0 || chars > REASON_MAX_CHARS {
        return Err(ApiError::invalid(format!(
            "reason must be 1 to {REASON_MAX_CHARS} characters (got {chars})"
        )));
    }
    text::plain("reason", value)
}

fn refusal(r: Refusal, transaction_id: &str) -> ApiError {
    match r {
        Refusal::KeyReused => ApiError::Conflict(
            "Idempotency-Key was already used with a different request body".to_owned(),
        ),
        Refusal::TransactionNotFound => {
            ApiError::NotFound(format!("transaction {transaction_id} not found"))
        }
        Refusal::AmountAboveTransaction { max } => ApiError::invalid(format!(
            "amount_minor must be from 1 to the transaction's amount ({max})"
        )),
        Refusal::OpenDispute { dispute_id } => ApiError::Conflict(format!(
            "transaction {transaction_id} already has the open dispute {dispute_id}"
        )),
    }
}

/// The stored JSON body with its status; a replay also says so in `Idempotent-Replayed`.
fn answer(written: Written) -> Response {
    let (status, body, replayed) = match written {
        Written::Created(body) => (StatusCode::CREATED, body, false),
        Written::Replayed { status, body } => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::CREATED),
            body,
            true,
        ),
    };
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
    if replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    response
}

/// A write's checked headers and body.
struct Prepared<T> {
    /// `X-Kosha-Principal`.
    principal: String,
    /// `X-Kosha-User`, or the principal when absent.
    user: String,
    /// `Idempotency-Key`.
    key: String,
    /// SHA-256 (hex) of the canonical body.
    hash: String,
    /// The typed body.
    request: T,
}

impl<T> Prepared<T> {
    /// The key's scope on `endpoint`.
    fn scope<'a>(&'a self, endpoint: &'a str) -> KeyScope<'a> {
        KeyScope {
            principal: &self.principal,
            user: &self.user,
            endpoint,
            key: &self.key,
            request_hash: &self.hash,
        }
    }
}

/// Headers and body of a write.
fn prepare<T: DeserializeOwned>(headers: &HeaderMap, body: Value) -> Result<Prepared<T>, ApiError> {
    let key = printable_header(headers, IDEMPOTENCY_KEY, "Idempotency-Key")?.to_owned();
    let principal = printable_header(headers, PRINCIPAL, "X-Kosha-Principal")?.to_owned();
    let user = if headers.contains_key(USER) {
        printable_header(headers, USER, "X-Kosha-User")?.to_owned()
    } else {
        principal.clone()
    };
    let hash = kosha_contract::canonical::sha256_hex(&body);
    let request = typed(body)?;
    Ok(Prepared {
        principal,
        user,
        key,
        hash,
        request,
    })
}

/// `POST /v1/disputes`: 201 [`kosha_contract::core_api::Dispute`].
///
/// # Errors
/// 400 (headers, body, amount, reason, id shape), 404 (transaction), 409 (key reused with
/// another body, open dispute), 503/504 from PostgreSQL.
#[utoipa::path(
    post,
    path = "/v1/disputes",
    tag = "writes",
    operation_id = "raise_dispute",
    params(WriteHeaders),
    request_body = DisputeRequest,
    responses(
        (status = 201, description = "Raised (or, with Idempotent-Replayed: true, the first \
            answer for this key and body).", body = Dispute,
            headers(("Idempotent-Replayed" = String, description = "true on a replay."))),
        (status = 400, description = "invalid_argument: a missing or malformed header, or the \
            body (not JSON, duplicate key, wrong shape, malformed id, bad reason, amount_minor not from 1 to the transaction's amount).", body = ErrorBody),
        (status = 404, description = "not_found: no such transaction.", body = ErrorBody),
        (status = 409, description = "conflict: the Idempotency-Key was used with another body, or the transaction already has an open dispute (named).",
            body = ErrorBody),
        PostgresFailures,
    )
)]
pub async fn raise_dispute(
    State(state): State<AppState>,
    budget: Budget,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    let prepared = prepare::<DisputeRequest>(&headers, body)?;
    let request = &prepared.request;
    ids::check("transaction_id", &request.transaction_id, &TRANSACTION)?;
    reason(&request.reason)?;
    if request.amount_minor.is_some_and(|a| a < 1) {
        return Err(ApiError::invalid("amount_minor must be a positive integer"));
    }
    let scope = prepared.scope(DISPUTES_ENDPOINT);
    let new = NewDispute {
        transaction_id: &request.transaction_id,
        reason: &request.reason,
        amount_minor: request.amount_minor,
    };
    match writes::raise_dispute(&state.pool, &budget, &scope, &new).await? {
        Ok(written) => Ok(answer(written)),
        Err(r) => Err(refusal(r, &request.transaction_id)),
    }
}

/// `POST /v1/reviews`: 201 [`kosha_contract::core_api::Review`].
///
/// # Errors
/// 400 (headers, body, reason, id shape), 404 (transaction), 409 (key reused with another
/// body), 503/504 from PostgreSQL.
#[utoipa::path(
    post,
    path = "/v1/reviews",
    tag = "writes",
    operation_id = "request_review",
    params(WriteHeaders),
    request_body = ReviewRequest,
    responses(
        (status = 201, description = "Requested (or, with Idempotent-Replayed: true, the first \
            answer for this key and body).", body = Review,
            headers(("Idempotent-Replayed" = String, description = "true on a replay."))),
        (status = 400, description = "invalid_argument: a missing or malformed header, or the \
            body (not JSON, duplicate key, wrong shape, malformed id, bad reason).", body = ErrorBody),
        (status = 404, description = "not_found: no such transaction.", body = ErrorBody),
        (status = 409, description = "conflict: the Idempotency-Key was used with another body.",
            body = ErrorBody),
        PostgresFailures,
    )
)]
pub async fn request_review(
    State(state): State<AppState>,
    budget: Budget,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    let prepared = prepare::<ReviewRequest>(&headers, body)?;
    let request = &prepared.request;
    ids::check("transaction_id", &request.transaction_id, &TRANSACTION)?;
    reason(&request.reason)?;
    let scope = prepared.scope(REVIEWS_ENDPOINT);
    let new = NewReview {
        transaction_id: &request.transaction_id,
        reason: &request.reason,
    };
    match writes::request_review(&state.pool, &budget, &scope, &new).await? {
        Ok(written) => Ok(answer(written)),
        Err(r) => Err(refusal(r, &request.transaction_id)),
    }
}
