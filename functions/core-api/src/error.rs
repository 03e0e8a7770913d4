//! The one error type of core-api's HTTP edge and its wire shape (SPEC §7).
//!
//! Every failure a handler can meet becomes an [`ApiError`]; [`ApiError::status_and_code`] is the
//! single exhaustive `match` from variant to HTTP status and error code, so a new variant cannot
//! silently become a 500. The body is always
//! `{"error": {"code", "message", "retry_after_s"?, "dependency"?}}`.
//!
//! Messages are written for the caller (an agent that should correct itself): they name the
//! offending field and never carry SQL, driver errors or other internals, which are logged.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::db::DbError;

/// A request that core-api refuses or cannot complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed: a bad id, date, cursor, limit, body or content type (400).
    #[error("{0}")]
    InvalidArgument(String),
    /// The route or the addressed record does not exist (404).
    #[error("{0}")]
    NotFound(String),
    /// The route exists but not for this method (405, code `invalid_argument`).
    #[error("method not allowed")]
    MethodNotAllowed,
    /// The request conflicts with the current state, e.g. an idempotency key reused (409).
    #[error("{0}")]
    Conflict(String),
    /// The request's deadline passed or ran out waiting for PostgreSQL, or PostgreSQL
    /// cancelled the statement on its timeout (504).
    #[error("deadline exceeded")]
    DeadlineExceeded,
    /// A dependency cannot be reached or failed (503).
    #[error("{dependency} is unavailable")]
    DependencyUnavailable {
        /// The dependency's name as in SPEC §8: `postgres`, `openai`.
        dependency: &'static str,
        /// Seconds after which a retry may succeed.
        retry_after_s: u64,
    },
    /// Every pooled connection stayed busy for the whole pool wait (503).
    #[error("service overloaded")]
    Overloaded {
        /// Seconds after which a retry may succeed.
        retry_after_s: u64,
    },
    /// A bug in core-api (500). The detail is logged where it happens, never sent.
    #[error("internal error")]
    Internal,
}

impl ApiError {
    /// An [`ApiError::InvalidArgument`] with `message` (which should name the field).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidArgument(message.into())
    }

    /// The HTTP status and SPEC §3 error code of this error: the one mapping, exhaustive.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            Self::InvalidArgument(_) => (StatusCode::BAD_REQUEST, "invalid_argument"),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "invalid_argument"),
            Self::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            Self::DeadlineExceeded => (StatusCode::GATEWAY_TIMEOUT, "deadline_exceeded"),
            Self::DependencyUnavailable { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "dependency_unavailable")
            }
            Self::Overloaded { .. } => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
            Self::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }

    fn retry_after_s(&self) -> Option<u64> {
        match self {
            Self::DependencyUnavailable { retry_after_s, .. }
            | Self::Overloaded { retry_after_s } => Some(*retry_after_s),
            _ => None,
        }
    }

    fn dependency(&self) -> Option<&'static str> {
        match self {
            Self::DependencyUnavailable { dependency, .. } => Some(dependency),
            _ => None,
        }
    }
}

/// The wire body: `{"error": {...}}`.
#[derive(Debug, Serialize)]
struct ErrorEnvelope<'a> {
    error: ErrorBody<'a>,
}

#[derive(Debug, Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_s: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dependency: Option<&'a str>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let retry_after_s = self.retry_after_s();
        let body = ErrorEnvelope {
            error: ErrorBody {
                code,
                message: self.to_string(),
                retry_after_s,
                dependency: self.dependency(),
            },
        };
        let mut response = (status, Json(body)).into_response();
        if let Some(seconds) = retry_after_s {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl From<DbError> for ApiError {
    /// Classified database failures, logged here with their detail (which never reaches the
    /// caller): a busy pool is `overloaded`, an unreachable database `dependency_unavailable`,
    /// a cancelled statement or a deadline reached waiting `deadline_exceeded`, a value PostgreSQL refused (SQLSTATE class
    /// 22) `invalid_argument` — the input's fault, never a 500 — and any other failing query a
    /// bug (`internal`).
    fn from(e: DbError) -> Self {
        match e {
            DbError::PoolExhausted => {
                tracing::warn!(error = %e, "postgres pool exhausted");
                Self::Overloaded { retry_after_s: 1 }
            }
            DbError::Unavailable(ref detail) => {
                tracing::warn!(detail = %detail, "postgres unavailable");
                Self::DependencyUnavailable {
                    dependency: "postgres",
                    retry_after_s: 2,
                }
            }
            DbError::StatementTimeout => {
                tracing::warn!("postgres statement timeout");
                Self::DeadlineExceeded
            }
            DbError::DeadlineExceeded => {
                tracing::warn!(error = %e, "postgres too slow for the request deadline");
                Self::DeadlineExceeded
            }
            DbError::InvalidValue {
                ref sqlstate,
                ref detail,
            } => {
                tracing::warn!(sqlstate = %sqlstate, detail = %detail, "postgres refused a value");
                Self::InvalidArgument(data_exception_message(sqlstate).to_owned())
            }
            DbError::Query(ref detail) => {
                tracing::error!(detail = %detail, "query failed");
                Self::Internal
            }
        }
    }
}

/// What a class-22 SQLSTATE (PostgreSQL "data exception") tells the caller about its input.
/// The database does not know which request field held the value, so the message names the
/// kind of value; routes check their fields first so this is a last line of defence.
fn data_exception_message(sqlstate: &str) -> &'static str {
    match sqlstate {
        // character_not_in_repertoire, untranslatable_character
        "22021" | "22P05" => {
            "a text value contains a character that cannot be stored (such as NUL)"
        }
        // string_data_right_truncation
        "22001" => "a text value is too long",
        // numeric_value_out_of_range
        "22003" => "a number is out of range",
        // invalid_datetime_format, datetime_field_overflow, invalid_time_zone_displacement_value
        "22007" | "22008" | "22009" => "a date or time is malformed or out of range",
        // invalid_text_representation
        "22P02" => "a value does not have the form its field needs",
        _ => "a value in the request is not valid",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_one_of_spec_section_3() {
        let all = [
            ApiError::invalid("x"),
            ApiError::NotFound("x".into()),
            ApiError::MethodNotAllowed,
            ApiError::Conflict("x".into()),
            ApiError::DeadlineExceeded,
            ApiError::DependencyUnavailable {
                dependency: "postgres",
                retry_after_s: 1,
            },
            ApiError::Overloaded { retry_after_s: 1 },
            ApiError::Internal,
        ];
        let allowed = [
            "invalid_argument",
            "not_found",
            "conflict",
            "deadline_exceeded",
            "dependency_unavailable",
            "overloaded",
            "internal",
        ];
        for e in all {
            let (_, code) = e.status_and_code();
            assert!(allowed.contains(&code), "{code}");
        }
    }

    #[test]
    fn unavailable_carries_dependency_and_retry_after() {
        let response = ApiError::DependencyUnavailable {
            dependency: "postgres",
            retry_after_s: 2,
        }
        .into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
    }
}
