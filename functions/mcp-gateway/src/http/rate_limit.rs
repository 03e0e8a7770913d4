//! The HTTP side of the token bucket (SPEC §6): a `tools/call` is rate limited inside the MCP
//! server, after rmcp has checked its headers (so a refused request spends no token, SPEC §3),
//! and rmcp answers the JSON-RPC error for the request's id; [`apply`] then gives that answer
//! the status SPEC §6 asks for: 429 with `Retry-After`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use crate::server::RateLimitSlot;

/// `resp` as 429 with `Retry-After` when the server refused the request for an empty bucket
/// (it recorded so in `slot`), else unchanged.
pub fn apply(slot: &RateLimitSlot, mut resp: Response) -> Response {
    if let Some(s) = slot.retry_after_s() {
        *resp.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    resp
}

#[cfg(test)]
mod tests {
    use axum::body::Body;

    use super::*;

    #[test]
    fn only_a_refused_request_becomes_429() {
        let ok = || Response::new(Body::empty());
        let slot = RateLimitSlot::default();
        assert_eq!(apply(&slot, ok()).status(), StatusCode::OK);
        slot.clone().set(4);
        let resp = apply(&slot, ok());
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "4");
    }
}
