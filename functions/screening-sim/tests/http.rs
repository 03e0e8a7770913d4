//! screening-sim's HTTP API in process (SPEC §4, §7; issue 12 "Bad input"): bad bodies and
//! fields answer 400 with SPEC §7's body and a stable code, the admin routes need the token,
//! and the chaos knobs change what `/v1/screen` and `/v1/health` answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http_body_util::BodyExt;
use kosha_contract::screening::ScreenResponse;
use kosha_state::SystemClock;
use screening_sim::Screener;
use screening_sim::chaos::{Chaos, MemoryKnobs};
use screening_sim::http::{AdminToken, Sim, router};
use serde_json::{Value, json};
use tower::ServiceExt;

const TOKEN: &str = "test-admin-token-0123456789";

fn app() -> axum::Router {
    router(Arc::new(Sim {
        screener: Screener::bundled(),
        chaos: Chaos::new(Arc::new(MemoryKnobs::default()), Arc::new(SystemClock)),
        admin_token: Some(AdminToken::new(TOKEN).unwrap()),
        base_latency: Duration::from_millis(1),
    }))
}

async fn send(app: &axum::Router, req: http::Request<Body>) -> (u16, Value) {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn screen_raw(body: impl Into<Body>) -> http::Request<Body> {
    http::Request::post("/v1/screen")
        .header("content-type", "application/json")
        .body(body.into())
        .unwrap()
}

fn screen(body: Value) -> http::Request<Body> {
    screen_raw(body.to_string())
}

fn admin(method: &str, token: Option<&str>, body: Option<Value>) -> http::Request<Body> {
    let mut b = http::Request::builder().method(method).uri("/admin/chaos");
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    b.body(body.map_or_else(Body::empty, |v| Body::from(v.to_string())))
        .unwrap()
}

fn assert_invalid(status: u16, body: &Value, field: &str) {
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_argument", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(field), "{message} should name {field}");
}

#[tokio::test]
async fn a_clear_name_and_a_listed_name_answer_the_contract_shape() {
    let app = app();
    let (status, body) = send(
        &app,
        screen(json!({"name": "Hiroshi Tanaka", "country": "JP"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let clear: ScreenResponse = serde_json::from_value(body).unwrap();
    assert_eq!(clear.status, kosha_contract::screening::ScreenStatus::Clear);
    let listed = screening_sim::Watchlist::bundled().entries()[0]
        .name
        .clone();
    let (status, body) = send(&app, screen(json!({"name": listed}))).await;
    assert_eq!(status, 200, "{body}");
    let hit: ScreenResponse = serde_json::from_value(body).unwrap();
    assert_eq!(
        hit.status,
        kosha_contract::screening::ScreenStatus::PotentialMatch
    );
    assert_eq!(hit.matches[0].list_entry_id, "wl_00001");
}

#[tokio::test]
async fn bad_names_are_400_naming_the_field() {
    let app = app();
    for name in [
        String::new(),
        "x".repeat(201),
        "!!! ... ---".to_owned(),
        "1234 5678".to_owned(),
        "John\u{0}Smith".to_owned(),
        "John\nSmith".to_owned(),
        "Ivan\u{7}ov".to_owned(),
    ] {
        let (status, body) = send(&app, screen(json!({ "name": name }))).await;
        assert_invalid(status, &body, "name");
    }
    // Mixed scripts are screened, not refused (a Cyrillic look-alike letter in a Latin name
    // must not slip past the list: crate::request).
    let (status, body) = send(&app, screen(json!({"name": "Vlаdimir Пetrov"}))).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = send(&app, screen(json!({"name": "x".repeat(200)}))).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn bad_countries_and_dates_are_400_naming_the_field() {
    let app = app();
    for country in ["UK", "EU", "ZZ", "XK", "G", "GBR", "1A", "", "gb "] {
        let (status, body) = send(
            &app,
            screen(json!({"name": "John Smith", "country": country})),
        )
        .await;
        assert_invalid(status, &body, "country");
    }
    for dob in [
        "2023-02-30",
        "2023-13-01",
        "1899-12-31",
        "2999-01-01",
        "1980-1-1",
        "01/02/1980",
        "1980-02-29T00:00:00Z",
    ] {
        let (status, body) = send(
            &app,
            screen(json!({"name": "John Smith", "date_of_birth": dob})),
        )
        .await;
        assert_invalid(status, &body, "date_of_birth");
    }
    let (status, _) = send(
        &app,
        screen(json!({"name": "John Smith", "country": "gb", "date_of_birth": "1980-02-29"})),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn bodies_that_are_not_a_request_are_400_and_big_ones_413() {
    let app = app();
    for raw in [
        "not json",
        "[]",
        r#"{"name": 42}"#,
        r#"{"nom": "John"}"#,
        r#"{"name": "John", "extra": 1}"#,
        "",
    ] {
        let (status, body) = send(&app, screen_raw(raw)).await;
        assert_invalid(status, &body, "body");
    }
    let big = json!({"name": "a".repeat(20_000)}).to_string();
    let (status, _) = send(&app, screen_raw(big)).await;
    assert_eq!(status, 413);
}

#[tokio::test]
async fn a_passed_deadline_is_504_and_a_malformed_one_400() {
    let app = app();
    let req = |deadline: &str| {
        http::Request::post("/v1/screen")
            .header("x-request-deadline", deadline)
            .body(Body::from(json!({"name": "John Smith"}).to_string()))
            .unwrap()
    };
    let (status, body) = send(&app, req("2001-01-01T00:00:00.000Z")).await;
    assert_eq!(status, 504);
    assert_eq!(body["error"]["code"], "deadline_exceeded");
    let (status, body) = send(&app, req("tomorrow")).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "invalid_argument");
}

#[tokio::test]
async fn admin_routes_need_the_token() {
    let app = app();
    for method in ["GET", "POST", "DELETE"] {
        let body = (method == "POST").then(|| json!({"down": true}));
        let (status, _) = send(&app, admin(method, None, body.clone())).await;
        assert_eq!(status, 401, "{method} without a token");
        let (status, _) = send(&app, admin(method, Some("wrong-token-wrong-token"), body)).await;
        assert_eq!(status, 403, "{method} with a wrong token");
    }
    let resp = app.clone().oneshot(admin("GET", None, None)).await.unwrap();
    assert_eq!(resp.headers()["www-authenticate"], "Bearer");
    // No token configured: admin is disabled for everyone.
    let closed = router(Arc::new(Sim {
        screener: Screener::bundled(),
        chaos: Chaos::new(Arc::new(MemoryKnobs::default()), Arc::new(SystemClock)),
        admin_token: None,
        base_latency: Duration::ZERO,
    }));
    let (status, _) = send(&closed, admin("GET", Some(TOKEN), None)).await;
    assert_eq!(status, 403);
    assert!(AdminToken::new("short").is_err());
}

#[tokio::test]
async fn chaos_down_fails_screens_and_health_until_cleared() {
    let app = app();
    let (status, body) = send(
        &app,
        admin(
            "POST",
            Some(TOKEN),
            Some(json!({"down": true, "ttl_s": 60})),
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["chaos"]["down"], true);
    let exp =
        body["chaos"]["expires_at"].as_i64().unwrap() - body["chaos"]["set_at"].as_i64().unwrap();
    assert_eq!(exp, 60);
    let (status, body) = send(&app, screen(json!({"name": "John Smith"}))).await;
    assert_eq!(status, 503);
    assert_eq!(body["error"]["code"], "dependency_unavailable");
    let health = http::Request::get("/v1/health")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&app, health).await.0, 503);
    let (status, body) = send(&app, admin("GET", Some(TOKEN), None)).await;
    assert_eq!((status, body["chaos"]["down"].clone()), (200, json!(true)));

    let (status, body) = send(&app, admin("DELETE", Some(TOKEN), None)).await;
    assert_eq!((status, body["chaos"].clone()), (200, Value::Null));
    assert_eq!(
        send(&app, screen(json!({"name": "John Smith"}))).await.0,
        200
    );
}

#[tokio::test]
async fn the_status_and_retry_after_knobs_make_the_sim_answer_429_with_retry_after() {
    let app = app();
    let knobs = json!({"down": true, "status": 429, "retry_after_s": 10, "ttl_s": 60});
    let (status, body) = send(&app, admin("POST", Some(TOKEN), Some(knobs))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (
            body["chaos"]["status"].clone(),
            body["chaos"]["retry_after_s"].clone()
        ),
        (json!(429), json!(10))
    );
    let resp = app
        .clone()
        .oneshot(screen(json!({"name": "John Smith"})))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()["retry-after"], "10");
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["error"]["code"], "overloaded");
    // The default stays a 503 with `Retry-After: 1`, and a bad status is refused.
    send(
        &app,
        admin("POST", Some(TOKEN), Some(json!({"down": true}))),
    )
    .await;
    let resp = app
        .clone()
        .oneshot(screen(json!({"name": "John Smith"})))
        .await
        .unwrap();
    assert_eq!(
        (
            resp.status().as_u16(),
            resp.headers()["retry-after"].to_str().unwrap()
        ),
        (503, "1")
    );
    for (body, field) in [
        (json!({"down": true, "status": 404}), "status"),
        (
            json!({"down": true, "retry_after_s": 3_601}),
            "retry_after_s",
        ),
    ] {
        let (status, answer) = send(&app, admin("POST", Some(TOKEN), Some(body))).await;
        assert_invalid(status, &answer, field);
    }
}

#[tokio::test]
async fn chaos_requests_are_checked_and_default_to_fifteen_minutes() {
    let app = app();
    for (body, field) in [
        (json!({}), "latency_ms"),
        (json!({"latency_ms": 30_001}), "latency_ms"),
        (json!({"error_rate": 2}), "error_rate"),
        (json!({"down": true, "ttl_s": 0}), "ttl_s"),
        (json!({"down": "yes"}), "body"),
        (json!({"down": true, "forever": true}), "body"),
    ] {
        let (status, answer) = send(&app, admin("POST", Some(TOKEN), Some(body))).await;
        assert_invalid(status, &answer, field);
    }
    let (status, body) = send(
        &app,
        admin(
            "POST",
            Some(TOKEN),
            Some(json!({"latency_ms": 30, "error_rate": 0})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    let ttl =
        body["chaos"]["expires_at"].as_i64().unwrap() - body["chaos"]["set_at"].as_i64().unwrap();
    assert_eq!(ttl, 900);
    let started = tokio::time::Instant::now();
    assert_eq!(
        send(&app, screen(json!({"name": "John Smith"}))).await.0,
        200
    );
    assert!(
        started.elapsed() >= Duration::from_millis(30),
        "the latency knob applies"
    );
}
