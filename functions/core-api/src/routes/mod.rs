//! The HTTP surface of core-api (SPEC §4, §7). Every response is JSON; every failure is an
//! [`ApiError`] with the body `{"error": {"code", "message", ...}}` — including unknown routes
//! (404 `not_found`), wrong methods (405) and the extractors' rejections (400).
//!
//! Layers, outermost first: the shared `request` span (request id, trace id;
//! `kosha_runtime::trace`), the caller (`X-Kosha-Principal`), `X-Request-Deadline` (SPEC §7:
//! 400 malformed, 504 past), the forwarded chaos header (SPEC §9, [`crate::chaos`]), body
//! limit, the `breaker#postgres` override on the data routes ([`overrides`], SPEC §8), routes.
//!
//! | route | handler |
//! |---|---|
//! | `GET /v1/transactions/{id}` | [`transactions::get_transaction`] |
//! | `GET /v1/accounts/{id}/transactions` | [`transactions::list_transactions`] |
//! | `POST /v1/knowledge/search` | [`knowledge::search`] |
//! | `GET /v1/health` | [`health::health`] |
//! | `POST /v1/disputes` | [`writes::raise_dispute`] |
//! | `POST /v1/reviews` | [`writes::request_review`] |
//! | `GET /v1/openapi.json` | [`openapi::document`] (the OpenAPI 3.1 document of all of these) |
//!
//! Each route is registered with `utoipa_axum::routes!` from its handler's `#[utoipa::path]`,
//! so the served document ([`document`]) lists exactly the routes served; never add one with a
//! plain `.route(` (`tests/api/openapi.rs` fails on it).

pub mod extract;
pub mod health;
pub mod knowledge;
pub mod openapi;
pub mod overrides;
pub mod trace;
pub mod transactions;
pub mod writes;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::db::PostgresConfig;
use crate::embeddings::Embedder;
use crate::search::Searcher;
use kosha_resilience::overrides::{NoOverrides, OverrideSource};

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
    /// Knowledge search: the embedder (if any) and the cached passage vectors.
    pub search: Arc<Searcher>,
    /// Forced-open overrides (SPEC §8): `breaker#openai` (read by the embedder's breaker) and
    /// `breaker#postgres` (read by [`overrides::guard_postgres`]).
    pub overrides: Arc<dyn OverrideSource>,
}

impl AppState {
    /// State over `pool` with the default PostgreSQL settings, no embedder, no overrides;
    /// chaos headers are ignored.
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            postgres: PostgresConfig::defaults(),
            chaos: Arc::new(ChaosVerifier::disabled()),
            search: Arc::new(Searcher::default()),
            overrides: Arc::new(NoOverrides),
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

    /// The same state searching with `embedder` (build it over the same overrides).
    pub fn with_embedder(self, embedder: Arc<Embedder>) -> Self {
        Self {
            search: Arc::new(Searcher::new(Some(embedder))),
            ..self
        }
    }

    /// The same state honouring `overrides` for `breaker#postgres`.
    pub fn with_overrides(self, overrides: Arc<dyn OverrideSource>) -> Self {
        Self { overrides, ..self }
    }
}

/// The data endpoints: refused without touching PostgreSQL while `breaker#postgres` is forced
/// ([`overrides::guard_postgres`], layered on in [`router`]).
fn data_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(transactions::get_transaction))
        .routes(routes!(transactions::list_transactions))
        .routes(routes!(knowledge::search))
        .routes(routes!(writes::raise_dispute))
        .routes(routes!(writes::request_review))
}

/// The routes that never touch the data: readiness (which checks PostgreSQL itself) and the
/// document.
fn service_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health::health))
        .routes(routes!(openapi::document))
}

/// core-api's OpenAPI 3.1 document: [`openapi::ApiDoc`] plus every route's path item and the
/// schemas they use (served at `GET /v1/openapi.json`).
pub fn document() -> utoipa::openapi::OpenApi {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(service_routes())
        .merge(data_routes())
        .into_openapi()
}

/// The complete router, ready for `kosha_runtime::serve` or `tower::ServiceExt::oneshot`.
pub fn router(state: AppState) -> Router {
    let (data, _) = data_routes().split_for_parts();
    let data = data.route_layer(middleware::from_fn_with_state(
        state.clone(),
        overrides::guard_postgres,
    ));
    let (service, _) = service_routes().split_for_parts();
    Router::new()
        .merge(service)
        .merge(data)
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
