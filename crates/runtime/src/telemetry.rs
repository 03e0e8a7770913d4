//! JSON-lines logs on stdout (SPEC §12). CloudWatch picks them up as they are; the metrics
//! recorder (EMF) writes to the same stream.

use tracing_subscriber::{EnvFilter, fmt};

/// Installs the global JSON subscriber. Level from `RUST_LOG` (default `info`). Calling it a
/// second time is a no-op, so tests may call it freely.
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
    if installed {
        tracing::info!(service, "starting");
    }
}
