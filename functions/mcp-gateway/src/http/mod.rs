//! The HTTP edge in front of rmcp (SPEC §3, §5, §6): routes, Host/Origin checks, the body
//! limit and read timeout, authentication, the JSON-RPC envelope check, load shedding and
//! rate limiting. Every refusal is an [`error::EdgeError`], answered as a JSON-RPC error;
//! rmcp's own plain-text refusals are rewritten to the same shape ([`rmcp_errors`]).
//!
//! Order on `POST /mcp`, cheapest and least trusting first:
//! 1. the request's authority (the `Host` header, and the target's authority where HTTP/2's
//!    `:authority` or an absolute-form target carries one), then Origin (403, −32003);
//! 2. the bearer token, from the headers alone (401 −32001, 403 −32003; SPEC §5's challenges,
//!    `kosha_auth::www_authenticate`). A refusal echoes the request's id when the body is
//!    known to hold at most [`AUTH_ID_MAX_BYTES`] (a declared length, or a body already whole,
//!    as on Lambda) and arrives within `KOSHA_BODY_READ_TIMEOUT_MS`; a longer or streamed
//!    body is never read, so an unauthenticated client cannot make the gateway buffer more;
//! 3. the principal's in-memory request rate (`KOSHA_PRINCIPAL_RPS`, 429 −32029
//!    `rate_limited`, metric `shed{reason="principal_rate"}`; SPEC §6), before any body cost;
//! 4. the body: a declared `Content-Length` over 1 MiB is 413 at once; else it is read whole
//!    under `KOSHA_BODY_READ_TIMEOUT_MS` (408) and 1 MiB (413), before any in-flight slot is
//!    taken, so slow senders cannot shed everyone. Every refusal so far leaves the body
//!    unread, so on HTTP/1.1 it says `Connection: close` (hyper closes such a connection; a
//!    pooled client that is told so does not reuse it);
//! 5. the envelope ([`envelope`]: one bounded parse; 400 with −32700, −32600 or −32602); an
//!    id rmcp cannot carry is mapped around it ([`ids`]);
//! 6. an in-flight slot (`KOSHA_MAX_IN_FLIGHT`, 503 −32000 `overloaded`, for the request's
//!    id), held until the answer; a JSON-RPC response is answered 202 before this;
//! 7. rmcp: its header checks (`Accept`, `Content-Type`, `MCP-Protocol-Version`,
//!    `Mcp-Method`, `Mcp-Name`), then the MCP server, which spends a `tools/call`'s cost from
//!    the caller's bucket; a refusal there is a tool error `rate_limited` (HTTP 200, SPEC §6).
//!    So no envelope or header error spends a token (SPEC §3).

pub mod envelope;
pub mod error;
pub mod host;
pub mod ids;
pub mod rmcp_errors;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, Version, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kosha_resilience::principal_rate::PrincipalLimiter;
use kosha_resilience::rate_limit::RateDecision;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tower_http::cors::{AllowOrigin, CorsLayer};

use kosha_runtime::audit::events;
use kosha_runtime::throttle::Throttle;
use kosha_runtime::trace::RequestTrace;

use self::error::EdgeError;
use self::rmcp_errors::json_errors;
use crate::config::MAX_BODY_BYTES;
use crate::server::McpServer;
use crate::state::Gateway;
use crate::tools::{self, args::DuplicateArgument};

/// Per-instance edge state: the gateway, the in-flight counter for load shedding, the
/// per-principal request limiter, and the throttle of the `auth_rejected` audit event.
#[derive(Debug)]
struct Edge {
    gateway: Arc<Gateway>,
    in_flight: AtomicUsize,
    auth_audit: Throttle,
    principal_rate: PrincipalLimiter,
}

/// The largest body an authentication refusal reads to echo the request's id (SPEC §5), bytes.
pub const AUTH_ID_MAX_BYTES: u64 = 64 * 1024;

/// How often `auth_rejected` is written per source address and reason.
const AUTH_AUDIT_EVERY: Duration = Duration::from_secs(60);

/// Most (source, reason) pairs the auth audit remembers (sources are anyone on the internet).
const AUTH_AUDIT_MAX_KEYS: usize = 4096;

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
    let server = McpServer::new(gateway.clone(), tools::catalogue());
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let cors = cors(gateway.config.allowed_origins.clone());
    let edge = Arc::new(Edge {
        principal_rate: PrincipalLimiter::new(gateway.config.principal_rate),
        gateway,
        in_flight: AtomicUsize::new(0),
        auth_audit: Throttle::new(AUTH_AUDIT_EVERY, AUTH_AUDIT_MAX_KEYS),
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
        .layer(cors)
}

/// CORS for browser clients on an allowed `Origin` (SPEC §2: the MCP Inspector on this
/// machine). A browser preflights `POST /mcp` (it carries `Authorization` and a JSON
/// `Content-Type`): an allowed origin gets the preflight answered here, before any check
/// (a preflight carries no token), and every answer to it names the origin and exposes the
/// headers a client reads (`WWW-Authenticate`, `Retry-After`). A disallowed origin gets no
/// CORS headers, so the browser stops; `guard` refuses its requests anyway (403).
fn cors(allowed: Vec<String>) -> CorsLayer {
    use axum::http::{HeaderName, Method};
    let origin = AllowOrigin::predicate(move |origin: &HeaderValue, _| {
        host::origin_allowed(origin, &allowed)
    });
    CorsLayer::new()
        .allow_origin(origin)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::ACCEPT,
            HeaderName::from_static("mcp-protocol-version"),
            HeaderName::from_static("mcp-session-id"),
            HeaderName::from_static("mcp-method"),
            HeaderName::from_static("mcp-name"),
            HeaderName::from_static("last-event-id"),
            HeaderName::from_static(kosha_contract::headers::CHAOS),
            HeaderName::from_static(kosha_contract::headers::TRACEPARENT),
        ])
        .expose_headers([
            header::WWW_AUTHENTICATE,
            header::RETRY_AFTER,
            HeaderName::from_static("mcp-session-id"),
        ])
        .max_age(Duration::from_secs(600))
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

/// Refuses an authority (`Host`, or the target's) that is not allowed, or an `Origin` that is
/// present and not allowed; two `Origin` headers are refused as two `Host` headers are (RFC
/// 6454 §7: one origin; which one a check would read is unknowable).
fn check_host_and_origin(edge: &Edge, uri: &Uri, headers: &HeaderMap) -> Result<(), EdgeError> {
    let config = &edge.gateway.config;
    if !host::request_host_allowed(uri, headers, &config.allowed_hosts) {
        return Err(EdgeError::HostNotAllowed);
    }
    let mut origins = headers.get_all(header::ORIGIN).iter();
    if let Some(origin) = origins.next()
        && (origins.next().is_some() || !host::origin_allowed(origin, &config.allowed_origins))
    {
        return Err(EdgeError::OriginNotAllowed);
    }
    Ok(())
}

/// The whole body, if its declared length is at most 1 MiB (else 413 at once), it arrives
/// within `timeout` (else 408) and holds at most 1 MiB (else 413); a body stream that fails is
/// 400.
async fn read_body(headers: &HeaderMap, body: Body, timeout: Duration) -> Result<Bytes, EdgeError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(EdgeError::BodyTooLarge);
    }
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY_BYTES)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) if is_too_long(&e) => Err(EdgeError::BodyTooLarge),
        Ok(Err(_)) => Err(EdgeError::BodyUnreadable),
        Err(_) => Err(EdgeError::BodyTimeout),
    }
}

/// Whether a body read failed on the 1 MiB limit (not on the client's stream).
fn is_too_long(e: &axum::Error) -> bool {
    std::error::Error::source(e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
}

async fn guard(State(edge): State<Arc<Edge>>, req: Request, next: Next) -> Response {
    if req.method() != axum::http::Method::POST {
        // rmcp answers 405 with `Allow: POST` for every other method.
        return json_errors(next.run(req).await).await;
    }
    let http1 = req.version() <= Version::HTTP_11;
    match admit(&edge, req).await {
        Ok(Admitted::Accepted) => StatusCode::ACCEPTED.into_response(),
        Ok(Admitted::Forward(forward)) => {
            let Forward {
                request,
                mapped_id,
                in_flight: _in_flight,
            } = *forward;
            let resp = json_errors(next.run(request).await).await;
            match mapped_id {
                Some(id) => ids::restore(resp, id).await,
                None => resp,
            }
        }
        Err(e) => {
            let close = http1 && e.leaves_body_unread();
            let mut resp = e.into_response();
            if close {
                resp.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            resp
        }
    }
}

/// A `POST /mcp` that passed the edge's checks.
enum Admitted<'a> {
    /// A JSON-RPC response (SPEC §3: 202, no body); rmcp's stateless mode would refuse it.
    Accepted,
    /// A request or notification for rmcp.
    Forward(Box<Forward<'a>>),
}

/// A request or notification for rmcp.
struct Forward<'a> {
    request: Request,
    /// The caller's id, when rmcp is given [`ids::EDGE_ID`] in its place.
    mapped_id: Option<Value>,
    /// Held until the answer.
    in_flight: Slot<'a>,
}

/// Steps 1–6 of the module docs.
async fn admit(edge: &Edge, req: Request) -> Result<Admitted<'_>, EdgeError> {
    check_host_and_origin(edge, req.uri(), req.headers())?;
    let config = &edge.gateway.config;
    let (mut parts, body) = req.into_parts();
    let principal = match edge.gateway.verifier.verify_headers(&parts.headers).await {
        Ok(principal) => principal,
        Err(error) => {
            audit_auth_failure(edge, &parts, error);
            return Err(EdgeError::Auth {
                error,
                base: host::public_base(config, &parts.uri, &parts.headers),
                scope: config.auth.challenge_scope(),
                id: refused_id(body, config.body_read_timeout).await,
            });
        }
    };
    kosha_runtime::trace::record_principal(&principal.client_id);
    kosha_runtime::trace::record_user(principal.user());
    if let RateDecision::Limited { retry_after_s } = edge.principal_rate.check(&principal.client_id)
    {
        metrics::counter!("shed", "reason" => "principal_rate").increment(1);
        return Err(EdgeError::PrincipalRateLimited { retry_after_s });
    }
    let bytes = read_body(&parts.headers, body, config.body_read_timeout).await?;
    let revision = parts
        .headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok());
    let message = envelope::check(&bytes, revision)?;
    if let Some(trace) = parts.extensions.get_mut::<RequestTrace>() {
        trace.begin(meta_trace_context(&message.message));
    }
    if message.method.is_none() {
        return Ok(Admitted::Accepted);
    }
    let prior = edge.in_flight.fetch_add(1, Ordering::AcqRel);
    let slot = Slot(&edge.in_flight);
    if prior >= config.max_in_flight {
        metrics::counter!("shed", "reason" => "in_flight").increment(1);
        return Err(EdgeError::Overloaded {
            id: message.id.unwrap_or(Value::Null),
        });
    }
    parts.extensions.insert(principal);
    if let Some(key) = message.duplicate_argument {
        parts.extensions.insert(DuplicateArgument(key));
    }
    let mapped_id = message.id.filter(ids::needs_mapping);
    let body = match mapped_id {
        Some(_) => Body::from(message.message.to_string()),
        None => Body::from(bytes),
    };
    Ok(Admitted::Forward(Box::new(Forward {
        request: Request::from_parts(parts, body),
        mapped_id,
        in_flight: slot,
    })))
}

/// A message's trace context, `params._meta.traceparent` (+ `tracestate`), when it carries
/// one (MCP 2026-07-28, SEP-414): the parent of every span of the request (SPEC §12).
fn meta_trace_context(message: &Value) -> Option<(&str, Option<&str>)> {
    let meta = message.get("params")?.get("_meta")?;
    let parent = meta.get("traceparent")?.as_str()?;
    Some((parent, meta.get("tracestate").and_then(Value::as_str)))
}

/// The id of a request refused for its credentials: read only when the body is known to
/// hold at most [`AUTH_ID_MAX_BYTES`] (its size hint, exact for a declared `Content-Length`
/// or a whole body) and it arrives within `timeout`; else, or when it does not parse, `null`.
async fn refused_id(body: Body, timeout: Duration) -> Value {
    use axum::body::HttpBody as _;
    let small = body
        .size_hint()
        .upper()
        .is_some_and(|n| n <= AUTH_ID_MAX_BYTES);
    if !small {
        return Value::Null;
    }
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY_BYTES)).await {
        Ok(Ok(bytes)) => envelope::request_id(&bytes),
        Ok(Err(_)) | Err(_) => Value::Null,
    }
}

/// The `auth_rejected` audit event (SPEC §12), at most once a minute per source and reason,
/// with the count folded into it. Nothing of the credentials is logged.
fn audit_auth_failure(edge: &Edge, parts: &http::request::Parts, error: kosha_auth::AuthError) {
    let reason = error.reason();
    let source = source(parts);
    if let Some(count) = edge.auth_audit.occurred(&source, reason) {
        tracing::warn!(
            audit = true,
            event = events::AUTH_REJECTED,
            reason,
            source = %source,
            forwarded_for = forwarded_for(parts).unwrap_or_default(),
            count,
            "request refused for its credentials"
        );
    }
}

/// Where a request came from, as no client can forge it (the audit throttle's key): the
/// source address Lambda saw (Function URL / API Gateway), else the connection's peer (the
/// plain server's `ConnectInfo`), else `unknown`. A client-written `X-Forwarded-For` is never
/// the key: 200 forged values once made 200 audit lines.
fn source(parts: &http::request::Parts) -> String {
    use lambda_http::request::RequestContext;
    let lambda = match parts.extensions.get::<RequestContext>() {
        Some(RequestContext::ApiGatewayV2(c)) => c.http.source_ip.clone(),
        Some(RequestContext::ApiGatewayV1(c)) => c.identity.source_ip.clone(),
        _ => None,
    };
    lambda
        .or_else(|| {
            let peer = parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()?;
            Some(peer.0.ip().to_string())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The last `X-Forwarded-For` entry (the address the nearest proxy saw; earlier entries are
/// the client's to write), when it is a plain token: logged beside [`source`], never a key.
fn forwarded_for(parts: &http::request::Parts) -> Option<String> {
    let forwarded = parts.headers.get("x-forwarded-for")?.to_str().ok()?;
    let last = forwarded.rsplit(',').next()?.trim();
    kosha_runtime::trace::loggable(last).then(|| last.to_owned())
}

/// `GET /.well-known/oauth-protected-resource` (RFC 9728, SPEC §3), under the same Host check
/// as `/mcp` (the `resource` may be derived from it).
async fn protected_resource(
    State(edge): State<Arc<Edge>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if !host::request_host_allowed(&uri, &headers, &edge.gateway.config.allowed_hosts) {
        return EdgeError::HostNotAllowed.into_response();
    }
    let base = host::public_base(&edge.gateway.config, &uri, &headers);
    // Exactly the scopes that grant roles (SPEC §5): a user's roles come from its groups, a
    // client-credentials client's from these.
    let scopes = edge.gateway.config.auth.role_scopes();
    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
    axum::Json(kosha_auth::ProtectedResourceMetadata::new(
        &format!("{base}/mcp"),
        &edge.gateway.config.auth.issuer,
        &scopes,
    ))
    .into_response()
}
