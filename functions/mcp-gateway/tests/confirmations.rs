//! A person's confirmation through the whole gateway (SPEC §5b, issue 47): a policy's
//! `unless { context.confirmed }` turns a big dispute into a question at MCP 2026-07-28, the
//! confirmed retry runs it, and the rate limit charges the asking round one token and the
//! confirmed round the tool's cost (here 3), so a round that needs no asking after all spends
//! the rest before it runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::Request;
use kosha_resilience::rate_limit::BoxFuture;
use kosha_state::{HmacKey, SecretCache, SecretFetcher, StateError, decode_hmac_key};
use serde_json::{Value, json};
use tower::ServiceExt;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

struct Fixed;
impl SecretFetcher for Fixed {
    fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
        Box::pin(async { Ok(decode_hmac_key(&"ab".repeat(32)).unwrap()) })
    }
}

const RULE: &str = r#"
@id("big-disputes-need-a-yes")
forbid (principal, action == Kosha::Action::"raise_dispute", resource)
when { context.input.amount_minor > 50000 } unless { context.confirmed };
"#;

/// core-api: `txn_000001` of 812.40 EUR, and a dispute answer for any `POST /v1/disputes`.
async fn core_api() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/transactions/txn_000001"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"transaction": {
            "transaction_id": "txn_000001", "account_id": "acc_0001", "amount_minor": 81240,
            "currency": "EUR", "merchant": "M", "category": "c", "status": "booked",
            "booked_at": "2026-03-04T10:15:00Z"}})),
        )
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/disputes"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({
            "dispute_id": "dsp_01JF0000000000000000000000", "transaction_id": "txn_000001",
            "status": "open", "amount_minor": 81240, "reason": "charged twice",
            "created_at": "2026-12-05T10:00:00Z"})))
        .mount(&server)
        .await;
    server
}

/// A gateway with the built-in set and [`RULE`], `raise_dispute` costing 3 tokens of a bucket
/// of 5 (refilling 0.001/s: not within a test).
fn app(core: &MockServer, file: &std::path::Path) -> axum::Router {
    let mut config = common::config(&core.uri(), 16);
    config.policy_file = Some(file.to_owned());
    config.tool_costs = Some("raise_dispute=3".to_owned());
    let keys = SecretCache::with_fetcher(Arc::new(Fixed), "test", Duration::from_secs(300));
    let gateway = common::gateway_with(config, 5.0).with_confirm_keys(keys);
    mcp_gateway::http::router(Arc::new(gateway))
}

/// `tools/call raise_dispute` at 2026-07-28 from a client declaring form elicitation, as the
/// user `alice`, with `extra` params (a retry's `requestState` and `inputResponses`).
fn dispute(amount_minor: i64, extra: Value) -> Request<Body> {
    let mut params = json!({
        "name": "raise_dispute",
        "arguments": {"transaction_id": "txn_000001", "reason": "charged twice", "amount_minor": amount_minor},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "confirmations", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params});
    Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "raise_dispute")
        .header(
            "authorization",
            format!("Bearer {}", common::user_token("agent-a", "alice")),
        )
        .body(Body::from(body.to_string()))
        .unwrap()
}

async fn answer(app: &axum::Router, req: Request<Body>) -> Value {
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    common::json_body(resp).await
}

/// The built-in set and [`RULE`] in a file of the test's own (`tag`).
fn file(tag: &str) -> std::path::PathBuf {
    let name = format!("kosha-confirm-{}-{tag}.cedar", std::process::id());
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, format!("{}\n{RULE}", kosha_authz::BUILTIN)).unwrap();
    path
}

#[tokio::test]
async fn the_asking_round_spends_one_token_and_the_confirmed_round_the_tools_cost() {
    let core = core_api().await;
    let file = file("asked");
    let app = app(&core, &file);
    // Asked: 1 token (4 left).
    let asked = answer(&app, dispute(81240, json!({}))).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let message = asked["result"]["inputRequests"]["confirm"]["params"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.contains("812.40 EUR") && message.contains("txn_000001"),
        "{message}"
    );
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    // Confirmed: the tool's 3 (1 left), and it runs.
    let yes = json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    let ran = answer(&app, dispute(81240, yes)).await;
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    assert_eq!(ran["result"]["structuredContent"]["created"], true, "{ran}");
    // Asked again: the last token; then the bucket is empty.
    let again = answer(&app, dispute(81240, json!({}))).await;
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    let limited = answer(&app, dispute(81240, json!({}))).await;
    assert_eq!(
        limited["result"]["structuredContent"]["error"]["code"], "rate_limited",
        "{limited}"
    );
    let _ = std::fs::remove_file(file);
}

#[tokio::test]
async fn a_round_that_needs_no_asking_spends_the_rest_of_the_cost_before_it_runs() {
    let core = core_api().await;
    let file = file("small");
    let app = app(&core, &file);
    // Under the threshold: 1 token, then the other 2 before it runs (2 left).
    let small = answer(&app, dispute(100, json!({}))).await;
    assert_eq!(small["result"]["isError"], false, "{small}");
    // Again: 1 token (1 left), but not the other 2: refused, nothing written twice.
    let refused = answer(&app, dispute(100, json!({}))).await;
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["code"], "rate_limited",
        "{refused}"
    );
    let _ = std::fs::remove_file(file);
}
