//! OTLP export of request spans (feature `otlp`, off by default; SPEC §12). With
//! `KOSHA_OTLP_ENDPOINT` set (an OTLP/HTTP traces URL, `http://127.0.0.1:4318/v1/traces`), every
//! `request` span of [`crate::trace`] is exported as an OpenTelemetry span, a child of the
//! caller's trace context, and the context propagated downstream is that span's, so a collector
//! sees one tree across the hops. Unset, nothing is exported and nothing changes. On Lambda the
//! spans are flushed after each invocation ([`flush`], called by [`crate::serve`]); the ADOT
//! layer remains the usual route there. The service name comes from `OTEL_SERVICE_NAME`.

use std::sync::OnceLock;

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt};
use tracing_subscriber::registry::LookupSpan;

static PROVIDER: OnceLock<Option<SdkTracerProvider>> = OnceLock::new();

fn provider() -> Option<&'static SdkTracerProvider> {
    PROVIDER
        .get_or_init(|| build(&crate::config::var("KOSHA_OTLP_ENDPOINT")?))
        .as_ref()
}

/// Exports to `endpoint` instead of `KOSHA_OTLP_ENDPOINT` (tests); only before the first
/// subscriber is built. Returns whether it took effect.
pub fn install(endpoint: &str) -> bool {
    PROVIDER.set(build(endpoint)).is_ok()
}

fn build(endpoint: &str) -> Option<SdkTracerProvider> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .build()
        .map_err(|e| eprintln!("kosha: OTLP exporter not built: {e}"))
        .ok()?;
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(opentelemetry_sdk::Resource::builder().build())
            .build(),
    )
}

/// The tracing layer exporting spans, when `KOSHA_OTLP_ENDPOINT` is set.
pub fn layer<S>() -> Option<OpenTelemetryLayer<S, Tracer>>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let tracer = provider()?.tracer("kosha");
    Some(tracing_opentelemetry::layer().with_tracer(tracer))
}

/// Makes `span`'s exported span a child of `parent` (or a new root) and returns its context,
/// when spans are exported; `None` otherwise (the caller keeps its own context).
pub fn adopt(span: &tracing::Span, parent: Option<&SpanContext>) -> Option<Context> {
    provider()?;
    if let Some(p) = parent {
        let _ = span.set_parent(Context::new().with_remote_span_context(p.clone()));
    }
    let cx = span.context();
    cx.span().span_context().is_valid().then_some(cx)
}

/// Exports the finished spans now (after a Lambda invocation, before the freeze).
pub fn flush() {
    if let Some(p) = provider() {
        let _ = p.force_flush();
    }
}
