//! The error codes of SPEC §3 and the error body of SPEC §7, shared by core-api's and
//! screening-sim's HTTP answers and the gateway's tool errors:
//! `{"error": {"code", "message", "retry_after_s"?, "dependency"?}}`.

#[cfg(feature = "openapi")]
mod schema;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A stable error code (SPEC §3). Clients branch on it; messages are for reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A missing, mistyped, out-of-range or malformed argument (HTTP 400).
    InvalidArgument,
    /// The addressed record does not exist (404).
    NotFound,
    /// The request conflicts with current state (409).
    Conflict,
    /// The deadline passed before the work could complete (504).
    DeadlineExceeded,
    /// A dependency is down or its breaker is open (503).
    DependencyUnavailable,
    /// At capacity: a bulkhead or pool is full (503 or 429).
    Overloaded,
    /// The caller's token bucket holds less than the call's cost (SPEC §6); comes with
    /// `retry_after_s`. Only the gateway answers it, as a tool error.
    RateLimited,
    /// A policy refused the call for its arguments, its record or the time (SPEC §5a); the
    /// message is the policy's reason. Only the gateway answers it, as a tool error.
    Forbidden,
    /// A person must approve this call in a client that can show them the question (SPEC
    /// §5b): a revision before 2026-07-28, no elicitation capability, or a machine token. Only
    /// the gateway answers it, as a tool error.
    ConfirmationRequired,
    /// The person asked to confirm this call declined or cancelled it (SPEC §5b). Only the
    /// gateway answers it, as a tool error.
    Declined,
    /// A bug on the answering side (500); details are logged, never sent.
    Internal,
    /// A code this side does not know (a newer peer); treated like `internal` by readers.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

impl ErrorCode {
    /// The eleven codes of SPEC §3, in its order.
    pub const ALL: [Self; 11] = [
        Self::InvalidArgument,
        Self::NotFound,
        Self::Conflict,
        Self::DeadlineExceeded,
        Self::DependencyUnavailable,
        Self::Overloaded,
        Self::RateLimited,
        Self::Forbidden,
        Self::ConfirmationRequired,
        Self::Declined,
        Self::Internal,
    ];

    /// The code on the wire (`invalid_argument`, …; `unknown` for [`ErrorCode::Unknown`]).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArgument => "invalid_argument",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::DeadlineExceeded => "deadline_exceeded",
            Self::DependencyUnavailable => "dependency_unavailable",
            Self::Overloaded => "overloaded",
            Self::RateLimited => "rate_limited",
            Self::Forbidden => "forbidden",
            Self::ConfirmationRequired => "confirmation_required",
            Self::Declined => "declined",
            Self::Internal => "internal",
            Self::Unknown => "unknown",
        }
    }
}

/// The body of every error answer: `{"error": {...}}`. Its JSON Schema is the error half of
/// every tool's `outputSchema` (SPEC §3).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// The inside of an [`ErrorBody`].
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorDetail {
    /// The stable code.
    pub code: ErrorCode,
    /// For the caller (an agent that should correct itself): names the field, never internals.
    pub message: String,
    /// Whole seconds after which a retry may succeed (rounded up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(schema_with = crate::openapi::retry_after, required = false)
    )]
    pub retry_after_s: Option<u64>,
    /// The failing dependency's name (SPEC §8: `postgres`, `openai`, …), when one failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(schema_with = crate::error::schema::dependency, required = false)
    )]
    pub dependency: Option<String>,
}

impl ErrorBody {
    /// A body with `code` and `message`, no retry hint and no dependency.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            error: ErrorDetail {
                code,
                message: message.into(),
                retry_after_s: None,
                dependency: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_wire_shape_omits_absent_fields() {
        let body = ErrorBody::new(ErrorCode::NotFound, "transaction txn_999999 not found");
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            json!({"error": {"code": "not_found", "message": "transaction txn_999999 not found"}})
        );
        let mut busy = ErrorBody::new(ErrorCode::DependencyUnavailable, "postgres is unavailable");
        busy.error.retry_after_s = Some(5);
        busy.error.dependency = Some("postgres".into());
        let v = serde_json::to_value(&busy).unwrap();
        assert_eq!(v["error"]["retry_after_s"], 5);
        assert_eq!(v["error"]["dependency"], "postgres");
    }

    #[test]
    fn every_code_round_trips_and_unknown_codes_are_read_not_refused() {
        for code in ErrorCode::ALL {
            let s = serde_json::to_string(&code).unwrap();
            assert_eq!(s, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&s).unwrap(), code);
        }
        let body: ErrorBody =
            serde_json::from_value(json!({"error": {"code": "teapot", "message": "m"}})).unwrap();
        assert_eq!(body.error.code, ErrorCode::Unknown);
    }
}
