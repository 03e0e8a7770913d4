//! The confirmation module over rmcp's stateless Streamable HTTP transport, configured as the
//! gateway's (SPEC §3, §5b): at 2026-07-28 a request declaring form elicitation in its `_meta`
//! gets an `InputRequiredResult` on the wire, and its retry with the echoed `requestState` and
//! a yes runs; a 2025-11-25 request or one without elicitation gets `confirmation_required`.
//!
//! The handler here stands in for the gateway's dispatch (a fixed caller and record), so the
//! test checks what `confirm` reads from rmcp's request context and what rmcp lets through.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::Request;
use kosha_auth::{Principal, Role};
use kosha_resilience::rate_limit::BoxFuture;
use kosha_state::{HmacKey, ManualClock, SecretCache, SecretFetcher, StateError, decode_hmac_key};
use mcp_gateway::confirm::question::Record;
use mcp_gateway::confirm::reach::Client;
use mcp_gateway::confirm::{Confirmer, Pending, Reply, Step};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tower::ServiceExt;

struct Fixed;
impl SecretFetcher for Fixed {
    fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
        Box::pin(async {
            Ok(
                decode_hmac_key("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
                    .unwrap(),
            )
        })
    }
}

/// A server whose one tool, `raise_dispute`, always needs a confirmation.
#[derive(Clone)]
struct Asker(Arc<Confirmer>);

impl ServerHandler for Asker {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let principal = Principal {
            client_id: "app".into(),
            subject: "uuid-alice".into(),
            username: Some("alice".into()),
            roles: vec![Role::Agent],
            scopes: vec![],
            groups: vec![],
            tags: Default::default(),
            expires_at: 0,
        };
        let client = Client::of(&context);
        let arguments = request.arguments.clone().unwrap_or_default();
        let pending = Pending {
            tool: "raise_dispute",
            arguments: &arguments,
            record: Record {
                transaction_id: "txn_000341",
                account_id: "acc_0012",
                amount_minor: 81_240,
                currency: "EUR",
            },
            principal: &principal,
            client: &client,
            reply: Reply::of(&request),
        };
        Ok(
            match self.0.decide(&pending, Duration::from_secs(1)).await {
                Step::Run(confirmed) => {
                    CallToolResult::structured(json!({"ran": true, "note": confirmed.note})).into()
                }
                Step::Ask(question) => question.into(),
                Step::Refuse(error) => error.into_result().into(),
            },
        )
    }
}

fn app() -> axum::Router {
    let keys = SecretCache::with_fetcher(Arc::new(Fixed), "test", Duration::from_secs(300));
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let asker = Asker(Arc::new(Confirmer::new(
        Some(keys),
        Duration::from_secs(600),
        clock,
    )));
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let mcp = StreamableHttpService::new(
        move || Ok(asker.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    axum::Router::new().route_service("/mcp", mcp)
}

const ARGS: &str = r#"{"transaction_id": "txn_000341", "reason": "charged twice"}"#;

/// A `tools/call` of `raise_dispute` at `revision` declaring `capabilities`, with `extra`
/// params (the retry's `requestState` and `inputResponses`).
fn call(revision: &str, capabilities: Value, extra: Value) -> Request<Body> {
    let mut params =
        json!({"name": "raise_dispute", "arguments": serde_json::from_str::<Value>(ARGS).unwrap()});
    if revision >= "2026-07-28" {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientInfo": {"name": "confirm-wire", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        });
    }
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let mut builder = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("host", "localhost")
        .header("mcp-protocol-version", revision);
    if revision >= "2026-07-28" {
        builder = builder
            .header("mcp-method", "tools/call")
            .header("mcp-name", "raise_dispute");
    }
    builder.body(Body::from(body.to_string())).unwrap()
}

async fn answer(app: &axum::Router, req: Request<Body>) -> Value {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    serde_json::from_slice(&bytes).unwrap()
}

fn form() -> Value {
    json!({"elicitation": {"form": {}}})
}

#[tokio::test]
async fn at_2026_07_28_the_question_reaches_the_wire_and_a_yes_on_the_retry_runs() {
    let app = app();
    let asked = answer(&app, call("2026-07-28", form(), json!({}))).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let question = &result["inputRequests"]["confirm"];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(
        question["params"]["message"],
        "Raise a dispute of 812.40 EUR on txn_000341 (acc_0012), reason: “charged twice”?"
    );
    let state = result["requestState"].as_str().unwrap().to_owned();

    let yes = json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true, "note": "ok"}}}});
    let ran = answer(&app, call("2026-07-28", form(), yes)).await;
    assert_eq!(
        ran["result"]["structuredContent"],
        json!({"ran": true, "note": "ok"}),
        "{ran}"
    );

    let no = json!({"requestState": state, "inputResponses": {"confirm": {"action": "decline"}}});
    let declined = answer(&app, call("2026-07-28", form(), no)).await;
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert_eq!(
        declined["result"]["structuredContent"]["error"]["code"],
        "declined"
    );
}

#[tokio::test]
async fn an_older_revision_or_a_request_without_elicitation_gets_confirmation_required() {
    let app = app();
    for req in [
        call("2025-11-25", form(), json!({})),
        call("2026-07-28", json!({}), json!({})),
        call("2026-07-28", json!({"elicitation": {"url": {}}}), json!({})),
    ] {
        let body = answer(&app, req).await;
        assert_eq!(body["result"]["isError"], true, "{body}");
        assert_eq!(
            body["result"]["structuredContent"]["error"]["code"], "confirmation_required",
            "{body}"
        );
    }
}
