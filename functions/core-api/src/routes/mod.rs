//! The HTTP surface of core-api (SPEC §4, §7). Every response is JSON; every failure is an
//! [`ApiError`] with the body `{"error": {"code", "message", ...}}` — including unknown routes
//! (404 `not_found`), wrong methods (405) and the extractors' rejections (400).
//!
//! Layers, outermost first: the shared `request` span (request id, trace id;
//! `kosha_runtime::trace`), the caller (`X-Kosha-Principal`), `X-Request-Deadline` (SPEC §7:
//! 400 malformed, 504 past), the forwarded chaos header (SPEC §9, [`crate::chaos`]), body
//! limit, routes.
//!
//! | route | handler |
//! |---|---|
//! | `GET /v1/transactions/{id}` | [`transactions::get_transaction`] |
//! | `GET /v1/accounts/{id}/transactions` | [`transactions::list_transactions`] |
//! | `POST /v1/knowledge/search` | [`knowledge::search`] |
//! | `GET /v1/health` | [`health::health`] |
//! | `POST /v1/disputes` | [`writes::raise_dispute`] |
//! | `POST /v1/reviews` | [`writes::request_review`] |

pub mod extract;
pub mod health;
pub mod knowledge;
pub mod trace;
pub mod transactions;
pub mod writes;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};

use crate::db::PostgresConfig;

use crate::chaos::ChaosVerifier;
use crate::db::PgPool;
use crate::deadline;
use crate::error::ApiError;

/// Largest accepted request body. The largest valid one (a 512-character query) is far smaller.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// What the handlers share: cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The PostgreSQL pool.
    pub pool: PgPool,
    /// The PostgreSQL settings each statement's timeout is derived from (seed 004 §1: at most
    /// 3 s, 100 ms kept from the deadline).
    pub postgres: PostgresConfig,
    /// Verifies forwarded chaos headers (SPEC §9).
    pub chaos: Arc<ChaosVerifier>,
}

impl AppState {
    /// State over `pool` with the default PostgreSQL settings; chaos headers are ignored.
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            postgres: PostgresConfig::defaults(),
            chaos: Arc::new(ChaosVerifier::disabled()),
        }
    }

    /// The same state honouring chaos headers that `verifier` verifies.
    pub fn with_chaos(self, verifier: ChaosVerifier) -> Self {
        Self {
            chaos: Arc::new(verifier),
            ..self
        }
    }

    /// The same state with `postgres` as the PostgreSQL settings (use the pool's).
    pub fn with_postgres(self, postgres: PostgresConfig) -> Self {
        Self { postgres, ..self }
    }
}

/// The complete router, ready for `kosha_runtime::serve` or `tower::ServiceExt::oneshot`.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/health", get(health::health))
        .route("/v1/transactions/{id}", get(transactions::get_transaction))
        .route(
            "/v1/accounts/{id}/transactions",
            get(transactions::list_transactions),
        )
        .route("/v1/knowledge/search", post(knowledge::search))
        .route("/v1/disputes", post(writes::raise_dispute))
        .route("/v1/reviews", post(writes::request_review))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(
            state.chaos.clone(),
            crate::chaos::honour,
        ))
        .layer(middleware::from_fn(deadline::enforce))
        .layer(middleware::from_fn(trace::record_principal))
        .layer(middleware::from_fn(kosha_runtime::trace::request_span))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".to_owned())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
