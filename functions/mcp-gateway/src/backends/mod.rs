//! Typed clients for the gateway's dependencies. Each knows one dependency's wire format and
//! nothing about tools or MCP.

pub mod core_api;
pub mod sigv4;
