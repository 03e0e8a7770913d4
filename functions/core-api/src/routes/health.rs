//! `GET /v1/health`: readiness. 200 `{"status":"ok"}` after a `SELECT 1` through the pool;
//! 503 `dependency_unavailable` (`dependency: "postgres"`) when PostgreSQL cannot be reached;
//! 504 `deadline_exceeded` when it does not answer by `X-Request-Deadline`.

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use super::AppState;
use crate::db::queries;
use crate::deadline::Budget;
use crate::error::ApiError;

/// Body of a healthy answer.
#[derive(Debug, Serialize)]
pub struct Health {
    /// Always `"ok"`.
    pub status: &'static str,
}

/// Checks PostgreSQL through the pool.
///
/// # Errors
/// [`ApiError::DependencyUnavailable`] or [`ApiError::Overloaded`] from the pool,
/// [`ApiError::DeadlineExceeded`] when the deadline runs out first.
pub async fn health(
    State(state): State<AppState>,
    budget: Budget,
) -> Result<Json<Health>, ApiError> {
    queries::ping(&state.pool, &budget).await?;
    Ok(Json(Health { status: "ok" }))
}
