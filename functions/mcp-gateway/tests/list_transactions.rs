//! `list_transactions` through the gateway against a real core-api served in process over a
//! throwaway PostgreSQL database (core-api's test harness): the cursor is bound to its whole
//! query (SPEC §4), and core-api's refusal reaches the agent as `invalid_argument` naming
//! `cursor`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../../core-api/tests/api/common.rs"]
#[allow(dead_code)]
mod db;

use common::{agent, json_body, tool_error, tools_call};
use core_api::routes::{AppState, router};
use db::TestDb;
use serde_json::{Value, json};
use tower::ServiceExt;

async fn list(app: &axum::Router, arguments: Value) -> Value {
    let resp = app
        .clone()
        .oneshot(tools_call(1, &agent(), "list_transactions", arguments))
        .await
        .unwrap();
    json_body(resp).await
}

/// Issue 43: a cursor taken with one `from`/`to` was accepted with another.
#[tokio::test]
async fn a_cursor_sent_with_another_window_is_invalid_argument_naming_cursor() {
    let db = TestDb::seeded().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let core_api = router(AppState::new(db.pool()));
    tokio::spawn(async move { axum::serve(listener, core_api).await });
    let app = common::app(&url, 10_000.0, 64);
    let query = |limit: u32, to: &str| {
        json!({"account_id": "acc_0002", "limit": limit,
               "from": "2026-01-01T00:00:00Z", "to": to})
    };
    let first = list(&app, query(2, "2026-12-31T00:00:00Z")).await;
    assert_ne!(first["result"]["isError"], true, "{first}");
    let cursor = first["result"]["structuredContent"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();

    let mut wider = query(2, "2027-12-31T00:00:00Z");
    wider["cursor"] = json!(cursor);
    let refused = list(&app, wider).await;
    let error = tool_error(&refused);
    assert_eq!(error["code"], "invalid_argument", "{refused}");
    let said = error["message"].as_str().unwrap();
    assert!(said.contains("cursor belongs to another query"), "{said}");

    // The same window (one bound in another offset) with another page size is the same query.
    let mut next = query(3, "2026-12-31T02:00:00+02:00");
    next["cursor"] = json!(cursor);
    let next = list(&app, next).await;
    let page = &next["result"]["structuredContent"];
    assert_ne!(next["result"]["isError"], true, "{next}");
    assert_eq!(page["transactions"].as_array().unwrap().len(), 3, "{next}");
}
