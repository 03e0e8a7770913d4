//! Per-request tracing for every function (SPEC §12: "JSON lines with request id and trace
//! id"; trace context). Wraps each request in a `request` span with:
//!
//! - `request_id`: the Lambda invocation's request id, else `X-Request-Id` when it is a short
//!   printable token, else a fresh random id;
//! - `trace_id`: the W3C trace id (32 lowercase hex) of the request's trace: from a valid
//!   `traceparent` (+ `tracestate`) header, else the X-Ray trace of the Lambda invocation or an
//!   `X-Amzn-Trace-Id` header (`Root=1-5759e988-bd862e3fe1be46a994272793` is trace
//!   `5759e988bd862e3fe1be46a994272793`, AWS's own W3C mapping), else a new trace. The
//!   gateway replaces it with a message's `params._meta.traceparent` once the body is read
//!   ([`RequestTrace::begin`], MCP 2026-07-28, SEP-414);
//! - `http.request.method`, `url.path` (no query string; at most [`MAX_PATH_LEN`] bytes, then
//!   `…`; OpenTelemetry's names, [`crate::semconv`]), and
//!   `principal` (empty until a layer records it);
//!
//! and logs one `handled` line with `status` and `elapsed_ms`, unless the handler wrote the
//! request's own line ([`RequestTrace::mark_logged`]: the gateway's per-tool-call line), so a
//! request costs one line.
//!
//! The span also keeps the request's clock: when it began, and how long the request has
//! waited on its dependencies ([`RequestTrace::waiting`]). What is left,
//! [`RequestTrace::own_time`], is the service's own time (its CPU and its queues), the
//! figure a gateway's overhead is judged by (issue 16; Kong's `latencies.kong` beside
//! `latencies.proxy`). Header values are logged only when they pass [`loggable`], so
//! nothing a client sends can forge log structure.
//!
//! Each request gets its own span id, a child of the caller's; [`inject`] / [`propagate`]
//! write it as `traceparent` (and `tracestate`) on an outgoing request, so the next hop logs
//! the same trace id. Parsing and writing are the OpenTelemetry propagators'
//! (`TraceContextPropagator`, `XrayPropagator`). With export on ([`crate::otlp`]) the span id
//! is the exported `request` span's (kind `server`, a field the log lines then show too), and
//! what is sent onwards is the innermost exported span's (the dependency attempt making the
//! call).
//!
//! **One request is one trace** (SPEC §12): the exported `request` span starts only when
//! [`RequestTrace::begin`] is called (the gateway calls it once the JSON-RPC body is read),
//! its first child opens, or the request ends. When `params._meta.traceparent` and the HTTP
//! parent disagree, `_meta`'s is the parent of the `request` span, hence of every span of the
//! request, the log lines carry its trace id, and the HTTP one is a span link. A request
//! without a parent gets its trace id as it arrives, and its span, started later, takes it
//! (`otlp::with_trace_id`), so the lines logged before the body is read carry it too.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::Context;
use opentelemetry::context::FutureExt as _;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
use tokio::time::Instant;
use tracing::Instrument;

/// At most this many bytes of a client-supplied id are logged.
const MAX_ID_LEN: usize = 128;

/// At most this many bytes of a request path are logged: any caller can send a path of
/// many kilobytes, and every one would become a log line of that size.
pub const MAX_PATH_LEN: usize = 256;

/// `path` cut to [`MAX_PATH_LEN`] bytes at a character boundary, with `…` when cut.
fn clipped_path(path: &str) -> std::borrow::Cow<'_, str> {
    if path.len() <= MAX_PATH_LEN {
        return path.into();
    }
    let mut end = MAX_PATH_LEN;
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &path[..end]).into()
}

/// A header value safe to log: 1–128 bytes of `[A-Za-z0-9._:@=;/+-]`.
pub fn loggable(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_ID_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:@=;/+-".contains(&b))
}

fn header<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| loggable(v))
}

fn random_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The trace of one request, put into its extensions by [`request_span`]: its `request` span
/// and its trace context. Handlers that run elsewhere (rmcp runs the MCP server in a spawned
/// task) re-enter both with [`RequestTrace::scope`]. Clones share the "logged" mark and the
/// clock.
#[derive(Debug, Clone)]
pub struct RequestTrace {
    span: tracing::Span,
    context: Context,
    /// The caller's span context from the headers (`traceparent`, else X-Ray).
    http_parent: Option<SpanContext>,
    /// The trace id of a request without a parent, taken by its span when it starts.
    root: Option<TraceId>,
    /// Whether [`RequestTrace::begin`] ran (shared by the clones).
    begun: Arc<AtomicBool>,
    logged: Arc<AtomicBool>,
    clock: Arc<RequestClock>,
}

/// When a request's span began and how long it has waited on dependencies (ns).
#[derive(Debug)]
struct RequestClock {
    started: Instant,
    waited_ns: AtomicU64,
}

impl RequestTrace {
    /// Awaits `future`, counting its whole wall time as waiting on a dependency: wrap each
    /// call to DynamoDB, core-api, screening-sim or Secrets Manager (with its policy, so
    /// backoff sleeps count too) and nothing else. Calls running at once must be wrapped as
    /// one (`waiting(join(a, b))`), or their overlap counts twice.
    pub async fn waiting<F: Future>(&self, future: F) -> F::Output {
        let started = Instant::now();
        let output = future.await;
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.clock.waited_ns.fetch_add(ns, Ordering::Relaxed);
        output
    }

    /// The request's own time so far: the wall time since its span began, less what
    /// [`RequestTrace::waiting`] counted (zero if that were ever more).
    pub fn own_time(&self) -> Duration {
        let waited = Duration::from_nanos(self.clock.waited_ns.load(Ordering::Relaxed));
        self.clock.started.elapsed().saturating_sub(waited)
    }

    /// The request's W3C trace id, 32 lowercase hex digits.
    pub fn trace_id(&self) -> String {
        self.context.span().span_context().trace_id().to_string()
    }

    /// The request's `request` span.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Starts the request's trace, once (later calls return `false` and change nothing): its
    /// parent is `carrier`'s `traceparent` (+ `tracestate`) when that is valid, a trace
    /// context carried in the message rather than the headers (`params._meta`, MCP
    /// 2026-07-28, SEP-414), else the headers'. With export on, the `request` span starts here
    /// with that parent, linked to the HTTP parent when `_meta`'s differs from it; the span's
    /// `trace_id` is re-recorded. Returns whether `carrier` was adopted.
    pub fn begin(&mut self, carrier: Option<(&str, Option<&str>)>) -> bool {
        if self.begun.swap(true, Ordering::AcqRel) {
            return false;
        }
        let meta = carrier.and_then(|(parent, state)| meta_parent(parent, state));
        let link = match (&meta, &self.http_parent) {
            (Some(m), Some(h)) if m.trace_id() != h.trace_id() || m.span_id() != h.span_id() => {
                Some(h.clone())
            }
            _ => None,
        };
        let parent = meta.as_ref().or(self.http_parent.as_ref());
        match crate::otlp::start(&self.span, parent, link, self.root) {
            Some(exported) => self.context = exported,
            None if meta.is_some() => self.context = child_of(parent),
            None => {}
        }
        self.span.record("trace_id", self.trace_id().as_str());
        meta.is_some()
    }

    /// Marks the request as logged by its handler: [`request_span`] then skips its `handled`
    /// line (one line per request).
    pub fn mark_logged(&self) {
        self.logged.store(true, Ordering::Relaxed);
    }

    /// `future` inside this request's span and trace context (so its log lines carry the
    /// request's ids and [`inject`] finds its trace).
    pub fn scope<F: Future>(&self, future: F) -> impl Future<Output = F::Output> {
        future
            .instrument(self.span.clone())
            .with_context(self.context.clone())
    }
}

/// `traceparent` and `tracestate` of the current trace context (the request being served),
/// into `headers`; nothing outside a request. The seam every outgoing hop uses (core-api,
/// screening-sim, the embeddings API).
pub fn inject(headers: &mut HeaderMap) {
    let context = crate::otlp::current().unwrap_or_else(Context::current);
    TraceContextPropagator::new().inject_context(&context, &mut HeaderInjector(headers));
}

/// `request` with the current trace context's headers ([`inject`]).
pub fn propagate(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    let mut headers = HeaderMap::new();
    inject(&mut headers);
    request.headers(headers)
}

struct HeaderInjector<'a>(&'a mut HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(key), HeaderValue::try_from(value)) {
            self.0.insert(name, value);
        }
    }
}

struct HeaderExtractor<'a>(&'a HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

/// The span context of a `traceparent` (+ `tracestate`) carried in a message, when valid.
fn meta_parent(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut carrier = HeaderMap::new();
    for (name, value) in [
        ("traceparent", Some(traceparent)),
        ("tracestate", tracestate),
    ] {
        if let (Some(v), Ok(name)) = (value, HeaderName::try_from(name))
            && let Ok(v) = HeaderValue::from_str(v)
        {
            carrier.insert(name, v);
        }
    }
    w3c_parent(&carrier)
}

/// The caller's span context from `traceparent`/`tracestate`, when valid.
fn w3c_parent(headers: &HeaderMap) -> Option<SpanContext> {
    let cx = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    let parent = cx.span().span_context().clone();
    parent.is_valid().then_some(parent)
}

/// The caller's span context from an X-Ray trace header value, when valid.
fn xray_parent(value: &str) -> Option<SpanContext> {
    opentelemetry_aws::trace::xray_propagator::span_context_from_str(value)
        .filter(SpanContext::is_valid)
}

/// A context for this hop: a new span id in `parent`'s trace, or a new sampled trace.
fn child_of(parent: Option<&SpanContext>) -> Context {
    let ids = RandomIdGenerator::default();
    let (trace_id, flags, state) = match parent {
        Some(p) => (p.trace_id(), p.trace_flags(), p.trace_state().clone()),
        None => (
            ids.new_trace_id(),
            TraceFlags::SAMPLED,
            TraceState::default(),
        ),
    };
    let own = SpanContext::new(trace_id, ids.new_span_id(), flags, false, state);
    Context::new().with_remote_span_context(own)
}

/// The caller's span context, if any, and this hop's trace context (module docs:
/// `traceparent`, then X-Ray, then new).
fn incoming(request: &Request) -> (Option<SpanContext>, Context) {
    let xray = || {
        request
            .extensions()
            .get::<lambda_http::Context>()
            .and_then(|c| c.xray_trace_id.as_deref())
            .or_else(|| header(request, "x-amzn-trace-id"))
            .and_then(xray_parent)
    };
    let parent = w3c_parent(request.headers()).or_else(xray);
    let context = child_of(parent.as_ref());
    (parent, context)
}

/// Middleware: `axum::middleware::from_fn(kosha_runtime::trace::request_span)`.
pub async fn request_span(mut request: Request, next: Next) -> Response {
    let lambda = request.extensions().get::<lambda_http::Context>();
    let request_id = lambda
        .map(|c| c.request_id.clone())
        .or_else(|| header(&request, "x-request-id").map(str::to_owned))
        .unwrap_or_else(random_id);
    let (parent, context) = incoming(&request);
    let trace_id = context.span().span_context().trace_id().to_string();
    macro_rules! request {
        ($($kind:tt)*) => {
            tracing::info_span!(
                "request",
                $($kind)*
                request_id = %request_id,
                trace_id = %trace_id,
                { crate::semconv::HTTP_REQUEST_METHOD } = request.method().as_str(),
                { crate::semconv::URL_PATH } = %clipped_path(request.uri().path()),
                principal = tracing::field::Empty,
                user = tracing::field::Empty,
            )
        };
    }
    let span = if crate::otlp::enabled() {
        let span = request!(otel.kind = "server",);
        // Not started yet: `begin` may still give it `_meta`'s parent.
        if let Some(p) = &parent {
            crate::otlp::set_parent(&span, p);
        }
        span
    } else {
        request!()
    };
    let trace = RequestTrace {
        span: span.clone(),
        context: context.clone(),
        root: parent
            .is_none()
            .then(|| context.span().span_context().trace_id()),
        http_parent: parent,
        begun: Arc::default(),
        logged: Arc::default(),
        clock: Arc::new(RequestClock {
            started: Instant::now(),
            waited_ns: AtomicU64::new(0),
        }),
    };
    request.extensions_mut().insert(trace.clone());
    async move {
        let mut trace = trace;
        let response = {
            // A span started before `begin` (a child opened first) takes the logged trace id.
            let root = trace.root;
            let begun = trace.begun.clone();
            let mut inner = std::pin::pin!(next.run(request));
            std::future::poll_fn(|cx| {
                let root = root.filter(|_| !begun.load(Ordering::Acquire));
                crate::otlp::with_trace_id(root, || inner.as_mut().poll(cx))
            })
            .await
        };
        trace.begin(None);
        if !trace.logged.load(Ordering::Relaxed) {
            let elapsed = trace.clock.started.elapsed();
            tracing::info!(
                status = response.status().as_u16(),
                elapsed_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                "handled"
            );
        }
        response
    }
    .instrument(span)
    .with_context(context)
    .await
}

/// Records the authenticated or calling principal on the current request span.
pub fn record_principal(principal: &str) {
    if loggable(principal) {
        tracing::Span::current().record("principal", principal);
    }
}

/// Records the calling person's `sub` on the current request span (`user` on every log line
/// of the request, SPEC §5 "The user"); never the `username`, which audit events alone carry.
pub fn record_user(user: &str) {
    if loggable(user) {
        tracing::Span::current().record("user", user);
    }
}

#[cfg(test)]
mod tests;
