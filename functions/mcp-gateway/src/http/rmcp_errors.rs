//! rmcp's own refusals (plain-text 400, 405, 406, 415, …, and 5xx) rewritten as the edge's
//! JSON-RPC errors ([`EdgeError::Transport`], [`EdgeError::Internal`]), so every error a
//! client sees has one shape; and rmcp's JSON-RPC refusals with their message clipped (they
//! quote header values whole: `Mcp-Name`, `Mcp-Method`).

use axum::body::to_bytes;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::EdgeError;
use kosha_contract::echo::{clip, clip_quoted};

/// Largest rmcp error body read back for [`json_errors`]; rmcp's are one line.
const MAX_PLAIN_ERROR_BYTES: usize = 4096;

/// Largest rmcp JSON-RPC refusal read back to clip its message: a quoted header value is
/// bounded by hyper's head limit (~400 KB), a quoted body value by the 1 MiB body limit.
const MAX_JSON_ERROR_BYTES: usize = 2 << 20;

/// rmcp's error answers that are not JSON (plain-text 400, 405, 406, 415, …) as JSON-RPC
/// errors with id `null`, the same status and rmcp's other headers (`Allow` on 405): −32600
/// with rmcp's text (its `Not Acceptable: ` style prefix dropped, clipped: it may quote a
/// header value) for 4xx, −32603 `internal error` for 5xx. rmcp's JSON 4xx keep their body
/// but for `error.message`, its quotes clipped ([`clip_json_message`]). Anything else passes unchanged.
pub async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    if is_json {
        return if status.is_client_error() {
            clip_json_message(resp).await
        } else {
            resp
        };
    }
    let (parts, body) = resp.into_parts();
    let mut out = if status.is_server_error() {
        EdgeError::Internal.into_response()
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
        EdgeError::Transport {
            status,
            message: clip(message).into_owned(),
        }
        .into_response()
    };
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().append(name, value.clone());
        }
    }
    out
}

/// A JSON-RPC error response with its `error.message` clipped ([`clip_quoted`]: rmcp quotes
/// header values between backticks and parentheses); the rest of the body and the headers as
/// they were, and the body exactly as sent when there was nothing to clip. A body over
/// [`MAX_JSON_ERROR_BYTES`] or not a JSON object becomes [`EdgeError::Transport`] with the
/// status's reason.
async fn clip_json_message(resp: Response) -> Response {
    let (mut parts, body) = resp.into_parts();
    let bytes = to_bytes(body, MAX_JSON_ERROR_BYTES).await.ok();
    let parsed = bytes
        .as_ref()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
        .filter(serde_json::Value::is_object);
    let (Some(bytes), Some(mut message)) = (bytes, parsed) else {
        let reason = parts.status.canonical_reason().unwrap_or_default();
        return EdgeError::Transport {
            status: parts.status,
            message: reason.to_owned(),
        }
        .into_response();
    };
    if let Some(text) = message.pointer_mut("/error/message")
        && let Some(std::borrow::Cow::Owned(clipped)) = text.as_str().map(clip_quoted)
    {
        *text = serde_json::Value::String(clipped);
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, axum::body::Body::from(message.to_string()));
    }
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc as rpc;
    use axum::body::Body;
    use axum::http::StatusCode;
    use serde_json::Value;

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
        assert!(message.chars().count() <= kosha_contract::echo::ECHO_MAX_CHARS + 1);

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
    async fn a_json_refusal_keeps_its_code_and_id_with_its_message_clipped() {
        // Attack pass of 2026-12-01 (commit ce42f57): rmcp's −32020 quoted a 200 KB Mcp-Name header whole.
        let quoted = "n".repeat(200_000);
        let refusal = serde_json::json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32020,
            "message": format!("Mcp-Name header `{quoted}` does not match body value `x`")}});
        let resp = Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(refusal.to_string()))
            .unwrap();
        let resp = json_errors(resp).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        let body = body_json(resp).await;
        assert_eq!(
            (body["id"].clone(), body["error"]["code"].clone()),
            (3.into(), (-32020).into())
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Mcp-Name header `nnn"), "{message}");
        assert!(
            message.ends_with("…` does not match body value `x`"),
            "{message}"
        );
        assert!(message.len() < 200, "{message}");

        let garbage = Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("not json"))
            .unwrap();
        let body = body_json(json_errors(garbage).await).await;
        assert_eq!(body["error"]["message"], "Bad Request");
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
        let json = EdgeError::HostNotAllowed.into_response();
        let body = body_json(json_errors(json).await).await;
        assert_eq!(body["error"]["message"], "host not allowed");
    }
}
