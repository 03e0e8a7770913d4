//! `POST /v1/knowledge/search`.

use axum::http::StatusCode;
use core_api::db::seed;
use serde_json::{Value, json};

use crate::common::{NASTY, TestDb, post_json, post_raw};

const SEARCH: &str = "/v1/knowledge/search";

fn topic_of(article_id: &str) -> &'static str {
    seed::generate()
        .articles
        .into_iter()
        .find(|a| a.article_id == article_id)
        .map(|a| a.topic)
        .unwrap_or("<unknown>")
}

#[tokio::test]
async fn chargeback_ranks_a_chargeback_article_first() {
    let db = TestDb::seeded().await;
    let reply = post_json(&db.app(), SEARCH, &json!({"query": "chargeback"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // No embedder configured in these tests: the full-text ranking, reported as degraded.
    assert_eq!(reply.body["degraded"], true);
    assert_eq!(reply.body["degraded_reason"], "embeddings_unavailable");
    let results = reply.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "default top_k");
    let first = &results[0];
    assert_eq!(
        topic_of(first["article_id"].as_str().unwrap()),
        "chargebacks",
        "{first}"
    );
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(scores.iter().all(|&s| s > 0.0 && s < 1.0));
    for r in results {
        assert!(r["title"].is_string());
        let snippet = r["snippet"].as_str().unwrap();
        assert!(!snippet.is_empty() && !snippet.contains("<b>"), "{snippet}");
        assert!(
            !snippet.contains('\n') && snippet.chars().count() <= 400,
            "{snippet}"
        );
        assert_eq!(r.as_object().unwrap().len(), 4);
    }
}

#[tokio::test]
async fn natural_questions_find_their_topic_and_top_k_is_honoured() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let cases = [
        ("how do I report a stolen card", "card_fraud"),
        ("sanctions screening potential match", "sanctions_screening"),
        ("foreign transaction fee", "fees"),
        ("daily cash withdrawal limit", "account_limits"),
        ("merchant refund has not arrived", "refunds"),
    ];
    for (query, topic) in cases {
        let reply = post_json(&app, SEARCH, &json!({"query": query, "top_k": 3})).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        let results = reply.body["results"].as_array().unwrap();
        assert!(
            !results.is_empty() && results.len() <= 3,
            "{query}: {}",
            reply.body
        );
        assert_eq!(
            topic_of(results[0]["article_id"].as_str().unwrap()),
            topic,
            "{query}"
        );
    }
    let all = post_json(&app, SEARCH, &json!({"query": "card", "top_k": 20})).await;
    assert_eq!(all.body["results"].as_array().unwrap().len(), 20);
}

#[tokio::test]
async fn falls_back_to_any_term_when_all_terms_match_nothing() {
    let db = TestDb::seeded().await;
    let reply = post_json(&db.app(), SEARCH, &json!({"query": "chargeback spaceship"})).await;
    assert_eq!(reply.status, StatusCode::OK);
    let results = reply.body["results"].as_array().unwrap();
    assert!(!results.is_empty(), "fallback should match on chargeback");
    let none = post_json(&db.app(), SEARCH, &json!({"query": "zzyzx qqqq"})).await;
    assert_eq!(none.status, StatusCode::OK);
    assert_eq!(none.body["results"], Value::Array(vec![]));
}

#[tokio::test]
async fn refuses_bad_bodies_naming_the_field() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let cases = [
        (json!({}), "query"),
        (json!({"query": null}), "query"),
        (json!({"query": 42}), "query"),
        (json!({"query": ""}), "query"),
        (json!({"query": "x".repeat(513)}), "query"),
        (json!({"query": "fees", "top_k": 0}), "top_k"),
        (json!({"query": "fees", "top_k": 10000}), "top_k"),
        (json!({"query": "fees", "top_k": "5"}), "top_k"),
        (json!({"query": "fees", "top_k": 1.5}), "top_k"),
        (json!({"query": "fees", "limit": 3}), "limit"),
        (json!("fees"), "object"),
    ];
    for (body, field) in cases {
        post_json(&app, SEARCH, &body).await.assert_invalid(field);
    }
    post_raw(
        &app,
        SEARCH,
        Some("application/json"),
        "{\"query\": ".to_owned(),
    )
    .await
    .assert_invalid("JSON");
    post_raw(&app, SEARCH, None, "{\"query\": \"fees\"}".to_owned())
        .await
        .assert_invalid("Content-Type");
    post_raw(
        &app,
        SEARCH,
        Some("text/plain"),
        "{\"query\": \"fees\"}".to_owned(),
    )
    .await
    .assert_invalid("Content-Type");
    let huge = format!("{{\"query\": \"{}\"}}", "x".repeat(100_000));
    post_raw(&app, SEARCH, Some("application/json"), huge)
        .await
        .assert_invalid("body");
}

#[tokio::test]
async fn sql_and_tsquery_metacharacters_are_plain_text() {
    let db = TestDb::seeded().await;
    let app = db.app();
    for nasty in NASTY
        .iter()
        .chain(&["chargeback' OR 1=1 --", "fees & | ! (", "\"chargeback\""])
    {
        let reply = post_json(&app, SEARCH, &json!({"query": nasty})).await;
        assert_eq!(reply.status, StatusCode::OK, "{nasty}: {}", reply.body);
        assert!(reply.body["results"].is_array());
    }
    assert_eq!(db.account_count().await, 50);
}

#[tokio::test]
async fn control_characters_in_the_query_are_invalid_argument() {
    let db = TestDb::seeded().await;
    let app = db.app();
    // NUL is what PostgreSQL cannot store (SQLSTATE 22021); the others are refused alike.
    for bad in [
        "chargeback\u{0}",
        "\u{0}",
        "fees\u{1b}[2J",
        "a\u{7f}b",
        "a\u{85}b",
    ] {
        let reply = post_json(&app, SEARCH, &json!({"query": bad})).await;
        reply.assert_invalid("query");
        assert!(
            reply.message().contains("control character"),
            "{bad:?}: {}",
            reply.body
        );
    }
    // Whitespace controls are text.
    let reply = post_json(&app, SEARCH, &json!({"query": "stolen\tcard\r\nreport"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}
