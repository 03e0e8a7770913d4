//! The person behind a write (SPEC §5 "The user", issue 44): `X-Kosha-User` is stored as the
//! record's `created_by` and in its outbox event, scopes idempotency keys beside
//! `X-Kosha-Principal`, is the principal when absent (a gateway from before issue 44), and is
//! checked like the other write headers.

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};

use crate::common::{Reply, TestDb, send};

const REVIEWS: &str = "/v1/reviews";
const DISPUTES: &str = "/v1/disputes";
const APP: &str = "app-client-1";

/// A write by `user` (`None`: no `X-Kosha-User`) of the app client [`APP`] with key `key`.
async fn write_as(app: &Router, uri: &str, user: Option<&[u8]>, key: &str, body: &Value) -> Reply {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .header("idempotency-key", key)
        .header("x-kosha-principal", APP);
    if let Some(user) = user {
        builder = builder.header("x-kosha-user", user);
    }
    send(app, builder.body(Body::from(body.to_string())).unwrap()).await
}

/// (`created_by`, `client_id`) of the one record in `table`, and its event's payload.
async fn attribution(db: &TestDb, table: &str) -> (String, String, Value) {
    let client = db.client().await;
    let row = client
        .query_one(&format!("SELECT created_by, client_id FROM {table}"), &[])
        .await
        .unwrap();
    let payload = client
        .query_one("SELECT payload FROM ops.outbox", &[])
        .await
        .unwrap();
    (row.get(0), row.get(1), payload.get(0))
}

#[tokio::test]
async fn a_dispute_names_its_user_in_its_row_and_its_event_but_not_its_answer() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let body = json!({"transaction_id": "txn_000001", "reason": "card stolen"});
    let reply = write_as(&app, DISPUTES, Some(b"sub-alice"), "k-1", &body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert!(reply.body.get("created_by").is_none(), "{}", reply.body);
    let (created_by, client_id, payload) = attribution(&db, "core.disputes").await;
    assert_eq!(
        (created_by.as_str(), client_id.as_str()),
        ("sub-alice", APP)
    );
    assert_eq!(payload["created_by"], "sub-alice");
    assert_eq!(payload["dispute_id"], reply.body["dispute_id"]);
}

#[tokio::test]
async fn a_review_without_a_user_header_is_its_clients() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let body = json!({"transaction_id": "txn_000002", "reason": "odd"});
    let first = write_as(&app, REVIEWS, None, "k-1", &body).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let (created_by, client_id, payload) = attribution(&db, "core.reviews").await;
    assert_eq!((created_by.as_str(), client_id.as_str()), (APP, APP));
    assert_eq!(payload["created_by"], APP);
    // The client as its own user names the same key: a replay.
    let again = write_as(&app, REVIEWS, Some(APP.as_bytes()), "k-1", &body).await;
    assert_eq!(again.body, first.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
}

#[tokio::test]
async fn keys_are_scoped_by_user_within_a_client() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let body = json!({"transaction_id": "txn_000004", "reason": "check"});
    let alice = write_as(&app, REVIEWS, Some(b"sub-alice"), "shared", &body).await;
    let bob = write_as(&app, REVIEWS, Some(b"sub-bob"), "shared", &body).await;
    for reply in [&alice, &bob] {
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        assert!(reply.headers.get("idempotent-replayed").is_none());
    }
    assert_ne!(alice.body["review_id"], bob.body["review_id"]);
    let again = write_as(&app, REVIEWS, Some(b"sub-alice"), "shared", &body).await;
    assert_eq!(again.body, alice.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
}

#[tokio::test]
async fn a_malformed_user_header_is_invalid_and_writes_nothing() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let body = json!({"transaction_id": "txn_000005", "reason": "x"});
    let long = vec![b'u'; 256];
    for uri in [DISPUTES, REVIEWS] {
        for bad in [&b""[..], &long, "ké".as_bytes(), b"a\tb"] {
            let reply = write_as(&app, uri, Some(bad), "k-1", &body).await;
            reply.assert_invalid("X-Kosha-User");
        }
    }
    let count: i64 = db
        .client()
        .await
        .query_one(
            "SELECT (SELECT count(*) FROM core.disputes) + (SELECT count(*) FROM core.reviews)
                  + (SELECT count(*) FROM ops.outbox) + (SELECT count(*) FROM ops.idempotency_keys)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 0);
}
