//! Audit events (SPEC §12, issue 15): JSON log lines an auditor filters on, each with
//! `"audit": true` and a distinct `event` name from [`events`]. Write them with [`audit!`]
//! (`kosha_runtime::audit!(events::WRITE, principal = %p, …)`): the one seam, so every
//! function's audit lines have the same shape. Events a caller can provoke at will (a bad
//! token, a forged chaos header) go through a [`crate::throttle::Throttle`]: at most one line
//! per key and reason per interval, with the count of the ones folded into it.
//!
//! No audit line carries a token, a signature, a key or a password: only names, ids and
//! reasons, clipped where they come from a caller.

/// The audit event names, one per kind of event (the `event` field).
pub mod events {
    /// A request refused for its credentials (gateway; per source address and reason, at most
    /// once a minute): `reason` (`missing`, `invalid_token`, `no_role`), `source`, `count`.
    pub const AUTH_REJECTED: &str = "auth_rejected";
    /// A chaos header honoured (gateway): `principal`, `target`, `fault`.
    pub const CHAOS_APPLIED: &str = "chaos_applied";
    /// A chaos header ignored (gateway; per principal and reason, at most once a minute):
    /// `reason`, `principal`, `count`.
    pub const CHAOS_HEADER_REJECTED: &str = "chaos_header_rejected";
    /// A forced-open override as this instance first reads it, or its lifting (gateway):
    /// `dependency`, `state` (`forced_open` | `cleared`), `set_by`, `set_at`, `expires_at`,
    /// `reason`.
    pub const OVERRIDE_OBSERVED: &str = "breaker_override_observed";
    /// An operator action of `kosha-ops` (stderr of the CLI): `action`, `operator`, and the
    /// action's subject (`dependency`, `ttl_s`, `target`, …).
    pub const OPS_ACTION: &str = "ops_action";
    /// A person's answer to a confirmation question (gateway, SPEC §5b): `principal`, `user`,
    /// `username`, `tool`, `outcome` (`accepted`, `declined`, `cancelled`), `transaction_id`,
    /// `arguments_sha256` (of the call's canonical arguments), `note` (quoted, clipped).
    pub const CONFIRMATION: &str = "confirmation_answered";
    /// A write tool's effect (core-api / gateway writes): `principal`, `tool`,
    /// `idempotency_key`, `created` (the new record's id), `replayed`.
    pub const WRITE: &str = "write_recorded";
}

/// Writes an audit event: `audit!(events::NAME, field = value, …; "message")` is
/// `tracing::info!(audit = true, event = NAME, field = value, …, "message")`.
#[macro_export]
macro_rules! audit {
    ($event:expr, $($rest:tt)+) => {
        ::tracing::info!(audit = true, event = $event, $($rest)+)
    };
}
