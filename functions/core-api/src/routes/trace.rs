//! The caller on core-api's request span: `X-Kosha-Principal` and `X-Kosha-User`, set by the
//! gateway (SPEC §5),
//! recorded on the shared `request` span of [`kosha_runtime::trace`] (a missing or unloggable
//! value is left empty).

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

use kosha_contract::headers::{PRINCIPAL as PRINCIPAL_HEADER, USER as USER_HEADER};

/// Middleware (inside `request_span`): records the principal and user headers.
pub async fn record_principal(request: Request, next: Next) -> Response {
    let headers = request.headers();
    if let Some(p) = headers.get(PRINCIPAL_HEADER).and_then(|v| v.to_str().ok()) {
        kosha_runtime::trace::record_principal(p);
    }
    if let Some(u) = headers.get(USER_HEADER).and_then(|v| v.to_str().ok()) {
        kosha_runtime::trace::record_user(u);
    }
    next.run(request).await
}
