//! Tests of the trace-context propagation (the parent module).

use axum::http::HeaderMap;

use super::{MAX_PATH_LEN, child_of, clipped_path, inject, loggable, w3c_parent, xray_parent};
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::TraceContextExt;

const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

#[tokio::test]
async fn a_child_keeps_the_trace_and_flags_with_a_new_span_id() {
    let mut incoming = HeaderMap::new();
    incoming.insert("traceparent", PARENT.parse().unwrap());
    incoming.insert("tracestate", "vendor=abc".parse().unwrap());
    let parent = w3c_parent(&incoming).expect("valid traceparent");
    let cx = child_of(Some(&parent));
    let mut out = HeaderMap::new();
    async { inject(&mut out) }.with_context(cx).await;
    let sent = out["traceparent"].to_str().unwrap();
    assert!(
        sent.starts_with("00-0af7651916cd43dd8448eb211c80319c-"),
        "{sent}"
    );
    assert!(sent.ends_with("-01"));
    assert!(!sent.contains("b7ad6b7169203331"), "own span id: {sent}");
    assert_eq!(out["tracestate"], "vendor=abc");
}

#[test]
fn invalid_parents_are_ignored_and_nothing_is_injected_outside_a_request() {
    for bad in [
        "",
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
        "zz-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
    ] {
        let mut h = HeaderMap::new();
        h.insert("traceparent", bad.parse().unwrap());
        assert!(w3c_parent(&h).is_none(), "{bad:?}");
    }
    let mut out = HeaderMap::new();
    inject(&mut out);
    assert!(out.is_empty());
}

/// Every line the production log format writes during `f`.
async fn logged<F: std::future::Future>(f: F) -> Vec<serde_json::Value> {
    let buf = crate::telemetry::SharedBuffer::default();
    let writer = buf.clone();
    let subscriber =
        crate::telemetry::subscriber(tracing_subscriber::EnvFilter::new("info"), move || {
            writer.clone()
        });
    let _guard = crate::telemetry::capture_default(subscriber);
    f.await;
    buf.text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A service's router (core-api's shape): a handler that logs and calls onwards.
fn router() -> axum::Router {
    async fn handler() -> String {
        tracing::info!("inside the handler");
        let mut out = HeaderMap::new();
        inject(&mut out);
        out.get("traceparent")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    }
    axum::Router::new()
        .route("/", axum::routing::get(handler))
        .layer(axum::middleware::from_fn(super::request_span))
}

async fn get(headers: &[(&str, &str)]) -> String {
    get_with(headers, None).await
}

/// A request with `headers` and, as under Lambda, an invocation context.
async fn get_with(headers: &[(&str, &str)], lambda: Option<lambda_http::Context>) -> String {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let mut req = axum::http::Request::get("/");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut req = req.body(axum::body::Body::empty()).unwrap();
    if let Some(cx) = lambda {
        req.extensions_mut().insert(cx);
    }
    let resp = router().oneshot(req).await.unwrap();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

#[tokio::test]
async fn every_line_of_a_request_carries_the_callers_trace_id_and_hops_continue_it() {
    let mut sent = String::new();
    let lines = logged(async { sent = get(&[("traceparent", PARENT)]).await }).await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert_eq!(
            line["span"]["trace_id"], "0af7651916cd43dd8448eb211c80319c",
            "{line}"
        );
    }
    assert_eq!(lines[0]["message"], "inside the handler");
    assert_eq!(lines[1]["message"], "handled");
    assert!(
        sent.starts_with("00-0af7651916cd43dd8448eb211c80319c-"),
        "{sent}"
    );

    let xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    let lines = logged(get(&[("x-amzn-trace-id", xray)])).await;
    assert_eq!(
        lines[0]["span"]["trace_id"],
        "5759e988bd862e3fe1be46a994272793"
    );
    // traceparent wins over X-Ray.
    let lines = logged(get(&[("x-amzn-trace-id", xray), ("traceparent", PARENT)])).await;
    assert_eq!(
        lines[0]["span"]["trace_id"],
        "0af7651916cd43dd8448eb211c80319c"
    );
}

#[tokio::test]
async fn under_lambda_the_invocations_xray_trace_and_request_id_are_used() {
    let mut cx = lambda_http::Context::default();
    cx.request_id = "8476a536-e9f4-11e8-9739-2dfe598c3fcd".to_owned();
    cx.xray_trace_id =
        Some("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1".into());
    let mut sent = String::new();
    let lines = logged(async { sent = get_with(&[], Some(cx)).await }).await;
    assert_eq!(
        lines[0]["span"]["trace_id"],
        "5759e988bd862e3fe1be46a994272793"
    );
    assert_eq!(
        lines[0]["span"]["request_id"],
        "8476a536-e9f4-11e8-9739-2dfe598c3fcd"
    );
    assert!(
        sent.starts_with("00-5759e988bd862e3fe1be46a994272793-"),
        "{sent}"
    );
}

#[test]
fn an_xray_root_maps_to_its_w3c_trace_id_and_a_new_trace_is_random() {
    let parent =
        xray_parent("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
            .expect("valid X-Ray header");
    assert_eq!(
        parent.trace_id().to_string(),
        "5759e988bd862e3fe1be46a994272793"
    );
    assert!(xray_parent("Root=nonsense").is_none());
    let a = child_of(None);
    let b = child_of(None);
    assert_ne!(
        a.span().span_context().trace_id(),
        b.span().span_context().trace_id()
    );
    assert!(a.span().span_context().is_valid());
}

#[tokio::test(start_paused = true)]
async fn own_time_is_the_span_less_the_waits_on_dependencies() {
    use std::time::Duration;
    async fn handler(request: axum::extract::Request) -> String {
        let trace = request.extensions().get::<super::RequestTrace>().unwrap();
        tokio::time::sleep(Duration::from_millis(3)).await; // own work
        let slow = tokio::time::sleep(Duration::from_millis(40));
        let other = tokio::time::sleep(Duration::from_millis(25));
        trace.waiting(async { tokio::join!(slow, other) }).await;
        trace
            .waiting(tokio::time::sleep(Duration::from_millis(10)))
            .await;
        tokio::time::sleep(Duration::from_millis(2)).await; // own work
        format!("{}", trace.own_time().as_millis())
    }
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let app = axum::Router::new()
        .route("/", axum::routing::get(handler))
        .layer(axum::middleware::from_fn(super::request_span));
    let req = axum::http::Request::get("/")
        .body(axum::body::Body::empty())
        .unwrap();
    // Under `logged`, like every test here that runs `request_span`, so its `handled`
    // line, which carries the request's elapsed time, is read too.
    let mut body = axum::body::Bytes::new();
    let lines = logged(async {
        let resp = app.oneshot(req).await.unwrap();
        body = resp.into_body().collect().await.unwrap().to_bytes();
    })
    .await;
    // 55 ms of wall time, of which 50 ms waiting (the join counts once): 5 ms own.
    assert_eq!(body.as_ref(), b"5");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["message"], "handled");
    assert_eq!(lines[0]["elapsed_ms"], 55, "{lines:?}");
}

#[tokio::test]
async fn without_export_the_spans_inside_a_request_are_disabled_and_lines_show_the_request() {
    use tracing::Instrument;
    let mut disabled = false;
    let lines = logged(async {
        // A policy's attempt span (crates/resilience/src/span.rs): exported only.
        let attempt = tracing::info_span!(
            target: "kosha_resilience::span",
            "attempt",
            dependency = "core-api"
        );
        disabled = attempt.is_disabled();
        async { tracing::info!("inside an attempt") }
            .instrument(attempt)
            .instrument(tracing::info_span!("request", request_id = "r1"))
            .await;
    })
    .await;
    assert!(disabled, "no listener, no span");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["span"]["name"], "request", "{lines:?}");
    assert_eq!(lines[0]["span"]["request_id"], "r1", "{lines:?}");
}

#[test]
fn long_paths_are_clipped_at_a_char_boundary() {
    assert_eq!(clipped_path("/mcp"), "/mcp");
    let exact = "a".repeat(MAX_PATH_LEN);
    assert_eq!(clipped_path(&exact), exact.as_str());
    let long = "/".to_owned() + &"é".repeat(20_000);
    let clipped = clipped_path(&long);
    assert!(clipped.len() <= MAX_PATH_LEN + '…'.len_utf8());
    assert!(clipped.ends_with('…'));
    assert!(long.starts_with(clipped.trim_end_matches('…')));
}

#[test]
fn only_plain_tokens_are_logged() {
    assert!(loggable(
        "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"
    ));
    assert!(loggable("kosha-dev-agent"));
    for bad in ["", "a b", "x\ny", "{\"json\":1}", &"a".repeat(129)] {
        assert!(!loggable(bad), "{bad:?}");
    }
}
