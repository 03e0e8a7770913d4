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
use kosha_contract::dependency::Dependency;
use kosha_contract::error::{ErrorBody, ErrorCode};

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
        /// The failing dependency (SPEC §8): `postgres`, `openai`.
        dependency: Dependency,
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
    pub fn status_and_code(&self) -> (StatusCode, ErrorCode) {
        match self {
            Self::InvalidArgument(_) => (StatusCode::BAD_REQUEST, ErrorCode::InvalidArgument),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, ErrorCode::NotFound),
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, ErrorCode::InvalidArgument),
            Self::Conflict(_) => (StatusCode::CONFLICT, ErrorCode::Conflict),
            Self::DeadlineExceeded => (StatusCode::GATEWAY_TIMEOUT, ErrorCode::DeadlineExceeded),
            Self::DependencyUnavailable { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::DependencyUnavailable,
            ),
            Self::Overloaded { .. } => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Overloaded),
            Self::Internal => (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal),
        }
    }

    /// The wire body of SPEC §7.
    pub fn body(&self) -> ErrorBody {
        let (_, code) = self.status_and_code();
        let mut body = ErrorBody::new(code, self.to_string());
        match self {
            Self::DependencyUnavailable {
                dependency,
                retry_after_s,
            } => {
                body.error.retry_after_s = Some(*retry_after_s);
                body.error.dependency = Some(dependency.as_str().to_owned());
            }
            Self::Overloaded { retry_after_s } => body.error.retry_after_s = Some(*retry_after_s),
            Self::InvalidArgument(_)
            | Self::NotFound(_)
            | Self::MethodNotAllowed
            | Self::Conflict(_)
            | Self::DeadlineExceeded
            | Self::Internal => {}
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, _) = self.status_and_code();
        let body = self.body();
        let retry_after_s = body.error.retry_after_s;
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
                    dependency: Dependency::Postgres,
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
                dependency: Dependency::Postgres,
                retry_after_s: 1,
            },
            ApiError::Overloaded { retry_after_s: 1 },
            ApiError::Internal,
        ];
        for e in all {
            let (_, code) = e.status_and_code();
            assert!(ErrorCode::ALL.contains(&code), "{code:?}");
        }
    }

    #[test]
    fn unavailable_carries_dependency_and_retry_after() {
        let error = ApiError::DependencyUnavailable {
            dependency: Dependency::Postgres,
            retry_after_s: 2,
        };
        let body = serde_json::to_value(error.body()).unwrap();
        assert_eq!(body["error"]["dependency"], "postgres");
        assert_eq!(body["error"]["retry_after_s"], 2);
        let response = error.into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
    }
}
