//! The one error of the HTTP edge: every request the edge refuses itself is an [`EdgeError`],
//! answered as an `application/json` JSON-RPC 2.0 error
//! (`{"jsonrpc":"2.0","id":…,"error":{"code","message","data"?}}`) with the HTTP status of
//! SPEC §3, §5, §6. [`EdgeError::parts`] is the single exhaustive mapping to status, JSON-RPC
//! code, `data` and `Retry-After`, so a new variant cannot silently become a 500.
//!
//! | variant | status | code | `Retry-After` |
//! |---|---|---|---|
//! | `HostNotAllowed`, `OriginNotAllowed` | 403 | −32003 | |
//! | `Auth` | 401 / 403 (+ `WWW-Authenticate`; none for a groupless user) | −32001 / −32003 | |
//! | `BodyTooLarge` | 413 | −32600 | |
//! | `BodyTimeout` | 408 | −32600 | |
//! | `BodyUnreadable` | 400 | −32600 | |
//! | `Parse` | 400 | −32700 | |
//! | `InvalidRequest` | 400 | −32600 | |
//! | `InvalidParams` | 400 | −32602 | |
//! | `MethodNotFound` | 404 from 2026-07-28, else 200 | −32601 | |
//! | `Overloaded` | 503 | −32000, `data.code` `overloaded` | 1 |
//! | `PrincipalRateLimited` | 429 | −32029, `data.code` `rate_limited` | `retry_after_s` |
//! | `Transport` (rmcp's plain-text 4xx) | as rmcp's | −32600 | |
//! | `Internal` (rmcp's 5xx) | 500 | −32603 | |
//!
//! The implementation-defined codes (−32000…−32099, JSON-RPC 2.0 §5.1) are listed in
//! docs/operations.md. Messages quote no more than a clipped method name or header value.
//! A refusal sent before the body was read ([`EdgeError::leaves_body_unread`]) closes an
//! HTTP/1.1 connection, and says so (`Connection: close`, set by the edge), so a pooled client
//! does not reuse it.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::jsonrpc as rpc;

/// A request the edge refuses.
#[derive(Debug)]
pub enum EdgeError {
    /// The `Host` is not in `KOSHA_ALLOWED_HOSTS` (DNS-rebinding protection).
    HostNotAllowed,
    /// An `Origin` is present and not in `KOSHA_ALLOWED_ORIGINS`.
    OriginNotAllowed,
    /// No usable bearer token (401) or no usable role (403), with the public base URL the
    /// `WWW-Authenticate` header points at (RFC 9728 §5.1) and the scope it names (SPEC §5).
    Auth {
        /// Why.
        error: kosha_auth::AuthError,
        /// `https://mcp.example.com`.
        base: String,
        /// The scope a client should ask for: `<prefix>/agent`.
        scope: String,
        /// The request's id when its body was read and could be parsed, else `null`.
        id: Value,
    },
    /// The body exceeds 1 MiB.
    BodyTooLarge,
    /// The body did not arrive whole within `KOSHA_BODY_READ_TIMEOUT_MS`.
    BodyTimeout,
    /// The body stream failed.
    BodyUnreadable,
    /// Not JSON (JSON-RPC parse error); the id is unknowable.
    Parse {
        /// What is wrong and where, never input text.
        message: String,
    },
    /// Not a valid JSON-RPC request object.
    InvalidRequest {
        /// The request's id when a string or an integer, else `null`.
        id: Value,
        /// Why.
        message: String,
    },
    /// A known method with params that do not fit it.
    InvalidParams {
        /// The request's id.
        id: Value,
        /// Why.
        message: String,
    },
    /// A method this server does not serve (JSON-RPC −32601).
    MethodNotFound {
        /// The request's id.
        id: Value,
        /// Names the (clipped) method.
        message: String,
        /// Sent at protocol 2026-07-28 or later: HTTP 404 (SEP-2575), else 200, as rmcp
        /// answers −32601 (before 2026-07-28 a 404 means "session not found").
        stateless: bool,
    },
    /// Too many requests in flight on this instance (`KOSHA_MAX_IN_FLIGHT`).
    Overloaded {
        /// The request's id (`null` for a notification).
        id: Value,
    },
    /// The principal sent more than `KOSHA_PRINCIPAL_RPS` requests per second to this
    /// instance (SPEC §6); refused before the body is read.
    PrincipalRateLimited {
        /// Whole seconds until the next request is admitted, ≥ 1.
        retry_after_s: u64,
    },
    /// rmcp's own plain-text refusal of a request as sent (400, 405, 406, 415, …).
    Transport {
        /// rmcp's status.
        status: StatusCode,
        /// rmcp's text, clipped.
        message: String,
    },
    /// rmcp failed (a 5xx); the detail is not sent.
    Internal,
}

/// What an [`EdgeError`] answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Parts {
    /// HTTP status.
    pub status: StatusCode,
    /// JSON-RPC error code.
    pub code: i32,
    /// `error.data`.
    pub data: Option<Value>,
    /// `Retry-After`, seconds.
    pub retry_after_s: Option<u64>,
}

impl EdgeError {
    /// The one mapping to status, JSON-RPC code, `data` and `Retry-After`.
    pub fn parts(&self) -> Parts {
        let (status, code, data, retry_after_s) = match self {
            Self::HostNotAllowed | Self::OriginNotAllowed => {
                (StatusCode::FORBIDDEN, rpc::FORBIDDEN, None, None)
            }
            Self::Auth { error, .. } => {
                let status = error.status();
                let code = if status == StatusCode::FORBIDDEN {
                    rpc::FORBIDDEN
                } else {
                    rpc::UNAUTHORIZED
                };
                (status, code, None, None)
            }
            Self::BodyTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                rpc::INVALID_REQUEST,
                None,
                None,
            ),
            Self::BodyTimeout => (
                StatusCode::REQUEST_TIMEOUT,
                rpc::INVALID_REQUEST,
                None,
                None,
            ),
            Self::BodyUnreadable => (StatusCode::BAD_REQUEST, rpc::INVALID_REQUEST, None, None),
            Self::Parse { .. } => (StatusCode::BAD_REQUEST, rpc::PARSE_ERROR, None, None),
            Self::InvalidRequest { .. } => {
                (StatusCode::BAD_REQUEST, rpc::INVALID_REQUEST, None, None)
            }
            Self::InvalidParams { .. } => {
                (StatusCode::BAD_REQUEST, rpc::INVALID_PARAMS, None, None)
            }
            Self::MethodNotFound { stateless, .. } => {
                let status = if *stateless {
                    StatusCode::NOT_FOUND
                } else {
                    StatusCode::OK
                };
                (status, rpc::METHOD_NOT_FOUND, None, None)
            }
            Self::Overloaded { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                rpc::OVERLOADED,
                Some(json!({ "code": "overloaded", "retry_after_s": 1 })),
                Some(1),
            ),
            Self::PrincipalRateLimited { retry_after_s } => (
                StatusCode::TOO_MANY_REQUESTS,
                rpc::RATE_LIMITED,
                Some(json!({ "code": "rate_limited", "retry_after_s": retry_after_s })),
                Some(*retry_after_s),
            ),
            Self::Transport { status, .. } => (*status, rpc::INVALID_REQUEST, None, None),
            Self::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                rpc::INTERNAL_ERROR,
                None,
                None,
            ),
        };
        Parts {
            status,
            code,
            data,
            retry_after_s,
        }
    }

    /// The JSON-RPC `id` to answer with.
    pub fn id(&self) -> Value {
        match self {
            Self::InvalidRequest { id, .. }
            | Self::InvalidParams { id, .. }
            | Self::MethodNotFound { id, .. }
            | Self::Auth { id, .. }
            | Self::Overloaded { id } => id.clone(),
            Self::HostNotAllowed
            | Self::OriginNotAllowed
            | Self::BodyTooLarge
            | Self::BodyTimeout
            | Self::BodyUnreadable
            | Self::Parse { .. }
            | Self::PrincipalRateLimited { .. }
            | Self::Transport { .. }
            | Self::Internal => Value::Null,
        }
    }

    /// The JSON-RPC `error.message`.
    pub fn message(&self) -> String {
        match self {
            Self::HostNotAllowed => "host not allowed".to_owned(),
            Self::OriginNotAllowed => "origin not allowed".to_owned(),
            // Says no more than the WWW-Authenticate header.
            Self::Auth { error, .. } => error.to_string(),
            Self::BodyTooLarge => "request body exceeds 1 MiB".to_owned(),
            Self::BodyTimeout => "request body not received in time".to_owned(),
            Self::BodyUnreadable => "request body could not be read".to_owned(),
            Self::Parse { message }
            | Self::InvalidRequest { message, .. }
            | Self::InvalidParams { message, .. }
            | Self::MethodNotFound { message, .. }
            | Self::Transport { message, .. } => message.clone(),
            Self::Overloaded { .. } => "overloaded; retry shortly".to_owned(),
            Self::PrincipalRateLimited { .. } => "too many requests; retry later".to_owned(),
            Self::Internal => "internal error".to_owned(),
        }
    }
}

impl EdgeError {
    /// Whether this refusal may be sent before the request body was read (so the connection
    /// cannot carry another request; an `Auth` refusal reads a small body only, for its id).
    pub fn leaves_body_unread(&self) -> bool {
        match self {
            Self::HostNotAllowed
            | Self::OriginNotAllowed
            | Self::Auth { .. }
            | Self::PrincipalRateLimited { .. }
            | Self::BodyTooLarge
            | Self::BodyTimeout
            | Self::BodyUnreadable => true,
            Self::Parse { .. }
            | Self::InvalidRequest { .. }
            | Self::InvalidParams { .. }
            | Self::MethodNotFound { .. }
            | Self::Overloaded { .. }
            | Self::Transport { .. }
            | Self::Internal => false,
        }
    }
}

impl IntoResponse for EdgeError {
    fn into_response(self) -> Response {
        let Parts {
            status,
            code,
            data,
            retry_after_s,
        } = self.parts();
        let mut error = json!({ "code": code, "message": self.message() });
        if let Some(d) = data {
            error["data"] = d;
        }
        let body = json!({ "jsonrpc": "2.0", "id": self.id(), "error": error });
        let mut resp = (status, axum::Json(body)).into_response();
        if let Some(s) = retry_after_s {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if let Self::Auth {
            error, base, scope, ..
        } = &self
        {
            let url = kosha_auth::resource_metadata_url(base);
            if let Some(v) = kosha_auth::www_authenticate(&url, scope, error)
                && let Ok(v) = HeaderValue::from_str(&v)
            {
                resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
            }
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use axum::body::to_bytes;

    use super::*;

    async fn answer(e: EdgeError) -> (StatusCode, axum::http::HeaderMap, Value) {
        let resp = e.into_response();
        let (parts, body) = resp.into_parts();
        let bytes = to_bytes(body, usize::MAX).await.unwrap();
        (
            parts.status,
            parts.headers,
            serde_json::from_slice(&bytes).unwrap(),
        )
    }

    #[tokio::test]
    async fn overloaded_carries_the_id_retry_after_and_data() {
        let (status, headers, body) = answer(EdgeError::Overloaded { id: json!(7) }).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(headers[header::RETRY_AFTER], "1");
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(body["id"], 7);
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["error"]["code"], rpc::OVERLOADED);
        assert_eq!(body["error"]["data"]["code"], "overloaded");
    }

    #[tokio::test]
    async fn refusals_before_the_body_is_read_answer_id_null() {
        for (e, status, code) in [
            (
                EdgeError::HostNotAllowed,
                StatusCode::FORBIDDEN,
                rpc::FORBIDDEN,
            ),
            (
                EdgeError::BodyTooLarge,
                StatusCode::PAYLOAD_TOO_LARGE,
                rpc::INVALID_REQUEST,
            ),
            (
                EdgeError::BodyTimeout,
                StatusCode::REQUEST_TIMEOUT,
                rpc::INVALID_REQUEST,
            ),
            (
                EdgeError::Internal,
                StatusCode::INTERNAL_SERVER_ERROR,
                rpc::INTERNAL_ERROR,
            ),
        ] {
            let (s, headers, body) = answer(e).await;
            assert_eq!(
                (s, body["error"]["code"].as_i64().map(|c| c as i32)),
                (status, Some(code))
            );
            assert_eq!(body["id"], Value::Null);
            assert!(headers.get(header::RETRY_AFTER).is_none());
        }
    }

    #[tokio::test]
    async fn an_unknown_method_is_404_with_its_id() {
        let e = EdgeError::MethodNotFound {
            id: json!("q"),
            message: "method not found: x".into(),
            stateless: true,
        };
        let (status, _, body) = answer(e).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(
            (
                body["id"].as_str(),
                body["error"]["code"].as_i64().map(|c| c as i32)
            ),
            (Some("q"), Some(rpc::METHOD_NOT_FOUND))
        );
    }
}
