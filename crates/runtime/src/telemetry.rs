//! Logs and metrics on stdout (SPEC §12).
//!
//! - Logs: JSON lines, level from `RUST_LOG` (default [`DEFAULT_FILTER`]). CloudWatch takes them
//!   as they are, and bills them by the byte.
//! - Traces: spans over OTLP/HTTP when OpenTelemetry's variables ask for it ([`crate::otlp`]).
//! - Metrics: the `metrics` facade recorded as CloudWatch Embedded Metric Format documents,
//!   namespace `Kosha`. Under Lambda they are flushed after every invocation
//!   ([`crate::serve`] wraps the router); locally every `KOSHA_METRICS_FLUSH_MS` (default
//!   10 000 ms) from a background task.
//!
//! Call [`init`] first thing in `main`, before building anything that registers metrics
//! (policies register their handles in their constructors).

use std::io::{self, Write};
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use metrics_cloudwatch_embedded::Collector;
use tracing_subscriber::{EnvFilter, fmt};

/// The log filter when `RUST_LOG` is unset: `info`, except rmcp at `warn`. rmcp logs three
/// lines at info for every stateless request ("Service initialized as server" with a dump of
/// the client's parameters, "input stream terminated", "serve finished"), three of the four
/// lines and most of the 850 bytes per request that issue 15 measured, none of them
/// something an operator acts on.
pub const DEFAULT_FILTER: &str = "info,rmcp=warn";

/// The CloudWatch namespace of every metric (SPEC §12).
pub const NAMESPACE: &str = "Kosha";

static COLLECTOR: OnceLock<Option<&'static Collector>> = OnceLock::new();

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
        .with_writer(writer)
}

/// The EMF collector, when [`init`] installed it.
pub fn metrics_collector() -> Option<&'static Collector> {
    COLLECTOR.get().copied().flatten()
}

fn install_metrics() -> Result<&'static Collector, String> {
    let mut builder = metrics_cloudwatch_embedded::Builder::new().cloudwatch_namespace(NAMESPACE);
    if crate::on_lambda() {
        builder = builder.with_lambda_request_id("RequestId");
    } else {
        let ms = crate::config::parse_or("KOSHA_METRICS_FLUSH_MS", 1_000u64)
            .map_err(|e| e.to_string())?;
        builder = builder.with_auto_flush_writer(Duration::from_millis(ms.max(100)), emf_stdout);
    }
    let collector = builder.init().map_err(|e| {
        let message = e.to_string();
        tracing::warn!(error = %message, "metrics recorder not installed");
        message
    })?;
    crate::metrics::describe();
    Ok(collector)
}

/// Where EMF documents go: stdout, one whole line per write. The collector writes a document
/// in pieces; with plain `stdout()`, a log line written by another thread in between lands
/// inside the document and breaks both JSON lines. [`WholeLines`] holds the pieces and writes
/// each finished line with one locked write.
pub fn emf_stdout() -> WholeLines<LineSink> {
    WholeLines::new(|line| io::stdout().lock().write_all(line))
}

/// Where [`WholeLines`] sends each line.
pub type LineSink = fn(&[u8]) -> io::Result<()>;

/// A writer that passes only whole lines to `out`, one call per line (the rest on
/// [`Write::flush`] or drop).
pub struct WholeLines<F: FnMut(&[u8]) -> io::Result<()>> {
    buf: Vec<u8>,
    out: F,
}

impl<F: FnMut(&[u8]) -> io::Result<()>> WholeLines<F> {
    /// Lines go to `out`.
    pub fn new(out: F) -> Self {
        Self {
            buf: Vec::new(),
            out,
        }
    }
}

impl<F: FnMut(&[u8]) -> io::Result<()>> Write for WholeLines<F> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if let Some(end) = self.buf.iter().rposition(|b| *b == b'\n') {
            let rest = self.buf.split_off(end + 1);
            (self.out)(&self.buf)?;
            self.buf = rest;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            (self.out)(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

impl<F: FnMut(&[u8]) -> io::Result<()>> Drop for WholeLines<F> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::WholeLines;

    #[test]
    fn pieces_reach_the_output_only_as_whole_lines() {
        let mut calls: Vec<Vec<u8>> = Vec::new();
        {
            let mut w = WholeLines::new(|line: &[u8]| {
                calls.push(line.to_vec());
                Ok(())
            });
            write!(w, "{{\"a\":").unwrap();
            write!(w, "1}}").unwrap();
            writeln!(w).unwrap();
            write!(w, "{{\"b\":2}}\n{{\"c\"").unwrap();
            write!(w, ":3}}").unwrap();
        }
        assert_eq!(
            calls,
            vec![
                b"{\"a\":1}\n".to_vec(),
                b"{\"b\":2}\n".to_vec(),
                b"{\"c\":3}".to_vec()
            ]
        );
    }
}
