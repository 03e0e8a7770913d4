//! Integer fields take what JSON Schema calls an integer (2020-12: any number with a zero
//! fractional part), as the OpenAPI document (`GET /v1/openapi.json`) declares them: `3.0` is
//! 3. Found by schemathesis (its `positive_data_acceptance` check: `{"top_k": 19.0}` and
//! `{"amount_minor": 509071670.0}`, valid by the document, answered 400). A fraction or a
//! number beyond `i64` is still 400 naming the field.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::json;

use crate::common::{TestDb, post_json, send};

#[tokio::test]
async fn top_k_written_as_a_whole_float_is_that_integer() {
    let db = TestDb::seeded().await;
    let app = db.app();
    for top_k in [json!(3.0), json!(3e0)] {
        let reply = post_json(
            &app,
            "/v1/knowledge/search",
            &json!({"query": "card", "top_k": top_k}),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{top_k}: {}", reply.body);
        assert_eq!(reply.body["results"].as_array().unwrap().len(), 3);
    }
    let reply = post_json(
        &app,
        "/v1/knowledge/search",
        &json!({"query": "card", "top_k": 2.5}),
    )
    .await;
    reply.assert_invalid("top_k");
}

#[tokio::test]
async fn a_dispute_amount_written_as_a_whole_float_is_that_integer() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let write = |key: &str, amount: &str| {
        Request::builder()
            .method(Method::POST)
            .uri("/v1/disputes")
            .header(header::CONTENT_TYPE, "application/json")
            .header("idempotency-key", key)
            .header("x-kosha-principal", "agent-client-1")
            .body(Body::from(format!(
                r#"{{"transaction_id": "txn_000001", "reason": "x", "amount_minor": {amount}}}"#
            )))
            .unwrap()
    };
    let reply = send(&app, write("fraction", "1.5")).await;
    reply.assert_invalid("amount_minor");
    let reply = send(&app, write("huge", "1e300")).await;
    reply.assert_invalid("amount_minor");
    let reply = send(&app, write("whole", "1.0")).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["amount_minor"], 1);
}
