//! The idempotency key of a write tool call (SPEC §4, §7): the agent's `idempotency_key`
//! when it gave one, else one derived from the principal, the tool and the canonical JSON of
//! the request body ([`kosha_contract::canonical`]: sorted keys, no insignificant
//! whitespace), so the same call repeated within 24 h replays the first answer
//! (`created: false`) instead of writing twice. Used by `raise_dispute` and
//! `flag_transaction_for_review`.

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
    let key = key_for(given_key, call.principal, tool, &request)?;
    let written = call
        .core_api_write(|meta| W::send(call.deps.core_api, meta, &key, &request))
        .await?;
    audit(
        call.principal,
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

/// `given`, or the key derived from `principal`, `tool` and `body` (the request core-api
/// will be sent): `kosha-derived-` + SHA-256 (hex) of the canonical JSON of
/// `[principal, tool, body]`, 78 printable ASCII characters.
///
/// # Errors
/// [`ToolError::Internal`] when `body` does not serialize (a bug).
pub fn key_for(
    given: Option<String>,
    principal: Option<&str>,
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
    let identity = canonical::to_string(&json!([principal.unwrap_or(""), tool, body]));
    Ok(format!(
        "{DERIVED_PREFIX}{}",
        hex::encode(Sha256::digest(identity.as_bytes()))
    ))
}

/// Writes the `write_recorded` audit event (SPEC §12, issue 15) for a write tool's answer:
/// `principal`, `tool`, the idempotency key (clipped: an agent's key is caller text),
/// `record_id` (the dispute or review) and `created` (`false`: a replay of an earlier call).
pub fn audit(principal: Option<&str>, tool: &str, key: &str, record_id: &str, created: bool) {
    kosha_runtime::audit!(
        events::WRITE,
        principal = principal.unwrap_or(""),
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
        key_for(None, Some(principal), tool, &body).unwrap()
    }

    #[test]
    fn a_given_key_is_used_as_is() {
        let key = key_for(Some("k-1".into()), Some("a"), "t", &json!({})).unwrap();
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
            audit(Some("agent-1"), "raise_dispute", &key, "dsp_01", true);
        }
        let text = String::from_utf8(buffer.0.lock().clone()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        let line = lines[0].to_string();
        for want in ["write_recorded", "agent-1", "raise_dispute", "dsp_01"] {
            assert!(line.contains(want), "{want} missing: {line}");
        }
        assert!(line.contains("\"created\":true"), "{line}");
        assert!(!line.contains(&key), "the key is clipped: {line}");
    }
}
