//! Logs and metrics on stdout (SPEC §12).
//!
//! - Logs: JSON lines, level from `RUST_LOG` (default `info`). CloudWatch takes them as they are.
//! - Metrics: the `metrics` facade recorded as CloudWatch Embedded Metric Format documents,
//!   namespace `Kosha`. Under Lambda they are flushed after every invocation
//!   ([`crate::serve`] wraps the router); locally every `KOSHA_METRICS_FLUSH_MS` (default
//!   10 000 ms) from a background task.
//!
//! Call [`init`] first thing in `main`, before building anything that registers metrics
//! (policies register their handles in their constructors).

use std::sync::OnceLock;
use std::time::Duration;

use metrics_cloudwatch_embedded::Collector;
use tracing_subscriber::{EnvFilter, fmt};

/// The CloudWatch namespace of every metric (SPEC §12).
pub const NAMESPACE: &str = "Kosha";

static COLLECTOR: OnceLock<Option<&'static Collector>> = OnceLock::new();

/// Installs the global JSON log subscriber and the EMF metrics recorder. Calling it again is a
/// no-op, so tests may call it freely.
pub fn init(service: &'static str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let installed = fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(true)
        .with_span_list(false)
        .flatten_event(true)
        .with_target(false)
        .without_time()
        .try_init()
        .is_ok();
    let collector = COLLECTOR.get_or_init(|| install_metrics().ok());
    if installed {
        tracing::info!(service, metrics = collector.is_some(), "starting");
    }
}

/// The EMF collector, when [`init`] installed it.
pub fn metrics_collector() -> Option<&'static Collector> {
    COLLECTOR.get().copied().flatten()
}

fn install_metrics() -> Result<&'static Collector, String> {
    let mut builder = metrics_cloudwatch_embedded::Builder::new().cloudwatch_namespace(NAMESPACE);
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        builder = builder.with_lambda_request_id("RequestId");
    } else {
        let ms = crate::config::parse_or("KOSHA_METRICS_FLUSH_MS", 10_000u64)
            .map_err(|e| e.to_string())?;
        builder = builder.with_auto_flush_interval(Duration::from_millis(ms.max(100)));
    }
    builder.init().map_err(|e| {
        let message = e.to_string();
        tracing::warn!(error = %message, "metrics recorder not installed");
        message
    })
}
