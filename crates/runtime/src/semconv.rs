//! The names spans are exported with (SPEC §12: "Spans follow OpenTelemetry's semantic
//! conventions").
//!
//! - **Stable names** (HTTP server and client, URL, server, db, error) are the
//!   `opentelemetry-semantic-conventions` crate's constants, re-exported here so every
//!   function names them one way: [`HTTP_REQUEST_METHOD`], [`URL_PATH`], …
//! - **Experimental names** (MCP and GenAI) are written here, once: in that crate they sit
//!   behind its `semconv_experimental` feature or are deprecated, and the workspace takes its
//!   stable part only. Source: OpenTelemetry semantic conventions, "Semantic conventions for
//!   Model Context Protocol (MCP)" (`mcp.*`, `jsonrpc.*`) and "Semantic conventions for
//!   generative AI systems" (`gen_ai.*`), both in development as of 2026-12-05.
//! - **Neighbours:** [`crate::trace`] names the `request` span's fields with them (the JSON
//!   log lines show the same keys), the gateway's tool call, core-api's database and embeddings
//!   spans name theirs with them; [`crate::otlp`] exports them as recorded, so a number recorded
//!   as an `i64` is an OTLP int.

pub use opentelemetry_semantic_conventions::attribute::{
    DB_OPERATION_NAME, DB_SYSTEM_NAME, ERROR_TYPE, HTTP_REQUEST_METHOD, HTTP_RESPONSE_STATUS_CODE,
    SERVER_ADDRESS, URL_PATH,
};

/// The JSON-RPC method of an MCP message (`tools/call`).
pub const MCP_METHOD_NAME: &str = "mcp.method.name";

/// The MCP session id, when the transport has one.
pub const MCP_SESSION_ID: &str = "mcp.session.id";

/// The JSON-RPC request id of an MCP message, as a string.
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";

/// The GenAI operation: `execute_tool` for a tool call, `embeddings` for an embeddings call.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";

/// The name of the tool called (`get_transaction`).
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";

/// The model an embeddings request asks for.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";

/// `n` as an `i64`, saturating: tracing-opentelemetry (0.34) exports an `i64` field as an
/// OTLP int and a `u64` or `usize` one as its `Debug` string (SPEC §12: numbers are exported
/// as numbers).
pub fn int<T: TryInto<i64>>(n: T) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
