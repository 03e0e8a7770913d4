//! Header names on the hops between Kosha's functions, lowercase as HTTP/2 sends them
//! (header names are case-insensitive, RFC 9110 §5.1).

/// The calling agent's `client_id`, set by the gateway on every core-api and screening-sim
/// request; the agent's token is never forwarded (SPEC §5).
pub const PRINCIPAL: &str = "x-kosha-principal";

/// The calling person, set by the gateway beside [`PRINCIPAL`] on every core-api request: the
/// token's `sub`, which for a machine client is its `client_id` (SPEC §5 "The user"). core-api
/// stores it as `created_by` on every write and scopes idempotency keys by it; 1–255 printable
/// ASCII characters, anything else is 400 `invalid_argument` (SPEC §7).
pub const USER: &str = "x-kosha-user";

/// The absolute deadline of the request, RFC 3339 UTC with milliseconds and `Z`
/// (`2026-11-30T12:00:07.850Z`): past → 504, malformed → 400, over 60 s ahead → clamped
/// (SPEC §7).
pub const REQUEST_DEADLINE: &str = "x-request-deadline";

/// Required on core-api's write endpoints: 1–255 printable ASCII characters (SPEC §7).
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// `true` on a write answer that replays the first response for its idempotency key (SPEC §7).
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The HMAC-signed chaos header of testers (SPEC §9).
pub const CHAOS: &str = "x-kosha-chaos";

/// W3C Trace Context parent (SPEC §12).
pub const TRACEPARENT: &str = "traceparent";

/// W3C Trace Context vendor state (SPEC §12).
pub const TRACESTATE: &str = "tracestate";
