//! kosha-runtime: what every Kosha function binary shares (SPEC §1, ARCHITECTURE.md).
//!
//! - [`config`]: typed environment lookups that fail at start-up with a clear message.
//! - [`telemetry`]: JSON-lines tracing to stdout, once per process.
//! - [`audit`]: audit event names, the `audit!` macro and the per-key throttle.
//! - [`metrics`]: the metric catalogue (SPEC §12), printed in `docs/metrics.md`.
//! - [`emf`]: the `metrics` recorder writing CloudWatch Embedded Metric Format documents.
//! - [`otlp`]: OTLP/HTTP export of spans, on when OpenTelemetry's variables ask for it.
//! - [`semconv`]: the OpenTelemetry attribute names spans are exported with (SPEC §12).
//! - [`trace`]: the request span, W3C trace context in and out (SPEC §12).
//! - [`serve`]: runs one axum [`Router`](axum::Router) under the Lambda runtime when
//!   `AWS_LAMBDA_RUNTIME_API` is set, otherwise as a plain HTTP server on `KOSHA_LISTEN`;
//!   [`block_on`]: the tokio runtime for that mode (current-thread on Lambda).
//! - [`server`]: that plain server (HTTP/1.1 and h2c; header-read and idle timeouts, a
//!   connection cap, a drain on SIGTERM).
//! - [`aws`]: the AWS SDK config, built once (honours `AWS_ENDPOINT_URL` for the emulator).
//! - [`sigv4`]: SigV4 signing of requests to IAM-authenticated Function URLs.
//! - [`tls`]: outbound HTTPS: one rustls configuration on compiled-in roots, one reqwest client.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod audit;
pub mod aws;
pub mod config;
pub mod emf;
pub mod metrics;
pub mod otlp;
pub mod semconv;
mod serve;
pub mod server;
pub mod sigv4;
pub mod telemetry;
pub mod throttle;
pub mod tls;
pub mod trace;

pub use serve::{
    LAMBDA_RUNTIME_API_ENV, ServeError, block_on, flush_metrics, flushing, handle_event, on_lambda,
    serve, serve_with_tasks,
};
