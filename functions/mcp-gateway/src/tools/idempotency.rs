//! The idempotency key of a write tool call (SPEC §4, §7): the agent's `idempotency_key`
//! when it gave one, else one derived from the client, the user (SPEC §5 "The user"), the tool
//! and the canonical JSON of the request body ([`kosha_contract::canonical`]: sorted keys, no
//! insignificant whitespace), so the same call repeated within 24 h replays the first answer
//! (`created: false`) instead of writing twice, and two users of one app client never replay
//! each other's (issue 44). core-api scopes every key, given or derived, by `X-Kosha-Principal`
//! and `X-Kosha-User` too. Used by `raise_dispute` and `flag_transaction_for_review`.

use kosha_clients::core_api::Written;
use kosha_contract::{canonical, ids};
use kosha_runtime::audit::events;
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::call::Call;
use super::deps::ToolWrite;
use super::error::ToolError;
use kosha_contract::echo::clip;

/// The body of both keyed-write tools (SPEC §4): a transaction id that cannot exist is
/// `not_found` without a call; then the key ([`key_for`]), one write under the write policy
/// ([`Call::core_api_write`]), and the audit line ([`audit`]).
///
/// # Errors
/// `not_found`, the key's [`ToolError::Internal`], or the errors of
/// [`Call::core_api_write`].
pub async fn run<W: ToolWrite>(
    call: &Call<'_>,
    tool: &'static str,
    given_key: Option<String>,
    request: W,
) -> Result<Written<W::Record>, ToolError> {
    if !ids::TRANSACTION.may_exist(request.transaction_id()) {
        let id = clip(request.transaction_id());
        return Err(ToolError::NotFound(format!("transaction {id} not found")));
    }
    let caller = Caller {
        principal: call.principal,
        user: call.user,
    };
    let key = key_for(given_key, caller, tool, &request)?;
    let written = call
        .core_api_write(|meta| W::send(call.deps.core_api, meta, &key, &request))
        .await?;
    let written_by = Writer {
        principal: call.principal,
        user: call.user,
        username: call.username,
    };
    audit(
        &written_by,
        tool,
        &key,
        W::record_id(&written.record),
        written.created,
    );
    Ok(written)
}

/// Prefix of derived keys, so an operator reading `ops.idempotency_keys` tells them apart.
pub const DERIVED_PREFIX: &str = "kosha-derived-";

/// The JSON Schema pattern of `idempotency_key`: 1–255 printable ASCII characters, as
/// core-api accepts (SPEC §7).
pub const KEY_PATTERN: &str = "^[\\x20-\\x7E]{1,255}$";

/// Who a key is derived for: the client and the user (SPEC §5 "The user").
#[derive(Debug, Clone, Copy, Default)]
pub struct Caller<'a> {
    /// The client's `client_id`.
    pub principal: Option<&'a str>,
    /// The user's `sub` (a machine client's is its `client_id`).
    pub user: Option<&'a str>,
}

/// `given`, or the key derived from `caller`, `tool` and `body` (the request core-api will
/// be sent): `kosha-derived-` + SHA-256 (hex) of the canonical JSON of
/// `[principal, user, tool, body]`, 78 printable ASCII characters.
///
/// # Errors
/// [`ToolError::Internal`] when `body` does not serialize (a bug).
pub fn key_for(
    given: Option<String>,
    caller: Caller<'_>,
    tool: &str,
    body: &impl Serialize,
) -> Result<String, ToolError> {
    if let Some(key) = given {
        return Ok(key);
    }
    let body = serde_json::to_value(body).map_err(|e| {
        tracing::error!(tool, error = %e, "write body did not serialize");
        ToolError::Internal
    })?;
    let identity = canonical::to_string(&json!([
        caller.principal.unwrap_or(""),
        caller.user.unwrap_or(""),
        tool,
        body
    ]));
    Ok(format!(
        "{DERIVED_PREFIX}{}",
        hex::encode(Sha256::digest(identity.as_bytes()))
    ))
}

/// Who wrote, as the audit event names them (SPEC §5 "The user").
#[derive(Debug, Clone, Copy, Default)]
pub struct Writer<'a> {
    /// The client's `client_id`.
    pub principal: Option<&'a str>,
    /// The user's `sub`.
    pub user: Option<&'a str>,
    /// The token's `username`: in audit events only, never a log line or a span.
    pub username: Option<&'a str>,
}

/// Writes the `write_recorded` audit event (SPEC §12, issue 15) for a write tool's answer:
/// `principal`, `user`, `username` (empty for a machine client), `tool`, the idempotency key
/// (clipped: an agent's key is caller text), `record_id` (the dispute or review) and `created`
/// (`false`: a replay of an earlier call).
pub fn audit(writer: &Writer<'_>, tool: &str, key: &str, record_id: &str, created: bool) {
    kosha_runtime::audit!(
        events::WRITE,
        principal = writer.principal.unwrap_or(""),
        user = %clip(writer.user.unwrap_or("")),
        username = %clip(writer.username.unwrap_or("")),
        tool,
        idempotency_key = %clip(key),
        record_id,
        created,
        "write recorded"
    );
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn derived(principal: &str, tool: &str, body: Value) -> String {
        derived_for(principal, principal, tool, body)
    }

    fn derived_for(principal: &str, user: &str, tool: &str, body: Value) -> String {
        let caller = Caller {
            principal: Some(principal),
            user: Some(user),
        };
        key_for(None, caller, tool, &body).unwrap()
    }

    #[test]
    fn a_given_key_is_used_as_is() {
        let key = key_for(Some("k-1".into()), Caller::default(), "t", &json!({})).unwrap();
        assert_eq!(key, "k-1");
    }

    #[test]
    fn the_same_call_derives_the_same_key_whatever_the_key_order() {
        let a = derived(
            "agent-a",
            "raise_dispute",
            json!({"transaction_id": "txn_000001", "reason": "r"}),
        );
        let b = derived(
            "agent-a",
            "raise_dispute",
            json!({"reason": "r", "transaction_id": "txn_000001"}),
        );
        assert_eq!(a, b);
        assert!(a.starts_with(DERIVED_PREFIX));
        assert_eq!(a.len(), DERIVED_PREFIX.len() + 64);
        assert!(regex_free_printable(&a));
    }

    #[test]
    fn principal_tool_and_every_argument_change_the_key() {
        let body = json!({"transaction_id": "txn_000001", "reason": "r"});
        let base = derived("agent-a", "raise_dispute", body.clone());
        assert_ne!(base, derived("agent-b", "raise_dispute", body.clone()));
        assert_ne!(
            base,
            derived("agent-a", "flag_transaction_for_review", body)
        );
        assert_ne!(
            base,
            derived(
                "agent-a",
                "raise_dispute",
                json!({"transaction_id": "txn_000001", "reason": "r2"})
            )
        );
        assert_ne!(
            base,
            derived(
                "agent-a",
                "raise_dispute",
                json!({"transaction_id": "txn_000001", "reason": "r", "amount_minor": 5})
            )
        );
    }

    /// Issue 44: two users of one app client making the same call get two keys.
    #[test]
    fn the_user_changes_the_key() {
        let body = json!({"transaction_id": "txn_000001", "reason": "r"});
        let alice = derived_for("app", "sub-alice", "raise_dispute", body.clone());
        let bob = derived_for("app", "sub-bob", "raise_dispute", body.clone());
        assert_ne!(alice, bob);
        assert_eq!(
            alice,
            derived_for("app", "sub-alice", "raise_dispute", body)
        );
    }

    fn regex_free_printable(key: &str) -> bool {
        !key.is_empty() && key.len() <= 255 && key.bytes().all(|b| (0x20..=0x7e).contains(&b))
    }

    /// The write audit line: one JSON line with the event name, principal, tool, record id and
    /// `created`; an agent's long key is clipped.
    #[test]
    fn a_write_is_audited_once_with_its_key_clipped() {
        use std::sync::Arc;

        #[derive(Clone, Default)]
        struct Buffer(Arc<parking_lot::Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = kosha_runtime::telemetry::subscriber(
            tracing_subscriber::EnvFilter::new("info"),
            move || writer.clone(),
        );
        let key = "k".repeat(255);
        {
            let _guard = kosha_runtime::telemetry::capture_default(subscriber);
            let writer = Writer {
                principal: Some("agent-1"),
                user: Some("sub-7"),
                username: Some("alice@example.com"),
            };
            audit(&writer, "raise_dispute", &key, "dsp_01", true);
        }
        let text = String::from_utf8(buffer.0.lock().clone()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        let line = lines[0].to_string();
        for want in [
            "write_recorded",
            "agent-1",
            "\"user\":\"sub-7\"",
            "\"username\":\"alice@example.com\"",
            "raise_dispute",
            "dsp_01",
        ] {
            assert!(line.contains(want), "{want} missing: {line}");
        }
        assert!(line.contains("\"created\":true"), "{line}");
        assert!(!line.contains(&key), "the key is clipped: {line}");
    }
}
