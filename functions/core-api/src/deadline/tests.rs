//! The middleware's mapping of the header (the parsing itself is tested in
//! `kosha_resilience::deadline`) and the statement budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::db::PostgresConfig;
use axum::Router;
use axum::body::Body;
use axum::extract::{Extension, Request};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware;
use axum::routing::get;
use http_body_util::BodyExt;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tower::ServiceExt;

use super::{Budget, Deadline, enforce};
use kosha_contract::headers::REQUEST_DEADLINE as DEADLINE_HEADER;

/// A router whose one handler counts its calls and answers the deadline's remaining
/// milliseconds (`none` without one).
fn app(calls: Arc<AtomicUsize>) -> Router {
    let handler = move |deadline: Option<Extension<Deadline>>| {
        let calls = Arc::clone(&calls);
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            deadline.map_or_else(
                || "none".to_owned(),
                |Extension(d)| d.remaining().as_millis().to_string(),
            )
        }
    };
    Router::new()
        .route("/", get(handler))
        .layer(middleware::from_fn(enforce))
}

async fn call(header: Option<HeaderValue>) -> (StatusCode, String, usize) {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut request = Request::get("/").body(Body::empty()).unwrap();
    if let Some(value) = header {
        request.headers_mut().insert(DEADLINE_HEADER, value);
    }
    let response = app(Arc::clone(&calls)).oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body = String::from_utf8(body.to_vec()).unwrap();
    (status, body, calls.load(Ordering::SeqCst))
}

fn in_ms(ms: i64) -> HeaderValue {
    let at = OffsetDateTime::now_utc() + time::Duration::milliseconds(ms);
    HeaderValue::from_str(&at.format(&Rfc3339).unwrap()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn absent_header_means_no_deadline() {
    assert_eq!(call(None).await, (StatusCode::OK, "none".to_owned(), 1));
}

#[tokio::test(start_paused = true)]
async fn header_becomes_the_request_deadline() {
    let (status, body, calls) = call(Some(in_ms(5_000))).await;
    assert_eq!((status, calls), (StatusCode::OK, 1));
    let left: u64 = body.parse().unwrap();
    // Wall-clock time between formatting and parsing the header is all that is lost.
    assert!((4_900..=5_000).contains(&left), "{left}");
}

#[tokio::test(start_paused = true)]
async fn far_deadline_is_clamped_to_sixty_seconds() {
    let far = HeaderValue::from_static("2099-01-01T00:00:00Z");
    assert_eq!(
        call(Some(far)).await,
        (StatusCode::OK, "60000".to_owned(), 1)
    );
}

#[tokio::test(start_paused = true)]
async fn past_deadline_is_504_without_doing_the_work() {
    let (status, body, calls) = call(Some(in_ms(-1))).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert!(body.contains("deadline_exceeded"), "{body}");
    assert_eq!(calls, 0);
}

#[tokio::test(start_paused = true)]
async fn malformed_header_is_400_naming_itself() {
    for bad in [
        HeaderValue::from_static("tomorrow"),
        HeaderValue::from_static("2026-11-30"),
        HeaderValue::from_static("1700000000"),
        HeaderValue::from_static(""),
        HeaderValue::from_bytes(b"2026-11-30T12:00:07\xff").unwrap(),
    ] {
        let (status, body, calls) = call(Some(bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad:?}");
        assert!(body.contains("invalid_argument"), "{body}");
        assert!(body.contains("X-Request-Deadline"), "{body}");
        assert_eq!(calls, 0, "{bad:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn statement_timeout_shrinks_with_the_deadline() {
    let postgres = PostgresConfig::defaults();
    let budget = Budget {
        deadline: Some(Deadline::after(Duration::from_secs(5))),
        postgres,
        chaos: Default::default(),
    };
    assert_eq!(budget.statement_timeout(), Some(postgres.statement_timeout));
    tokio::time::advance(Duration::from_millis(4_000)).await;
    assert_eq!(budget.statement_timeout(), Some(Duration::from_millis(900)));
    tokio::time::advance(Duration::from_millis(1_000) - postgres.margin).await;
    assert_eq!(budget.statement_timeout(), None);
    let unbounded = Budget {
        deadline: None,
        postgres,
        chaos: Default::default(),
    };
    assert_eq!(
        unbounded.statement_timeout(),
        Some(postgres.statement_timeout)
    );
}
