//! The gateway's HTTP edge in process (SPEC §3, §5, §6): an empty bucket answers a
//! `rate_limited` tool error the model reads (HTTP 200), valid against the tool's
//! `outputSchema`; load shedding answers 503 with `Retry-After: 1`; denied tools look unknown
//! and spend the default cost. No network beyond loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use kosha_auth::Role;
use kosha_resilience::overrides::NoOverrides;
use kosha_resilience::rate_limit::{BoxFuture, RateDecision, RateLimiter};
use serde_json::json;
use tower::ServiceExt;

use common::{
    agent_call, app, config, gateway_with_limiter, json_body, token, tool_error, tools_call,
};

#[tokio::test]
async fn an_empty_bucket_answers_a_rate_limited_tool_error_valid_against_the_output_schema() {
    let app = app("http://127.0.0.1:9", 2.0, 64);
    let t = token("agent-a", &[Role::Agent]);
    for id in 1..=2 {
        let resp = app
            .clone()
            .oneshot(tools_call(id, &t, "get_service_health", json!({})))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_ne!(json_body(resp).await["result"]["isError"], true);
    }
    let resp = app
        .clone()
        .oneshot(tools_call(3, &t, "get_service_health", json!({})))
        .await
        .unwrap();
    // A tool error the model reads, not an HTTP refusal the SDKs turn into an exception.
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers().get("retry-after").is_none());
    let body = json_body(resp).await;
    assert_eq!(body["id"], 3);
    let result = &body["result"];
    assert_eq!(result["isError"], true);
    let error = &result["structuredContent"]["error"];
    assert_eq!(error["code"], "rate_limited");
    let retry = error["retry_after_s"].as_u64().unwrap();
    assert!(retry >= 1);
    assert!(
        error["message"].as_str().unwrap().contains("retry after"),
        "{error}"
    );
    // The text block mirrors it, as for every tool result (SPEC §3).
    let text: serde_json::Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"]);
    // Valid against the tool's outputSchema (clients that validate must accept it).
    let list = json_body(
        app.clone()
            .oneshot(common::tools_list(4, &t))
            .await
            .unwrap(),
    )
    .await;
    let schema = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "get_service_health")
        .unwrap()["outputSchema"]
        .clone();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        validator.is_valid(&result["structuredContent"]),
        "{}",
        result["structuredContent"]
    );

    // Buckets are per client: another client is unaffected.
    let other = token("agent-b", &[Role::Agent]);
    let resp = app
        .oneshot(tools_call(5, &other, "get_service_health", json!({})))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_ne!(json_body(resp).await["result"]["isError"], true);
}

#[tokio::test]
async fn an_unknown_or_denied_tool_spends_the_default_cost_and_answers_as_unknown() {
    let app = app("http://127.0.0.1:9", 2.0, 64);
    let ops = token("ops", &[Role::Operator]);
    // get_transaction is an agent's tool: to an operator it does not exist.
    for (id, name) in [(1, "no_such_tool"), (2, "get_transaction")] {
        let body = json_body(
            app.clone()
                .oneshot(tools_call(id, &ops, name, json!({})))
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(body["error"]["code"], -32602, "{body}");
    }
    // Both spent one token: the bucket of 2 is empty, and unknown tools still look unknown.
    let body = json_body(
        app.clone()
            .oneshot(tools_call(3, &ops, "get_service_health", json!({})))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        body["result"]["structuredContent"]["error"]["code"],
        "rate_limited"
    );
    let body = json_body(
        app.clone()
            .oneshot(tools_call(4, &ops, "no_such_tool", json!({})))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    // tools/list is free.
    let resp = app.oneshot(common::tools_list(5, &ops)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn tools_list_may_be_cached_privately_for_five_minutes() {
    let app = common::app("http://127.0.0.1:9", 5.0, 64);
    let body = json_body(
        app.oneshot(common::tools_list(1, &common::agent()))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(body["result"]["ttlMs"], 300_000, "{body}");
    assert_eq!(
        body["result"]["ttlMs"],
        mcp_gateway::server::TOOLS_LIST_TTL_MS
    );
    assert_eq!(body["result"]["cacheScope"], "private", "{body}");
}

#[tokio::test]
async fn a_tools_cost_is_spent_per_call_and_retry_after_counts_to_it() {
    let mut config = common::config("http://127.0.0.1:9", 64);
    config.tool_costs = Some("get_service_health=3".to_owned());
    let app = common::app_with(config, 5.0);
    let t = token("agent-a", &[Role::Agent]);
    let call = |id| tools_call(id, &t, "get_service_health", json!({}));
    let first = json_body(app.clone().oneshot(call(1)).await.unwrap()).await;
    assert_ne!(first["result"]["isError"], true, "{first}");
    // 2 tokens left, the cost is 3: refused, retry when 1 more has refilled (0.001/s).
    let second = json_body(app.clone().oneshot(call(2)).await.unwrap()).await;
    let error = common::tool_error(&second);
    assert_eq!(error["code"], "rate_limited");
    assert_eq!(error["retry_after_s"], 1000);
    // A tool of cost 1 still fits in what is left.
    let cheap = json_body(
        app.oneshot(tools_call(
            3,
            &t,
            "get_transaction",
            json!({"transaction_id": "bad"}),
        ))
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(common::tool_error(&cheap)["code"], "invalid_argument");
}

#[test]
fn a_tool_cost_the_bucket_cannot_admit_stops_the_gateway_where_its_state_is_built() {
    for (costs, named) in [
        ("get_service_health=0", "`get_service_health=0`"),
        ("no_such_tool=1", "`no_such_tool=1`"),
    ] {
        let mut config = common::config("http://127.0.0.1:9", 64);
        config.tool_costs = Some(costs.to_owned());
        let limiter = kosha_resilience::rate_limit::LocalRateLimiter::new(
            kosha_resilience::rate_limit::BucketConfig::try_new(5.0, 0.001).unwrap(),
            || 0,
        );
        let refused = common::try_gateway(
            config,
            std::sync::Arc::new(kosha_resilience::overrides::NoOverrides),
            std::sync::Arc::new(limiter),
        )
        .unwrap_err();
        assert_eq!(refused.exit_code(), 2, "a configuration error");
        let shown = refused.to_string();
        assert!(
            shown.contains("KOSHA_TOOL_COSTS") && shown.contains(named),
            "{shown}"
        );
    }
}

#[tokio::test]
async fn requests_above_max_in_flight_are_shed_with_503() {
    // A core-api that accepts connections and never answers keeps the first call in flight;
    // it signals each connection, so the test knows the call holds its slot.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let arrived = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = arrived.clone();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
            signal.notify_one();
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
    arrived.notified().await;
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
    // The aborted request released its slot once its task is gone.
    assert!(slow.await.unwrap_err().is_cancelled());
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

/// Allows every call after `wait` (a bucket write that takes its time).
struct SlowLimiter {
    wait: Duration,
}

impl RateLimiter for SlowLimiter {
    fn check<'a>(
        &'a self,
        _bucket: kosha_resilience::rate_limit::Bucket<'a>,
        _cost: u32,
    ) -> BoxFuture<'a, RateDecision> {
        Box::pin(async move {
            tokio::time::sleep(self.wait).await;
            RateDecision::Allowed
        })
    }
}

#[tokio::test(start_paused = true)]
async fn the_limiters_round_trip_is_spent_from_the_tools_budget() {
    // get_transaction has 3 s (SPEC §4) and needs 300 ms left to start (SPEC §6): a limiter
    // answering after 2.8 s leaves 200 ms, so the call is shed before it calls core-api; one
    // answering after 60 s is not waited for past the budget. get_service_health (1 s, calls
    // nothing) answers after a 900 ms wait and not after 1.1 s. No call here reaches the
    // network (core-api is a closed port the shed calls never try).
    let cases = [
        ("get_transaction", 2_800, Some("deadline_exceeded")),
        ("get_transaction", 60_000, Some("deadline_exceeded")),
        ("get_service_health", 900, None),
        ("get_service_health", 1_100, Some("deadline_exceeded")),
    ];
    for (tool, wait_ms, error) in cases {
        let limiter = Arc::new(SlowLimiter {
            wait: Duration::from_millis(wait_ms),
        });
        let gateway = gateway_with_limiter(
            config("http://127.0.0.1:9", 64),
            Arc::new(NoOverrides),
            limiter,
        );
        let app = mcp_gateway::http::router(Arc::new(gateway));
        let args = if tool == "get_transaction" {
            json!({"transaction_id": "txn_000200"})
        } else {
            json!({})
        };
        let started = tokio::time::Instant::now();
        let resp = agent_call(&app, 1, tool, args).await;
        let body = json_body(resp).await;
        match error {
            Some(code) => assert_eq!(tool_error(&body)["code"], code, "{tool} {wait_ms}: {body}"),
            None => assert_ne!(body["result"]["isError"], true, "{tool} {wait_ms}: {body}"),
        }
        let budget = Duration::from_secs(if tool == "get_transaction" { 3 } else { 1 });
        assert!(
            started.elapsed() <= budget,
            "{tool} {wait_ms}: {:?}",
            started.elapsed()
        );
    }
}

/// Issue 44: with `KOSHA_RATE_KEY=user` two people behind one app client have a bucket each
/// (SPEC §6); by default they share the client's.
#[tokio::test]
async fn keyed_by_user_one_users_burst_is_refused_while_another_of_the_same_client_is_admitted() {
    let call = |app: &axum::Router, id, token: &str| {
        let request = tools_call(id, token, "get_service_health", json!({}));
        let app = app.clone();
        async move { json_body(app.oneshot(request).await.unwrap()).await }
    };
    let alice = common::user_token("agent-a", "sub-alice");
    let bob = common::user_token("agent-a", "sub-bob");
    let mut by_user = config("http://127.0.0.1:9", 64);
    by_user.rate_key = mcp_gateway::config::RateKey::User;
    // The refusal names whose limit is spent: the person's own, or the shared client's.
    let cases = [
        (by_user, true, "this user's own rate limit"),
        (
            config("http://127.0.0.1:9", 64),
            false,
            "this client's rate limit",
        ),
    ];
    for (rate_key, bob_admitted, owner) in cases {
        let app = common::app_with(rate_key, 2.0);
        for id in 1..=2 {
            assert_ne!(call(&app, id, &alice).await["result"]["isError"], true);
        }
        let refused = call(&app, 3, &alice).await;
        assert_eq!(tool_error(&refused)["code"], "rate_limited", "{refused}");
        let message = tool_error(&refused)["message"].as_str().unwrap().to_owned();
        assert!(message.starts_with(owner), "{message}");
        let second = call(&app, 4, &bob).await;
        assert_eq!(
            second["result"]["isError"] != true,
            bob_admitted,
            "{second}"
        );
    }
}

/// Keyed by user, a client-credentials token has no user and keeps its client's bucket, apart
/// from the users signed in through that client (SPEC §6).
#[tokio::test]
async fn keyed_by_user_a_client_credentials_token_keeps_its_clients_bucket() {
    let mut by_user = config("http://127.0.0.1:9", 64);
    by_user.rate_key = mcp_gateway::config::RateKey::User;
    let app = common::app_with(by_user, 1.0);
    let machine = common::machine_token("agent-a", &["kosha/agent"]);
    let alice = common::user_token("agent-a", "sub-alice");
    let mut errors = vec![];
    for (id, token) in [(1, &machine), (2, &alice), (3, &machine)] {
        let request = tools_call(id, token, "get_service_health", json!({}));
        let body = json_body(app.clone().oneshot(request).await.unwrap()).await;
        errors.push(body["result"]["isError"] == true);
    }
    assert_eq!(
        errors,
        [false, false, true],
        "the machine's second call is refused"
    );
}
