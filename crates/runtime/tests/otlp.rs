//! Feature `otlp` (run with `cargo test -p kosha-runtime --features otlp --test otlp`): a
//! request's span is exported over OTLP/HTTP in the caller's trace, and the context sent
//! onwards is that exported span's, so a collector sees one tree across hops.
#![cfg(feature = "otlp")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use http_body_util::BodyExt;
use tower::ServiceExt;
use tracing_subscriber::EnvFilter;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

async fn handler() -> String {
    let mut out = axum::http::HeaderMap::new();
    kosha_runtime::trace::inject(&mut out);
    out["traceparent"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_request_span_is_exported_in_the_callers_trace_and_continued_downstream() {
    let collector = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&collector)
        .await;
    assert!(kosha_runtime::otlp::install(&format!(
        "{}/v1/traces",
        collector.uri()
    )));
    let subscriber = kosha_runtime::telemetry::subscriber(EnvFilter::new("info"), std::io::sink);
    let _guard = tracing::subscriber::set_default(subscriber);

    let app = axum::Router::new()
        .route("/", axum::routing::get(handler))
        .layer(axum::middleware::from_fn(
            kosha_runtime::trace::request_span,
        ));
    let req = axum::http::Request::get("/")
        .header("traceparent", PARENT)
        .body(axum::body::Body::empty())
        .unwrap();
    let resp = app.oneshot(req).await.unwrap();
    let sent = String::from_utf8(
        resp.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap();
    assert!(sent.starts_with(&format!("00-{TRACE}-")), "{sent}");
    let span_id = sent.split('-').nth(2).unwrap().to_owned();
    assert_ne!(span_id, "b7ad6b7169203331");

    let flushed = tokio::task::spawn_blocking(kosha_runtime::otlp::flush);
    flushed.await.unwrap();
    let exported = collector.received_requests().await.unwrap();
    assert!(!exported.is_empty(), "nothing exported");
    let body: Vec<u8> = exported.iter().flat_map(|r| r.body.clone()).collect();
    let contains = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
    assert!(
        contains(&hex::decode(TRACE).unwrap()),
        "the caller's trace id"
    );
    assert!(
        contains(&hex::decode(&span_id).unwrap()),
        "the span sent downstream is the exported one"
    );
    assert!(
        contains(&hex::decode("b7ad6b7169203331").unwrap()),
        "its parent is the caller's span"
    );
}
