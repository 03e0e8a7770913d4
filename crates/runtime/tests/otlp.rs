//! Spans exported over OTLP/HTTP (SPEC §12; `kosha_runtime::otlp`, one exporter per process, so
//! one test binary): a request's span is exported in the caller's trace, a span opened inside
//! it is its child and the context sent onwards is that inner span's, the log lines still show
//! the request span, and a Lambda invocation's spans have left when its answer is returned;
//! one request is one trace when a message's `_meta` carries another parent than the HTTP
//! header, and library bookkeeping is not exported.
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
    let span = tracing::info_span!(
        target: "kosha_test",
        "tool_call",
        tool = "get_transaction",
        attempts = kosha_runtime::semconv::int(2_usize),
    );
    async {
        tracing::info!("inside the tool call");
        let mut out = axum::http::HeaderMap::new();
        kosha_runtime::trace::inject(&mut out);
        out["traceparent"].to_str().unwrap().to_owned()
    }
    .instrument(span)
    .await
}

/// The `params._meta.traceparent` of a message, in another trace than [`PARENT`].
const META_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const META: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Starts the request's trace from a message's `_meta` (as the gateway's edge does once it has
/// read the body), logs a line, then runs [`handler`].
async fn with_meta(mut request: axum::extract::Request) -> String {
    let trace = request
        .extensions_mut()
        .get_mut::<kosha_runtime::trace::RequestTrace>()
        .expect("the request span's trace");
    assert!(trace.begin(Some((META, None))), "a valid traceparent");
    tracing::info!("body read");
    handler().await
}

fn app() -> axum::Router {
    axum::Router::new()
        .route("/", axum::routing::get(handler))
        .route("/meta", axum::routing::get(with_meta))
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
    // A count is an OTLP int, not its Debug string (SPEC §12).
    assert!(
        attribute(call, "attempts").is_some_and(|v| v.contains("IntValue(2)")),
        "{:?}",
        attribute(call, "attempts")
    );

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

    one_request_is_one_trace(&collector, &lines).await;
}

/// The log lines of `text` whose message is `message`.
fn lines_of(text: &[u8], message: &str) -> Vec<serde_json::Value> {
    String::from_utf8(text.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["message"] == message)
        .collect()
}

/// SPEC §12: `_meta`'s parent wins over the HTTP one, which is a link; a request without a
/// parent logs the trace id its spans are exported in; no bookkeeping attribute is exported.
async fn one_request_is_one_trace(collector: &MockServer, lines: &Lines) {
    for http_parent in [Some(PARENT), None] {
        lines.0.lock().clear();
        let mut req = axum::http::Request::get("/meta");
        if let Some(p) = http_parent {
            req = req.header("traceparent", p);
        }
        let resp = app()
            .oneshot(req.body(axum::body::Body::empty()).unwrap())
            .await
            .unwrap();
        let sent = resp.into_body().collect().await.unwrap().to_bytes();
        assert!(
            sent.starts_with(format!("00-{META_TRACE}-").as_bytes()),
            "sent onwards in _meta's trace: {sent:?}"
        );
        kosha_runtime::otlp::flush().await;
        let spans = received(collector).await;
        let in_meta: Vec<&Span> = spans
            .iter()
            .filter(|s| hex::encode(&s.trace_id) == META_TRACE)
            .collect();
        let request = in_meta
            .iter()
            .rev()
            .find(|s| s.name == "request")
            .expect("the request span in _meta's trace");
        assert_eq!(hex::encode(&request.parent_span_id), "00f067aa0ba902b7");
        let call = in_meta
            .iter()
            .rev()
            .find(|s| s.name == "tool_call")
            .expect("the tool call in _meta's trace");
        assert_eq!(
            call.parent_span_id, request.span_id,
            "a child of the request"
        );
        let links: Vec<String> = request
            .links
            .iter()
            .map(|l| format!("{}-{}", hex::encode(&l.trace_id), hex::encode(&l.span_id)))
            .collect();
        match http_parent {
            Some(_) => assert_eq!(links, [format!("{TRACE}-b7ad6b7169203331")]),
            None => assert!(links.is_empty(), "{links:?}"),
        }
        // OpenTelemetry's names, not tracing's (SPEC §12).
        assert!(attribute(request, "http.request.method").is_some_and(|v| v.contains("GET")));
        assert!(attribute(request, "url.path").is_some_and(|v| v.contains("/meta")));
        assert!(attribute(request, "method").is_none() && attribute(request, "path").is_none());
        for span in [request, call] {
            for key in [
                "busy_ns",
                "idle_ns",
                "target",
                "thread.id",
                "code.file.path",
            ] {
                assert!(attribute(span, key).is_none(), "{key} on {}", span.name);
            }
        }
        let text = lines.0.lock().clone();
        for message in ["body read", "inside the tool call", "handled"] {
            let found = lines_of(&text, message);
            assert_eq!(found.len(), 1, "{message}: {found:?}");
            assert_eq!(found[0]["span"]["trace_id"], META_TRACE, "{message}");
        }
    }

    // Without any parent, the lines logged carry the trace id the spans are exported in.
    lines.0.lock().clear();
    let req = axum::http::Request::get("/")
        .body(axum::body::Body::empty())
        .unwrap();
    let sent = app()
        .oneshot(req)
        .await
        .unwrap()
        .into_body()
        .collect()
        .await;
    let sent = String::from_utf8(sent.unwrap().to_bytes().to_vec()).unwrap();
    let trace = sent.split('-').nth(1).unwrap().to_owned();
    let text = lines.0.lock().clone();
    let logged = lines_of(&text, "inside the tool call");
    assert_eq!(logged[0]["span"]["trace_id"], trace.as_str(), "{logged:?}");
    kosha_runtime::otlp::flush().await;
    let spans = received(collector).await;
    let request = spans
        .iter()
        .find(|s| s.name == "request" && hex::encode(&s.trace_id) == trace)
        .expect("the request span in the logged trace");
    assert!(request.parent_span_id.is_empty(), "a root");
}
