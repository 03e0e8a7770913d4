//! The caller on core-api's request span: `X-Kosha-Principal`, set by the gateway (SPEC §5),
//! recorded on the shared `request` span of [`kosha_runtime::trace`] (a missing or unloggable
//! value is left empty).

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

use kosha_contract::headers::PRINCIPAL as PRINCIPAL_HEADER;

/// Middleware (inside `request_span`): records the principal header.
pub async fn record_principal(request: Request, next: Next) -> Response {
    if let Some(p) = request
        .headers()
        .get(PRINCIPAL_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        kosha_runtime::trace::record_principal(p);
    }
    next.run(request).await
}
