//! OTLP/HTTP export of spans (SPEC §12), in every build, on only when OpenTelemetry's own
//! variables ask for it.
//!
//! - **When:** [`init`] builds the exporter when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` is set and not empty, unless `OTEL_SDK_DISABLED=true` or
//!   `OTEL_TRACES_EXPORTER=none` (the OpenTelemetry SDK environment specification). Unset,
//!   nothing is built, no span of [`is_exported`] is ever created, and the log subscriber is
//!   the one it was before export existed ([`crate::telemetry::subscriber`]).
//! - **How it is configured:** by the crates themselves, from the standard variables: the
//!   endpoint (`…_TRACES_ENDPOINT` as given, `…_ENDPOINT` with `/v1/traces` appended),
//!   `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_EXPORTER_OTLP_TIMEOUT` in opentelemetry-otlp (the
//!   protocol is `http/protobuf`, the one built in); `OTEL_SERVICE_NAME`,
//!   `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` (+ `_ARG`) and `OTEL_BSP_*` in
//!   opentelemetry_sdk. The service name defaults to the function's (`mcp-gateway`, …) when
//!   neither names one.
//! - **What:** every span of this workspace's crates at `info` or above ([`is_exported`]): the
//!   `request` span of [`crate::trace`] and the spans the functions and the resilience policy
//!   open inside it (tool call, dependency attempt, database, embeddings, batches). Their
//!   fields become attributes, named by [`crate::semconv`] (an `i64` field is an OTLP int;
//!   `busy_ns`, `idle_ns`, `target`, `code.*` and `thread.*` are not exported); log events are
//!   not exported. The `request` span is a child of a message's `_meta` trace context, else of
//!   the caller's `traceparent` (or X-Ray header) ([`crate::trace`], "One request is one
//!   trace"), and the context sent onwards is that of the innermost exported span
//!   ([`crate::trace::inject`]), so one trace spans the hops.
//! - **Lambda:** the instance is frozen once a response is returned, so [`flush`] sends the
//!   finished spans first, waiting at most [`FLUSH_WAIT`] (the collector, usually the ADOT
//!   layer's, is on localhost).

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, TraceContextExt, TracerProvider as _};
use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SdkTracerProvider, Tracer};
use tracing::Metadata;
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt};
use tracing_subscriber::registry::LookupSpan;

/// How long a Lambda invocation waits for its spans to leave before answering: export is
/// best effort, the answer is not (a collector that is down costs each invocation this much,
/// at most).
pub const FLUSH_WAIT: Duration = Duration::from_millis(500);

/// Module-path prefixes of this workspace's crates: their spans are the exported ones.
const OURS: [&str; 6] = [
    "kosha_",
    "mcp_gateway",
    "core_api",
    "outbox_relay",
    "screening_worker",
    "screening_sim",
];

static PROVIDER: OnceLock<Option<SdkTracerProvider>> = OnceLock::new();

thread_local! {
    /// The trace id the next root span started on this thread takes ([`with_trace_id`]).
    static NEXT_TRACE: std::cell::Cell<Option<TraceId>> = const { std::cell::Cell::new(None) };
}

/// Random ids, except a root span's trace id while [`with_trace_id`] names one: a request's
/// log lines carry its trace id before its exported span starts ([`crate::trace`]).
#[derive(Debug, Default)]
struct Preset(RandomIdGenerator);

impl IdGenerator for Preset {
    fn new_trace_id(&self) -> TraceId {
        NEXT_TRACE.take().unwrap_or_else(|| self.0.new_trace_id())
    }

    fn new_span_id(&self) -> SpanId {
        self.0.new_span_id()
    }
}

/// Runs `f` with `id` as the trace id of the first root span started on this thread inside
/// it (none when `id` is `None`).
pub(crate) fn with_trace_id<T>(id: Option<TraceId>, f: impl FnOnce() -> T) -> T {
    NEXT_TRACE.set(id);
    let out = f();
    NEXT_TRACE.set(None);
    out
}

/// Whether the variables ask for export (module docs, "When").
fn requested() -> bool {
    let set = |key| crate::config::var(key).is_some();
    let off = |key, value: &str| {
        crate::config::var(key).is_some_and(|v| v.trim().eq_ignore_ascii_case(value))
    };
    (set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || set("OTEL_EXPORTER_OTLP_ENDPOINT"))
        && !off("OTEL_SDK_DISABLED", "true")
        && !off("OTEL_TRACES_EXPORTER", "none")
}

/// Builds the exporter when the variables ask for it (once; later calls return the first
/// answer). `service` is the service name unless `OTEL_SERVICE_NAME` or a `service.name` in
/// `OTEL_RESOURCE_ATTRIBUTES` gives one. Returns whether spans are exported.
/// [`crate::telemetry::init`] calls it before building the subscriber.
pub fn init(service: &str) -> bool {
    PROVIDER
        .get_or_init(|| requested().then(|| build(service, None)).flatten())
        .is_some()
}

/// Exports to `endpoint` (an OTLP/HTTP traces URL) as `service`, whatever the variables say:
/// for tests, before the first subscriber is built. Returns whether it took effect.
pub fn install(service: &str, endpoint: &str) -> bool {
    PROVIDER.set(build(service, Some(endpoint))).is_ok()
}

fn build(service: &str, endpoint: Option<&str>) -> Option<SdkTracerProvider> {
    use opentelemetry_otlp::WithExportConfig;
    let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http();
    if let Some(endpoint) = endpoint {
        exporter = exporter.with_endpoint(endpoint);
    }
    let exporter = exporter
        .build()
        .map_err(|e| eprintln!("kosha: OTLP exporter not built, no spans exported: {e}"))
        .ok()?;
    let named = crate::config::var("OTEL_SERVICE_NAME").is_some()
        || crate::config::var("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| {
            a.split(',')
                .any(|kv| kv.trim().starts_with("service.name="))
        });
    let mut resource = opentelemetry_sdk::Resource::builder();
    if !named {
        resource = resource.with_service_name(service.to_owned());
    }
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_id_generator(Preset::default())
            .with_resource(resource.build())
            .build(),
    )
}

fn provider() -> Option<&'static SdkTracerProvider> {
    PROVIDER.get()?.as_ref()
}

/// Whether spans are exported (after [`init`] or [`install`]).
pub fn enabled() -> bool {
    provider().is_some()
}

/// Whether a callsite is one of the exported spans: a span of this workspace's crates at
/// `info` or above. The log lines show none of them but the `request` span
/// ([`crate::telemetry::subscriber`]).
pub fn is_exported(metadata: &Metadata<'_>) -> bool {
    metadata.is_span()
        && *metadata.level() <= tracing::Level::INFO
        && OURS.iter().any(|p| metadata.target().starts_with(p))
}

/// The tracing layer exporting spans, when spans are exported.
pub fn layer<S>() -> Option<OpenTelemetryLayer<S, Tracer>>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let tracer = provider()?.tracer("kosha");
    Some(
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            // Library bookkeeping is not exported (SPEC §12).
            .with_tracked_inactivity(false)
            .with_target(false)
            // A span starts when its first child opens or its context is asked for, not when
            // it is entered, so the request span can still take `_meta`'s parent once the
            // body is read ([`crate::trace`]).
            .with_context_activation(false),
    )
}

/// Starts `span`'s exported span as a child of `parent` (or of its tracing parent when
/// `None`), linked to `link`, a root taking trace id `root` when it has no parent, and returns
/// its context, when spans are exported and `span` is one of them; `None` otherwise (the caller
/// keeps its own context). A span already started keeps its parent and gets the link.
pub fn start(
    span: &tracing::Span,
    parent: Option<&SpanContext>,
    link: Option<SpanContext>,
    root: Option<TraceId>,
) -> Option<Context> {
    provider()?;
    if let Some(p) = parent {
        // An error means the span started already (a child opened first): it keeps its parent.
        let _ = span.set_parent(Context::new().with_remote_span_context(p.clone()));
    }
    if let Some(l) = link {
        span.add_link(l);
    }
    let cx = with_trace_id(root, || span.context());
    cx.span().span_context().is_valid().then_some(cx)
}

/// Sets `span`'s parent before it starts (see [`start`]); nothing when spans are not exported.
pub(crate) fn set_parent(span: &tracing::Span, parent: &SpanContext) {
    if provider().is_some() {
        let _ = span.set_parent(Context::new().with_remote_span_context(parent.clone()));
    }
}

/// The context to send onwards from inside the current span: its exported span's, when
/// spans are exported and it has one.
pub(crate) fn current() -> Option<Context> {
    provider()?;
    let cx = tracing::Span::current().context();
    cx.span().span_context().is_valid().then_some(cx)
}

/// Exports the finished spans now, waiting at most [`FLUSH_WAIT`]; returns at once when
/// nothing is exported. For the end of a Lambda invocation, before its answer.
pub async fn flush() {
    let Some(provider) = provider() else {
        return;
    };
    // force_flush blocks until the exporter answers: off the async workers.
    let flushed = tokio::task::spawn_blocking(move || provider.force_flush());
    match tokio::time::timeout(FLUSH_WAIT, flushed).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::warn!(error = %e, "spans not exported"),
        Ok(Err(_)) | Err(_) => tracing::warn!(
            wait_ms = FLUSH_WAIT.as_millis(),
            "spans not exported in time"
        ),
    }
}
