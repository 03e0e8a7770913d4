//! The write tools (`raise_dispute`, `flag_transaction_for_review`, SPEC §4) through the
//! gateway, against a real core-api served in process over a throwaway PostgreSQL database
//! (core-api's test harness): replays, derived keys, principals, conflicts, bad input, and
//! PostgreSQL down (one attempt per call, then the write breaker). A wiremock core-api
//! stands in for a write that outlives its attempt, and a proxy that drops core-api's reply
//! for a write committed whose reply was lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../../core-api/tests/api/common.rs"]
#[allow(dead_code)]
mod db;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use common::{agent, json_body, token, tool_error, tools_call};
use core_api::routes::{AppState, router};
use db::TestDb;
use kosha_auth::Role;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower::ServiceExt;

/// Serves `app` on a loopback port, counting the requests it receives; its base URL.
async fn serve(app: Router) -> (String, Arc<AtomicUsize>) {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let app = app.layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            counter.fetch_add(1, Ordering::SeqCst);
            next.run(req)
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// A gateway in front of a real core-api over `db`; also core-api's request counter.
async fn gateway(db: &TestDb) -> (Router, Arc<AtomicUsize>) {
    let (url, seen) = serve(router(AppState::new(db.pool()))).await;
    (common::app(&url, 10_000.0, 64), seen)
}

/// `name(arguments)` as `client_id` (an agent); the JSON-RPC answer.
async fn call_as(app: &Router, client_id: &str, name: &str, arguments: Value) -> Value {
    call_with(app, &token(client_id, &[Role::Agent]), name, arguments).await
}

/// `name(arguments)` with the bearer token `bearer`; the JSON-RPC answer.
async fn call_with(app: &Router, bearer: &str, name: &str, arguments: Value) -> Value {
    let resp = app
        .clone()
        .oneshot(tools_call(1, bearer, name, arguments))
        .await
        .unwrap();
    json_body(resp).await
}

async fn call(app: &Router, name: &str, arguments: Value) -> Value {
    call_as(app, "agent-a", name, arguments).await
}

fn content(body: &Value) -> &Value {
    assert_ne!(body["result"]["isError"], true, "{body}");
    &body["result"]["structuredContent"]
}

async fn count(db: &TestDb, table: &str) -> i64 {
    db.client()
        .await
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_repeated_call_without_a_key_replays_the_first_dispute() {
    let db = TestDb::seeded().await;
    let (app, _) = gateway(&db).await;
    let args = json!({"transaction_id": "txn_000011", "reason": "never received the goods"});
    let first = call(&app, "raise_dispute", args.clone()).await;
    let first = content(&first);
    assert_eq!(first["created"], true);
    assert_eq!(first["status"], "open");
    assert!(first["dispute_id"].as_str().unwrap().starts_with("dsp_"));
    // The same arguments in another key order derive the same key.
    let again = call(
        &app,
        "raise_dispute",
        json!({"reason": "never received the goods", "transaction_id": "txn_000011"}),
    )
    .await;
    let again = content(&again);
    assert_eq!(again["created"], false);
    assert_eq!(again["dispute_id"], first["dispute_id"]);
    assert_eq!(count(&db, "core.disputes").await, 1);
    assert_eq!(count(&db, "ops.outbox").await, 1);
    let key: String = db
        .client()
        .await
        .query_one("SELECT key FROM ops.idempotency_keys", &[])
        .await
        .unwrap()
        .get(0);
    assert!(key.starts_with("kosha-derived-"), "{key}");
}

#[tokio::test]
async fn an_explicit_key_replays_and_conflicts_with_other_arguments() {
    let db = TestDb::seeded().await;
    let (app, _) = gateway(&db).await;
    let args =
        json!({"transaction_id": "txn_000012", "reason": "odd merchant", "idempotency_key": "k-1"});
    let first = call(&app, "flag_transaction_for_review", args.clone()).await;
    let first = content(&first).clone();
    assert_eq!(first["created"], true);
    assert_eq!(first["status"], "pending_review");
    let replay = call(&app, "flag_transaction_for_review", args).await;
    assert_eq!(content(&replay)["created"], false);
    assert_eq!(content(&replay)["review_id"], first["review_id"]);
    let other = call(
        &app,
        "flag_transaction_for_review",
        json!({"transaction_id": "txn_000012", "reason": "another reason", "idempotency_key": "k-1"}),
    )
    .await;
    assert_eq!(tool_error(&other)["code"], "conflict", "{other}");
    assert_eq!(count(&db, "core.reviews").await, 1);
    assert_eq!(count(&db, "ops.outbox").await, 1);
}

#[tokio::test]
async fn different_principals_with_the_same_key_do_not_collide() {
    let db = TestDb::seeded().await;
    let (app, _) = gateway(&db).await;
    let args = json!({"transaction_id": "txn_000013", "reason": "check this", "idempotency_key": "shared"});
    let a = call_as(&app, "agent-a", "flag_transaction_for_review", args.clone()).await;
    let b = call_as(&app, "agent-b", "flag_transaction_for_review", args).await;
    assert_eq!(content(&a)["created"], true);
    assert_eq!(content(&b)["created"], true);
    assert_ne!(content(&a)["review_id"], content(&b)["review_id"]);
    // Derived keys too: the same arguments from two agents are two reviews.
    let args = json!({"transaction_id": "txn_000014", "reason": "check this"});
    let a = call_as(&app, "agent-a", "flag_transaction_for_review", args.clone()).await;
    let b = call_as(&app, "agent-b", "flag_transaction_for_review", args).await;
    assert_eq!(
        (
            content(&a)["created"].clone(),
            content(&b)["created"].clone()
        ),
        (json!(true), json!(true))
    );
    assert_eq!(count(&db, "core.reviews").await, 4);
}

/// `name(arguments)` as the user `sub` of the app client `agent-b`; the JSON-RPC answer.
async fn call_by(app: &Router, sub: &str, name: &str, arguments: Value) -> Value {
    call_with(app, &common::user_token("agent-b", sub), name, arguments).await
}

/// Issue 44: two users of one app client never replay each other's writes, with or without
/// a key, and a second open dispute on one transaction is still a conflict.
#[tokio::test]
async fn two_users_of_one_client_do_not_replay_each_others_writes() {
    let db = TestDb::seeded().await;
    let (app, _) = gateway(&db).await;
    let tool = "flag_transaction_for_review";
    for args in [
        json!({"transaction_id": "txn_000015", "reason": "odd"}),
        json!({"transaction_id": "txn_000016", "reason": "odd", "idempotency_key": "k-1"}),
    ] {
        let alice = call_by(&app, "sub-alice", tool, args.clone()).await;
        let bob = call_by(&app, "sub-bob", tool, args.clone()).await;
        let (alice, bob) = (content(&alice), content(&bob));
        assert_eq!(
            (&alice["created"], &bob["created"]),
            (&json!(true), &json!(true))
        );
        assert_ne!(alice["review_id"], bob["review_id"]);
        let again = call_by(&app, "sub-alice", tool, args).await;
        assert_eq!(content(&again)["created"], false);
        assert_eq!(content(&again)["review_id"], alice["review_id"]);
    }
    assert_eq!(count(&db, "core.reviews").await, 4);
    let args = json!({"transaction_id": "txn_000017", "reason": "not mine"});
    let first = call_by(&app, "sub-alice", "raise_dispute", args.clone()).await;
    let first = content(&first)["dispute_id"].clone();
    let second = call_by(&app, "sub-bob", "raise_dispute", args).await;
    assert_eq!(tool_error(&second)["code"], "conflict", "{second}");
    assert!(
        tool_error(&second)["message"]
            .as_str()
            .unwrap()
            .contains(first.as_str().unwrap()),
        "{second}"
    );
}

/// Issue 44: a dispute raised through a user token names that user in its row and its event.
#[tokio::test]
async fn a_dispute_names_the_user_who_raised_it() {
    let db = TestDb::seeded().await;
    let (app, _) = gateway(&db).await;
    let args = json!({"transaction_id": "txn_000018", "reason": "not mine"});
    let raised = call_by(&app, "sub-alice", "raise_dispute", args).await;
    let id = content(&raised)["dispute_id"].as_str().unwrap().to_owned();
    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT d.created_by, d.client_id, o.payload->>'created_by'
             FROM core.disputes d JOIN ops.outbox o ON o.aggregate_id = d.dispute_id
             WHERE d.dispute_id = $1",
            &[&id],
        )
        .await
        .unwrap();
    let got: (String, String, String) = (row.get(0), row.get(1), row.get(2));
    assert_eq!(
        got,
        ("sub-alice".into(), "agent-b".into(), "sub-alice".into())
    );
}

#[tokio::test]
async fn a_second_open_dispute_is_a_conflict_naming_the_first() {
    let db = TestDb::seeded().await;
    let (app, _) = gateway(&db).await;
    let first = call(
        &app,
        "raise_dispute",
        json!({"transaction_id": "txn_000015", "reason": "first"}),
    )
    .await;
    let id = content(&first)["dispute_id"].as_str().unwrap().to_owned();
    let second = call(
        &app,
        "raise_dispute",
        json!({"transaction_id": "txn_000015", "reason": "second"}),
    )
    .await;
    let error = tool_error(&second);
    assert_eq!(error["code"], "conflict");
    assert!(error["message"].as_str().unwrap().contains(&id), "{error}");
    assert_eq!(count(&db, "core.disputes").await, 1);
}

#[tokio::test]
async fn bad_input_is_a_tool_error_with_a_code_and_writes_nothing() {
    let db = TestDb::seeded().await;
    let (app, _) = gateway(&db).await;
    let txn = "txn_000016";
    let two_to_the_63: Value = serde_json::from_str("9223372036854775808").unwrap();
    let cases = [
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "r", "amount_minor": 0}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "r", "amount_minor": -5}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "r", "amount_minor": i64::MAX}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "r", "amount_minor": two_to_the_63}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "r", "amount_minor": 1.5}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": ""}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "x".repeat(1001)}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "a\u{0}b"}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "bell\u{7}"}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": "txn_999999", "reason": "r"}),
            "not_found",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": "txn_1", "reason": "r"}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": "TXN_000016", "reason": "r"}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": "txn_000016'; DROP TABLE core.disputes; --", "reason": "r"}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "r", "idempotency_key": ""}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "r", "idempotency_key": "k".repeat(256)}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "r", "idempotency_key": "a\nb"}),
            "invalid_argument",
        ),
        (
            "raise_dispute",
            json!({"transaction_id": txn, "reason": "r", "extra": 1}),
            "invalid_argument",
        ),
        (
            "flag_transaction_for_review",
            json!({"transaction_id": txn, "reason": ""}),
            "invalid_argument",
        ),
        (
            "flag_transaction_for_review",
            json!({"transaction_id": txn, "reason": "x".repeat(1001)}),
            "invalid_argument",
        ),
        (
            "flag_transaction_for_review",
            json!({"transaction_id": "txn_999999", "reason": "r"}),
            "not_found",
        ),
        (
            "flag_transaction_for_review",
            json!({"transaction_id": txn, "reason": "r", "amount_minor": 5}),
            "invalid_argument",
        ),
    ];
    for (name, args, code) in cases {
        let body = call(&app, name, args.clone()).await;
        let error = tool_error(&body);
        assert_eq!(error["code"], code, "{name}({args}): {body}");
        assert!(!error["message"].as_str().unwrap().is_empty());
    }
    assert_eq!(count(&db, "core.disputes").await, 0);
    assert_eq!(count(&db, "core.reviews").await, 0);
    assert_eq!(count(&db, "ops.outbox").await, 0);
    assert_eq!(count(&db, "ops.idempotency_keys").await, 0);
    // SQL metacharacters in a reason are text, stored as given.
    let sql = "'; DROP TABLE core.disputes; --";
    let body = call(
        &app,
        "raise_dispute",
        json!({"transaction_id": txn, "reason": sql}),
    )
    .await;
    assert_eq!(content(&body)["created"], true);
    let stored: String = db
        .client()
        .await
        .query_one("SELECT reason FROM core.disputes", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, sql);
    assert_eq!(db.account_count().await, 50);
}

#[tokio::test]
async fn postgres_down_answers_dependency_unavailable_with_one_attempt_per_call() {
    // core-api over a pool whose server is gone: every write is its 503 (postgres).
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!(
        "postgres://postgres@127.0.0.1:{}/kosha",
        dead.local_addr().unwrap().port()
    );
    drop(dead);
    let pool = core_api::db::build_pool(&dead_url, &core_api::db::PoolSettings::default()).unwrap();
    let (url, seen) = serve(router(AppState::new(pool))).await;
    let app = common::app(&url, 10_000.0, 64);
    let mut answers = Vec::new();
    for i in 0..14 {
        let before = seen.load(Ordering::SeqCst);
        let body = call(
            &app,
            "raise_dispute",
            json!({"transaction_id": "txn_000017", "reason": format!("try {i}")}),
        )
        .await;
        let error = tool_error(&body).clone();
        assert_eq!(error["code"], "dependency_unavailable", "{body}");
        let attempts = seen.load(Ordering::SeqCst) - before;
        assert!(
            attempts <= 1,
            "the gateway retried a write: {attempts} attempts"
        );
        answers.push((
            error["dependency"].clone(),
            error["retry_after_s"].clone(),
            attempts,
        ));
    }
    // First core-api's own answer naming postgres, each call one attempt; once the write
    // breaker opens (10 failures of the 20-call window), core-api is no longer called and the
    // answer says when to retry.
    let (reached, shed): (Vec<_>, Vec<_>) = answers.iter().partition(|a| a.2 == 1);
    assert!(reached.iter().all(|a| a.0 == "postgres"), "{answers:?}");
    assert_eq!(reached.len(), 10, "{answers:?}");
    assert!(!shed.is_empty());
    assert!(
        shed.iter()
            .all(|a| a.0 == "core-api" && a.1.as_u64().is_some_and(|s| s >= 1)),
        "{answers:?}"
    );
    // The reads have their own breaker: still closed.
    let health = call(&app, "get_service_health", json!({})).await;
    let deps = &content(&health)["dependencies"];
    assert_eq!(deps["core-api-writes"]["breaker"], "open", "{deps}");
    assert_eq!(deps["core-api"]["breaker"], "closed", "{deps}");
    assert_eq!(deps["core-api-writes"]["capacity"], 16);
}

#[tokio::test]
async fn a_write_cut_by_its_attempt_cap_says_a_retry_is_safe_and_is_not_retried() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/disputes"))
        .respond_with(ResponseTemplate::new(201).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let mut config = common::config(&server.uri(), 64);
    config.policies.core_api_write.attempt.cap = Duration::from_millis(300);
    config.policies.core_api_write.retry.max_attempts = 3;
    let app = common::app_with(config, 10_000.0);
    let resp = app
        .clone()
        .oneshot(tools_call(
            1,
            &agent(),
            "raise_dispute",
            json!({"transaction_id": "txn_000001", "reason": "slow"}),
        ))
        .await
        .unwrap();
    let body = json_body(resp).await;
    let error = tool_error(&body);
    assert_eq!(error["code"], "deadline_exceeded", "{body}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("retrying with the same arguments"),
        "{message}"
    );
    // One attempt, even with max_attempts raised: writes are never retried by the gateway.
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert!(sent.headers.get("idempotency-key").is_some());
    assert_eq!(sent.headers.get("x-kosha-principal").unwrap(), "agent-a");
    assert!(sent.headers.get("x-request-deadline").is_some());
}

#[tokio::test]
async fn the_core_api_override_forces_writes_open_too() {
    use kosha_resilience::overrides::{ForcedOpen, StaticOverrides};
    let db = TestDb::seeded().await;
    let (url, seen) = serve(router(AppState::new(db.pool()))).await;
    let overrides = Arc::new(StaticOverrides::default());
    overrides.force_open(
        "core-api",
        ForcedOpen {
            reason: "drill".into(),
            set_by: "ops".into(),
            set_at: 0,
            expires_at: None,
        },
    );
    let gateway =
        common::gateway_with_overrides(common::config(&url, 64), 10_000.0, overrides.clone());
    let app = mcp_gateway::http::router(Arc::new(gateway));
    for name in ["raise_dispute", "flag_transaction_for_review"] {
        let body = call(
            &app,
            name,
            json!({"transaction_id": "txn_000018", "reason": "forced"}),
        )
        .await;
        let error = tool_error(&body);
        assert_eq!(error["code"], "dependency_unavailable", "{body}");
        assert_eq!(error["dependency"], "core-api");
        assert!(
            error["retry_after_s"].as_u64().is_some_and(|s| s >= 1),
            "{body}"
        );
    }
    assert_eq!(
        seen.load(Ordering::SeqCst),
        0,
        "a forced-open breaker calls nothing"
    );
    let health = call(&app, "get_service_health", json!({})).await;
    let deps = &content(&health)["dependencies"];
    assert_eq!(deps["core-api"]["breaker"], "forced_open", "{deps}");
    assert_eq!(deps["core-api-writes"]["breaker"], "forced_open", "{deps}");
    overrides.clear("core-api");
    let body = call(
        &app,
        "raise_dispute",
        json!({"transaction_id": "txn_000018", "reason": "cleared"}),
    )
    .await;
    assert_eq!(content(&body)["created"], true);
}

#[tokio::test]
async fn sixteen_identical_calls_at_once_write_one_dispute() {
    // 16: the write bulkhead's capacity, so none is shed as overloaded; core-api gets a pool
    // of 16 so none waits out its 500 ms pool wait on a busy machine either.
    let db = TestDb::seeded().await;
    let settings = core_api::db::PoolSettings {
        postgres: core_api::db::PostgresConfig {
            pool_max: 16,
            ..core_api::db::PostgresConfig::defaults()
        },
        ..core_api::db::PoolSettings::default()
    };
    let (url, _) = serve(router(AppState::new(db.pool_with(&settings)))).await;
    let app = common::app(&url, 10_000.0, 64);
    let args = json!({"transaction_id": "txn_000019", "reason": "racing agents"});
    let calls = (0..16).map(|_| call(&app, "raise_dispute", args.clone()));
    let answers = futures::future::join_all(calls).await;
    let created = answers
        .iter()
        .filter(|a| content(a)["created"] == true)
        .count();
    assert_eq!(created, 1, "{answers:?}");
    let ids: std::collections::BTreeSet<_> = answers
        .iter()
        .map(|a| content(a)["dispute_id"].clone().to_string())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(count(&db, "core.disputes").await, 1);
    assert_eq!(count(&db, "ops.outbox").await, 1);
}

/// One HTTP/1.1 message read whole from `stream` (its head and a `content-length` body): its
/// bytes, and where its body starts.
async fn read_message(stream: &mut TcpStream) -> (Vec<u8>, usize) {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if bytes.len() >= end + 4 + length {
                bytes.truncate(end + 4 + length);
                return (bytes, end + 4);
            }
        }
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed mid-message");
        bytes.extend_from_slice(&chunk[..n]);
    }
}

/// A TCP proxy in front of core-api at `upstream` (`http://host:port`) that loses the first
/// reply: it passes the first request on, reads core-api's whole answer (so the write has
/// committed) and closes the gateway's connection without a byte of it, as a crash or a cut
/// link between the commit and the reply would. Later connections pass both ways. Its URL,
/// and the lost answer's body.
async fn losing_the_first_reply(upstream: &str) -> (String, tokio::sync::oneshot::Receiver<Value>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let upstream = upstream.trim_start_matches("http://").to_owned();
    let (lost, lost_body) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut lost = Some(lost);
        loop {
            let (mut inbound, _) = listener.accept().await.unwrap();
            let mut outbound = TcpStream::connect(&upstream).await.unwrap();
            let lose = lost.take();
            tokio::spawn(async move {
                let Some(lost) = lose else {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    return;
                };
                let (request, _) = read_message(&mut inbound).await;
                outbound.write_all(&request).await.unwrap();
                let (reply, body) = read_message(&mut outbound).await;
                drop(inbound);
                let _ = lost.send(serde_json::from_slice(&reply[body..]).unwrap());
            });
        }
    });
    (url, lost_body)
}

/// Issue 43: no kill or cut run ever landed between a write's commit and its reply. Here the
/// reply of a committed dispute is dropped on its way back; the agent's retry with the same
/// arguments (so the same derived key) is answered from the stored first result.
#[tokio::test]
async fn a_retry_after_a_reply_lost_past_the_commit_answers_the_first_result() {
    let db = TestDb::seeded().await;
    let (core_api, attempts) = serve(router(AppState::new(db.pool()))).await;
    let (url, lost_body) = losing_the_first_reply(&core_api).await;
    let app = common::app(&url, 10_000.0, 64);
    let args = json!({"transaction_id": "txn_000020", "reason": "charged twice"});

    // The connection closes with no reply: to the gateway, core-api broke off the exchange.
    let first = call(&app, "raise_dispute", args.clone()).await;
    let error = tool_error(&first);
    assert_eq!(error["code"], "dependency_unavailable", "{first}");
    assert_eq!(error["dependency"], "core-api", "{first}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("may or may not have been recorded") && message.contains("is safe"),
        "the agent is told the write may have landed and a retry is safe: {first}"
    );
    let lost = lost_body.await.unwrap();
    assert!(
        lost["dispute_id"].as_str().unwrap().starts_with("dsp_"),
        "{lost}"
    );

    let retry = call(&app, "raise_dispute", args).await;
    let retry = content(&retry);
    assert_eq!(retry["created"], false, "{retry}");
    assert_eq!(retry["dispute_id"], lost["dispute_id"]);
    assert_eq!(retry["status"], "open");
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        2,
        "two attempts reached core-api"
    );
    assert_eq!(count(&db, "core.disputes").await, 1);
    assert_eq!(count(&db, "ops.outbox").await, 1);
    assert_eq!(count(&db, "ops.idempotency_keys").await, 1);
    let id = lost["dispute_id"].as_str().unwrap();
    let stored = db
        .client()
        .await
        .query_one(
            "SELECT (SELECT dispute_id FROM core.disputes), \
                    (SELECT aggregate_id FROM ops.outbox)",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (stored.get::<_, String>(0), stored.get::<_, String>(1)),
        (id.to_owned(), id.to_owned()),
        "the row and the event are the first attempt's"
    );
}
