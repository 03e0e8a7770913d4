//! Request bodies read by the one bounded parse (issue 16): duplicate keys refused as the
//! gateway refuses them, bounds with a clear 400, caller text in messages clipped.

use axum::http::StatusCode;

use crate::common::{TestDb, get, post_raw};

const SEARCH: &str = "/v1/knowledge/search";

#[tokio::test]
async fn a_duplicate_key_is_400_naming_it() {
    let db = TestDb::seeded().await;
    let app = db.app();
    for body in [
        r#"{"query":"refund","query":"x"}"#,
        r#"{"query":"refund","top_k":3,"q\u0075ery":"x"}"#,
    ] {
        let reply = post_raw(&app, SEARCH, Some("application/json"), body.to_owned()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(reply.code(), "invalid_argument");
        assert_eq!(
            reply.message(),
            "request body has a duplicate key: query",
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_body_over_a_bound_is_400_and_caller_text_is_clipped() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let deep = format!(
        r#"{{"query":"refund","x":{}1{}}}"#,
        "[".repeat(50),
        "]".repeat(50)
    );
    let reply = post_raw(&app, SEARCH, Some("application/json"), deep).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(
        reply.message().contains("deeper than 32 levels"),
        "{}",
        reply.message()
    );
    let field = "f".repeat(10_000);
    let body = format!(r#"{{"query":"refund","{field}":1}}"#);
    let reply = post_raw(&app, SEARCH, Some("application/json"), body).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(reply.message().len() < 300, "{}", reply.message());
}

#[tokio::test]
async fn an_unknown_query_parameter_is_named_clipped() {
    // Attack pass of 2026-12-01 (commit ce42f57): a 20,000-character key came back whole, twice.
    let db = TestDb::seeded().await;
    let app = db.app();
    let key = "k".repeat(20_000);
    for query in [format!("{key}=1"), key.clone()] {
        let reply = get(&app, &format!("/v1/accounts/acc_0001/transactions?{query}")).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST);
        assert_eq!(reply.code(), "invalid_argument");
        let message = reply.message();
        assert!(message.starts_with("invalid query string: "), "{message}");
        assert!(message.contains("kkkk"), "{message}");
        assert!(message.len() < 300, "{} bytes", message.len());
    }
}
