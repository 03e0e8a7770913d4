//! Regression tests from the hostile-input passes on `POST /mcp`, one finding each (most failed
//! before their fix; `core_api_4xx_answers_never_open_the_breaker` guards behaviour that was
//! already right). In process, core-api faked with wiremock on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use common::{agent, agent_call, app, app_with, config, json_body, post, tool_error, tools_call};

/// A core-api whose search answers `status` with core-api's error body, expecting `calls`.
async fn core_api_search(status: u16, calls: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/knowledge/search"))
        .respond_with(ResponseTemplate::new(status).set_body_json(json!({
            "error": {"code": "invalid_argument", "message": "query: not searchable"}
        })))
        .expect(calls)
        .mount(&server)
        .await;
    server
}

/// The core-api breaker state `get_service_health` reports.
async fn core_api_breaker(app: &axum::Router) -> String {
    let resp = agent_call(app, 99, "get_service_health", json!({})).await;
    let body = json_body(resp).await;
    body["result"]["structuredContent"]["dependencies"]["core-api"]["breaker"]
        .as_str()
        .unwrap()
        .to_owned()
}

// ---------------------------------------------------------------- 1. control characters

#[tokio::test]
async fn control_characters_in_a_string_argument_are_refused_without_calling_core_api() {
    let core_api = core_api_search(200, 0).await;
    let app = app(&core_api.uri(), 100.0, 64);
    // More than the breaker's minimum calls (10): none may reach core-api (wiremock expects 0
    // calls) and the breaker stays closed.
    for (i, query) in ["refund\u{0}", "\u{1b}[2J", "a\u{7}b"]
        .iter()
        .cycle()
        .take(12)
        .enumerate()
    {
        let id = u64::try_from(i).unwrap();
        let resp = agent_call(&app, id, "search_knowledge_base", json!({"query": query})).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let body = json_body(resp).await;
        let err = tool_error(&body);
        assert_eq!(err["code"], "invalid_argument");
        assert!(
            err["message"].as_str().unwrap().starts_with("query: "),
            "{err}"
        );
    }
    assert_eq!(core_api_breaker(&app).await, "closed");
    // wiremock checks on drop that core-api saw no call.
}

#[tokio::test]
async fn core_api_4xx_answers_never_open_the_breaker() {
    let core_api = core_api_search(400, 25).await;
    let app = app(&core_api.uri(), 100.0, 64);
    for id in 0..25 {
        let resp = agent_call(
            &app,
            id,
            "search_knowledge_base",
            json!({"query": "refund"}),
        )
        .await;
        let body = json_body(resp).await;
        assert_eq!(tool_error(&body)["code"], "invalid_argument");
    }
    // All 25 reached core-api (none refused by an open breaker), and it is still closed.
    assert_eq!(core_api_breaker(&app).await, "closed");
}

// ---------------------------------------------------------------- 2. JSON-RPC envelope

#[tokio::test]
async fn envelopes_that_are_not_json_rpc_get_400_invalid_request_as_json() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    for (body, id) in [
        (json!({"id": 1, "method": "tools/list"}), json!(1)),
        (
            json!({"jsonrpc": "1.0", "id": "a", "method": "tools/list"}),
            json!("a"),
        ),
        (
            json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}),
            Value::Null,
        ),
        (
            json!({"jsonrpc": "2.0", "id": [1], "method": "tools/list"}),
            Value::Null,
        ),
        (json!({"jsonrpc": "2.0", "id": 3, "method": 7}), json!(3)),
        (
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": "x"}),
            json!(4),
        ),
    ] {
        let resp = app
            .clone()
            .oneshot(post(&agent(), body.to_string()))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(resp.headers()["content-type"], "application/json", "{body}");
        let answer = json_body(resp).await;
        assert_eq!(answer["error"]["code"], -32600, "{body}");
        assert_eq!(answer["id"], id, "{body}");
        assert_eq!(answer["jsonrpc"], "2.0");
    }
}

#[tokio::test]
async fn tools_call_with_misshapen_params_is_invalid_params() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    for params in [
        json!([1, 2]),
        json!({}),
        json!({"name": 5}),
        json!({"name": "x", "arguments": 3}),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": params});
        let resp = app
            .clone()
            .oneshot(post(&agent(), body.to_string()))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{params}");
        let answer = json_body(resp).await;
        assert_eq!(answer["error"]["code"], -32602, "{params}");
        assert_eq!(answer["id"], 8);
    }
}

#[tokio::test]
async fn malformed_requests_spend_no_rate_limit_token() {
    let app = app("http://127.0.0.1:9", 1.0, 64);
    for bad in [
        json!({"id": 1, "method": "tools/call", "params": {"name": "get_service_health"}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": []}),
        json!({"jsonrpc": "2.0", "id": null, "method": "tools/call",
               "params": {"name": "get_service_health"}}),
    ] {
        let resp = app
            .clone()
            .oneshot(post(&agent(), bad.to_string()))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    // The bucket's one token is still there.
    let resp = app
        .oneshot(tools_call(3, &agent(), "get_service_health", json!({})))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

// ---------------------------------------------------------------- 3. slow bodies

/// A body that sends its first bytes, then nothing, forever.
fn stalled_body() -> Body {
    let first = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(
        b"{\"jsonrpc\": \"2.0\", ",
    ))]);
    Body::from_stream(futures::StreamExt::chain(first, futures::stream::pending()))
}

#[tokio::test(start_paused = true)]
async fn a_stalled_body_gets_408_and_holds_no_in_flight_slot() {
    let app = app("http://127.0.0.1:9", 100.0, 1);
    let started = tokio::time::Instant::now();
    let stalled = tokio::spawn(app.clone().oneshot(post(&agent(), stalled_body())));
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!stalled.is_finished());

    // The only in-flight slot is free while the slow body trickles in.
    let resp = agent_call(&app, 1, "get_service_health", json!({})).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(!stalled.is_finished());

    let resp = tokio::time::timeout(Duration::from_secs(60), stalled)
        .await
        .expect("answered within 60 s")
        .unwrap()
        .unwrap();
    assert_eq!(resp.status(), StatusCode::REQUEST_TIMEOUT);
    assert_eq!(resp.headers()["content-type"], "application/json");
    assert!(started.elapsed() >= mcp_gateway::config::DEFAULT_BODY_READ_TIMEOUT);
    let body = json_body(resp).await;
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], Value::Null);
    assert_eq!(body["error"]["code"], -32600);
}

#[tokio::test(start_paused = true)]
async fn the_body_read_timeout_is_configurable() {
    let mut config = config("http://127.0.0.1:9", 64);
    config.body_read_timeout = Duration::from_millis(1500);
    let app = app_with(config, 100.0);
    let started = tokio::time::Instant::now();
    let resp = tokio::time::timeout(
        Duration::from_secs(60),
        app.oneshot(post(&agent(), stalled_body())),
    )
    .await
    .expect("answered within 60 s")
    .unwrap();
    assert_eq!(resp.status(), StatusCode::REQUEST_TIMEOUT);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1500) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
}

// ---------------------------------------------------------------- 4. edge polish

#[tokio::test]
async fn a_rate_limited_notification_gets_202_without_a_body_and_ids_echo_as_sent() {
    let app = app("http://127.0.0.1:9", 1.0, 64);
    let resp = agent_call(&app, 1, "get_service_health", json!({})).await;
    assert_eq!(resp.status(), StatusCode::OK);
    // The bucket is empty now. A notification runs nothing and is answered 202, no body.
    let note = json!({"jsonrpc": "2.0", "method": "tools/call",
                      "params": {"name": "get_service_health"}});
    let resp = app
        .clone()
        .oneshot(post(&agent(), note.to_string()))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    assert!(common::bytes(resp).await.is_empty());
    // A request is refused with its own id, a string here: a `rate_limited` tool error.
    let call = json!({"jsonrpc": "2.0", "id": "call-7", "method": "tools/call",
                      "params": {"name": "get_service_health"}});
    let resp = app.oneshot(post(&agent(), call.to_string())).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body = json_body(resp).await;
    assert_eq!(body["id"], "call-7");
    assert_eq!(
        body["result"]["structuredContent"]["error"]["code"],
        "rate_limited"
    );
}

#[tokio::test]
async fn json_serde_cannot_hold_is_invalid_request_not_parse_error() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"a\":{}{}}}}}",
        "[".repeat(300),
        "]".repeat(300)
    );
    let huge = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1e400}}"#.to_owned();
    for body in [deep, huge] {
        let resp = app.clone().oneshot(post(&agent(), body)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        assert_eq!(json_body(resp).await["error"]["code"], -32600);
    }
    let resp = app
        .oneshot(post(&agent(), r#"{"jsonrpc":"2.0","id":1,"#))
        .await
        .unwrap();
    assert_eq!(json_body(resp).await["error"]["code"], -32700);
}

#[tokio::test]
async fn rmcp_plain_text_refusals_are_json_rpc_errors_with_their_status() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let cases = [
        ("accept", "application/json", StatusCode::NOT_ACCEPTABLE),
        (
            "content-type",
            "text/plain",
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "mcp-protocol-version",
            "1999-01-01",
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (name, value, status) in cases {
        let mut req = post(&agent(), list.clone());
        req.headers_mut().insert(name, value.parse().unwrap());
        let resp = app.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), status, "{name}");
        assert_eq!(resp.headers()["content-type"], "application/json", "{name}");
        let body = json_body(resp).await;
        assert_eq!(body["id"], Value::Null);
        assert_eq!(body["error"]["code"], -32600);
        assert!(!body["error"]["message"].as_str().unwrap().is_empty());
    }
    let resp = app
        .oneshot(
            Request::get("/mcp")
                .header("host", "localhost")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(resp.headers()["allow"], "POST");
    assert_eq!(json_body(resp).await["error"]["code"], -32600);
}

#[tokio::test]
async fn echoed_caller_text_is_clipped() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let long = "x".repeat(100_000);
    let resp = app
        .clone()
        .oneshot(tools_call(1, &agent(), &long, json!({})))
        .await
        .unwrap();
    let message = json_body(resp).await["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.starts_with("unknown tool: xxx"), "{message}");
    assert!(message.len() < 100, "{} bytes", message.len());

    let resp = agent_call(
        &app,
        2,
        "search_knowledge_base",
        json!({"query": "refund", "top_k": long}),
    )
    .await;
    let body = json_body(resp).await;
    let err = tool_error(&body);
    assert_eq!(err["code"], "invalid_argument");
    assert!(err["message"].as_str().unwrap().len() < 200, "{err}");

    let mut req = post(
        &agent(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string(),
    );
    req.headers_mut()
        .insert("mcp-protocol-version", long.parse().unwrap());
    let body = json_body(app.oneshot(req).await.unwrap()).await;
    assert!(
        body["error"]["message"].as_str().unwrap().len() < 100,
        "{body}"
    );
}

#[tokio::test]
async fn the_public_base_url_replaces_the_host_in_oauth_metadata() {
    let mut config = config("http://127.0.0.1:9", 64);
    config.public_base_url = Some("https://mcp.example.com".to_owned());
    let app = app_with(config, 100.0);
    let metadata = Request::get("/.well-known/oauth-protected-resource")
        .header("host", "localhost")
        .body(Body::empty())
        .unwrap();
    let body = json_body(app.clone().oneshot(metadata).await.unwrap()).await;
    assert_eq!(body["resource"], "https://mcp.example.com/mcp");

    let mut unauthenticated = post(
        "",
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string(),
    );
    unauthenticated.headers_mut().remove("authorization");
    let resp = app.clone().oneshot(unauthenticated).await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let challenge = resp.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains(
            "resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource\""
        ),
        "{challenge}"
    );

    // A foreign Host is refused here as on /mcp.
    let foreign = Request::get("/.well-known/oauth-protected-resource")
        .header("host", "evil.example")
        .body(Body::empty())
        .unwrap();
    assert_eq!(
        app.oneshot(foreign).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn without_a_public_base_url_the_metadata_follows_the_allowed_host() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let metadata = Request::get("/.well-known/oauth-protected-resource")
        .header("host", "localhost")
        .body(Body::empty())
        .unwrap();
    let body = json_body(app.oneshot(metadata).await.unwrap()).await;
    assert_eq!(body["resource"], "http://localhost/mcp");
}

// ---------------------------------------------------------------- 5. second attack pass

#[tokio::test]
async fn a_json_rpc_response_gets_202_without_a_body_and_spends_no_token() {
    let app = app("http://127.0.0.1:9", 1.0, 64);
    for body in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": "r", "error": {"code": -1, "message": "no"}}),
    ] {
        let resp = app
            .clone()
            .oneshot(post(&agent(), body.to_string()))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::ACCEPTED, "{body}");
        assert!(common::bytes(resp).await.is_empty(), "{body}");
    }
    let resp = app
        .oneshot(tools_call(3, &agent(), "get_service_health", json!({})))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn an_unauthenticated_request_is_refused_before_its_body_is_read() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let started = tokio::time::Instant::now();
    let resp = tokio::time::timeout(
        Duration::from_secs(60),
        app.oneshot(post("not-a-token", stalled_body())),
    )
    .await
    .expect("answered within 60 s")
    .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(started.elapsed() < mcp_gateway::config::DEFAULT_BODY_READ_TIMEOUT);
}

#[tokio::test]
async fn duplicate_keys_in_the_message_or_params_are_invalid_request() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    for (body, id) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"ping","method":"tools/list"}"#,
            json!(3),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_service_health","name":"x"}}"#,
            json!(4),
        ),
    ] {
        let resp = app.clone().oneshot(post(&agent(), body)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        let answer = json_body(resp).await;
        assert_eq!(answer["error"]["code"], -32600, "{body}");
        assert_eq!(answer["id"], id, "{body}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("duplicate key"),
            "{answer}"
        );
    }
}

#[tokio::test]
async fn a_duplicate_argument_is_invalid_argument_naming_it_without_calling_core_api() {
    let core_api = core_api_search(200, 0).await;
    let app = app(&core_api.uri(), 100.0, 64);
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search_knowledge_base","arguments":{"query":"refunds","query":"x"}}}"#;
    let resp = app.oneshot(post(&agent(), body)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let answer = json_body(resp).await;
    let err = tool_error(&answer);
    assert_eq!(err["code"], "invalid_argument");
    assert_eq!(
        err["message"],
        "query: appears more than once in the arguments"
    );
}

#[tokio::test]
async fn invalid_utf8_or_a_lone_surrogate_is_a_parse_error() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    for body in [
        Bytes::from_static(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":\"\xc3\x28\"}}",
        ),
        Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\ud800"}}"#),
    ] {
        let resp = app.clone().oneshot(post(&agent(), body)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        let answer = json_body(resp).await;
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
        assert_eq!(answer["id"], Value::Null);
    }
}

#[tokio::test]
async fn a_non_integer_numeric_id_is_answered_with_id_null() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    for body in [
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1e29,"method":"ping"}"#,
    ] {
        let resp = app.clone().oneshot(post(&agent(), body)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        let answer = json_body(resp).await;
        assert_eq!(answer["error"]["code"], -32600, "{body}");
        assert_eq!(answer["id"], Value::Null, "{body}");
    }
}

#[tokio::test]
async fn auth_and_host_refusals_use_implementation_defined_codes() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let mut foreign = post(&agent(), list.clone());
    foreign
        .headers_mut()
        .insert("host", "evil.example".parse().unwrap());
    // An auth refusal echoes the request's id (SPEC §5, issue 44); the Host refusal, made
    // before anything is read, answers `null`.
    for (req, status, code, id) in [
        (
            post("not-a-token", list.clone()),
            StatusCode::UNAUTHORIZED,
            -32001,
            json!(1),
        ),
        (
            post(&common::token("agent-a", &[]), list.clone()),
            StatusCode::FORBIDDEN,
            -32003,
            json!(1),
        ),
        (foreign, StatusCode::FORBIDDEN, -32003, Value::Null),
    ] {
        let resp = app.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), status);
        let answer = json_body(resp).await;
        assert_eq!(
            (&answer["error"]["code"], &answer["id"]),
            (&json!(code), &id)
        );
    }
}

// ---------------------------------------------------------------- issue 17: what real clients found

/// `POST /mcp` with `headers` replacing the conforming defaults of [`post`].
fn post_with(headers: &[(&str, &str)], body: &Value) -> Request<Body> {
    let mut req = post(&agent(), body.to_string());
    for (name, value) in headers {
        let name = http::header::HeaderName::from_bytes(name.as_bytes()).unwrap();
        req.headers_mut().insert(name, value.parse().unwrap());
    }
    req
}

#[tokio::test]
async fn header_refusals_spend_no_rate_limit_token() {
    let app = app("http://127.0.0.1:9", 1.0, 64);
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": {"name": "get_service_health", "arguments": {}}});
    for (headers, status) in [
        (
            vec![("content-type", "text/plain")],
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            vec![("accept", "application/json")],
            StatusCode::NOT_ACCEPTABLE,
        ),
        (
            vec![("mcp-protocol-version", "2099-01-01")],
            StatusCode::BAD_REQUEST,
        ),
        (
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
                ("mcp-name", "get_service_health"),
            ],
            StatusCode::BAD_REQUEST,
        ),
        (
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "wrong_tool_name"),
            ],
            StatusCode::BAD_REQUEST,
        ),
    ] {
        for _ in 0..3 {
            let resp = app
                .clone()
                .oneshot(post_with(&headers, &call))
                .await
                .unwrap();
            assert_eq!(resp.status(), status, "{headers:?}");
        }
    }
    // The bucket's one token is still there; then it is empty.
    let resp = agent_call(&app, 6, "get_service_health", json!({})).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let resp = agent_call(&app, 7, "get_service_health", json!({})).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let body = json_body(resp).await;
    assert_eq!(body["id"], 7);
    assert_eq!(body["result"]["isError"], true);
    assert_eq!(
        body["result"]["structuredContent"]["error"]["code"],
        "rate_limited"
    );
}

#[tokio::test]
async fn an_mcp_name_mismatch_is_400_header_mismatch_when_the_bucket_is_empty() {
    let app = app("http://127.0.0.1:9", 1.0, 64);
    let resp = agent_call(&app, 1, "get_service_health", json!({})).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "get_service_health", "arguments": {}}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "wrong_tool_name"),
    ];
    let resp = app.oneshot(post_with(&headers, &call)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_body(resp).await["error"]["code"], -32020);
}

#[tokio::test]
async fn removed_and_unserved_methods_at_2026_07_28_are_404_method_not_found() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-client", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "unknown/method",
    ] {
        let body =
            json!({"jsonrpc": "2.0", "id": 500, "method": method, "params": {"_meta": meta}});
        let headers = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ];
        let resp = app
            .clone()
            .oneshot(post_with(&headers, &body))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND, "{method}");
        let answer = json_body(resp).await;
        assert_eq!(answer["error"]["code"], -32601, "{method}");
        assert_eq!(answer["id"], 500, "{method}");
    }
}

// ---------------------------------------------------------------- attack pass: hostile ids

#[tokio::test]
async fn a_huge_well_formed_id_is_not_found_without_calling_core_api_or_opening_its_breaker() {
    // A 100,000-digit id once made a URL the HTTP client refused to build, counted as a
    // core-api failure: nine such calls opened the breaker for every agent.
    let core_api = core_api_search(200, 0).await;
    let app = app(&core_api.uri(), 100.0, 64);
    let id = format!("txn_{}", "9".repeat(100_000));
    for i in 0..12 {
        let resp = agent_call(&app, i, "get_transaction", json!({"transaction_id": id})).await;
        let body = json_body(resp).await;
        let err = tool_error(&body);
        assert_eq!(err["code"], "not_found", "{err}");
        assert!(
            err["message"].as_str().unwrap().len() < 200,
            "the id is clipped"
        );
    }
    let account = format!("acc_{}", "1".repeat(50_000));
    let resp = agent_call(
        &app,
        20,
        "list_transactions",
        json!({"account_id": account}),
    )
    .await;
    assert_eq!(tool_error(&json_body(resp).await)["code"], "not_found");
    assert_eq!(core_api_breaker(&app).await, "closed");
}

// ---------------------------------------------------------------- attack pass: hostile hosts

/// `GET /.well-known/oauth-protected-resource` with `host` as its raw `Host` bytes.
fn metadata_request(host: &[u8]) -> Request<Body> {
    let mut req = Request::get("/.well-known/oauth-protected-resource")
        .body(Body::empty())
        .unwrap();
    req.headers_mut().insert(
        http::header::HOST,
        http::HeaderValue::from_bytes(host).unwrap(),
    );
    req
}

#[tokio::test]
async fn a_host_that_only_starts_like_an_allowed_one_or_is_not_ascii_is_refused() {
    let mut config = config("http://127.0.0.1:9", 64);
    config.allowed_hosts = vec!["localhost".to_owned(), "[::1]".to_owned()];
    let app = app_with(config, 100.0);
    for host in [
        &b"[::1]evil.example"[..],
        b"[::1].evil.example",
        b"[::1]:99@evil.example",
        b"localhost\xff",
        b"evil.com\xff",
    ] {
        let shown = String::from_utf8_lossy(host);
        let resp = app.clone().oneshot(metadata_request(host)).await.unwrap();
        assert_eq!(
            resp.status(),
            StatusCode::FORBIDDEN,
            "metadata, Host {shown}"
        );
        let mut call = tools_call(1, &agent(), "get_service_health", json!({}));
        call.headers_mut().insert(
            http::header::HOST,
            http::HeaderValue::from_bytes(host).unwrap(),
        );
        let resp = app.clone().oneshot(call).await.unwrap();
        assert_eq!(
            resp.status(),
            StatusCode::FORBIDDEN,
            "tools/call, Host {shown}"
        );
        let body = json_body(resp).await;
        assert_eq!(body["error"]["code"], -32003, "{body}");
    }
    let resp = app.oneshot(metadata_request(b"[::1]:8080")).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_loopback_host_is_published_as_http_whatever_its_case() {
    let mut config = config("http://127.0.0.1:9", 64);
    config.allowed_hosts = vec!["localhost".to_owned(), "localhost:39797".to_owned()];
    let app = app_with(config, 100.0);
    for host in ["LocalHost:39797", "LOCALHOST"] {
        let resp = app
            .clone()
            .oneshot(metadata_request(host.as_bytes()))
            .await
            .unwrap();
        let body = json_body(resp).await;
        assert_eq!(body["resource"], format!("http://{host}/mcp"), "{body}");
    }
}

#[tokio::test]
async fn rmcp_refusals_that_quote_a_header_or_version_are_clipped() {
    let app = app("http://127.0.0.1:9", 100.0, 64);
    let long = "n".repeat(200_000);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "get_service_health", "arguments": {}, "_meta": meta}});
    for (header, value) in [("mcp-name", long.as_str()), ("mcp-method", long.as_str())] {
        let mut req = post(&agent(), body.to_string());
        let headers = req.headers_mut();
        headers.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
        headers.insert("mcp-method", "tools/call".parse().unwrap());
        headers.insert("mcp-name", "get_service_health".parse().unwrap());
        headers.insert(header, value.parse().unwrap());
        let resp = app.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{header}");
        let body = json_body(resp).await;
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("nnnn"), "{header}: {message}");
        assert!(message.len() < 300, "{header}: {} bytes", message.len());
    }

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "v".repeat(1_000_000), "capabilities": {},
                   "clientInfo": {"name": "x", "version": "1"}}});
    let resp = app
        .oneshot(post(&agent(), initialize.to_string()))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body = common::bytes(resp).await;
    assert!(body.len() < 300, "{} bytes", body.len());
}

#[tokio::test]
async fn two_origin_headers_are_refused_even_when_the_first_is_allowed() {
    let mut config = config("http://127.0.0.1:9", 64);
    config.allowed_origins = vec!["http://localhost:*".to_owned()];
    let app = app_with(config, 100.0);
    let call = |origins: &[&str]| {
        let mut req = tools_call(1, &agent(), "get_service_health", json!({}));
        for origin in origins {
            req.headers_mut()
                .append(http::header::ORIGIN, origin.parse().unwrap());
        }
        req
    };
    let one = app
        .clone()
        .oneshot(call(&["http://localhost:1"]))
        .await
        .unwrap();
    assert_eq!(one.status(), StatusCode::OK);
    for pair in [
        ["http://localhost:1", "http://evil.example"],
        ["http://evil.example", "http://localhost:1"],
        ["http://localhost:1", "http://localhost:1"],
    ] {
        let resp = app.clone().oneshot(call(&pair)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{pair:?}");
    }
}
