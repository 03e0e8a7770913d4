//! mcp-gateway: Kosha's MCP server for agents (SPEC §1, §3–§6).
//!
//! Request path: HTTP edge ([`http`]) → rmcp ([`server`]) → a tool ([`tools`]) → a typed
//! dependency client ([`backends`]) under the resilience policy for that dependency.
#![forbid(unsafe_code)]

pub mod backends;
pub mod config;
pub mod echo;
pub mod http;
pub mod server;
pub mod state;
pub mod tools;
