//! Per-request tracing: a `request` span carrying the caller (`X-Kosha-Principal`, set by the
//! gateway, SPEC §5), method and path, and one log line with status and latency when done.
//! Query strings are not logged (they carry cursors and dates, not secrets, but add noise).

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use tokio::time::Instant;
use tracing::Instrument;

/// Header naming the calling principal (the agent's `client_id`).
pub const PRINCIPAL_HEADER: &str = "x-kosha-principal";
const MAX_PRINCIPAL_LEN: usize = 128;

/// The principal as safe to log: printable ASCII from a small alphabet, at most 128 bytes;
/// anything else is recorded as `invalid`, a missing header as `-`.
pub fn principal(request: &Request) -> &str {
    match request.headers().get(PRINCIPAL_HEADER).map(|v| v.to_str()) {
        None => "-",
        Some(Ok(p)) if is_loggable(p) => p,
        Some(_) => "invalid",
    }
}

fn is_loggable(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= MAX_PRINCIPAL_LEN
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:@-".contains(&b))
}

/// Middleware wrapping every request in the `request` span.
pub async fn trace_request(request: Request, next: Next) -> Response {
    let span = tracing::info_span!(
        "request",
        principal = %principal(&request),
        method = %request.method(),
        path = %request.uri().path(),
    );
    async move {
        let started = Instant::now();
        let response = next.run(request).await;
        tracing::info!(
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "handled"
        );
        response
    }
    .instrument(span)
    .await
}
