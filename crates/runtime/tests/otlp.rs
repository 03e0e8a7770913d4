//! Spans exported over OTLP/HTTP (SPEC §12; `kosha_runtime::otlp`, one exporter per process, so
//! one test binary): a request's span is exported in the caller's trace, a span opened inside
//! it is its child and the context sent onwards is that inner span's, the log lines still show
//! the request span, and a Lambda invocation's spans have left when its answer is returned.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use http_body_util::BodyExt;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use tower::ServiceExt;
use tracing::Instrument;
use tracing_subscriber::EnvFilter;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// A handler that opens an exported span of its own (as the gateway's tool call does) and
/// answers the `traceparent` it would send onwards from inside it.
async fn handler() -> String {
    let span = tracing::info_span!(target: "kosha_test", "tool_call", tool = "get_transaction");
    async {
        tracing::info!("inside the tool call");
        let mut out = axum::http::HeaderMap::new();
        kosha_runtime::trace::inject(&mut out);
        out["traceparent"].to_str().unwrap().to_owned()
    }
    .instrument(span)
    .await
}

fn app() -> axum::Router {
    axum::Router::new()
        .route("/", axum::routing::get(handler))
        .layer(axum::middleware::from_fn(
            kosha_runtime::trace::request_span,
        ))
}

/// Every span the collector has received so far.
async fn received(collector: &MockServer) -> Vec<Span> {
    let mut spans = Vec::new();
    for r in collector.received_requests().await.unwrap() {
        let export = ExportTraceServiceRequest::decode(r.body.as_slice()).expect("OTLP protobuf");
        for rs in export.resource_spans {
            let service = rs
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .map(|kv| format!("{:?}", kv.value));
            assert!(
                service.is_some_and(|s| s.contains("kosha-otlp-test")),
                "the service name"
            );
            spans.extend(rs.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
    spans
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| format!("{:?}", kv.value))
}

#[derive(Clone, Default)]
struct Lines(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn spans_are_exported_in_the_callers_trace_and_a_lambda_answer_waits_for_them() {
    let collector = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&collector)
        .await;
    assert!(kosha_runtime::otlp::install(
        "kosha-otlp-test",
        &format!("{}/v1/traces", collector.uri())
    ));
    assert!(kosha_runtime::otlp::enabled());
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber =
        kosha_runtime::telemetry::subscriber(EnvFilter::new("info"), move || writer.clone());
    let _guard = kosha_runtime::telemetry::capture_default(subscriber);

    // 1. Local mode: the request, its inner span, the context sent onwards.
    let req = axum::http::Request::get("/")
        .header("traceparent", PARENT)
        .body(axum::body::Body::empty())
        .unwrap();
    let resp = app().oneshot(req).await.unwrap();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let sent = String::from_utf8(body.to_vec()).unwrap();
    assert!(sent.starts_with(&format!("00-{TRACE}-")), "{sent}");
    let sent_span = sent.split('-').nth(2).unwrap().to_owned();
    kosha_runtime::otlp::flush().await;
    let spans = received(&collector).await;
    let request = spans.iter().find(|s| s.name == "request").expect("request");
    let call = spans
        .iter()
        .find(|s| s.name == "tool_call")
        .expect("tool_call");
    assert_eq!(hex::encode(&request.trace_id), TRACE);
    assert_eq!(hex::encode(&request.parent_span_id), "b7ad6b7169203331");
    assert_eq!(request.kind, 2, "server");
    assert_eq!(hex::encode(&call.trace_id), TRACE);
    assert_eq!(
        call.parent_span_id, request.span_id,
        "a child of the request"
    );
    assert_eq!(
        hex::encode(&call.span_id),
        sent_span,
        "sent onwards from inside it"
    );
    assert!(attribute(call, "tool").is_some_and(|v| v.contains("get_transaction")));

    // The log lines show the request span, never the export-only one.
    let text = String::from_utf8(lines.0.lock().clone()).unwrap();
    let inside: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["message"] == "inside the tool call")
        .expect("the handler's line");
    assert_eq!(inside["span"]["name"], "request", "{inside}");
    assert_eq!(inside["span"]["trace_id"], TRACE, "{inside}");

    // 2. A Lambda invocation: its spans have reached the collector when its answer returns.
    let before = collector.received_requests().await.unwrap().len();
    let event = serde_json::json!({
        "version": "2.0", "routeKey": "$default", "rawPath": "/", "rawQueryString": "",
        "headers": {"host": "x.lambda-url.us-east-1.on.aws", "traceparent": PARENT},
        "requestContext": {
            "accountId": "123456789012", "apiId": "x",
            "domainName": "x.lambda-url.us-east-1.on.aws", "domainPrefix": "x",
            "requestId": "r1", "routeKey": "$default", "stage": "$default",
            "time": "02/Dec/2026:03:00:00 +0000", "timeEpoch": 1_796_180_400_000_i64,
            "http": {"method": "GET", "path": "/", "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "test"}
        },
        "isBase64Encoded": false
    });
    let raw = serde_json::value::RawValue::from_string(event.to_string()).unwrap();
    let no_tasks = |_: String| async { Err::<serde_json::Value, String>("no tasks".into()) };
    let answer = kosha_runtime::handle_event(
        app(),
        no_tasks,
        lambda_http::LambdaEvent::new(raw, lambda_http::Context::default()),
    )
    .await
    .unwrap();
    assert_eq!(answer["statusCode"], 200, "{answer}");
    let after = collector.received_requests().await.unwrap().len();
    assert!(
        after > before,
        "the invocation's spans left before its answer"
    );
    let requests = received(&collector)
        .await
        .into_iter()
        .filter(|s| s.name == "request" && hex::encode(&s.trace_id) == TRACE)
        .count();
    assert_eq!(
        requests, 2,
        "the invocation's request span, beside the first request's"
    );
}
