//! The `breaker#postgres` override at core-api's edge (SPEC §8): while an operator forces it
//! open, every data endpoint answers 503 `dependency_unavailable` with `dependency:
//! "postgres"` and `retry_after_s` (the override's remaining time, else 5 s: the override is
//! re-read every 5 s), without taking a connection. `/v1/health` is not a data endpoint: it
//! still checks PostgreSQL itself.
//!
//! The source is read lazily on the request path ([`OverrideSource::current`] serves a cache
//! refreshed at most every 5 s); an instance with no recent read waits for one first
//! ([`OverrideSource::ensure_fresh`]: at most 100 ms while it holds a value, 1 s when none), so the override
//! holds from an instance's first request. `breaker#openai` is read by the embedder's own
//! breaker ([`crate::embeddings::client`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kosha_contract::dependency::Dependency;

use super::AppState;
use crate::error::ApiError;

/// `retry_after_s` for an override without an expiry: it is re-read every 5 s
/// ([`kosha_state::OVERRIDE_REFRESH`], SPEC §8).
pub const FORCED_OPEN_RETRY: Duration = kosha_state::OVERRIDE_REFRESH;

/// Middleware on the data routes: 503 while `breaker#postgres` is forced open.
pub async fn guard_postgres(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    state.overrides.ensure_fresh().await;
    let Some(forced) = state.overrides.current(Dependency::Postgres.as_str()) else {
        return next.run(request).await;
    };
    let now_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let retry_after_s = forced
        .expires_at
        .and_then(|at| u64::try_from(at.saturating_sub(now_s)).ok())
        .unwrap_or(FORCED_OPEN_RETRY.as_secs())
        .max(1);
    tracing::info!(
        event = "postgres_forced_open",
        set_by = %forced.set_by,
        "refused: breaker#postgres is forced open"
    );
    ApiError::DependencyUnavailable {
        dependency: Dependency::Postgres,
        retry_after_s,
    }
    .into_response()
}
