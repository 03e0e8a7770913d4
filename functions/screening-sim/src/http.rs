//! screening-sim's HTTP API (SPEC §4): one axum [`Router`] served locally and on Lambda by
//! `kosha_runtime::serve`.
//!
//! | route | answer |
//! |---|---|
//! | `POST /v1/screen` `{name, country?, date_of_birth?}` | 200 `{status, matches}`; 400 `invalid_argument` naming the field; under chaos the `status` knob's error (503 `dependency_unavailable` by default, 429 `overloaded`) with its `Retry-After`; 504 past `X-Request-Deadline` |
//! | `GET /v1/health` | 200 `{"status":"ok"}`, the injected error while `down` |
//! | `POST`, `GET`, `DELETE /admin/chaos` | the knobs ([`crate::chaos`]); `Authorization: Bearer $KOSHA_SIM_ADMIN_TOKEN` |
//!
//! - **Errors** are SPEC §7's body `{"error": {"code", "message"}}` with a stable code: a
//!   body that is not JSON, has unknown fields or wrong types is 400 `invalid_argument`
//!   (serde's reason, clipped); over [`MAX_BODY_BYTES`] is 413.
//! - **Deadline** (SPEC §7): `X-Request-Deadline` malformed → 400, passed → 504 without the
//!   work; chaos latency that would outlast it answers 504 at the deadline.
//! - **Latency**: every screening waits a base latency (`KOSHA_SIM_BASE_LATENCY_MS`, default
//!   4 ms, jittered ±50 %) so callers see a remote service, not an in-process call.
//! - **Admin auth**: the token is compared in constant time (SHA-256 of both, `subtle`), so
//!   neither its bytes nor its length leak through timing. No `Authorization` or not
//!   `Bearer`: 401 with `WWW-Authenticate: Bearer`; a wrong token, or no token configured
//!   (admin disabled): 403. The token never appears in a log or an answer.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kosha_contract::error::{ErrorBody, ErrorCode};
use kosha_contract::headers;
use kosha_resilience::deadline::{Deadline, DeadlineError};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::chaos::{Chaos, ChaosRequest, Effect, Injected};
use crate::error::ScreenError;
use crate::matching::Screener;
use crate::request::{ScreenRequest, Validate};

/// Largest request body, bytes: a 200-character name in any script fits many times over.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The admin token (`KOSHA_SIM_ADMIN_TOKEN`), kept only as its SHA-256.
#[derive(Clone)]
pub struct AdminToken([u8; 32]);

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken(<redacted>)")
    }
}

impl AdminToken {
    /// Shortest accepted token, characters.
    pub const MIN_CHARS: usize = 16;

    /// A token from its text.
    ///
    /// # Errors
    /// A reason when it is shorter than [`AdminToken::MIN_CHARS`] (a guessable token).
    pub fn new(token: &str) -> Result<Self, &'static str> {
        if token.trim().chars().count() < Self::MIN_CHARS {
            return Err("must be at least 16 characters");
        }
        Ok(Self(Sha256::digest(token.trim().as_bytes()).into()))
    }

    fn matches(&self, presented: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        bool::from(self.0.ct_eq(&digest))
    }
}

/// Everything a request needs, built once in `main`.
#[derive(Debug)]
pub struct Sim {
    /// The matcher over the bundled watchlist.
    pub screener: &'static Screener,
    /// The chaos knobs.
    pub chaos: Chaos,
    /// `None`: admin routes refuse everyone (403).
    pub admin_token: Option<AdminToken>,
    /// Base latency of a screening (jittered ±50 %).
    pub base_latency: Duration,
}

/// The router.
pub fn router(sim: Arc<Sim>) -> Router {
    Router::new()
        .route("/v1/screen", post(screen))
        .route("/v1/health", get(health))
        .route(
            "/admin/chaos",
            post(set_chaos).get(get_chaos).delete(clear_chaos),
        )
        .fallback(|| async { Refusal::NoRoute })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(sim)
}

/// Every refusal of this API, and its one mapping to status, code and headers (SPEC §7).
#[derive(Debug)]
enum Refusal {
    /// 400 `invalid_argument`: the message names the field.
    Invalid(String),
    /// 401: no `Authorization: Bearer`.
    Unauthenticated,
    /// 403: a wrong token, or admin disabled.
    Forbidden,
    /// 504: the request's deadline passed.
    DeadlineExceeded,
    /// An injected error under chaos: 503 by default, or the `status` knob's, with its
    /// `Retry-After` (issue #33).
    Injected(Injected),
    /// 503: the knobs' store failed.
    StoreFailed,
    /// 404: no such route.
    NoRoute,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, code, message) = match self {
            Self::Invalid(m) => (StatusCode::BAD_REQUEST, ErrorCode::InvalidArgument, m),
            Self::Unauthenticated => (
                StatusCode::UNAUTHORIZED,
                ErrorCode::InvalidArgument,
                "Authorization: Bearer <KOSHA_SIM_ADMIN_TOKEN> required".to_owned(),
            ),
            Self::Forbidden => (
                StatusCode::FORBIDDEN,
                ErrorCode::InvalidArgument,
                "the admin token is not valid".to_owned(),
            ),
            Self::DeadlineExceeded => (
                StatusCode::GATEWAY_TIMEOUT,
                ErrorCode::DeadlineExceeded,
                "the request deadline passed".to_owned(),
            ),
            Self::Injected(injected) => {
                let status = StatusCode::from_u16(injected.status)
                    .unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
                let code = if status == StatusCode::TOO_MANY_REQUESTS {
                    ErrorCode::Overloaded
                } else {
                    ErrorCode::DependencyUnavailable
                };
                let body = ErrorBody::new(code, "screening-sim is unavailable (chaos)".to_owned());
                let mut r = (status, axum::Json(body)).into_response();
                let retry_after = injected
                    .retry_after_s
                    .map(header::HeaderValue::from)
                    .or_else(|| {
                        (status == StatusCode::SERVICE_UNAVAILABLE)
                            .then(|| header::HeaderValue::from_static("1"))
                    });
                if let Some(value) = retry_after {
                    r.headers_mut().insert(header::RETRY_AFTER, value);
                }
                return r;
            }
            Self::StoreFailed => (
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::DependencyUnavailable,
                "the chaos knobs cannot be stored or read now".to_owned(),
            ),
            Self::NoRoute => (
                StatusCode::NOT_FOUND,
                ErrorCode::NotFound,
                "no such route".to_owned(),
            ),
        };
        let mut r = (status, axum::Json(ErrorBody::new(code, message))).into_response();
        let extra = match status {
            StatusCode::UNAUTHORIZED => Some((header::WWW_AUTHENTICATE, "Bearer")),
            StatusCode::SERVICE_UNAVAILABLE => Some((header::RETRY_AFTER, "1")),
            _ => None,
        };
        if let Some((name, value)) = extra {
            r.headers_mut()
                .insert(name, header::HeaderValue::from_static(value));
        }
        r
    }
}

fn invalid(e: &ScreenError) -> Refusal {
    Refusal::Invalid(e.to_string())
}

/// Clips serde's message (it may quote the caller's text) to 120 characters.
fn clip(s: &str) -> String {
    s.chars().take(120).collect()
}

/// The request's deadline, if it sent one (SPEC §7).
fn deadline(headers: &HeaderMap) -> Result<Option<Deadline>, Refusal> {
    let Some(v) = headers.get(headers::REQUEST_DEADLINE) else {
        return Ok(None);
    };
    match v.to_str().map(Deadline::parse_header) {
        Ok(Ok(d)) => Ok(Some(d)),
        Ok(Err(DeadlineError::Expired)) => Err(Refusal::DeadlineExceeded),
        Ok(Err(DeadlineError::Malformed)) | Err(_) => Err(Refusal::Invalid(
            "X-Request-Deadline must be RFC 3339 UTC with milliseconds, such as 2026-11-30T12:00:07.850Z".to_owned(),
        )),
    }
}

/// The body as `T`, or 400 naming what `shape` it must have.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8], shape: &str) -> Result<T, Refusal> {
    serde_json::from_slice(body).map_err(|e| {
        Refusal::Invalid(format!(
            "body must be JSON {shape}: {}",
            clip(&e.to_string())
        ))
    })
}

/// Sleeps `d`, or until `deadline` if that comes first (then `false`).
async fn wait(d: Duration, deadline: Option<&Deadline>) -> bool {
    match deadline {
        Some(dl) if dl.remaining() < d => {
            tokio::time::sleep(dl.remaining()).await;
            false
        }
        _ => {
            tokio::time::sleep(d).await;
            true
        }
    }
}

async fn screen(
    State(sim): State<Arc<Sim>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Refusal> {
    let deadline = deadline(&headers)?;
    let request: ScreenRequest = parse(&body, "{name, country?, date_of_birth?}")?;
    let effect = Effect::of(sim.chaos.current().await.as_ref(), rand::random::<f64>());
    let jitter = rand::random::<f64>() + 0.5;
    let delay = effect.delay + sim.base_latency.mul_f64(jitter);
    if !wait(delay, deadline.as_ref()).await {
        return Err(Refusal::DeadlineExceeded);
    }
    if let Some(injected) = effect.fail {
        return Err(Refusal::Injected(injected));
    }
    let valid = request.validate().map_err(|e| invalid(&e))?;
    Ok(axum::Json(sim.screener.screen(&valid)).into_response())
}

async fn health(State(sim): State<Arc<Sim>>) -> Result<Response, Refusal> {
    if let Some(k) = sim.chaos.current().await.filter(|k| k.down) {
        return Err(Refusal::Injected(Injected {
            status: k.status,
            retry_after_s: k.retry_after_s,
        }));
    }
    Ok(axum::Json(json!({"status": "ok"})).into_response())
}

/// `Ok` when the request carries the admin token.
fn authorize(sim: &Sim, headers: &HeaderMap) -> Result<(), Refusal> {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or(Refusal::Unauthenticated)?;
    match &sim.admin_token {
        Some(token) if token.matches(presented) => Ok(()),
        _ => Err(Refusal::Forbidden),
    }
}

fn store_failed(e: &kosha_state::StateError) -> Refusal {
    tracing::error!(event = "sim_chaos_store_failed", error = %e);
    Refusal::StoreFailed
}

fn shown(knobs: Option<kosha_state::sim_chaos::SimChaosItem>) -> Response {
    axum::Json(json!({"chaos": knobs})).into_response()
}

async fn set_chaos(
    State(sim): State<Arc<Sim>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Refusal> {
    authorize(&sim, &headers)?;
    let request: ChaosRequest = parse(
        &body,
        "{latency_ms?, error_rate?, down?, status?, retry_after_s?, ttl_s?}",
    )?;
    let knobs = request.knobs(sim.chaos.now_s()).map_err(|e| invalid(&e))?;
    sim.chaos.set(knobs).await.map_err(|e| store_failed(&e))?;
    tracing::info!(
        event = "sim_chaos_set",
        latency_ms = knobs.latency_ms,
        error_rate = knobs.error_rate,
        down = knobs.down,
        expires_at = knobs.expires_at
    );
    Ok(shown(Some(knobs)))
}

async fn get_chaos(State(sim): State<Arc<Sim>>, headers: HeaderMap) -> Result<Response, Refusal> {
    authorize(&sim, &headers)?;
    let knobs = sim.chaos.read().await.map_err(|e| store_failed(&e))?;
    Ok(shown(knobs))
}

async fn clear_chaos(State(sim): State<Arc<Sim>>, headers: HeaderMap) -> Result<Response, Refusal> {
    authorize(&sim, &headers)?;
    sim.chaos.clear().await.map_err(|e| store_failed(&e))?;
    tracing::info!(event = "sim_chaos_cleared");
    Ok(shown(None))
}
