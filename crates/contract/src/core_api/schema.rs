//! The schemas of core-api's bodies built from their own constants (feature `openapi`): the
//! statuses, the search and list bounds and the `reason` rule, with [`crate::openapi`]'s
//! builders.

use utoipa::openapi::schema::Schema;

use crate::core_api;
use crate::openapi::{PLAIN_TEXT_PATTERN, QUERY_PATTERN, bounded_integer, string_enum, text};

/// `Dispute.status` of a 201: always `open` ([`core_api::DISPUTE_OPEN`]).
pub fn dispute_status() -> Schema {
    string_enum(
        &[core_api::DISPUTE_OPEN],
        "Always `open` for a new dispute.",
    )
}

/// `Review.status` of a 201: always `pending_review` ([`core_api::REVIEW_PENDING`]).
pub fn review_status() -> Schema {
    string_enum(
        &[core_api::REVIEW_PENDING],
        "Always `pending_review` for a new review.",
    )
}

/// `SearchResponse.degraded_reason`: present only when `degraded` is true (SPEC §10).
pub fn degraded_reason() -> Schema {
    string_enum(
        &[core_api::EMBEDDINGS_UNAVAILABLE],
        "Why ranking fell back to full text; absent when not degraded.",
    )
}

/// `SearchRequest.query`.
pub fn query() -> Schema {
    text(
        1,
        core_api::QUERY_MAX_CHARS,
        QUERY_PATTERN,
        "Free text, 1-512 characters (Unicode scalar values), not blank, no control characters but tab, CR and LF.",
    )
}

/// `SearchRequest.top_k`.
pub fn top_k() -> Schema {
    bounded_integer(
        1,
        Some(i64::from(core_api::TOP_K_MAX)),
        Some(core_api::TOP_K_DEFAULT),
        "Results wanted; absent or null means the default.",
    )
}

/// `reason` of a dispute or review.
pub fn reason() -> Schema {
    text(
        1,
        core_api::REASON_MAX_CHARS,
        PLAIN_TEXT_PATTERN,
        "1-1000 characters (Unicode scalar values), no control characters but tab, CR and LF; kept as given.",
    )
}

/// The query parameter `limit` of `GET /v1/accounts/{id}/transactions`.
pub fn list_limit() -> Schema {
    bounded_integer(
        1,
        Some(i64::from(core_api::LIST_LIMIT_MAX)),
        None,
        "Page size (default 20).",
    )
}
