//! Logs and metrics on stdout (SPEC §12).
//!
//! - Logs: JSON lines, level from `RUST_LOG` (default [`DEFAULT_FILTER`]). CloudWatch takes them
//!   as they are, and bills them by the byte.
//! - Traces: spans over OTLP/HTTP when OpenTelemetry's variables ask for it ([`crate::otlp`]).
//! - Metrics: the `metrics` facade recorded as CloudWatch Embedded Metric Format documents
//!   ([`crate::emf`]), namespace `Kosha`. Under Lambda they are flushed after every invocation
//!   ([`crate::flush_metrics`] wraps the handler); locally every
//!   `KOSHA_METRICS_FLUSH_MS` (default 1 000 ms) from a background task.
//!
//! Call [`init`] first thing in `main`, before building anything that registers metrics
//! (policies register their handles in their constructors).

use std::io;
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use crate::emf::Emf;
use tracing_subscriber::{EnvFilter, fmt};

/// The log filter when `RUST_LOG` is unset: `info`, except rmcp at `warn`. rmcp logs three
/// lines at info for every stateless request ("Service initialized as server" with a dump of
/// the client's parameters, "input stream terminated", "serve finished"), three of the four
/// lines and most of the 850 bytes per request that issue 15 measured, none of them
/// something an operator acts on.
pub const DEFAULT_FILTER: &str = "info,rmcp=warn";

/// The CloudWatch namespace of every metric (SPEC §12).
pub const NAMESPACE: &str = "Kosha";

static COLLECTOR: OnceLock<Option<&'static Emf>> = OnceLock::new();

/// Installs the global JSON log subscriber and the EMF metrics recorder. Calling it again is a
/// no-op, so tests may call it freely.
pub fn init(service: &'static str) {
    crate::otlp::init(service);
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let installed = tracing::subscriber::set_global_default(subscriber(filter, io::stdout)).is_ok();
    let collector = COLLECTOR.get_or_init(|| install_metrics().ok());
    if installed {
        tracing::info!(
            service,
            metrics = collector.is_some(),
            traces = crate::otlp::enabled(),
            "starting"
        );
    }
}

/// Installs `subscriber` as this thread's default until the guard drops: for a test that reads
/// what it logs while other tests run on other threads of the same binary.
///
/// `tracing` caches each callsite's interest when the callsite is first reached, and while a
/// single dispatcher exists that interest is asked of the *reaching thread's* default
/// (tracing-core 0.1 `Dispatchers::rebuilder`, "just one"): a callsite that a test with no
/// subscriber reaches first is cached as "never", and a capturing test on another thread
/// loses its lines (a trace test failed 261 of 300 runs so). A second dispatcher kept alive
/// for the process makes tracing combine every live dispatcher's interest instead, and the
/// cache is rebuilt for the callsites reached before.
pub fn capture_default(
    subscriber: impl tracing::Subscriber + Send + Sync + 'static,
) -> tracing::subscriber::DefaultGuard {
    static SECOND: LazyLock<tracing::Dispatch> =
        LazyLock::new(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    LazyLock::force(&SECOND);
    let guard = tracing::subscriber::set_default(subscriber);
    tracing::callsite::rebuild_interest_cache();
    guard
}

/// A shared in-memory output: clones write into the same buffer. For tests that read what
/// is written: log lines (`move || buffer.clone()` is a `MakeWriter` for [`subscriber`]) or
/// EMF documents ([`crate::emf::Emf::flush`]).
#[derive(Clone, Default)]
pub struct SharedBuffer(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// Everything written so far, as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

impl io::Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The log format of every function: one JSON object per line, the event's fields flat, the
/// current span's fields (`request_id`, `trace_id`, `principal`, …) under `span`, no target,
/// no timestamp (CloudWatch stamps each line). [`init`] installs it on stdout; tests install
/// it on a buffer to read exactly what production writes.
///
/// With export on ([`crate::otlp`]), the exported spans go to the OpenTelemetry layer, whatever
/// `filter` says, and the log lines see none of them but the `request` span, so `span` is
/// still the request's. With export off, it is the subscriber of before export existed, the
/// exported spans' callsites disabled (a disabled span costs its callsite's cached interest,
/// nothing more).
pub fn subscriber<W>(filter: EnvFilter, writer: W) -> Box<dyn tracing::Subscriber + Send + Sync>
where
    W: for<'w> fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::filter::filter_fn;
    use tracing_subscriber::layer::{Layer, SubscriberExt};
    let logged = |m: &tracing::Metadata<'_>| !crate::otlp::is_exported(m) || m.name() == "request";
    match crate::otlp::layer() {
        None => Box::new(
            tracing_subscriber::registry()
                .with(filter)
                .with(filter_fn(logged))
                .with(lines(writer)),
        ),
        Some(spans) => Box::new(
            tracing_subscriber::registry()
                .with(
                    lines(writer)
                        .with_filter(filter)
                        .with_filter(filter_fn(logged)),
                )
                .with(spans.with_filter(filter_fn(crate::otlp::is_exported))),
        ),
    }
}

/// The JSON lines layer of [`subscriber`], over any subscriber `S`.
fn lines<S, W>(writer: W) -> impl tracing_subscriber::Layer<S> + Send + Sync
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    W: for<'w> fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    fmt::layer()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .flatten_event(true)
        .with_target(false)
        .without_time()
        .fmt_fields(SplicedJsonFields)
        .with_writer(writer)
}

/// tracing-subscriber's `JsonFields`, except for a field recorded on a span after it opened
/// (the request's `principal`): it is spliced into the span's JSON text. tracing-subscriber
/// 0.3 parses that text and serializes it again, which cost 15,000 instructions per request
/// (issue 29, callgrind). A field recorded twice appears twice in the text. The line
/// formatter reads the text back into a map, where the later value wins, so a line shows it
/// once, with its last value. The text grows with each record, so a span meant to record a
/// field over and over does not belong in the log lines; the request span records
/// `trace_id` at most twice and `principal` once.
#[derive(Debug, Clone, Copy, Default)]
struct SplicedJsonFields;

impl<'w> fmt::FormatFields<'w> for SplicedJsonFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        writer: fmt::format::Writer<'w>,
        fields: R,
    ) -> std::fmt::Result {
        fmt::format::JsonFields::new().format_fields(writer, fields)
    }

    fn add_fields(
        &self,
        current: &'w mut fmt::FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> std::fmt::Result {
        let mut added = String::new();
        self.format_fields(fmt::format::Writer::new(&mut added), fields)?;
        let body = added
            .strip_prefix('{')
            .and_then(|a| a.strip_suffix('}'))
            .ok_or(std::fmt::Error)?;
        if body.is_empty() {
            return Ok(());
        }
        let text = &mut current.fields;
        if text.pop() != Some('}') {
            // No fields yet: the new ones are the whole object.
            *text = added;
            return Ok(());
        }
        if !text.ends_with('{') {
            text.push(',');
        }
        text.push_str(body);
        text.push('}');
        Ok(())
    }
}

/// The EMF recorder, when [`init`] installed it.
pub fn metrics_collector() -> Option<&'static Emf> {
    COLLECTOR.get().copied().flatten()
}

/// The property naming the Lambda invocation on every EMF document of its flush.
pub const REQUEST_ID_PROPERTY: &str = "RequestId";

fn install_metrics() -> Result<&'static Emf, String> {
    let period = if crate::on_lambda() {
        None
    } else {
        let ms = crate::config::parse_or("KOSHA_METRICS_FLUSH_MS", 1_000u64)
            .map_err(|e| e.to_string())?;
        Some(Duration::from_millis(ms.max(100)))
    };
    let emf = Emf::new(NAMESPACE).install().map_err(|message| {
        tracing::warn!(error = %message, "metrics recorder not installed");
        message
    })?;
    if let Some(period) = period {
        emf.flush_every(period, io::stdout);
    }
    crate::metrics::describe();
    Ok(emf)
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::EnvFilter;

    use super::{SharedBuffer, capture_default, subscriber};

    /// Fields recorded on a span after it opened reach its lines as one JSON object: added,
    /// re-recorded (the later value), quoted and escaped as the library writes them.
    #[test]
    fn fields_recorded_later_join_the_spans_json() {
        let buf = SharedBuffer::default();
        let writer = buf.clone();
        let _guard = capture_default(subscriber(EnvFilter::new("info"), move || writer.clone()));
        let span = tracing::info_span!(
            "request",
            request_id = "r1",
            trace_id = "t1",
            principal = tracing::field::Empty,
            n = tracing::field::Empty,
        );
        span.in_scope(|| tracing::info!("before"));
        span.record("principal", "agent \"1\"");
        span.record("trace_id", "t2");
        span.record("n", 7u64);
        span.in_scope(|| tracing::info!("after"));
        let empty = tracing::info_span!("request", principal = tracing::field::Empty);
        empty.record("principal", "agent-2");
        empty.in_scope(|| tracing::info!("alone"));
        let lines: Vec<serde_json::Value> = buf
            .text()
            .lines()
            .map(|l| serde_json::from_str(l).expect(l))
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0]["span"],
            serde_json::json!({"name": "request", "request_id": "r1", "trace_id": "t1"})
        );
        assert_eq!(
            lines[1]["span"],
            serde_json::json!({
                "name": "request", "request_id": "r1", "trace_id": "t2",
                "principal": "agent \"1\"", "n": 7,
            })
        );
        assert_eq!(
            lines[2]["span"],
            serde_json::json!({"name": "request", "principal": "agent-2"})
        );
    }
}
