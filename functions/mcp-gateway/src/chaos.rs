//! The chaos header at the gateway (SPEC §9, issue 14): which requests get their
//! `X-Kosha-Chaos` header honoured, and the audit of those that do not.
//!
//! - **Honoured** only when `CHAOS_ENABLED=true`, the principal has the `operator` role, and
//!   the header verifies ([`kosha_resilience::chaos::verify`]: HMAC-SHA256 with the key from
//!   Secrets Manager, cached 5 min, `exp` within 900 s). An honoured header is logged as
//!   `chaos_applied` and counted in the `chaos_applied` metric; its faults apply where the
//!   gateway calls the target (`core-api`, `screening-sim`), inside the policy stack, and it is
//!   forwarded unchanged to core-api, which verifies it again for `openai` and `postgres`.
//! - **Anything else** — disabled, not an operator, a bad signature, expired, too far ahead,
//!   malformed — leaves the request untouched. Every refusal is counted
//!   (`chaos_rejected{reason}`), and the audit event `chaos_header_rejected` (reason,
//!   principal, and how many were refused since the last event) is logged at most once a
//!   minute per principal and reason. Neither the key nor the signature is ever logged.
//! - **Key unavailable** (Secrets Manager down): the header cannot be verified, so it is
//!   ignored like a refused one, counted as `chaos_rejected{reason="key_unavailable"}` and
//!   logged (warn) at most once a minute.

use std::time::Duration;

use axum::http::HeaderValue;
use kosha_auth::{Principal, Role};
use kosha_resilience::chaos::{self, ChaosSpec, Gate};
use kosha_runtime::audit::events;
use kosha_runtime::throttle::Throttle;
use kosha_state::SecretCache;

/// How often the audit event is written per principal and reason.
const AUDIT_EVERY: Duration = Duration::from_secs(60);

/// Most (principal, reason) pairs the audit remembers; past it, the oldest are forgotten
/// (their next refusal is logged at once). Principals are authenticated clients, so this only
/// bounds memory against a misconfigured allowlist.
const AUDIT_MAX_KEYS: usize = 1024;

/// A header the gateway honours: what it injects, and the header's exact text, forwarded
/// unchanged to core-api (SPEC §9).
#[derive(Debug, Clone)]
pub struct Honoured {
    /// The verified spec.
    pub spec: ChaosSpec,
    /// The header value as received.
    pub header: String,
}

/// The gateway's chaos gate: built once, shared by all requests.
#[derive(Debug)]
pub struct ChaosGate {
    enabled: bool,
    keys: Option<SecretCache>,
    audit: Throttle,
}

impl ChaosGate {
    /// A gate; `enabled` is `CHAOS_ENABLED`, `keys` the key cache (`None`: no key, so no
    /// header can be honoured).
    pub fn new(enabled: bool, keys: Option<SecretCache>) -> Self {
        Self {
            enabled,
            keys,
            audit: Throttle::new(AUDIT_EVERY, AUDIT_MAX_KEYS),
        }
    }

    /// The honoured chaos header of a request carrying `header` from `principal`, or `None`
    /// (no header, or refused: see the module docs). `now_s` is the wall clock in epoch
    /// seconds; `within` bounds the key fetch (the call's time left beyond its minimum budget),
    /// so a slow or failing Secrets Manager never takes the request past its budget.
    pub async fn evaluate(
        &self,
        header: Option<&HeaderValue>,
        principal: &Principal,
        now_s: u64,
        within: std::time::Duration,
    ) -> Option<Honoured> {
        let header = header?;
        let gate = Gate {
            enabled: self.enabled,
            operator: principal.roles.contains(&Role::Operator),
        };
        if let Err(reason) = gate.check() {
            self.refused(&principal.client_id, reason.as_str());
            return None;
        }
        let key = match &self.keys {
            Some(keys) => keys.get_within(within).await.ok(),
            None => None,
        };
        let Some(key) = key else {
            self.refused(&principal.client_id, "key_unavailable");
            return None;
        };
        match chaos::verify(header.as_bytes(), key.as_bytes(), now_s) {
            Ok(spec) => {
                metrics::counter!("chaos_applied").increment(1);
                kosha_runtime::audit!(
                    events::CHAOS_APPLIED,
                    principal = %principal.client_id,
                    target = spec.target().as_str(),
                    fault = spec.fault().as_str(),
                    "chaos header honoured"
                );
                // verify accepted only UTF-8.
                let header = header.to_str().ok()?.to_owned();
                Some(Honoured { spec, header })
            }
            Err(reason) => {
                self.refused(&principal.client_id, reason.as_str());
                None
            }
        }
    }

    /// Counts a refusal and writes the audit event when this principal's last one for
    /// `reason` was written over a minute ago.
    fn refused(&self, principal: &str, reason: &'static str) {
        metrics::counter!("chaos_rejected", "reason" => reason).increment(1);
        if let Some(count) = self.audit.occurred(principal, reason) {
            tracing::warn!(
                audit = true,
                event = events::CHAOS_HEADER_REJECTED,
                reason,
                principal = %kosha_contract::echo::clip(principal),
                count,
                "chaos header ignored"
            );
        }
    }

    /// Refusals counted for `principal` and `reason` since the last audit event (tests).
    #[cfg(test)]
    fn pending(&self, principal: &str, reason: &'static str) -> Option<u64> {
        self.audit.pending(principal, reason)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kosha_resilience::chaos::{Fault, Target};
    use kosha_resilience::rate_limit::BoxFuture;
    use kosha_state::{HmacKey, SecretFetcher, StateError, decode_hmac_key};

    use super::*;

    const KEY_HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    const NOW: u64 = 1_800_000_000;

    struct Fixed;
    impl SecretFetcher for Fixed {
        fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
            Box::pin(async { Ok(decode_hmac_key(KEY_HEX).unwrap()) })
        }
    }

    fn gate(enabled: bool) -> ChaosGate {
        let keys = SecretCache::with_fetcher(Arc::new(Fixed), "test", Duration::from_secs(300));
        ChaosGate::new(enabled, Some(keys))
    }

    fn principal(roles: &[Role]) -> Principal {
        Principal {
            client_id: "tester".into(),
            subject: "tester".into(),
            username: None,
            roles: roles.to_vec(),
            scopes: vec![],
            groups: vec![],
            tags: Default::default(),
            expires_at: NOW + 3_600,
        }
    }

    fn signed(exp: u64) -> HeaderValue {
        let key = hex::decode(KEY_HEX).unwrap();
        let spec = ChaosSpec::try_new(Target::CoreApi, Fault::Error, None, 1.0, exp).unwrap();
        HeaderValue::from_str(&spec.sign(&key).unwrap()).unwrap()
    }

    const WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn only_an_enabled_gate_honours_a_verified_header_from_an_operator() {
        let tester = principal(&[Role::Agent, Role::Operator]);
        let h = signed(NOW + 300);
        let honoured = gate(true)
            .evaluate(Some(&h), &tester, NOW, WITHIN)
            .await
            .unwrap();
        let spec = honoured.spec;
        assert_eq!(
            (spec.target(), spec.fault()),
            (Target::CoreApi, Fault::Error)
        );
        assert_eq!(honoured.header, h.to_str().unwrap());
        assert!(
            gate(false)
                .evaluate(Some(&h), &tester, NOW, WITHIN)
                .await
                .is_none()
        );
        let agent = principal(&[Role::Agent]);
        assert!(
            gate(true)
                .evaluate(Some(&h), &agent, NOW, WITHIN)
                .await
                .is_none()
        );
        assert!(
            gate(true)
                .evaluate(None, &tester, NOW, WITHIN)
                .await
                .is_none()
        );
        let no_key = ChaosGate::new(true, None);
        assert!(
            no_key
                .evaluate(Some(&h), &tester, NOW, WITHIN)
                .await
                .is_none()
        );
        let tampered =
            HeaderValue::from_str(&h.to_str().unwrap().replace("error", "reset")).unwrap();
        assert!(
            gate(true)
                .evaluate(Some(&tampered), &tester, NOW, WITHIN)
                .await
                .is_none()
        );
        let expired = signed(NOW - 1);
        assert!(
            gate(true)
                .evaluate(Some(&expired), &tester, NOW, WITHIN)
                .await
                .is_none()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn refusals_are_audited_at_most_once_a_minute_per_principal_and_reason() {
        let g = gate(true);
        let agent = principal(&[Role::Agent]);
        let h = signed(NOW + 300);
        g.evaluate(Some(&h), &agent, NOW, WITHIN).await;
        assert_eq!(
            g.pending("tester", "not_operator"),
            Some(0),
            "first one logged"
        );
        for _ in 0..5 {
            g.evaluate(Some(&h), &agent, NOW, WITHIN).await;
        }
        assert_eq!(g.pending("tester", "not_operator"), Some(5), "held back");
        tokio::time::advance(AUDIT_EVERY).await;
        g.evaluate(Some(&h), &agent, NOW, WITHIN).await;
        assert_eq!(
            g.pending("tester", "not_operator"),
            Some(0),
            "logged with the count"
        );
        assert_eq!(g.pending("tester", "disabled"), None);
    }
}
