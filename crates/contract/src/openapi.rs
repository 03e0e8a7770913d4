//! OpenAPI 3.1 schema builders for core-api's bodies (feature `openapi`; core-api's
//! `GET /v1/openapi.json`): the pieces a derive cannot say — string enums, id patterns from
//! [`crate::ids`], bounded strings and integers, and the free-text rule of core-api's
//! `text::plain`. This module depends on no body: the schemas built from a body's own
//! constants live beside the body (`core_api/schema.rs`, `error/schema.rs`) and use these
//! builders, so the dependency runs one way.
//!
//! Schemas are attached with `schema_with`. Where a derive
//! carries one as a literal instead (utoipa's attributes take no constants: `maxItems`, the
//! cursor's `maxLength`), core-api's tests (`tests/api/openapi.rs`) compare it with the
//! constant, so the document cannot say one thing while the code does another.
//!
//! Kept behind a feature so the fuzz build, which depends on this crate, does not compile
//! utoipa.

use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, SchemaType, Type};

use crate::ids::{self, IdShape};

/// A string schema whose only values are `values`.
pub fn string_enum(values: &[&str], description: &str) -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::String))
            .enum_values(Some(values.iter().copied()))
            .description(Some(description))
            .build(),
    )
}

/// `Transaction.status`: the values `core.transactions` allows (its CHECK constraint).
pub fn transaction_status() -> Schema {
    string_enum(&["booked", "pending", "reversed"], "Booking status.")
}

/// `Health.status`: always `ok` (a failed check is a 503 error body instead).
pub fn health_status() -> Schema {
    string_enum(&["ok"], "Always `ok`; PostgreSQL down is a 503.")
}

/// `EmbedderHealth.breaker`: the `openai` breaker's state names (kosha-resilience).
pub fn breaker_state() -> Schema {
    string_enum(
        &["closed", "half_open", "open", "forced_open"],
        "core-api's `openai` breaker.",
    )
}

/// A string id of `shape` ([`IdShape::pattern`], the handlers' [`IdShape::matches`]).
pub fn id(shape: &IdShape, description: &str) -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::String))
            .pattern(Some(shape.pattern()))
            .examples([shape.example])
            .description(Some(description))
            .build(),
    )
}

/// A string of `min`–`max` characters matching `pattern`.
pub fn text(min: usize, max: usize, pattern: &str, description: &str) -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::String))
            .min_length(Some(min))
            .max_length(Some(max))
            .pattern(Some(pattern))
            .description(Some(description))
            .build(),
    )
}

/// An integer `min`–`max`; with `default`, also `null` (read as the default).
pub fn bounded_integer(
    min: i64,
    max: Option<i64>,
    default: Option<u32>,
    description: &str,
) -> Schema {
    let mut builder = ObjectBuilder::new()
        .minimum(Some(min))
        .maximum(max)
        .description(Some(description));
    builder = match default {
        Some(d) => builder
            .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
            .default(Some(d.into())),
        None => builder.schema_type(SchemaType::new(Type::Integer)),
    };
    Schema::Object(builder.build())
}

/// The free-text rule of `reason` as a JSON Schema `pattern`: no control character (Unicode
/// general category Cc) but tab, LF and CR, as core-api's `text::plain` checks.
pub const PLAIN_TEXT_PATTERN: &str = r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$";

/// The rule of the search `query`: plain text (as [`PLAIN_TEXT_PATTERN`]) with at least one
/// character that is neither a control character nor white space, white space being what
/// Rust's `str::trim` removes (Unicode `White_Space`), so "not blank" means the same here and
/// in the handler.
pub const QUERY_PATTERN: &str = concat!(
    r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*",
    r"[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]",
    r"[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$"
);

/// `DisputeRequest.amount_minor`: 1 to the transaction's absolute amount (checked against the
/// transaction: 400 above it); absent or null means that amount.
pub fn dispute_amount() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1))
            .description(Some(
                "Disputed amount in minor units, 1 to the transaction's absolute amount (400 above it); absent or null means that amount.",
            ))
            .build(),
    )
}

/// A positive amount in minor units (a dispute's 201).
pub fn positive_amount() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::Integer))
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1))
            .description(Some("Disputed amount in minor units (cents), positive."))
            .build(),
    )
}

/// `retry_after_s`: whole seconds, at least 1 where core-api sends it.
pub fn retry_after() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::Integer))
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(0))
            .description(Some(
                "Whole seconds after which a retry may succeed (rounded up); also the Retry-After header.",
            ))
            .build(),
    )
}

/// `transaction_id`: `txn_` + 6 or more digits.
pub fn transaction_id() -> Schema {
    id(
        &ids::TRANSACTION,
        "A transaction id: txn_ + 6 or more ASCII digits.",
    )
}

/// `account_id`: `acc_` + 4 or more digits.
pub fn account_id() -> Schema {
    id(
        &ids::ACCOUNT,
        "An account id: acc_ + 4 or more ASCII digits.",
    )
}

/// `article_id`: `kb_` + 3 or more digits.
pub fn article_id() -> Schema {
    id(
        &ids::ARTICLE,
        "A knowledge-base article id: kb_ + 3 or more ASCII digits.",
    )
}

/// `dispute_id`: `dsp_` + a ULID.
pub fn dispute_id() -> Schema {
    id(&ids::DISPUTE, "A dispute id: dsp_ + a ULID.")
}

/// `review_id`: `rev_` + a ULID.
pub fn review_id() -> Schema {
    id(&ids::REVIEW, "A review id: rev_ + a ULID.")
}

/// `from` and `to` of the transaction list: an RFC 3339 date-time, or empty (no bound: the
/// handler reads an empty value as absent).
pub fn time_bound() -> Schema {
    use utoipa::openapi::schema::AnyOfBuilder;
    let date_time = ObjectBuilder::new()
        .schema_type(SchemaType::new(Type::String))
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)));
    let empty = ObjectBuilder::new()
        .schema_type(SchemaType::new(Type::String))
        .max_length(Some(0));
    Schema::AnyOf(
        AnyOfBuilder::new()
            .item(date_time)
            .item(empty)
            .description(Some("RFC 3339 date-time, inclusive; empty means no bound."))
            .build(),
    )
}
