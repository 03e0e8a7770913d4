//! The HTTP edge in front of rmcp (SPEC §3, §6): routes, body limit, Host/Origin checks,
//! load shedding, and the JSON-RPC framing errors rmcp answers differently from the spec
//! (malformed JSON → 400 −32700, a batch → 400 −32600, both as JSON-RPC errors).
//!
//! Order per ARCHITECTURE.md: body limit → Origin/Host → (auth) → load shed → MCP.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
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

/// JSON-RPC 2.0 error codes used at the edge.
mod rpc {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    /// Implementation-defined server error (JSON-RPC 2.0 §5.1 reserves −32000…−32099).
    pub const RATE_LIMITED: i64 = -32029;
}

/// Per-instance edge state: the gateway plus the in-flight counter for load shedding.
#[derive(Debug)]
struct Edge {
    gateway: Arc<Gateway>,
    in_flight: AtomicUsize,
}

/// The gateway's whole HTTP surface: `POST /mcp` (and its 405s), `GET /healthz`.
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

/// A JSON-RPC error response with HTTP `status`.
pub fn rpc_error(
    status: StatusCode,
    id: Value,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> Response {
    let mut error = json!({ "code": code, "message": message });
    if let Some(d) = data {
        error["data"] = d;
    }
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": error });
    (status, axum::Json(body)).into_response()
}

/// Releases an in-flight slot on drop, so a cancelled request cannot leak it.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn guard(State(edge): State<Arc<Edge>>, req: Request, next: Next) -> Response {
    if req.method() != axum::http::Method::POST {
        // rmcp answers 405 with `Allow: POST` for every other method.
        return next.run(req).await;
    }
    let config = &edge.gateway.config;
    if !host_allowed(req.headers().get(header::HOST), &config.allowed_hosts) {
        return rpc_error(
            StatusCode::FORBIDDEN,
            Value::Null,
            rpc::INVALID_REQUEST,
            "host not allowed",
            None,
        );
    }
    if let Some(origin) = req.headers().get(header::ORIGIN)
        && !origin_allowed(origin, &config.allowed_origins)
    {
        return rpc_error(
            StatusCode::FORBIDDEN,
            Value::Null,
            rpc::INVALID_REQUEST,
            "origin not allowed",
            None,
        );
    }

    let principal = match edge.gateway.verifier.verify_headers(req.headers()).await {
        Ok(p) => p,
        Err(e) => return auth_error(&e, &public_base(&edge.gateway, req.headers())),
    };
    kosha_runtime::trace::record_principal(&principal.client_id);
    let (mut parts, body) = req.into_parts();
    parts.extensions.insert(principal);

    let prior = edge.in_flight.fetch_add(1, Ordering::AcqRel);
    let _slot = Slot(&edge.in_flight);
    if prior >= config.max_in_flight {
        metrics::counter!("shed", "reason" => "in_flight").increment(1);
        let mut resp = rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            Value::Null,
            rpc::INVALID_REQUEST,
            "overloaded; retry shortly",
            Some(json!({ "code": "overloaded", "retry_after_s": 1 })),
        );
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return resp;
    }

    let bytes: Bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                Value::Null,
                rpc::INVALID_REQUEST,
                "request body exceeds 1 MiB",
                None,
            );
        }
    };
    let message = match serde_json::from_slice::<Value>(&bytes) {
        Err(_) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                Value::Null,
                rpc::PARSE_ERROR,
                "parse error: body is not valid JSON",
                None,
            );
        }
        Ok(Value::Array(_)) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                Value::Null,
                rpc::INVALID_REQUEST,
                "JSON-RPC batches are not supported",
                None,
            );
        }
        Ok(Value::Object(m)) => m,
        Ok(_) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                Value::Null,
                rpc::INVALID_REQUEST,
                "a JSON-RPC message must be an object",
                None,
            );
        }
    };
    if message.get("method").and_then(Value::as_str) == Some("tools/call")
        && let Some(principal) = parts.extensions.get::<kosha_auth::Principal>()
        && let RateDecision::Limited { retry_after_s } =
            edge.gateway.rate_limiter.check(&principal.client_id).await
    {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        return rate_limited(id, retry_after_s);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// 429 with `Retry-After` and a JSON-RPC error for the request's id (SPEC §6).
fn rate_limited(id: Value, retry_after_s: u64) -> Response {
    let mut resp = rpc_error(
        StatusCode::TOO_MANY_REQUESTS,
        id,
        rpc::RATE_LIMITED,
        "rate limited; retry later",
        Some(json!({ "code": "rate_limited", "retry_after_s": retry_after_s })),
    );
    if let Ok(v) = HeaderValue::from_str(&retry_after_s.to_string()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// 401/403 with `WWW-Authenticate` pointing at the protected-resource metadata (SPEC §5,
/// RFC 6750 §3, RFC 9728 §5.1). The body says no more than the header.
fn auth_error(e: &kosha_auth::AuthError, base: &str) -> Response {
    let mut resp = rpc_error(
        e.status(),
        Value::Null,
        rpc::INVALID_REQUEST,
        &e.to_string(),
        None,
    );
    let url = kosha_auth::resource_metadata_url(base);
    if let Some(v) = kosha_auth::www_authenticate(&url, e)
        && let Ok(v) = HeaderValue::from_str(&v)
    {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    resp
}

/// The public base URL: configured, else `https://<Host>` (http for loopback hosts).
fn public_base(gateway: &Gateway, headers: &axum::http::HeaderMap) -> String {
    if let Some(b) = &gateway.config.public_base_url {
        return b.clone();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let bare = strip_port(host);
    let scheme = if matches!(bare, "localhost" | "127.0.0.1" | "[::1]") {
        "http"
    } else {
        "https"
    };
    format!("{scheme}://{host}")
}

/// `GET /.well-known/oauth-protected-resource` (RFC 9728, SPEC §3).
async fn protected_resource(
    State(edge): State<Arc<Edge>>,
    headers: axum::http::HeaderMap,
) -> impl IntoResponse {
    let base = public_base(&edge.gateway, &headers);
    axum::Json(kosha_auth::ProtectedResourceMetadata::new(
        &format!("{base}/mcp"),
        &edge.gateway.config.auth.issuer,
        &["kosha/mcp"],
    ))
}

/// `Host` check against `allowed`: exact `host` or `host:port`, or any subdomain of a suffix
/// written `*.example.com` or `.example.com` (the SAM template's form for Function URLs).
fn host_allowed(host: Option<&HeaderValue>, allowed: &[String]) -> bool {
    let Some(host) = host.and_then(|h| h.to_str().ok()) else {
        // HTTP/1.1 requires Host; a request without one is not from a browser.
        return true;
    };
    let host = host.to_ascii_lowercase();
    let bare = strip_port(&host);
    allowed.iter().any(|a| {
        let a = a.to_ascii_lowercase();
        if let Some(suffix) = a.strip_prefix("*.").or_else(|| a.strip_prefix('.')) {
            bare.ends_with(&format!(".{suffix}"))
        } else {
            a == host || a == bare
        }
    })
}

fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        // [::1]:8080 → [::1]
        return rest.find(']').map_or(host, |i| &host[..i + 2]);
    }
    match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

/// `Origin` check: exact match of scheme://host[:port] against the configured list.
fn origin_allowed(origin: &HeaderValue, allowed: &[String]) -> bool {
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hv(s: &str) -> HeaderValue {
        HeaderValue::from_str(s).unwrap()
    }

    #[test]
    fn hosts_match_exactly_with_or_without_port_and_by_wildcard() {
        let allowed = vec![
            "localhost".to_owned(),
            "[::1]".to_owned(),
            "*.lambda-url.eu-west-1.on.aws".to_owned(),
            ".lambda-url.us-east-1.on.aws".to_owned(),
            "api.example.com:8443".to_owned(),
        ];
        for ok in [
            "localhost",
            "localhost:8080",
            "[::1]:9000",
            "abc.lambda-url.eu-west-1.on.aws",
            "xyz.lambda-url.us-east-1.on.aws",
            "api.example.com:8443",
        ] {
            assert!(host_allowed(Some(&hv(ok)), &allowed), "{ok}");
        }
        for bad in [
            "evil.com",
            "lambda-url.eu-west-1.on.aws",
            "abc.lambda-url.eu-west-1.on.aws.evil.com",
            "localhost.evil.com",
        ] {
            assert!(!host_allowed(Some(&hv(bad)), &allowed), "{bad}");
        }
    }

    #[test]
    fn origins_need_an_exact_listed_match() {
        let allowed = vec!["https://app.example.com".to_owned()];
        assert!(origin_allowed(&hv("https://app.example.com"), &allowed));
        assert!(!origin_allowed(&hv("https://evil.example.com"), &allowed));
        assert!(!origin_allowed(&hv("https://app.example.com"), &[]));
    }
}
