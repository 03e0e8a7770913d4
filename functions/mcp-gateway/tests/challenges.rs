//! The gateway's answers to a request refused for its credentials (SPEC §5, issue 44): every
//! 401 names the scope a data-tool client needs, a machine client whose scopes grant no role
//! gets an `insufficient_scope` challenge naming it, a user without a usable group a plain 403,
//! and each answer echoes the request's JSON-RPC id. In process, no backend called.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use axum::body::Body;
use http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use common::{app, json_body, machine_token, post, token};

const METADATA: &str = "http://localhost/.well-known/oauth-protected-resource";

fn list(id: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string()
}

/// The status, `WWW-Authenticate` (if any) and body of `req`.
async fn refused(req: Request<Body>) -> (StatusCode, Option<String>, Value) {
    let resp = app("http://127.0.0.1:9", 100.0, 64)
        .oneshot(req)
        .await
        .unwrap();
    let challenge = resp
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .map(|v| v.to_str().unwrap().to_owned());
    (resp.status(), challenge, json_body(resp).await)
}

#[tokio::test]
async fn no_token_is_401_naming_the_agent_scope_and_echoing_the_id() {
    let mut req = post("", list(json!(2)));
    req.headers_mut().remove(header::AUTHORIZATION);
    let (status, challenge, body) = refused(req).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge.as_deref(),
        Some(format!("Bearer resource_metadata=\"{METADATA}\", scope=\"kosha/agent\"").as_str())
    );
    assert_eq!(
        (&body["id"], &body["error"]["code"]),
        (&json!(2), &json!(-32001))
    );
}

#[tokio::test]
async fn an_invalid_token_is_401_naming_the_scope_and_the_error() {
    let (status, challenge, body) = refused(post("not-a-token", list(json!("q-7")))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge.as_deref(),
        Some(
            format!(
                "Bearer resource_metadata=\"{METADATA}\", scope=\"kosha/agent\", \
                 error=\"invalid_token\""
            )
            .as_str()
        )
    );
    assert_eq!(body["id"], "q-7");
}

#[tokio::test]
async fn a_machine_token_whose_scopes_grant_no_role_is_403_insufficient_scope() {
    let token = machine_token("agent-a", &["kosha/mcp"]);
    let (status, challenge, body) = refused(post(&token, list(json!(3)))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        challenge.as_deref(),
        Some(
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"kosha/agent\", \
                 resource_metadata=\"{METADATA}\""
            )
            .as_str()
        )
    );
    assert_eq!(
        (&body["id"], &body["error"]["code"]),
        (&json!(3), &json!(-32003))
    );
}

#[tokio::test]
async fn a_user_without_a_usable_group_is_a_plain_403() {
    let (status, challenge, body) = refused(post(&token("agent-a", &[]), list(json!(4)))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(challenge, None);
    assert_eq!(
        (&body["id"], &body["error"]["code"]),
        (&json!(4), &json!(-32003))
    );
}

#[tokio::test]
async fn a_body_that_is_not_a_json_rpc_object_is_refused_with_id_null() {
    for body in ["not json", "[1]", r#"{"id": 1, "id": 2}"#, r#"{"id": 1.5}"#] {
        let (status, _, answer) = refused(post("not-a-token", body.to_owned())).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(answer["id"], Value::Null, "{body}");
    }
}

#[tokio::test]
async fn a_body_over_the_echo_bound_is_not_read() {
    let padded = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list",
                        "params": {"pad": "x".repeat(70 * 1024)}});
    let (status, _, answer) = refused(post("not-a-token", padded.to_string())).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(answer["id"], Value::Null);
}

#[tokio::test]
async fn the_metadata_lists_exactly_the_scopes_that_grant_a_role() {
    let req = Request::get("/.well-known/oauth-protected-resource")
        .header("host", "localhost")
        .body(Body::empty())
        .unwrap();
    let resp = app("http://127.0.0.1:9", 100.0, 64)
        .oneshot(req)
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let doc = json_body(resp).await;
    assert_eq!(
        doc["scopes_supported"],
        json!(["kosha/agent", "kosha/operator"])
    );
}
