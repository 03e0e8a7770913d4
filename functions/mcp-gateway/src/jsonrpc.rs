//! JSON-RPC 2.0 error codes the gateway answers with (JSON-RPC 2.0 §5.1). The
//! implementation-defined ones (−32000…−32099) are listed in docs/operations.md.

/// Invalid JSON.
pub const PARSE_ERROR: i32 = -32700;
/// Not a valid request object.
pub const INVALID_REQUEST: i32 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i32 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i32 = -32603;
/// 503: too many requests in flight on this instance (SPEC §6).
pub const OVERLOADED: i32 = -32000;
/// 401: no usable bearer token (SPEC §5).
pub const UNAUTHORIZED: i32 = -32001;
/// 403: a valid token without a usable role, or a Host/Origin not allowed (SPEC §3, §5).
pub const FORBIDDEN: i32 = -32003;
/// 429: the caller's rate-limit bucket is empty (SPEC §6).
pub const RATE_LIMITED: i32 = -32029;
