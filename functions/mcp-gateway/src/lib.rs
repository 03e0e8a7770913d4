//! mcp-gateway: Kosha's MCP server for agents (SPEC §1, §3–§6).
//!
//! Request path: HTTP edge ([`http`]) → rmcp ([`server`]) → a tool ([`tools`]) → a typed
//! dependency client (`kosha_clients`) under the resilience policy for that dependency
//! ([`backends`]).
//!
//! Module imports point one way: `http` → `server` → `state` → [`confirm`] (a person's
//! confirmation, SPEC §5b) → `tools` → `backends` → `kosha_contract`, with [`config`],
//! [`jsonrpc`] and [`chaos`] (the chaos-header gate, used by `state` and `tools`) as leaves; no module imports one that imports it back
//! (`scripts/module_cycles.py` checks it). A tool sees the state only through
//! [`tools::deps::Deps`], and tool costs are checked where the state is built.
#![forbid(unsafe_code)]

pub mod authz;
pub mod backends;
pub mod chaos;
pub mod config;
pub mod confirm;
pub mod http;
pub mod jsonrpc;
pub mod server;
pub mod state;
pub mod tools;
