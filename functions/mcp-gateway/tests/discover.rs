//! `server/discover` lists exactly the protocol revisions the gateway accepts (SPEC §3,
//! issue 45): each one it lists serves a request, and a revision it does not list is refused
//! with 400. In process, no network beyond loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use axum::body::Body;
use http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use common::{agent, app, json_body, post};

/// The revisions docs/spec.md §3 names; a newer rmcp that serves others fails this test
/// until the contract names them too.
const SPEC_REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// A `method` request at `revision`, with the headers and `_meta` that revision asks for.
fn request(revision: &str, method: &str) -> Request<Body> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": revision,
        "io.modelcontextprotocol/clientInfo": {"name": "discover-test", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}});
    let mut req = post(&agent(), body.to_string());
    let headers = req.headers_mut();
    headers.insert("mcp-protocol-version", revision.parse().unwrap());
    headers.insert("mcp-method", method.parse().unwrap());
    req
}

#[tokio::test]
async fn server_discover_lists_exactly_the_revisions_accepted() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let body = json_body(
        app.clone()
            .oneshot(request("2026-07-28", "server/discover"))
            .await
            .unwrap(),
    )
    .await;
    let listed: Vec<&str> = body["result"]["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(listed, SPEC_REVISIONS, "{body}");
    for revision in listed {
        let resp = app
            .clone()
            .oneshot(request(revision, "tools/list"))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{revision} is listed");
    }
    for revision in ["2024-10-07", "2026-01-01"] {
        let resp = app
            .clone()
            .oneshot(request(revision, "tools/list"))
            .await
            .unwrap();
        assert_eq!(
            resp.status(),
            StatusCode::BAD_REQUEST,
            "{revision} is not listed"
        );
    }
}
