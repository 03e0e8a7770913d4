//! Regression tests from the hostile-load pass (issue 16), one finding each; every one failed
//! before its fix. In process, no backend (core-api at a closed port).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use common::{agent, app, app_with, bytes, config, json_body, post, tools_call};

const NOWHERE: &str = "http://127.0.0.1:9";

/// Log lines written while a test runs on this thread.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    /// Captures every log line at `debug` and above written on this thread until the guard
    /// drops (the tests run on tokio's current-thread runtime, so rmcp's tasks too).
    fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || writer.clone())
            .finish();
        kosha_runtime::telemetry::capture_default(subscriber)
    }

    fn longest(&self) -> usize {
        let text = self.0.lock();
        text.split(|b| *b == b'\n')
            .map(<[u8]>::len)
            .max()
            .unwrap_or(0)
    }
}

// ---------------------------------------------------------------- unbounded echo

#[tokio::test]
async fn a_huge_method_or_id_is_echoed_in_no_error_message_and_no_log_line() {
    let app = app(NOWHERE, 100.0, 64);
    let lines = Lines::default();
    let _guard = lines.capture();
    let huge = "m".repeat(400_000);
    let id = "i".repeat(400_000);
    for body in [
        json!({"jsonrpc": "2.0", "id": 1, "method": huge}),
        json!({"jsonrpc": "2.0", "id": id, "method": huge}),
        json!({"jsonrpc": "2.0", "method": huge}),
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": huge, "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "search_knowledge_base", "arguments": {huge.clone(): 1}}}),
    ] {
        let resp = app
            .clone()
            .oneshot(post(&agent(), body.to_string()))
            .await
            .unwrap();
        let answer = bytes(resp).await;
        if answer.is_empty() {
            continue;
        }
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        let text = answer.to_string();
        // The id is answered as sent (JSON-RPC 2.0 §5); nothing else carries caller text whole.
        let echoed = text.len() - answer["id"].to_string().len();
        assert!(echoed < 2_000, "{} bytes besides the id", echoed);
        if let Some(sent) = body.get("id") {
            assert_eq!(&answer["id"], sent);
        }
    }
    assert!(
        lines.longest() < 2_000,
        "a {} byte log line",
        lines.longest()
    );
}

// ---------------------------------------------------------------- unbounded parse cost

/// A `ping` whose `params._meta` holds `keys` keys.
fn wide_ping(keys: usize) -> String {
    let meta: serde_json::Map<String, Value> =
        (0..keys).map(|i| (format!("k{i}"), json!(0))).collect();
    json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": meta}}).to_string()
}

#[tokio::test]
async fn a_message_over_a_bound_is_400_naming_it() {
    let app = app(NOWHERE, 100.0, 64);
    let wide = wide_ping(90_000);
    assert!(wide.len() < 1024 * 1024, "{}", wide.len());
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{}1{}}}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    let many = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "search_knowledge_base",
                   "arguments": {"query": "x", "v": vec![0; 20_000]}}})
    .to_string();
    for (body, bound) in [
        (wide, "more than 256 keys"),
        (deep, "deeper than 32 levels"),
        (many, "more than 10000 values"),
    ] {
        let resp = app.clone().oneshot(post(&agent(), body)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        let body = json_body(resp).await;
        assert_eq!(body["error"]["code"], -32600, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(bound), "{message}");
    }
    // Within the bounds, the same request is served.
    let resp = app.oneshot(post(&agent(), wide_ping(200))).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn a_principal_over_its_request_rate_is_429_before_its_body_is_read() {
    let mut config = config(NOWHERE, 64);
    config.principal_rate =
        kosha_resilience::principal_rate::PrincipalLimiter::bucket(2.0).unwrap();
    let app = app_with(config, 100.0);
    let ping = || json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    for _ in 0..2 {
        let resp = app.clone().oneshot(post(&agent(), ping())).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
    // A body that never arrives: refused at once, not after the 10 s read timeout.
    let started = tokio::time::Instant::now();
    let resp = app
        .clone()
        .oneshot(post(&agent(), stalled_body()))
        .await
        .unwrap();
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(resp.headers()["retry-after"], "1");
    assert_eq!(resp.headers()["connection"], "close");
    let body = json_body(resp).await;
    assert_eq!(body["error"]["code"], -32029);
    assert_eq!(body["error"]["data"]["code"], "rate_limited");
    assert_eq!(body["id"], Value::Null);
    // Another principal is not affected; the first is admitted again after a second.
    let other = common::token("agent-b", &[kosha_auth::Role::Agent]);
    let resp = app.clone().oneshot(post(&other, ping())).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    tokio::time::advance(Duration::from_secs(1)).await;
    let resp = app.oneshot(post(&agent(), ping())).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

// ---------------------------------------------------------------- Content-Length, 401

/// A body that sends its first bytes, then nothing, forever.
fn stalled_body() -> Body {
    let first = futures::stream::once(async { Ok::<_, std::io::Error>(Bytes::from_static(b"{")) });
    Body::from_stream(futures::StreamExt::chain(first, futures::stream::pending()))
}

#[tokio::test(start_paused = true)]
async fn a_declared_length_over_the_limit_is_413_at_once_and_closes() {
    let app = app(NOWHERE, 100.0, 64);
    let mut req = post(&agent(), stalled_body());
    req.headers_mut()
        .insert("content-length", "2000000".parse().unwrap());
    let started = tokio::time::Instant::now();
    let resp = app.oneshot(req).await.unwrap();
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(resp.headers()["connection"], "close");
}

#[tokio::test]
async fn a_refusal_before_the_body_is_read_says_connection_close_on_http1_only() {
    let app = app(NOWHERE, 100.0, 64);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let resp = app
        .clone()
        .oneshot(post("bad", ping.clone()))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(resp.headers()["connection"], "close");
    let mut h2 = post("bad", ping.clone());
    *h2.version_mut() = http::Version::HTTP_2;
    let resp = app.clone().oneshot(h2).await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(resp.headers().get("connection").is_none());
    // A refusal after the body was read keeps the connection.
    let resp = app.oneshot(post(&agent(), "{")).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert!(resp.headers().get("connection").is_none());
}

// ---------------------------------------------------------------- the request's authority

#[tokio::test]
async fn an_absolute_form_or_h2_authority_is_checked_like_host() {
    let app = app(NOWHERE, 100.0, 64);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    // Absolute form with an allowed Host header.
    let mut absolute = post(&agent(), ping.clone());
    *absolute.uri_mut() = "http://evil.example/mcp".parse().unwrap();
    let resp = app.clone().oneshot(absolute).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    // HTTP/2: hyper puts `:authority` in the URI; curl sends `-H 'Host: evil.com'` as it.
    let mut h2 = post(&agent(), ping.clone());
    *h2.version_mut() = http::Version::HTTP_2;
    *h2.uri_mut() = "http://evil.com/mcp".parse().unwrap();
    h2.headers_mut().remove("host");
    let resp = app.clone().oneshot(h2).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let mut allowed = post(&agent(), ping);
    *allowed.version_mut() = http::Version::HTTP_2;
    *allowed.uri_mut() = "http://localhost/mcp".parse().unwrap();
    allowed.headers_mut().remove("host");
    let resp = app.oneshot(allowed).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn over_h2_the_protected_resource_metadata_keeps_the_port() {
    let mut config = config(NOWHERE, 64);
    config.allowed_hosts = vec!["localhost:8080".to_owned()];
    let app = app_with(config, 100.0);
    let mut metadata = Request::get("http://localhost:8080/.well-known/oauth-protected-resource")
        .body(Body::empty())
        .unwrap();
    *metadata.version_mut() = http::Version::HTTP_2;
    let body = json_body(app.oneshot(metadata).await.unwrap()).await;
    assert_eq!(body["resource"], "http://localhost:8080/mcp");
}

// ---------------------------------------------------------------- integer ids up to 2^64 − 1

#[tokio::test]
async fn integer_ids_up_to_2_64_minus_1_are_answered_with_the_same_id() {
    let app = app(NOWHERE, 100.0, 64);
    for id in [
        "18446744073709551615",
        "9223372036854775808",
        "-9223372036854775808",
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
        let resp = app.clone().oneshot(post(&agent(), body)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{id}");
        let text = String::from_utf8(bytes(resp).await.to_vec()).unwrap();
        assert!(text.contains(&format!("\"id\":{id}")), "{id}: {text}");
        assert!(text.contains("\"tools\""), "{text}");
    }
    // And in a tool error, through the MCP server.
    let resp = app
        .oneshot(tools_call(u64::MAX, &agent(), "no_such_tool", json!({})))
        .await
        .unwrap();
    let body = json_body(resp).await;
    assert_eq!(body["id"], json!(u64::MAX), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("unknown tool")
    );
}
