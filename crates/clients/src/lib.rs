//! kosha-clients: the typed HTTP clients of Kosha's own services over the contract's types
//! ([`kosha_contract`]), shared by the functions that call them.
//!
//! - [`core_api`]: core-api's REST API (SPEC §7), used by the gateway.
//! - [`screening`]: screening-sim's `POST /v1/screen` (SPEC §4), used by the gateway and the
//!   screening-worker.
//! - [`error`]: the one [`ClientError`] and the one decoding of status, `Retry-After`, error
//!   body and injected faults (SPEC §7, §9; seed 004 §3).
//! - [`hop`]: the `X-Request-Deadline` of one hop (SPEC §7).
//! - [`config`]: where the services are and how they are authenticated, from the environment.
//!
//! A client knows one service's wire format and nothing about tools or MCP; the resilience
//! policy around each call is the caller's.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod core_api;
pub mod error;
pub mod hop;
pub mod screening;
mod send;

pub use error::ClientError;
