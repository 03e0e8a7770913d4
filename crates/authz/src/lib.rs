//! Authorization as policy (SPEC §5a): which principal may call which tool, with which
//! arguments, on which records, decided by a Cedar policy set validated against Kosha's Cedar
//! schema ([`SCHEMA`]).
//!
//! - [`Policies::builtin`] is today's role table (agents: the data tools; agents and operators:
//!   `get_service_health`); [`Policies::parse`] reads an operator's file (`KOSHA_POLICY_FILE`).
//!   A set that does not parse or validate is a [`LoadError`] naming the policy and its line:
//!   the gateway does not start (ARCHITECTURE pitfall 29).
//! - [`Policies::decide`] answers one call ([`Ask`]): [`Decision::Allow`],
//!   [`Decision::Forbid`] (with the deciding forbid's `@reason`), or [`Decision::Confirm`] when
//!   only `context.confirmed` stands between the call and an allow (SPEC §5b). An error
//!   evaluating any policy is a forbid.
//! - [`Policies::may_list`] is the listing rule: the same set, with what depends on the
//!   arguments, the record, the time or a confirmation counted in the caller's favour for
//!   permits and not at all for forbids ([`listing`]).
//! - [`Policies::reads`] says what a call's context must hold for a tool: the gateway reads the
//!   addressed transaction only when a policy for that tool reads `context.record`.
//!
//! ```
//! use kosha_authz::{Ask, Decision, Policies};
//! let principal = kosha_authz::testing::principal("alice", &["agent"]);
//! let input = serde_json::json!({"transaction_id": "txn_000001"});
//! let ask = Ask::new(&principal, "get_transaction", input.as_object().unwrap());
//! assert!(matches!(Policies::builtin().decide(&ask), Decision::Allow { .. }));
//! ```

mod decide;
mod decision;
mod error;
mod ids;
mod listing;
mod load;
mod memo;
mod reads;
mod request;
pub mod testing;

pub use decision::{Decision, NOT_PERMITTED};
pub use error::LoadError;
pub use load::Policies;
pub use reads::Reads;
pub use request::{Ask, Record};

/// Kosha's Cedar schema (SPEC §5a), in Cedar's schema syntax: part of the external contract.
pub const SCHEMA: &str = include_str!("kosha.cedarschema");

/// The built-in policy set: today's role table (SPEC §4, §5a).
pub const BUILTIN: &str = include_str!("builtin.cedar");

/// The write tools: the only actions whose context has `confirmed` (SPEC §5b).
pub const WRITE_TOOLS: [&str; 2] = ["raise_dispute", "flag_transaction_for_review"];

/// The tools that address a transaction: their context may hold `record` (SPEC §5a).
pub const RECORD_TOOLS: [&str; 3] = [
    "get_transaction",
    "raise_dispute",
    "flag_transaction_for_review",
];
