//! The HTTP edge in front of rmcp (SPEC §3, §5, §6): routes, Host/Origin checks, the body
//! limit and read timeout, authentication, the JSON-RPC envelope check, load shedding and
//! rate limiting. Every refusal is a JSON-RPC error ([`reply`]); rmcp's own plain-text
//! refusals are rewritten to the same shape.
//!
//! Order on `POST /mcp`, cheapest and least trusting first:
//! 1. Host, then Origin (403, −32003);
//! 2. the bearer token, from the headers alone (401 −32001, 403 −32003), so an
//!    unauthenticated client never makes the gateway buffer or wait for a body;
//! 3. the body, read whole under `KOSHA_BODY_READ_TIMEOUT_MS` (408) and 1 MiB (413), before
//!    any in-flight slot is taken, so slow senders cannot shed everyone;
//! 4. the envelope ([`envelope`]: 400 with −32700, −32600 or −32602), so malformed envelopes
//!    never spend a token (rmcp's own header refusals — `Accept`, `Content-Type`,
//!    `MCP-Protocol-Version` — come after the rate limit);
//! 5. an in-flight slot (`KOSHA_MAX_IN_FLIGHT`, 503 −32000 `overloaded`, for the request's
//!    id), held until the answer; a JSON-RPC response is answered 202 before this;
//! 6. for a `tools/call` request, a rate-limit token (429 −32029 `rate_limited`);
//! 7. rmcp.

pub mod duplicates;
pub mod envelope;
pub mod host;
pub mod reply;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

use kosha_resilience::rate_limit::RateDecision;

use crate::config::MAX_BODY_BYTES;
use crate::server::McpServer;
use crate::state::Gateway;
use crate::tools::args::DuplicateArgument;

/// Per-instance edge state: the gateway plus the in-flight counter for load shedding.
#[derive(Debug)]
struct Edge {
    gateway: Arc<Gateway>,
    in_flight: AtomicUsize,
}

/// The gateway's whole HTTP surface: `POST /mcp` (and its 405s),
/// `GET /.well-known/oauth-protected-resource`, `GET /healthz`.
pub fn router(gateway: Arc<Gateway>) -> Router {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        // Host and Origin are checked in `guard`, with wildcard host support.
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    let for_factory = gateway.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(McpServer::new(for_factory.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let edge = Arc::new(Edge {
        gateway,
        in_flight: AtomicUsize::new(0),
    });
    Router::new()
        .route_service("/mcp", mcp)
        .route_layer(middleware::from_fn_with_state(edge.clone(), guard))
        .route(
            "/.well-known/oauth-protected-resource",
            get(protected_resource).with_state(edge),
        )
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .layer(middleware::from_fn(kosha_runtime::trace::request_span))
}

async fn healthz() -> impl IntoResponse {
    axum::Json(json!({ "status": "ok" }))
}

async fn not_found() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({ "error": { "code": "not_found", "message": "no such endpoint" } })),
    )
}

/// Releases an in-flight slot on drop, so a cancelled request cannot leak it.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The 403 to answer when the `Host` is not allowed, or an `Origin` is present and not
/// allowed; `None` when both pass.
fn host_or_origin_refusal(edge: &Edge, headers: &HeaderMap) -> Option<Response> {
    let config = &edge.gateway.config;
    if !host::request_host_allowed(headers, &config.allowed_hosts) {
        return Some(reply::forbidden("host not allowed"));
    }
    if let Some(origin) = headers.get(header::ORIGIN)
        && !host::origin_allowed(origin, &config.allowed_origins)
    {
        return Some(reply::forbidden("origin not allowed"));
    }
    None
}

/// The whole body, if it arrives within `timeout` (else 408) and holds at most 1 MiB (else
/// 413); a body stream that fails is 400.
async fn read_body(body: Body, timeout: Duration) -> Result<Bytes, Response> {
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY_BYTES)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) if is_too_long(&e) => Err(reply::refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body exceeds 1 MiB",
        )),
        Ok(Err(_)) => Err(reply::refused(
            StatusCode::BAD_REQUEST,
            "request body could not be read",
        )),
        Err(_) => Err(reply::refused(
            StatusCode::REQUEST_TIMEOUT,
            "request body not received in time",
        )),
    }
}

/// Whether a body read failed on the 1 MiB limit (not on the client's stream).
fn is_too_long(e: &axum::Error) -> bool {
    std::error::Error::source(e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
}

async fn guard(State(edge): State<Arc<Edge>>, req: Request, next: Next) -> Response {
    if req.method() != axum::http::Method::POST {
        // rmcp answers 405 with `Allow: POST` for every other method.
        return reply::json_errors(next.run(req).await).await;
    }
    if let Some(resp) = host_or_origin_refusal(&edge, req.headers()) {
        return resp;
    }
    let config = &edge.gateway.config;
    let (mut parts, body) = req.into_parts();
    let principal = match edge.gateway.verifier.verify_headers(&parts.headers).await {
        Ok(p) => p,
        Err(e) => return reply::auth_error(&e, &host::public_base(config, &parts.headers)),
    };
    kosha_runtime::trace::record_principal(&principal.client_id);
    let bytes = match read_body(body, config.body_read_timeout).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let message = match envelope::check(&bytes) {
        Ok(m) => m,
        Err(rejection) => return reply::rejected(rejection),
    };
    if message.method.is_none() {
        // A response (SPEC §3: 202, no body); rmcp's stateless mode would refuse it.
        return StatusCode::ACCEPTED.into_response();
    }

    let prior = edge.in_flight.fetch_add(1, Ordering::AcqRel);
    let _slot = Slot(&edge.in_flight);
    if prior >= config.max_in_flight {
        metrics::counter!("shed", "reason" => "in_flight").increment(1);
        return reply::overloaded(message.id.unwrap_or(Value::Null));
    }
    if message.is_tools_call_request()
        && let RateDecision::Limited { retry_after_s } =
            edge.gateway.rate_limiter.check(&principal.client_id).await
    {
        return reply::rate_limited(message.id.unwrap_or(Value::Null), retry_after_s);
    }
    parts.extensions.insert(principal);
    if let Some(key) = message.duplicate_argument {
        parts.extensions.insert(DuplicateArgument(key));
    }
    let resp = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    reply::json_errors(resp).await
}

/// `GET /.well-known/oauth-protected-resource` (RFC 9728, SPEC §3), under the same Host check
/// as `/mcp` (the `resource` may be derived from it).
async fn protected_resource(State(edge): State<Arc<Edge>>, headers: HeaderMap) -> Response {
    if !host::request_host_allowed(&headers, &edge.gateway.config.allowed_hosts) {
        return reply::forbidden("host not allowed");
    }
    let base = host::public_base(&edge.gateway.config, &headers);
    axum::Json(kosha_auth::ProtectedResourceMetadata::new(
        &format!("{base}/mcp"),
        &edge.gateway.config.auth.issuer,
        &["kosha/mcp"],
    ))
    .into_response()
}
