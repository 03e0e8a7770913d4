//! `GET /v1/openapi.json`: core-api's OpenAPI 3.1 document, generated from the code (issue 16;
//! docs/spec.md, "core-api's OpenAPI document", an addition to SPEC §4).
//!
//! Where each part comes from, so the document says what the handlers do:
//! - paths, methods, parameters and responses: each handler's `#[utoipa::path]`, registered
//!   with its route by `utoipa_axum::routes!` in [`super::router`] (one declaration for both,
//!   so a route cannot be served undocumented; `tests/api/openapi.rs` also fails on a plain
//!   `.route(` in the router);
//! - bodies: the `utoipa::ToSchema` derives of [`kosha_contract::core_api`] and
//!   [`kosha_contract::error`] (feature `openapi`), whose bounds and patterns are built from the
//!   constants the handlers check ([`kosha_contract::openapi`]);
//! - headers and path ids: the [`IntoParams`] sets below, from the same constants
//!   ([`kosha_contract::headers`], [`kosha_contract::ids`], `IDEMPOTENCY_KEY_MAX_CHARS`).
//!
//! Every route may also answer 400 for a malformed `X-Request-Deadline` and 504 for one
//! already past (the deadline layer runs before every handler, SPEC §7), and every error is the
//! SPEC §7 body ([`ErrorBody`]); 503s carry `Retry-After`. The document is built once per
//! instance and served as is; no deadline, principal or database is needed for it.

use std::sync::LazyLock;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use kosha_contract::core_api::IDEMPOTENCY_KEY_MAX_CHARS;
use kosha_contract::error::ErrorBody;
use kosha_contract::ids::{ACCOUNT, IdShape, TRANSACTION};
use utoipa::IntoParams;
use utoipa::OpenApi;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, SchemaType, Type};
use utoipa::openapi::{Required, Server};

use crate::error::ApiError;

/// The document's fixed parts: title, version, description, the error body among the
/// components. Paths and the other schemas are added by the routes ([`super::document`]).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Kosha core-api",
        description = "REST over PostgreSQL and an embeddings API for Kosha's mcp-gateway \
(docs/spec.md SPEC §4, §7). In AWS it is reachable only with IAM (SigV4) auth; locally it \
trusts its loopback callers. Every error is {\"error\": {\"code\", \"message\", \
\"retry_after_s\"?, \"dependency\"?}} (SPEC §7). Every route reads the optional \
X-Request-Deadline (400 malformed, 504 past) and a signed X-Kosha-Chaos header (SPEC §9; \
an unverified one is ignored).",
        license(name = "MIT OR Apache-2.0"),
    ),
    components(schemas(ErrorBody)),
    tags(
        (name = "transactions", description = "Reads of the seeded ledger."),
        (name = "knowledge", description = "Knowledge-base search (hybrid, or full text degraded)."),
        (name = "writes", description = "Idempotent writes with a transactional outbox."),
        (name = "service", description = "Readiness and this document."),
    )
)]
pub struct ApiDoc;

/// The serialized document, built on first use ([`super::document`]).
static DOCUMENT: LazyLock<Option<String>> = LazyLock::new(|| {
    let mut doc = super::document();
    doc.servers = Some(vec![Server::new("/")]);
    match doc.to_json() {
        Ok(json) => Some(json),
        Err(e) => {
            tracing::error!(error = %e, "the OpenAPI document does not serialize");
            None
        }
    }
});

/// `GET /v1/openapi.json`: this service's OpenAPI 3.1 document.
///
/// # Errors
/// 500 `internal` only if the document does not serialize (a bug: tests serialize it).
#[utoipa::path(
    get,
    path = "/v1/openapi.json",
    tag = "service",
    operation_id = "openapi",
    params(Common),
    responses(
        (status = 200, description = "This document (OpenAPI 3.1).", body = serde_json::Value,
            content_type = "application/json"),
        (status = 400, description = "Malformed X-Request-Deadline.", body = ErrorBody),
        (status = 504, description = "X-Request-Deadline already past.", body = ErrorBody),
    )
)]
pub async fn document() -> Result<Response, ApiError> {
    let json = DOCUMENT.as_ref().ok_or(ApiError::Internal)?;
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        json.clone(),
    )
        .into_response())
}

/// The 503 and 504 every route that reads PostgreSQL may answer (SPEC §7), documented once.
#[derive(utoipa::IntoResponses)]
pub enum PostgresFailures {
    /// 503.
    #[response(
        status = 503,
        description = "PostgreSQL unavailable (dependency_unavailable, dependency postgres) or \
                       its pool busy (overloaded).",
        headers(("Retry-After" = u64, description = "Whole seconds, as retry_after_s."))
    )]
    Unavailable(ErrorBody),
    /// 504.
    #[response(
        status = 504,
        description = "deadline_exceeded: X-Request-Deadline past, or PostgreSQL did not \
                       answer in time."
    )]
    DeadlineExceeded(ErrorBody),
}

/// A string schema.
fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(SchemaType::new(Type::String))
}

/// The rule of `Idempotency-Key` and `X-Kosha-Principal` on writes: 1–255 printable ASCII
/// characters (U+0020–U+007E, `writes::printable_header`). The pattern also keeps spaces off
/// both ends, which HTTP strips from a field value anyway (RFC 9110 §5.5).
pub const PRINTABLE_HEADER_PATTERN: &str = "^[!-~](?:[ -~]*[!-~])?$";

/// A required header of a write, checked by `writes::printable_header` (400 otherwise).
fn printable_header(name: &str, description: &str) -> Parameter {
    printable_header_if(name, description, Required::True)
}

/// A header of a write checked by `writes::printable_header` when `required` or present.
fn printable_header_if(name: &str, description: &str, required: Required) -> Parameter {
    let schema = string()
        .min_length(Some(1))
        .max_length(Some(IDEMPOTENCY_KEY_MAX_CHARS))
        .pattern(Some(PRINTABLE_HEADER_PATTERN))
        .build();
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Header)
        .required(required)
        .description(Some(description))
        .schema(Some(Schema::Object(schema)))
        .build()
}

/// `X-Kosha-Principal` off the writes: optional and unchecked (only recorded in the log when
/// it is visible ASCII, `trace::record_principal`).
fn principal_for_the_log() -> Parameter {
    ParameterBuilder::new()
        .name("X-Kosha-Principal")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "The calling principal, set by the gateway (SPEC §5); only recorded in the log here.",
        ))
        .schema(Some(Schema::Object(string().build())))
        .build()
}

fn deadline_header() -> Parameter {
    let schema = string()
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .examples(["2026-11-30T12:00:07.850Z"])
        .build();
    ParameterBuilder::new()
        .name("X-Request-Deadline")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "Absolute deadline, RFC 3339 (SPEC §7): past is 504 deadline_exceeded without doing \
             the work, malformed is 400, more than 60 s ahead is clamped to 60 s.",
        ))
        .schema(Some(Schema::Object(schema)))
        .build()
}

fn id_path(shape: &IdShape, description: &str) -> Parameter {
    let schema = string()
        .pattern(Some(shape.pattern()))
        .examples([shape.example])
        .build();
    ParameterBuilder::new()
        .name("id")
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some(description))
        .schema(Some(Schema::Object(schema)))
        .build()
}

/// The headers every route reads: `X-Request-Deadline` (optional) and `X-Kosha-Principal`
/// (optional off the writes: it only names the caller in the log).
pub struct Common;

impl IntoParams for Common {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![deadline_header(), principal_for_the_log()]
    }
}

/// The headers of a write: `Idempotency-Key` and `X-Kosha-Principal`, both required (400
/// without), and the optional `X-Request-Deadline`.
pub struct WriteHeaders;

impl IntoParams for WriteHeaders {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            deadline_header(),
            printable_header(
                "X-Kosha-Principal",
                "The calling principal, set by the gateway (SPEC §5); idempotency keys are \
                 scoped by it.",
            ),
            printable_header_if(
                "X-Kosha-User",
                "The calling user's sub, set by the gateway (SPEC §5 \"The user\"): stored as \
                 created_by and in the outbox event; idempotency keys are scoped by it. Absent, \
                 the user is X-Kosha-Principal.",
                Required::False,
            ),
            printable_header(
                "Idempotency-Key",
                "SPEC §7: the same key and body replay the first answer with \
                 Idempotent-Replayed: true; the same key with another body is 409. Kept 24 h.",
            ),
        ]
    }
}

/// `{id}` of `GET /v1/transactions/{id}`: a transaction id (400 malformed, 404 absent).
pub struct TransactionIdPath;

impl IntoParams for TransactionIdPath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![id_path(
            &TRANSACTION,
            "The transaction: txn_ + 6 or more ASCII digits (400 otherwise, 404 when absent).",
        )]
    }
}

/// `{id}` of `GET /v1/accounts/{id}/transactions`: an account id (400 malformed, 404 absent).
pub struct AccountIdPath;

impl IntoParams for AccountIdPath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![id_path(
            &ACCOUNT,
            "The account: acc_ + 4 or more ASCII digits (400 otherwise, 404 when absent).",
        )]
    }
}
