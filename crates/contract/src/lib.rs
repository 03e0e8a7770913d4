//! kosha-contract: the wire contract between Kosha's functions (SPEC §4, §7, §8), one
//! definition of each fact, used by both sides of every hop so they cannot drift apart.
//!
//! - [`bearer`]: the bearer token's extraction and shape check (RFC 6750, SPEC §5).
//! - [`canonical`]: canonical JSON, for idempotency hashes and derived keys (SPEC §4, §7).
//! - [`json`]: the one bounded parse of a caller's JSON body (limits, duplicate keys).
//! - [`echo`]: the clip applied to caller text quoted in errors and logs.
//! - [`headers`]: the service-to-service header names (SPEC §7, §9, §12).
//! - [`ids`]: the id shapes (SPEC §3) and their checks.
//! - [`integer`]: JSON Schema's `integer` (`5.0` is `5`) for request bodies' integer fields.
//! - [`dependency`]: the dependency names of SPEC §8 (override keys, metric dimensions).
//! - [`breaker`]: the gateway's breaker names (`get_service_health`, fleet trips, SPEC §8).
//! - [`error`]: the error codes (SPEC §3) and the error body of SPEC §7.
//! - [`cursor`]: the text of core-api's pagination cursor (SPEC §4).
//! - [`core_api`]: core-api's request and response bodies (SPEC §4).
//! - [`events`]: the events queue's messages, published by outbox-relay (SPEC §4).
//! - [`screening`]: screening-sim's request and response bodies (SPEC §4).
//! - `openapi` (feature `openapi`): the OpenAPI 3.1 schemas of core-api's bodies.
//!
//! The crate depends on serde, schemars and base64 only (utoipa too with the `openapi`
//! feature, which core-api turns on), so fuzz targets and every function can use it
//! without pulling in HTTP or AWS crates.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bearer;
pub mod breaker;
pub mod canonical;
pub mod core_api;
pub mod cursor;
pub mod dependency;
pub mod echo;
pub mod error;
pub mod events;
pub mod headers;
pub mod ids;
pub mod integer;
pub mod json;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod screening;
