//! `search_knowledge_base` passes core-api's degraded answer through (SPEC §10, issue 13): a
//! full-text answer with `degraded: true, degraded_reason: "embeddings_unavailable"` is a
//! result (not a tool error) with the same fields, and it never counts against the gateway's
//! core-api breaker. In process, core-api faked with wiremock on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use common::{agent_call, app, json_body};

#[tokio::test]
async fn a_degraded_answer_is_passed_through_and_keeps_the_breaker_closed() {
    let core_api = MockServer::start().await;
    let hit = json!({"article_id": "kb_001", "title": "Disputes", "snippet": "How to dispute", "score": 0.4});
    Mock::given(method("POST"))
        .and(path("/v1/knowledge/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "results": [hit], "degraded": true, "degraded_reason": "embeddings_unavailable"
        })))
        .expect(12)
        .mount(&core_api)
        .await;
    let app = app(&core_api.uri(), 100.0, 64);
    for id in 0..12 {
        let resp = agent_call(
            &app,
            id,
            "search_knowledge_base",
            json!({"query": "dispute"}),
        )
        .await;
        let body = json_body(resp).await;
        let result = &body["result"];
        assert_eq!(result["isError"], false, "{body}");
        assert_eq!(
            result["structuredContent"],
            json!({"results": [hit], "degraded": true, "degraded_reason": "embeddings_unavailable"})
        );
    }
    let health = json_body(agent_call(&app, 99, "get_service_health", json!({})).await).await;
    assert_eq!(
        health["result"]["structuredContent"]["dependencies"]["core-api"]["breaker"],
        "closed"
    );
}

/// Each attempt tells core-api the attempt's own end, not the tool's (8 s for a search): the
/// gateway gives up on an attempt after its 2 s timeout (seed 004 §1), so core-api must answer
/// before it — a hanging embeddings call then degrades inside the attempt instead of after
/// the gateway stopped listening (docs/architecture.md, "The hop's deadline").
#[tokio::test]
async fn each_attempt_sends_core_api_the_attempts_deadline() {
    let core_api = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/knowledge/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "results": [], "degraded": false
        })))
        .mount(&core_api)
        .await;
    let app = app(&core_api.uri(), 100.0, 64);
    let sent_at = time::OffsetDateTime::now_utc();
    let resp = agent_call(
        &app,
        1,
        "search_knowledge_base",
        json!({"query": "dispute"}),
    )
    .await;
    assert_eq!(json_body(resp).await["result"]["isError"], false);
    let answered_at = time::OffsetDateTime::now_utc();
    let requests = core_api.received_requests().await.unwrap();
    let header = requests[0].headers.get("x-request-deadline").unwrap();
    let deadline = time::OffsetDateTime::parse(
        header.to_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    // The attempt began between `sent_at` and `answered_at`, and its header is its start +
    // 2 s attempt − 150 ms hop margin (the attempt's own 150 ms margin only shortens it),
    // cut to whole milliseconds: not the search's 8 s budget (7.85 s before the fix).
    let hop = time::Duration::milliseconds(1850);
    let slack = time::Duration::milliseconds(5);
    let (earliest, latest) = (sent_at + hop - slack, answered_at + hop + slack);
    assert!(
        (earliest..=latest).contains(&deadline),
        "deadline {:.3} s after the call was sent, {:.3} s after it was answered",
        (deadline - sent_at).as_seconds_f64(),
        (deadline - answered_at).as_seconds_f64(),
    );
}
