//! `POST /v1/disputes` and `POST /v1/reviews` (SPEC §4, §7; issue 11): idempotency keys,
//! the one-transaction write (row, key, outbox event) and the business rules. Every refusal
//! is checked to have written nothing (rows, keys and events counted).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use core_api::db::{PoolSettings, PostgresConfig, seed};
use core_api::routes::{AppState, router};
use kosha_contract::ids::{DISPUTE, REVIEW};
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;

use http_body_util::BodyExt;
use tower::ServiceExt;

use crate::common::{NASTY, Reply, TestDb, send};

const DISPUTES: &str = "/v1/disputes";
const REVIEWS: &str = "/v1/reviews";
const AGENT: &str = "agent-client-1";

/// A write request; `None` leaves the header out.
fn write(uri: &str, key: Option<&[u8]>, principal: Option<&str>, body: &str) -> Request<Body> {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(key) = key {
        builder = builder.header("idempotency-key", key);
    }
    if let Some(principal) = principal {
        builder = builder.header("x-kosha-principal", principal);
    }
    builder.body(Body::from(body.to_owned())).unwrap()
}

async fn post(app: &Router, uri: &str, key: &str, body: &Value) -> Reply {
    send(
        app,
        write(uri, Some(key.as_bytes()), Some(AGENT), &body.to_string()),
    )
    .await
}

/// (disputes, reviews, outbox events, idempotency keys).
async fn counts(db: &TestDb) -> (i64, i64, i64, i64) {
    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM core.disputes), (SELECT count(*) FROM core.reviews),
                    (SELECT count(*) FROM ops.outbox), (SELECT count(*) FROM ops.idempotency_keys)",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2), row.get(3))
}

/// Status, replay header and the body's exact bytes.
async fn send_raw(app: &Router, request: Request<Body>) -> (StatusCode, Option<String>, Vec<u8>) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let replayed = response
        .headers()
        .get("idempotent-replayed")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, replayed, bytes.to_vec())
}

fn first_amount() -> i64 {
    seed::generate().transactions[0].amount_minor.abs()
}

fn dispute(reason: &str) -> Value {
    json!({"transaction_id": "txn_000001", "reason": reason})
}

#[tokio::test]
async fn a_dispute_is_created_once_and_replayed_with_the_same_status_and_body() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let first = post(&app, DISPUTES, "k-1", &dispute("card stolen")).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    assert!(first.headers.get("idempotent-replayed").is_none());
    let d = &first.body;
    assert!(DISPUTE.matches(d["dispute_id"].as_str().unwrap()), "{d}");
    assert_eq!(d["transaction_id"], "txn_000001");
    assert_eq!(d["status"], "open");
    assert_eq!(d["amount_minor"].as_i64(), Some(first_amount()));
    assert_eq!(d["reason"], "card stolen");
    time::OffsetDateTime::parse(d["created_at"].as_str().unwrap(), &Rfc3339).unwrap();
    assert_eq!(
        d.as_object().unwrap().len(),
        6,
        "exactly the SPEC fields: {d}"
    );

    // Same body with other key order and spacing: the canonical hash matches.
    let again = send(
        &app,
        write(
            DISPUTES,
            Some(b"k-1"),
            Some(AGENT),
            r#"{ "reason" : "card stolen",  "transaction_id":"txn_000001" }"#,
        ),
    )
    .await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body, first.body);
    // Byte for byte, not merely the same JSON.
    let (status, replayed, bytes) = send_raw(
        &app,
        write(
            DISPUTES,
            Some(b"k-1"),
            Some(AGENT),
            &dispute("card stolen").to_string(),
        ),
    )
    .await;
    assert_eq!(
        (status, replayed.as_deref()),
        (StatusCode::CREATED, Some("true"))
    );
    assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), first.body);
    let (_, _, bytes_again) = send_raw(
        &app,
        write(
            DISPUTES,
            Some(b"k-1"),
            Some(AGENT),
            &dispute("card stolen").to_string(),
        ),
    )
    .await;
    assert_eq!(bytes, bytes_again);
    assert_eq!(counts(&db).await, (1, 0, 1, 1));

    let client = db.client().await;
    let event = client
        .query_one(
            "SELECT event_id, aggregate, aggregate_id, event_type, payload, published_at IS NULL
             FROM ops.outbox",
            &[],
        )
        .await
        .unwrap();
    let event_id: String = event.get(0);
    assert_eq!(event_id.len(), 26, "{event_id}");
    assert_eq!(event.get::<_, String>(1), "dispute");
    assert_eq!(event.get::<_, String>(2), d["dispute_id"].as_str().unwrap());
    assert_eq!(event.get::<_, String>(3), "dispute.opened");
    // The payload is the response body with the user (SPEC §5 "The user"; without
    // X-Kosha-User, the principal).
    let mut payload = event.get::<_, Value>(4);
    let created_by = payload.as_object_mut().unwrap().remove("created_by");
    assert_eq!(payload, first.body, "payload = response body + created_by");
    assert_eq!(created_by, Some(json!(AGENT)));
    assert!(event.get::<_, bool>(5));
    let created_by: String = client
        .query_one("SELECT created_by FROM core.disputes", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(created_by, AGENT);
}

#[tokio::test]
async fn a_review_is_created_once_and_replayed() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let body = json!({"transaction_id": "txn_000002", "reason": "odd merchant"});
    let first = post(&app, REVIEWS, "r-1", &body).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let r = &first.body;
    assert!(REVIEW.matches(r["review_id"].as_str().unwrap()), "{r}");
    assert_eq!(r["status"], "pending_review");
    assert_eq!(r["transaction_id"], "txn_000002");
    assert_eq!(r["reason"], "odd merchant");
    assert_eq!(
        r.as_object().unwrap().len(),
        5,
        "exactly the SPEC fields: {r}"
    );
    let again = post(&app, REVIEWS, "r-1", &body).await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body, first.body);
    assert_eq!(counts(&db).await, (0, 1, 1, 1));
    let event_type: String = db
        .client()
        .await
        .query_one("SELECT event_type FROM ops.outbox", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(event_type, "review.requested");
}

#[tokio::test]
async fn the_same_key_with_another_body_is_a_conflict_and_writes_nothing() {
    let db = TestDb::seeded().await;
    let app = db.app();
    assert_eq!(
        post(&app, DISPUTES, "k", &dispute("a")).await.status,
        StatusCode::CREATED
    );
    let other = post(&app, DISPUTES, "k", &dispute("b")).await;
    assert_eq!(other.status, StatusCode::CONFLICT, "{}", other.body);
    assert_eq!(other.code(), "conflict");
    assert!(
        other.message().contains("Idempotency-Key"),
        "{}",
        other.body
    );
    let amount = json!({"transaction_id": "txn_000001", "reason": "a", "amount_minor": 1});
    assert_eq!(
        post(&app, DISPUTES, "k", &amount).await.status,
        StatusCode::CONFLICT
    );
    assert_eq!(counts(&db).await, (1, 0, 1, 1));
}

#[tokio::test]
async fn keys_are_required_and_must_be_1_to_255_printable_ascii() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let body = dispute("x").to_string();
    for uri in [DISPUTES, REVIEWS] {
        let reply = send(&app, write(uri, None, Some(AGENT), &body)).await;
        reply.assert_invalid("Idempotency-Key");
        let long = vec![b'a'; 256];
        for bad in [&b""[..], &long, "ké".as_bytes(), b"a\tb"] {
            let reply = send(&app, write(uri, Some(bad), Some(AGENT), &body)).await;
            reply.assert_invalid("Idempotency-Key");
        }
        // (DEL and other controls cannot even be put in an http::HeaderValue.)
        // No principal: nothing to scope the key by.
        let reply = send(&app, write(uri, Some(b"k"), None, &body)).await;
        reply.assert_invalid("X-Kosha-Principal");
    }
    assert_eq!(counts(&db).await, (0, 0, 0, 0));
    // The bounds themselves are accepted, spaces and punctuation included.
    let longest = "k".repeat(255);
    for key in ["a b", "~!@#$%^&*()'\";--", longest.as_str()] {
        let reply = post(
            &app,
            REVIEWS,
            key,
            &json!({"transaction_id": "txn_000003", "reason": "x"}),
        )
        .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{key:?}: {}", reply.body);
    }
    assert_eq!(counts(&db).await, (0, 3, 3, 3));
}

/// Reviews have no one-per-transaction rule, so there only the key claim (ARCHITECTURE
/// pitfall 14) stands between 20 racers and 20 rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_requests_with_one_key_create_one_record_and_all_get_201() {
    let db = TestDb::seeded().await;
    // One connection per request, as 20 Lambda instances would have.
    let postgres = PostgresConfig {
        pool_max: 20,
        pool_wait: Duration::from_secs(5),
        ..PostgresConfig::defaults()
    };
    let pool = db.pool_with(&PoolSettings {
        postgres,
        ..PoolSettings::default()
    });
    let app = router(AppState::new(pool).with_postgres(postgres));
    for (uri, expected) in [(DISPUTES, (1, 0, 1, 1)), (REVIEWS, (1, 1, 2, 2))] {
        let barrier = Arc::new(tokio::sync::Barrier::new(20));
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let app = app.clone();
                let barrier = Arc::clone(&barrier);
                let request = write(
                    uri,
                    Some(b"same-key"),
                    Some(AGENT),
                    &dispute("race").to_string(),
                );
                tokio::spawn(async move {
                    barrier.wait().await;
                    send_raw(&app, request).await
                })
            })
            .collect();
        let mut replies = Vec::new();
        for task in tasks {
            replies.push(task.await.unwrap());
        }
        for (status, _, body) in &replies {
            assert_eq!(
                *status,
                StatusCode::CREATED,
                "{}",
                String::from_utf8_lossy(body)
            );
            assert_eq!(*body, replies[0].2, "{uri}: every racer gets the same body");
        }
        let replayed = replies
            .iter()
            .filter(|(_, r, _)| r.as_deref() == Some("true"))
            .count();
        assert_eq!(replayed, 19, "{uri}");
        assert_eq!(counts(&db).await, expected, "{uri}");
    }
}

#[tokio::test]
async fn keys_are_scoped_by_principal_and_endpoint() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let body = json!({"transaction_id": "txn_000004", "reason": "check"}).to_string();
    let a = send(
        &app,
        write(REVIEWS, Some(b"shared"), Some("client-a"), &body),
    )
    .await;
    let b = send(
        &app,
        write(REVIEWS, Some(b"shared"), Some("client-b"), &body),
    )
    .await;
    for reply in [&a, &b] {
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        assert!(reply.headers.get("idempotent-replayed").is_none());
    }
    assert_ne!(a.body["review_id"], b.body["review_id"]);
    // The same key on the other endpoint is another request.
    let d = send(
        &app,
        write(
            DISPUTES,
            Some(b"shared"),
            Some("client-a"),
            &dispute("x").to_string(),
        ),
    )
    .await;
    assert_eq!(d.status, StatusCode::CREATED, "{}", d.body);
    assert!(d.headers.get("idempotent-replayed").is_none());
    assert_eq!(counts(&db).await, (1, 2, 3, 3));
}

#[tokio::test]
async fn amounts_default_to_the_transaction_and_may_not_exceed_it() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let max = first_amount();
    let over = (max + 1).to_string();
    for (i, raw) in [
        "0",
        "-5",
        over.as_str(),
        "9223372036854775808",
        "-9223372036854775809",
        "1.5",
        "\"100\"",
        "null",
    ]
    .into_iter()
    .enumerate()
    {
        let body =
            format!(r#"{{"transaction_id": "txn_000001", "reason": "x", "amount_minor": {raw}}}"#);
        let key = format!("amount-{i}");
        let reply = send(
            &app,
            write(DISPUTES, Some(key.as_bytes()), Some(AGENT), &body),
        )
        .await;
        if raw == "null" {
            // null is "absent": the default applies.
            assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
            assert_eq!(reply.body["amount_minor"].as_i64(), Some(max));
            continue;
        }
        reply.assert_invalid("amount_minor");
    }
    assert_eq!(counts(&db).await, (1, 0, 1, 1));
    // The transaction's full amount is allowed explicitly (on another transaction).
    let t2 = seed::generate().transactions[1].amount_minor.abs();
    let reply = post(
        &app,
        DISPUTES,
        "amount-max",
        &json!({"transaction_id": "txn_000002", "reason": "x", "amount_minor": t2}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["amount_minor"].as_i64(), Some(t2));
}

#[tokio::test]
async fn reasons_must_be_1_to_1000_characters_without_control_characters() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let long = "a".repeat(1001);
    for uri in [DISPUTES, REVIEWS] {
        for (i, bad) in ["", long.as_str(), "a\u{0}b", "\u{1b}[2J", "x\u{85}"]
            .into_iter()
            .enumerate()
        {
            let reply = post(&app, uri, &format!("reason-{i}"), &dispute(bad)).await;
            reply.assert_invalid("reason");
        }
        let reply = post(
            &app,
            uri,
            "no-reason",
            &json!({"transaction_id": "txn_000001"}),
        )
        .await;
        reply.assert_invalid("reason");
    }
    assert_eq!(counts(&db).await, (0, 0, 0, 0));
    // 1000 two-byte characters are 1000 characters; tabs and newlines are text.
    let reply = post(&app, REVIEWS, "ok-1", &dispute(&"é".repeat(1000))).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let reply = post(&app, REVIEWS, "ok-2", &dispute("line 1\r\n\tline 2")).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

#[tokio::test]
async fn unknown_transactions_are_404_and_malformed_ids_400_writing_nothing() {
    let db = TestDb::seeded().await;
    let app = db.app();
    for uri in [DISPUTES, REVIEWS] {
        let body = json!({"transaction_id": "txn_999999", "reason": "x"});
        let reply = post(&app, uri, "unknown", &body).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.body);
        assert_eq!(reply.code(), "not_found");
        assert!(reply.message().contains("txn_999999"), "{}", reply.body);
        for (i, bad) in ["txn_1", "TXN_000001", "txn_00000a", ""]
            .iter()
            .chain(NASTY)
            .enumerate()
        {
            let body = json!({"transaction_id": bad, "reason": "x"});
            post(&app, uri, &format!("bad-{i}"), &body)
                .await
                .assert_invalid("transaction_id");
        }
        post(&app, uri, "no-body", &json!({}))
            .await
            .assert_invalid("transaction_id");
        post(
            &app,
            uri,
            "extra",
            &json!({"transaction_id": "txn_000001", "reason": "x", "x": 1}),
        )
        .await
        .assert_invalid("x");
    }
    assert_eq!(counts(&db).await, (0, 0, 0, 0));
    // A refusal does not burn its key: corrected, the request goes through.
    let reply = post(&app, REVIEWS, "unknown", &dispute("x")).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

#[tokio::test]
async fn sql_metacharacters_are_stored_verbatim() {
    let db = TestDb::seeded().await;
    let app = db.app();
    for (i, nasty) in NASTY.iter().enumerate() {
        let body = json!({"transaction_id": "txn_000005", "reason": nasty});
        let reply = post(&app, REVIEWS, nasty, &body).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{nasty}: {}", reply.body);
        assert_eq!(reply.body["reason"], *nasty);
        let again = post(&app, REVIEWS, nasty, &body).await;
        assert_eq!(again.headers["idempotent-replayed"], "true", "{i}");
    }
    assert_eq!(db.account_count().await, 50);
    let n = i64::try_from(NASTY.len()).unwrap();
    assert_eq!(counts(&db).await, (0, n, n, n));
}

#[tokio::test]
async fn a_second_open_dispute_under_another_key_is_a_conflict_naming_the_first() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let first = post(&app, DISPUTES, "one", &dispute("first")).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let id = first.body["dispute_id"].as_str().unwrap();
    let second = post(&app, DISPUTES, "two", &dispute("second")).await;
    assert_eq!(second.status, StatusCode::CONFLICT, "{}", second.body);
    assert_eq!(second.code(), "conflict");
    assert!(second.message().contains(id), "{}", second.body);
    // Another principal is refused alike: the rule is the transaction's, not the caller's.
    let other = send(
        &app,
        write(
            DISPUTES,
            Some(b"two"),
            Some("client-b"),
            &dispute("x").to_string(),
        ),
    )
    .await;
    assert_eq!(other.status, StatusCode::CONFLICT, "{}", other.body);
    assert_eq!(counts(&db).await, (1, 0, 1, 1));
    // Once the dispute is closed, a new one may be raised (the index is partial).
    db.client()
        .await
        .execute("UPDATE core.disputes SET status = 'won'", &[])
        .await
        .unwrap();
    let third = post(&app, DISPUTES, "three", &dispute("third")).await;
    assert_eq!(third.status, StatusCode::CREATED, "{}", third.body);
}

#[tokio::test]
async fn an_expired_key_is_reclaimed() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let first = post(&app, REVIEWS, "old", &dispute("a")).await;
    assert_eq!(first.status, StatusCode::CREATED);
    let client = db.client().await;
    let ttl: f64 = client
        .query_one(
            "SELECT extract(epoch FROM expires_at - created_at)::float8 FROM ops.idempotency_keys",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!((ttl - 86_400.0).abs() < 1.0, "kept 24 h: {ttl}");
    client
        .execute(
            "UPDATE ops.idempotency_keys SET expires_at = now() - interval '1 second'",
            &[],
        )
        .await
        .unwrap();
    let second = post(&app, REVIEWS, "old", &dispute("b")).await;
    assert_eq!(second.status, StatusCode::CREATED, "{}", second.body);
    assert!(second.headers.get("idempotent-replayed").is_none());
    assert_ne!(second.body["review_id"], first.body["review_id"]);
    assert_eq!(counts(&db).await, (0, 2, 2, 1));
}

#[tokio::test]
async fn a_statement_timeout_leaves_no_row_no_key_and_no_event() {
    let db = TestDb::seeded().await;
    let app = db.app();
    // Hold the outbox so the write blocks on its last statement.
    let mut blocker = db.client().await;
    let tx = blocker.transaction().await.unwrap();
    tx.batch_execute("LOCK TABLE ops.outbox IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let at = time::OffsetDateTime::now_utc() + Duration::from_millis(1_500);
    let mut request = write(
        DISPUTES,
        Some(b"slow"),
        Some(AGENT),
        &dispute("x").to_string(),
    );
    request.headers_mut().insert(
        "x-request-deadline",
        at.format(&Rfc3339).unwrap().parse().unwrap(),
    );
    let reply = send(&app, request).await;
    assert_eq!(reply.status, StatusCode::GATEWAY_TIMEOUT, "{}", reply.body);
    assert_eq!(reply.code(), "deadline_exceeded");
    tx.rollback().await.unwrap();
    assert_eq!(counts(&db).await, (0, 0, 0, 0));
    // The key was not kept: the retry creates the dispute.
    let retry = post(&app, DISPUTES, "slow", &dispute("x")).await;
    assert_eq!(retry.status, StatusCode::CREATED, "{}", retry.body);
    assert!(retry.headers.get("idempotent-replayed").is_none());
}
