//! Every error the HTTP edge answers, as one shape: an `application/json` JSON-RPC 2.0 error
//! (`{"jsonrpc":"2.0","id":…,"error":{"code","message","data"?}}`) with the HTTP status of
//! SPEC §3/§5/§6. [`rpc_error`] builds them all, including the bodies that replace rmcp's
//! plain-text errors ([`json_errors`]).

use axum::body::to_bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::envelope::Rejection;
use crate::echo::clip;

/// JSON-RPC 2.0 error codes used at the edge (JSON-RPC 2.0 §5.1).
pub mod rpc {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    // Implementation-defined server errors (JSON-RPC 2.0 §5.1 reserves −32000…−32099); the
    // list is in docs/operations.md ("JSON-RPC error codes at the edge").
    /// 503: too many requests in flight on this instance (SPEC §6).
    pub const OVERLOADED: i64 = -32000;
    /// 401: no usable bearer token (SPEC §5).
    pub const UNAUTHORIZED: i64 = -32001;
    /// 403: a valid token without a usable role, or a Host/Origin not allowed (SPEC §3, §5).
    pub const FORBIDDEN: i64 = -32003;
    /// 429: the caller's rate-limit bucket is empty (SPEC §6).
    pub const RATE_LIMITED: i64 = -32029;
}

/// A JSON-RPC error response with HTTP `status`.
pub fn rpc_error(
    status: StatusCode,
    id: Value,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> Response {
    let mut error = json!({ "code": code, "message": message });
    if let Some(d) = data {
        error["data"] = d;
    }
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": error });
    (status, axum::Json(body)).into_response()
}

/// The answer to a body the envelope check refused (400, or 404 for an unknown method).
pub fn rejected(r: Rejection) -> Response {
    rpc_error(r.status, r.id, r.code, &r.message, None)
}

/// An edge refusal of the request as sent, with id `null` and code −32600 (body size or
/// timeout, rmcp's transport refusals).
pub fn refused(status: StatusCode, message: &str) -> Response {
    rpc_error(status, Value::Null, rpc::INVALID_REQUEST, message, None)
}

/// 403 for a Host or Origin not allowed: id `null` (the body is not read), code
/// [`rpc::FORBIDDEN`].
pub fn forbidden(message: &str) -> Response {
    rpc_error(
        StatusCode::FORBIDDEN,
        Value::Null,
        rpc::FORBIDDEN,
        message,
        None,
    )
}

/// 503 `overloaded` with `Retry-After: 1` (SPEC §6), code [`rpc::OVERLOADED`], for the
/// request's `id` (`null` for a notification).
pub fn overloaded(id: Value) -> Response {
    let mut resp = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        rpc::OVERLOADED,
        "overloaded; retry shortly",
        Some(json!({ "code": "overloaded", "retry_after_s": 1 })),
    );
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// 429 with `Retry-After` and a JSON-RPC error for the request's `id` (SPEC §6); `id` is a
/// request's (a string or a number: the envelope check made sure).
pub fn rate_limited(id: Value, retry_after_s: u64) -> Response {
    let mut resp = rpc_error(
        StatusCode::TOO_MANY_REQUESTS,
        id,
        rpc::RATE_LIMITED,
        "rate limited; retry later",
        Some(json!({ "code": "rate_limited", "retry_after_s": retry_after_s })),
    );
    if let Ok(v) = HeaderValue::from_str(&retry_after_s.to_string()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// 401/403 with `WWW-Authenticate` pointing at the protected-resource metadata (SPEC §5,
/// RFC 6750 §3, RFC 9728 §5.1), id `null` (the body is not read yet) and code
/// [`rpc::UNAUTHORIZED`] or [`rpc::FORBIDDEN`]. The body says no more than the header.
pub fn auth_error(e: &kosha_auth::AuthError, base: &str) -> Response {
    let status = e.status();
    let code = if status == StatusCode::FORBIDDEN {
        rpc::FORBIDDEN
    } else {
        rpc::UNAUTHORIZED
    };
    let mut resp = rpc_error(status, Value::Null, code, &e.to_string(), None);
    let url = kosha_auth::resource_metadata_url(base);
    if let Some(v) = kosha_auth::www_authenticate(&url, e)
        && let Ok(v) = HeaderValue::from_str(&v)
    {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    resp
}

/// Largest rmcp error body read back for [`json_errors`]; rmcp's are one line.
const MAX_PLAIN_ERROR_BYTES: usize = 4096;

/// rmcp's error answers that are not JSON (plain-text 400, 405, 406, 415, …) as JSON-RPC
/// errors with id `null`, the same status and rmcp's other headers (`Allow` on 405): −32600
/// with rmcp's text (its `Not Acceptable: ` style prefix dropped, clipped: it may quote a
/// header value) for 4xx, −32603 `internal error` for 5xx. Anything else passes unchanged.
pub async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json || !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let mut out = if status.is_server_error() {
        rpc_error(
            status,
            Value::Null,
            rpc::INTERNAL_ERROR,
            "internal error",
            None,
        )
    } else {
        let bytes = to_bytes(body, MAX_PLAIN_ERROR_BYTES)
            .await
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        let reason = status.canonical_reason().unwrap_or_default();
        let text = text
            .strip_prefix(reason)
            .and_then(|t| t.strip_prefix(": "))
            .unwrap_or(text);
        let message = if text.is_empty() { reason } else { text };
        refused(status, &clip(message))
    };
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().append(name, value.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    async fn body_json(resp: Response) -> Value {
        let bytes = to_bytes(resp.into_body(), usize::MAX).await.unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    fn plain(status: StatusCode, text: &str) -> Response {
        Response::builder()
            .status(status)
            .header(header::ALLOW, "POST")
            .body(Body::from(text.to_owned()))
            .unwrap()
    }

    #[tokio::test]
    async fn plain_text_client_errors_become_json_rpc_errors_with_the_same_status() {
        let resp = json_errors(plain(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        ))
        .await;
        assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(resp.headers()[header::ALLOW], "POST");
        let body = body_json(resp).await;
        assert_eq!(body["id"], Value::Null);
        assert_eq!(body["error"]["code"], rpc::INVALID_REQUEST);
        assert_eq!(
            body["error"]["message"],
            "Client must accept both application/json and text/event-stream"
        );
    }

    #[tokio::test]
    async fn quoted_header_values_are_clipped_and_server_errors_say_nothing() {
        let text = format!(
            "Bad Request: Unsupported MCP-Protocol-Version: {}",
            "9".repeat(1000)
        );
        let body = body_json(json_errors(plain(StatusCode::BAD_REQUEST, &text)).await).await;
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Unsupported MCP-Protocol-Version: 999"));
        assert!(message.ends_with('…'));
        assert!(message.chars().count() <= crate::echo::ECHO_MAX_CHARS + 1);

        let resp = json_errors(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Failed to read request body: secret detail",
        ))
        .await;
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = body_json(resp).await;
        assert_eq!(body["error"]["code"], rpc::INTERNAL_ERROR);
        assert_eq!(body["error"]["message"], "internal error");
    }

    #[tokio::test]
    async fn json_and_success_answers_pass_unchanged() {
        let accepted = Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Body::empty())
            .unwrap();
        let resp = json_errors(accepted).await;
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        assert!(resp.headers().get(header::CONTENT_TYPE).is_none());
        let json = forbidden("host not allowed");
        let body = body_json(json_errors(json).await).await;
        assert_eq!(body["error"]["message"], "host not allowed");
    }
}
