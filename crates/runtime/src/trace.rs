//! Per-request tracing for every function (SPEC §12: "JSON lines with request id and trace
//! id"). Wraps each request in a `request` span with:
//!
//! - `request_id`: the Lambda invocation's request id, else `X-Request-Id` when it is a short
//!   printable token, else a fresh random id;
//! - `trace_id`: the X-Ray trace id (Lambda context or `X-Amzn-Trace-Id`), or `-`;
//! - `method`, `path` (no query string; at most [`MAX_PATH_LEN`] bytes, then `…`), and
//!   `principal` (empty until a layer records it);
//!
//! and logs one `handled` line with `status` and `elapsed_ms`. Header values are logged only
//! when they pass [`loggable`], so nothing a client sends can forge log structure.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
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

/// Middleware: `axum::middleware::from_fn(kosha_runtime::trace::request_span)`.
pub async fn request_span(request: Request, next: Next) -> Response {
    let lambda = request.extensions().get::<lambda_http::Context>();
    let request_id = lambda
        .map(|c| c.request_id.clone())
        .or_else(|| header(&request, "x-request-id").map(str::to_owned))
        .unwrap_or_else(random_id);
    let trace_id = lambda
        .and_then(|c| c.xray_trace_id.clone())
        .or_else(|| header(&request, "x-amzn-trace-id").map(str::to_owned))
        .unwrap_or_else(|| "-".to_owned());
    let span = tracing::info_span!(
        "request",
        request_id = %request_id,
        trace_id = %trace_id,
        method = %request.method(),
        path = %clipped_path(request.uri().path()),
        principal = tracing::field::Empty,
    );
    async move {
        let started = Instant::now();
        let response = next.run(request).await;
        tracing::info!(
            status = response.status().as_u16(),
            elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "handled"
        );
        response
    }
    .instrument(span)
    .await
}

/// Records the authenticated or calling principal on the current request span.
pub fn record_principal(principal: &str) {
    if loggable(principal) {
        tracing::Span::current().record("principal", principal);
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_PATH_LEN, clipped_path, loggable};

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
}
