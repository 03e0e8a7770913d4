//! core-api's request and response bodies (SPEC §4). The gateway sends and reads these; core-api
//! reads and sends them. The tools' `outputSchema` is generated from the same types, so a
//! field added here shows in `tools/list` too.
//!
//! | route | request | answer |
//! |---|---|---|
//! | `GET /v1/transactions/{id}` | — | [`TransactionResponse`] |
//! | `GET /v1/accounts/{id}/transactions` | query [`ListTransactionsQuery`] | [`TransactionPage`] |
//! | `POST /v1/knowledge/search` | [`SearchRequest`] | [`SearchResponse`] |
//! | `GET /v1/health` | — | [`Health`] |
//! | `POST /v1/disputes` | [`DisputeRequest`] | 201 [`Dispute`] |
//! | `POST /v1/reviews` | [`ReviewRequest`] | 201 [`Review`] |
//!
//! The two writes need an `Idempotency-Key` (1–[`IDEMPOTENCY_KEY_MAX_CHARS`] printable ASCII
//! characters) and `X-Kosha-Principal` (SPEC §7; [`crate::headers`]). Each commits its row, its
//! idempotency record and one outbox event ([`DISPUTE_OPENED`], [`REVIEW_REQUESTED`], payload =
//! the 201 body) in one transaction.
//!
//! Every error answer is an [`crate::error::ErrorBody`].

#[cfg(feature = "openapi")]
mod schema;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default page size of `list_transactions`.
pub const LIST_LIMIT_DEFAULT: u32 = 20;
/// Largest page size of `list_transactions`.
pub const LIST_LIMIT_MAX: u32 = 100;
/// Longest `cursor` accepted, in characters.
pub const CURSOR_MAX_CHARS: usize = 512;
/// Longest search query, in characters (Unicode scalar values).
pub const QUERY_MAX_CHARS: usize = 512;
/// Default number of search results.
pub const TOP_K_DEFAULT: u32 = 5;
/// Largest number of search results.
pub const TOP_K_MAX: u32 = 20;
/// `degraded_reason` when embeddings were unavailable and ranking is full text only
/// (SPEC §10).
pub const EMBEDDINGS_UNAVAILABLE: &str = "embeddings_unavailable";

/// Longest dispute or review `reason`, in characters (Unicode scalar values); at least 1.
pub const REASON_MAX_CHARS: usize = 1000;
/// Longest `Idempotency-Key` (and `X-Kosha-Principal`), in bytes of printable ASCII; at least 1.
pub const IDEMPOTENCY_KEY_MAX_CHARS: usize = 255;
/// How long core-api keeps an idempotency key, in seconds (24 h, SPEC §4).
pub const IDEMPOTENCY_KEY_TTL_S: u64 = 24 * 3600;
/// `status` of a newly raised dispute.
pub const DISPUTE_OPEN: &str = "open";
/// `status` of a newly requested review.
pub const REVIEW_PENDING: &str = "pending_review";
/// Outbox event type of a raised dispute (SPEC §4).
pub const DISPUTE_OPENED: &str = "dispute.opened";
/// Outbox event type of a requested review (SPEC §4).
pub const REVIEW_REQUESTED: &str = "review.requested";

/// One card or account transaction. Amounts are integers in minor units (cents).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Transaction {
    /// `txn_000001` …
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::transaction_id))]
    pub transaction_id: String,
    /// `acc_0001` …
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::account_id))]
    pub account_id: String,
    /// Amount in minor units (cents).
    pub amount_minor: i64,
    /// ISO 4217 code, e.g. `EUR`.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Z]{3}$"))]
    pub currency: String,
    /// Merchant name as booked.
    pub merchant: String,
    /// Spending category, e.g. `groceries`.
    pub category: String,
    /// `booked`, `pending` or `reversed`.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::transaction_status))]
    pub status: String,
    /// Booking time, RFC 3339 UTC (`2026-03-04T10:15:00Z`).
    #[schemars(extend("format" = "date-time"))]
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub booked_at: String,
}

/// Answer of `GET /v1/transactions/{id}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransactionResponse {
    /// The transaction.
    pub transaction: Transaction,
}

/// Query of `GET /v1/accounts/{id}/transactions`; absent fields are left out of the query
/// string.
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListTransactionsQuery {
    /// Page size, 1–[`LIST_LIMIT_MAX`] (default [`LIST_LIMIT_DEFAULT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", param(schema_with = crate::core_api::schema::list_limit))]
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page (opaque, at most [`CURSOR_MAX_CHARS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", param(max_length = 512))]
    pub cursor: Option<String>,
    /// Inclusive lower bound on `booked_at`, RFC 3339 (empty: no bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", param(schema_with = crate::openapi::time_bound))]
    pub from: Option<String>,
    /// Inclusive upper bound on `booked_at`, RFC 3339 (empty: no bound); not before `from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", param(schema_with = crate::openapi::time_bound))]
    pub to: Option<String>,
}

/// Answer of `GET /v1/accounts/{id}/transactions`: newest first.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransactionPage {
    /// This page, newest first (`booked_at` desc, then `transaction_id` desc).
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub transactions: Vec<Transaction>,
    /// Cursor of the next page; `null` on the last page.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub next_cursor: Option<String>,
}

/// Body of `POST /v1/knowledge/search`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// Free text, 1–[`QUERY_MAX_CHARS`] characters, not blank.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::core_api::schema::query))]
    pub query: String,
    /// Results wanted, 1–[`TOP_K_MAX`] (default [`TOP_K_DEFAULT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::core_api::schema::top_k, required = false))]
    pub top_k: Option<u32>,
}

/// One knowledge-base search hit.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArticleHit {
    /// `kb_001` …
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::article_id))]
    pub article_id: String,
    /// Article title.
    pub title: String,
    /// A short plain-text excerpt around the matched terms.
    pub snippet: String,
    /// Relevance in [0, 1], higher is better; comparable across queries: a best hit near 0 means nothing answers the query.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub score: f64,
}

/// Answer of `POST /v1/knowledge/search`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResponse {
    /// Best first.
    #[cfg_attr(feature = "openapi", schema(max_items = 20))]
    pub results: Vec<ArticleHit>,
    /// `true` when ranking fell back to full text only (SPEC §10).
    pub degraded: bool,
    /// Why: [`EMBEDDINGS_UNAVAILABLE`]; absent when not degraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(schema_with = crate::core_api::schema::degraded_reason, required = false)
    )]
    pub degraded_reason: Option<String>,
}

/// Answer of `GET /v1/health` when healthy.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// `ok`.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::health_status))]
    pub status: String,
    /// The embeddings API core-api is configured with; `null` when none is (search is then
    /// full text only and says `degraded: true`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub embedder: Option<EmbedderHealth>,
}

/// The embedder of [`Health`] (issue 13).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderHealth {
    /// `KOSHA_EMBEDDINGS_MODEL`, e.g. `text-embedding-3-small`.
    pub model: String,
    /// `KOSHA_EMBEDDINGS_DIMENSIONS`.
    pub dimensions: u32,
    /// core-api's `openai` breaker: `closed`, `half_open`, `open` or `forced_open`.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::breaker_state))]
    pub breaker: String,
}

/// Body of `POST /v1/disputes` (SPEC §4).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DisputeRequest {
    /// The disputed transaction, `txn_` + 6 or more digits; must exist (404).
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::transaction_id))]
    pub transaction_id: String,
    /// 1–[`REASON_MAX_CHARS`] characters, no control characters other than tab, CR, LF.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::core_api::schema::reason))]
    pub reason: String,
    /// Disputed amount in minor units, 1 to the transaction's absolute amount; absent means
    /// the transaction's absolute amount.
    /// A whole number written as a float (`100.0`) counts ([`crate::integer`]).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::integer::option"
    )]
    #[cfg_attr(
        feature = "openapi",
        schema(schema_with = crate::openapi::dispute_amount, required = false)
    )]
    pub amount_minor: Option<i64>,
}

/// 201 answer of `POST /v1/disputes`, also the `payload` of its `dispute.opened` event.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Dispute {
    /// `dsp_` + a ULID ([`crate::ids::DISPUTE`]).
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::dispute_id))]
    pub dispute_id: String,
    /// The disputed transaction.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::transaction_id))]
    pub transaction_id: String,
    /// [`DISPUTE_OPEN`].
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::core_api::schema::dispute_status))]
    pub status: String,
    /// Disputed amount in minor units (cents), positive.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::positive_amount))]
    pub amount_minor: i64,
    /// The reason as given.
    pub reason: String,
    /// Creation time, RFC 3339 UTC.
    #[schemars(extend("format" = "date-time"))]
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub created_at: String,
}

/// Body of `POST /v1/reviews` (SPEC §4).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewRequest {
    /// The transaction to review, `txn_` + 6 or more digits; must exist (404).
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::transaction_id))]
    pub transaction_id: String,
    /// 1–[`REASON_MAX_CHARS`] characters, no control characters other than tab, CR, LF.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::core_api::schema::reason))]
    pub reason: String,
}

/// 201 answer of `POST /v1/reviews`, also the `payload` of its `review.requested` event.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Review {
    /// `rev_` + a ULID ([`crate::ids::REVIEW`]).
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::review_id))]
    pub review_id: String,
    /// The transaction under review.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::transaction_id))]
    pub transaction_id: String,
    /// [`REVIEW_PENDING`].
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::core_api::schema::review_status))]
    pub status: String,
    /// The reason as given.
    pub reason: String,
    /// Creation time, RFC 3339 UTC.
    #[schemars(extend("format" = "date-time"))]
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub created_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_optional_fields_stay_off_the_wire() {
        let q = ListTransactionsQuery {
            limit: Some(5),
            ..ListTransactionsQuery::default()
        };
        assert_eq!(serde_json::to_value(&q).unwrap(), json!({"limit": 5}));
        let s = SearchRequest {
            query: "fees".into(),
            top_k: None,
        };
        assert_eq!(serde_json::to_value(&s).unwrap(), json!({"query": "fees"}));
    }

    #[test]
    fn unknown_request_fields_are_refused() {
        assert!(
            serde_json::from_value::<SearchRequest>(json!({"query": "x", "limit": 3})).is_err()
        );
        assert!(
            serde_json::from_value::<ReviewRequest>(
                json!({"transaction_id": "txn_000001", "reason": "x", "amount_minor": 1})
            )
            .is_err()
        );
    }

    #[test]
    fn dispute_amount_is_optional_on_the_wire() {
        let r: DisputeRequest =
            serde_json::from_value(json!({"transaction_id": "txn_000001", "reason": "x"})).unwrap();
        assert_eq!(r.amount_minor, None);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"transaction_id": "txn_000001", "reason": "x"})
        );
    }
}
