//! The gateway's HTTP edge in process (SPEC §3, §5, §6): rate limiting answers 429 with
//! `Retry-After` and a JSON-RPC error for the request's id; load shedding answers 503 with
//! `Retry-After: 1`; denied tools look unknown. No network beyond loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use http::StatusCode;
use kosha_auth::Role;
use serde_json::json;
use tower::ServiceExt;

use common::{app, json_body, token, tools_call};

#[tokio::test]
async fn an_empty_bucket_answers_429_with_retry_after_and_the_request_id() {
    let app = app("http://127.0.0.1:9", 2.0, 64);
    let t = token("agent-a", &[Role::Agent]);
    for id in 1..=2 {
        let resp = app
            .clone()
            .oneshot(tools_call(id, &t, "get_service_health", json!({})))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
    let resp = app
        .clone()
        .oneshot(tools_call(3, &t, "get_service_health", json!({})))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    let body = json_body(resp).await;
    assert_eq!(body["id"], 3);
    assert_eq!(body["error"]["data"]["code"], "rate_limited");
    assert_eq!(body["error"]["data"]["retry_after_s"], retry);

    // Buckets are per client: another client is unaffected.
    let other = token("agent-b", &[Role::Agent]);
    let resp = app
        .oneshot(tools_call(4, &other, "get_service_health", json!({})))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn requests_above_max_in_flight_are_shed_with_503() {
    // A core-api that accepts connections and never answers keeps the first call in flight.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    let app = app(&format!("http://{addr}"), 100.0, 1);
    let t = token("agent-a", &[Role::Agent]);
    let slow = tokio::spawn(app.clone().oneshot(tools_call(
        1,
        &t,
        "get_transaction",
        json!({"transaction_id": "txn_000001"}),
    )));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let resp = app
        .clone()
        .oneshot(tools_call(2, &t, "get_service_health", json!({})))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(resp.headers()["retry-after"], "1");
    let body = json_body(resp).await;
    assert_eq!(body["error"]["data"]["code"], "overloaded");
    assert_eq!(
        (&body["error"]["code"], &body["id"]),
        (&json!(-32000), &json!(2))
    );
    slow.abort();
    hold.abort();
    // The aborted request released its slot.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let resp = app
        .oneshot(tools_call(3, &t, "get_service_health", json!({})))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_denied_tool_answers_as_an_unknown_one() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let ops = token("ops", &[Role::Operator]);
    let denied = json_body(
        app.clone()
            .oneshot(tools_call(
                1,
                &ops,
                "get_transaction",
                json!({"transaction_id": "txn_000001"}),
            ))
            .await
            .unwrap(),
    )
    .await;
    let unknown = json_body(
        app.oneshot(tools_call(1, &ops, "no_such_tool", json!({})))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(denied["error"]["code"], -32602);
    assert_eq!(denied["error"]["code"], unknown["error"]["code"]);
    assert_eq!(
        denied["error"]["message"]
            .as_str()
            .unwrap()
            .replace("get_transaction", "X"),
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .replace("no_such_tool", "X"),
    );
}

#[tokio::test]
async fn an_unreachable_core_api_is_dependency_unavailable() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let t = token("agent-a", &[Role::Agent]);
    let resp = app
        .oneshot(tools_call(
            1,
            &t,
            "get_transaction",
            json!({"transaction_id": "txn_000001"}),
        ))
        .await
        .unwrap();
    let body = json_body(resp).await;
    assert_eq!(body["result"]["isError"], true);
    let err = &body["result"]["structuredContent"]["error"];
    assert_eq!(err["code"], "dependency_unavailable");
    assert_eq!(err["dependency"], "core-api");
}

#[tokio::test]
async fn a_browser_on_an_allowed_origin_gets_its_preflight_and_cors_headers() {
    let mut cfg = common::config("http://127.0.0.1:9", 64);
    cfg.allowed_origins = vec!["http://localhost:*".to_owned()];
    let app = common::app_with(cfg, 100.0);
    let preflight = http::Request::options("/mcp")
        .header("host", "localhost")
        .header("origin", "http://localhost:6274")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type,mcp-protocol-version",
        )
        .body(axum::body::Body::empty())
        .unwrap();
    let resp = app.clone().oneshot(preflight).await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let h = resp.headers();
    assert_eq!(h["access-control-allow-origin"], "http://localhost:6274");
    let allowed = h["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(allowed.contains("authorization") && allowed.contains("mcp-protocol-version"));

    let mut post = tools_call(1, &common::agent(), "get_service_health", json!({}));
    post.headers_mut()
        .insert("origin", "http://localhost:6274".parse().unwrap());
    let resp = app.clone().oneshot(post).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["access-control-allow-origin"],
        "http://localhost:6274"
    );

    let mut evil = tools_call(2, &common::agent(), "get_service_health", json!({}));
    evil.headers_mut()
        .insert("origin", "http://evil.example".parse().unwrap());
    let resp = app.oneshot(evil).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert!(resp.headers().get("access-control-allow-origin").is_none());
}
