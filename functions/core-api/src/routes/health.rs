//! `GET /v1/health`: readiness. 200 `{"status":"ok", "embedder": {"model", "dimensions",
//! "breaker"} | null}` after a `SELECT 1` through the pool (the embedder is configuration and
//! breaker state only: an embeddings outage degrades search, it does not make core-api
//! unready);
//! 503 `dependency_unavailable` (`dependency: "postgres"`) when PostgreSQL cannot be reached;
//! 504 `deadline_exceeded` when it does not answer by `X-Request-Deadline`.

use axum::Json;
use axum::extract::State;
use kosha_contract::core_api::Health;
use kosha_contract::error::ErrorBody;

use super::AppState;
use super::openapi::{Common, PostgresFailures};
use crate::db::queries;
use crate::deadline::Budget;
use crate::error::ApiError;

/// Checks PostgreSQL through the pool.
#[utoipa::path(
    get,
    path = "/v1/health",
    tag = "service",
    operation_id = "health",
    params(Common),
    responses(
        (status = 200, description = "Ready: PostgreSQL answered.", body = Health),
        (status = 400, description = "invalid_argument: malformed X-Request-Deadline.", body = ErrorBody),
        PostgresFailures,
    )
)]
///
/// # Errors
/// [`ApiError::DependencyUnavailable`] or [`ApiError::Overloaded`] from the pool,
/// [`ApiError::DeadlineExceeded`] when the deadline runs out first.
pub async fn health(
    State(state): State<AppState>,
    budget: Budget,
) -> Result<Json<Health>, ApiError> {
    queries::ping(&state.pool, &budget).await?;
    Ok(Json(Health {
        status: "ok".to_owned(),
        embedder: state.search.embedder().map(|e| e.info()),
    }))
}
