//! The chaos header through the gateway in process (SPEC §9, issue 14): an operator's signed
//! header injects its fault inside the core-api policy (the dependency is not called for an
//! `error` fault, and the breaker and retries see it), and is forwarded unchanged; a forged
//! header, an agent-only principal or a disabled gate leave the request untouched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::Request;
use kosha_auth::Role;
use kosha_resilience::chaos::{ChaosSpec, Fault, Target};
use kosha_resilience::rate_limit::BoxFuture;
use kosha_state::{HmacKey, SecretCache, SecretFetcher, StateError, decode_hmac_key};
use serde_json::{Value, json};
use tower::ServiceExt;
use wiremock::matchers::{header_exists, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use common::{config, gateway_with, json_body, token, tools_call};

const KEY_HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

struct Fixed;
impl SecretFetcher for Fixed {
    fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
        Box::pin(async { Ok(decode_hmac_key(KEY_HEX).unwrap()) })
    }
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn header(fault: Fault, target: Target) -> String {
    let spec = ChaosSpec::try_new(target, fault, None, 1.0, now_s() + 300).unwrap();
    spec.sign(&hex::decode(KEY_HEX).unwrap()).unwrap()
}

fn app(core_api: &str, enabled: bool) -> axum::Router {
    let mut cfg = config(core_api, 64);
    cfg.chaos_enabled = enabled;
    let keys = SecretCache::with_fetcher(Arc::new(Fixed), "test", Duration::from_secs(300));
    mcp_gateway::http::router(Arc::new(gateway_with(cfg, 1000.0).with_chaos_keys(keys)))
}

async fn core_api() -> MockServer {
    let server = MockServer::start().await;
    let txn = json!({"transaction": {"transaction_id": "txn_000001", "account_id": "acc_0001",
        "amount_minor": 1250, "currency": "EUR", "merchant": "M", "category": "c",
        "status": "booked", "booked_at": "2026-03-04T10:15:00Z"}});
    Mock::given(method("GET"))
        .and(path("/v1/transactions/txn_000001"))
        .respond_with(ResponseTemplate::new(200).set_body_json(txn))
        .mount(&server)
        .await;
    server
}

async fn get_transaction(app: &axum::Router, roles: &[Role], chaos: Option<&str>) -> Value {
    let mut req: Request<Body> = tools_call(
        1,
        &token("agent-a", roles),
        "get_transaction",
        json!({"transaction_id": "txn_000001"}),
    );
    if let Some(h) = chaos {
        req.headers_mut()
            .insert("x-kosha-chaos", h.parse().unwrap());
    }
    json_body(app.clone().oneshot(req).await.unwrap()).await
}

const TESTER: &[Role] = &[Role::Agent, Role::Operator];

#[tokio::test]
async fn an_error_fault_fails_the_call_inside_the_policy_without_calling_core_api() {
    let server = core_api().await;
    let app = app(&server.uri(), true);
    let body = get_transaction(&app, TESTER, Some(&header(Fault::Error, Target::CoreApi))).await;
    let err = &body["result"]["structuredContent"]["error"];
    assert_eq!(err["code"], "dependency_unavailable", "{body}");
    assert_eq!(err["dependency"], "core-api");
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn refused_or_other_target_headers_leave_the_call_untouched() {
    let server = core_api().await;
    let on = app(&server.uri(), true);
    let off = app(&server.uri(), false);
    let good = header(Fault::Error, Target::CoreApi);
    let forged = good.replace("fault=error", "fault=reset");
    for (app, roles, h) in [
        (&off, TESTER, good.as_str()),
        (&on, &[Role::Agent][..], good.as_str()),
        (&on, TESTER, forged.as_str()),
        (&on, TESTER, header(Fault::Error, Target::OpenAi).leak()),
    ] {
        let body = get_transaction(app, roles, Some(h)).await;
        assert_eq!(
            body["result"]["structuredContent"]["transaction"]["transaction_id"], "txn_000001",
            "{body}"
        );
    }
}

#[tokio::test]
async fn an_honoured_header_is_forwarded_unchanged_to_core_api() {
    let server = MockServer::start().await;
    let h = header(Fault::Error, Target::OpenAi);
    Mock::given(method("GET"))
        .and(path("/v1/transactions/txn_000001"))
        .and(header_exists("x-kosha-chaos"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({"error": {"code": "not_found", "message": "seen"}})),
        )
        .mount(&server)
        .await;
    let body = get_transaction(&app(&server.uri(), true), TESTER, Some(&h)).await;
    assert_eq!(
        body["result"]["structuredContent"]["error"]["code"], "not_found",
        "{body}"
    );
    let sent = &server.received_requests().await.unwrap()[0];
    assert_eq!(sent.headers["x-kosha-chaos"].to_str().unwrap(), h);
}

#[derive(Clone, Default)]
struct Capture(Arc<parking_lot::Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every refusal reason reaches the audit log with its principal, and no line holds the key or
/// any signature sent (SPEC §9; the live-stack test covers the same on the running gateway).
#[tokio::test]
async fn refusals_are_audited_with_their_reason_and_never_the_key_or_signature() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = kosha_runtime::telemetry::capture_default(subscriber);

    let server = core_api().await;
    let on = app(&server.uri(), true);
    let off = app(&server.uri(), false);
    let key = hex::decode(KEY_HEX).unwrap();
    let at = |exp: u64| {
        ChaosSpec::try_new(Target::CoreApi, Fault::Error, None, 1.0, exp)
            .unwrap()
            .sign(&key)
            .unwrap()
    };
    let good = header(Fault::Error, Target::CoreApi);
    let cases = [
        (&off, TESTER, good.clone(), "disabled"),
        (&on, &[Role::Agent][..], good.clone(), "not_operator"),
        (
            &on,
            TESTER,
            good.replace("fault=error", "fault=reset"),
            "bad_signature",
        ),
        (&on, TESTER, at(now_s() - 10), "expired"),
        (&on, TESTER, at(now_s() + 960), "too_far_ahead"),
        (
            &on,
            TESTER,
            format!("{good};{}", "x".repeat(10 * 1024)),
            "malformed",
        ),
    ];
    let mut sent = vec![KEY_HEX.to_owned()];
    for (app, roles, h, reason) in &cases {
        let body = get_transaction(app, roles, Some(h)).await;
        assert_eq!(
            body["result"]["structuredContent"]["transaction"]["transaction_id"], "txn_000001",
            "{reason}: {body}"
        );
        sent.extend(
            h.rsplit_once(";sig=")
                .map(|(_, sig)| sig[..64.min(sig.len())].to_owned()),
        );
    }
    let logged = String::from_utf8(capture.0.lock().clone()).unwrap();
    for (_, _, _, reason) in &cases {
        assert!(
            logged.lines().any(|l| l.contains("chaos_header_rejected")
                && l.contains(&format!("\"reason\":\"{reason}\""))
                && l.contains("agent-a")),
            "no audit line for {reason}"
        );
    }
    for secret in &sent {
        assert!(
            !logged.contains(secret.as_str()),
            "a key or signature was logged"
        );
    }
}
