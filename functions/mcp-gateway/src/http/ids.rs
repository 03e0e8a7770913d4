//! JSON-RPC ids rmcp should not carry, mapped around it (JSON-RPC 2.0 §4: an id is a string
//! or a number, answered as sent).
//!
//! - **Which:** an integer above `i64::MAX` (rmcp's `NumberOrString` holds an `i64`, so
//!   `18446744073709551615` would not parse), and a string id longer than
//!   [`ECHO_MAX_CHARS`] (rmcp logs the id of every failed request, whole: a 500 KB id made a
//!   500 KB log line).
//! - **How:** rmcp is given the message with [`EDGE_ID`] in the id's place ([`replace`],
//!   by the envelope check, before rmcp's typed check), and its JSON answer gets the caller's
//!   id back ([`restore`]). Requests
//!   are stateless (one message per HTTP request), so the substitute cannot meet another id.
//! - **Neighbours:** the envelope check has accepted the id already ([`super::envelope`]);
//!   the edge's own refusals carry the caller's id directly.

use axum::body::{Body, to_bytes};
use axum::http::header;
use axum::response::Response;
use serde_json::Value;

use kosha_contract::echo::ECHO_MAX_CHARS;

/// The id rmcp sees in place of one it should not carry.
pub const EDGE_ID: &str = "kosha-edge-id";

/// Largest rmcp answer whose id is put back; a tool result is far smaller (SPEC §3 bounds
/// them), so a larger one is passed through unchanged rather than buffered.
const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// Whether `id` is mapped around rmcp.
pub fn needs_mapping(id: &Value) -> bool {
    match id {
        Value::Number(n) => n.is_u64() && n.as_i64().is_none(),
        Value::String(s) => s.len() > ECHO_MAX_CHARS,
        _ => false,
    }
}

/// Puts [`EDGE_ID`] in place of `message`'s id.
pub fn replace(message: &mut Value) {
    if let Some(id) = message.get_mut("id") {
        *id = Value::String(EDGE_ID.to_owned());
    }
}

/// rmcp's JSON answer with `id` in place of [`EDGE_ID`]; any other answer (202, a plain-text
/// refusal) unchanged.
pub async fn restore(resp: Response, id: Value) -> Response {
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ANSWER_BYTES).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let mut answer: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    if answer.get("id").and_then(Value::as_str) == Some(EDGE_ID) {
        answer["id"] = id;
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(answer.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_ids_beyond_i64_or_longer_than_the_echo_bound_are_mapped() {
        assert!(needs_mapping(&json!(u64::MAX)));
        assert!(needs_mapping(&json!(9_223_372_036_854_775_808_u64)));
        assert!(needs_mapping(&json!("x".repeat(ECHO_MAX_CHARS + 1))));
        for kept in [
            json!(i64::MAX),
            json!(i64::MIN),
            json!(7),
            json!("x".repeat(ECHO_MAX_CHARS)),
            json!(7.0),
        ] {
            assert!(!needs_mapping(&kept), "{kept}");
        }
    }

    #[tokio::test]
    async fn the_caller_id_is_put_back_into_a_json_answer() {
        let rmcp = Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, "40")
            .body(Body::from(
                json!({"jsonrpc": "2.0", "id": EDGE_ID, "result": {}}).to_string(),
            ))
            .expect("response");
        let resp = restore(rmcp, json!(u64::MAX)).await;
        assert!(resp.headers().get(header::CONTENT_LENGTH).is_none());
        let bytes = to_bytes(resp.into_body(), usize::MAX).await.expect("body");
        let text = String::from_utf8(bytes.to_vec()).expect("utf8");
        assert!(text.contains("\"id\":18446744073709551615"), "{text}");
    }
}
