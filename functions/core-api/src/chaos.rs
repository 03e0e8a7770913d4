//! The chaos header at core-api (SPEC §9, issue 14): the gateway forwards an honoured
//! `X-Kosha-Chaos` header unchanged, and core-api verifies it again before it applies the
//! faults that belong to it, `openai` and `postgres`.
//!
//! - **Trust model.** core-api is reachable only with IAM auth (SPEC §5), and the agent's token
//!   never reaches it, so it cannot see roles: the gateway has already checked that the caller
//!   is an `operator` before forwarding. core-api honours the header only when its own
//!   `CHAOS_ENABLED` is `true` and the header verifies with the same key
//!   ([`kosha_resilience::chaos::verify`]: HMAC-SHA256 with the Secrets Manager key
//!   `KOSHA_CHAOS_SECRET_ID`, cached 5 min by [`kosha_state::SecretCache`]; `exp` within
//!   900 s). So an IAM principal that can call core-api directly still needs the key.
//!   Fetching the key waits at most half the request's remaining time ([`key_wait`]).
//! - **What handlers get.** [`honour`] (middleware) puts one [`Chaos`] value in the request's
//!   extensions: the verified spec, or none. Handlers extract it ([`Chaos`] is an extractor)
//!   and ask [`Chaos::faults`] for a per-call plan for one dependency, which goes straight into
//!   `Policy::call_with_faults` (the `openai` client) — or, for PostgreSQL, ride in the
//!   statement [`crate::deadline::Budget`] to the one transaction starter, which injects
//!   `postgres` faults (`crate::db::queries`).
//! - **Refused.** Disabled, no key, or a header that does not verify: the request proceeds
//!   untouched; the refusal is counted (`chaos_rejected{reason}`) and logged (warn,
//!   `chaos_header_rejected`, reason only — never the key or the signature) at most once a
//!   minute per reason, with the `count` of refusals since the last line (issue #30: 1,000
//!   forged headers wrote 1,000 lines). Not per principal: a caller of core-api can forge
//!   `X-Kosha-Principal`. The gateway forwards only headers it honoured, so a refusal here
//!   means a key rotation, clock skew beyond `exp`, or a direct IAM caller. An honoured
//!   header counts `chaos_applied`.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use kosha_contract::headers::CHAOS;
use kosha_resilience::chaos::{self, ChaosSpec, Faults, Gate, Target};
// The resilience crate's own type, not `crate::deadline`'s re-export of it: that module
// carries a `Chaos` per request, and this one must not import it back (issue 42).
use kosha_resilience::deadline::Deadline;
use kosha_runtime::throttle::Throttle;
use kosha_state::SecretCache;

use rand::SeedableRng;
use rand::rngs::SmallRng;

/// The request's verified chaos header, or none: the one value every handler sees (request
/// extension, also an extractor). `Copy`; absent means "no faults".
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Chaos(Option<ChaosSpec>);

impl Chaos {
    /// A request with the verified `spec` (tests; production values come from [`honour`]).
    pub fn verified(spec: ChaosSpec) -> Self {
        Self(Some(spec))
    }

    /// The verified spec, if any.
    pub fn spec(&self) -> Option<ChaosSpec> {
        self.0
    }

    /// The fault plan for calls to `target`, if the header targets it: one draw per attempt
    /// (`p`, SPEC §9) from a fresh RNG. Pass it to `Policy::call_with_faults` as
    /// `faults.as_mut()`.
    pub fn faults(&self, target: Target) -> Option<Faults<SmallRng>> {
        self.0?
            .faults_for(target, SmallRng::from_rng(&mut rand::rng()))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Chaos {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Self>().copied().unwrap_or_default())
    }
}

/// How often a refusal reason is logged at most (module docs).
const REFUSAL_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Verifies forwarded headers: built once in `main`, shared by every request.
#[derive(Debug)]
pub struct ChaosVerifier {
    enabled: bool,
    keys: Option<SecretCache>,
    refusals: Throttle,
}

impl Default for ChaosVerifier {
    fn default() -> Self {
        Self::new(false, None)
    }
}

impl ChaosVerifier {
    /// A verifier; `enabled` is `CHAOS_ENABLED`, `keys` the key cache (`None`: no header can be
    /// honoured).
    pub fn new(enabled: bool, keys: Option<SecretCache>) -> Self {
        Self {
            enabled,
            keys,
            // One key ("core-api") times a handful of reasons.
            refusals: Throttle::new(REFUSAL_LOG_EVERY, 32),
        }
    }

    /// Honours nothing (`CHAOS_ENABLED` unset).
    pub fn disabled() -> Self {
        Self::default()
    }

    /// The verified spec of `header` at `now_s` (epoch seconds), or `None` (see the module
    /// docs for what is counted and logged). With the request's `deadline`, fetching the key
    /// waits at most half its remaining time ([`key_wait`]); without one, the cache's own 2 s
    /// bound.
    pub async fn verify(
        &self,
        header: &[u8],
        now_s: u64,
        deadline: Option<&Deadline>,
    ) -> Option<ChaosSpec> {
        // The gateway checked the operator role (module docs).
        let gate = Gate {
            enabled: self.enabled,
            operator: true,
        };
        if let Err(reason) = gate.check() {
            return self.refused(reason.as_str());
        }
        let key = match (&self.keys, deadline) {
            (Some(keys), Some(deadline)) => keys.get_within(key_wait(deadline)).await.ok(),
            (Some(keys), None) => keys.get().await.ok(),
            (None, _) => None,
        };
        let Some(key) = key else {
            return self.refused("key_unavailable");
        };
        match chaos::verify(header, key.as_bytes(), now_s) {
            Ok(spec) => {
                metrics::counter!("chaos_applied").increment(1);
                tracing::info!(
                    event = "chaos_applied",
                    target = spec.target().as_str(),
                    fault = spec.fault().as_str(),
                    "chaos header honoured"
                );
                Some(spec)
            }
            Err(reason) => self.refused(reason.as_str()),
        }
    }
}

impl ChaosVerifier {
    /// Counts a refusal; logs it when its reason's minute has passed (module docs).
    fn refused(&self, reason: &'static str) -> Option<ChaosSpec> {
        metrics::counter!("chaos_rejected", "reason" => reason).increment(1);
        if let Some(count) = self.refusals.occurred("core-api", reason) {
            tracing::warn!(
                event = "chaos_header_rejected",
                reason,
                count,
                "chaos header ignored"
            );
        }
        None
    }
}

/// How long a request with `deadline` may wait for the chaos key: half its remaining time.
/// The header is an operator's test aid and the key best-effort (a failed fetch is remembered
/// 30 s, [`kosha_state::SecretCache`]), so a slow or hanging Secrets Manager costs the request
/// at most half its budget and never takes it past its deadline: the other half is left for
/// its own work, PostgreSQL's margin included (issue #30: such a request waited the fetch's
/// 2 s cap whatever its deadline).
pub fn key_wait(deadline: &Deadline) -> std::time::Duration {
    deadline.remaining() / 2
}

/// Middleware: a request with `X-Kosha-Chaos` gets its verified [`Chaos`] extension; without
/// the header nothing is looked up. Runs inside [`crate::deadline::enforce`], so the request's
/// [`Deadline`] is in its extensions when it sent one.
pub async fn honour(
    State(verifier): State<Arc<ChaosVerifier>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(header) = request.headers().get(CHAOS) {
        let now_s = u64::try_from(time::OffsetDateTime::now_utc().unix_timestamp()).unwrap_or(0);
        let deadline = request.extensions().get::<Deadline>().copied();
        if let Some(spec) = verifier
            .verify(header.as_bytes(), now_s, deadline.as_ref())
            .await
        {
            request.extensions_mut().insert(Chaos(Some(spec)));
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use kosha_resilience::chaos::{Fault, FaultAction};

    use super::*;

    /// Issue #30: 1,000 forged headers sent to core-api directly wrote 1,000 lines.
    #[tokio::test(start_paused = true)]
    async fn refusals_are_logged_once_a_minute_per_reason_with_the_count_since() {
        let lines = kosha_runtime::telemetry::SharedBuffer::default();
        let sink = lines.clone();
        let subscriber = kosha_runtime::telemetry::subscriber(
            tracing_subscriber::EnvFilter::new("warn"),
            move || sink.clone(),
        );
        let _guard = kosha_runtime::telemetry::capture_default(subscriber);
        let verifier = ChaosVerifier::disabled();
        for _ in 0..1_000 {
            assert_eq!(verifier.verify(b"forged", 1_000, None).await, None);
        }
        tokio::time::advance(REFUSAL_LOG_EVERY).await;
        assert_eq!(verifier.verify(b"forged", 1_000, None).await, None);
        let text = lines.text();
        let logged: Vec<serde_json::Value> = text
            .lines()
            .filter(|l| l.contains("chaos_header_rejected"))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(logged.len(), 2, "{text}");
        assert_eq!(logged[0]["count"], 1);
        assert_eq!(
            logged[1]["count"], 1_000,
            "the 999 folded ones and this one"
        );
    }

    #[test]
    fn a_plan_is_only_for_the_targeted_dependency() {
        assert!(Chaos::default().faults(Target::Postgres).is_none());
        let spec = ChaosSpec::try_new(Target::OpenAi, Fault::Error, None, 1.0, 1).unwrap();
        let chaos = Chaos::verified(spec);
        assert_eq!(chaos.spec(), Some(spec));
        assert!(chaos.faults(Target::Postgres).is_none());
        let mut plan = chaos.faults(Target::OpenAi).unwrap();
        assert_eq!(plan.draw(), Some(FaultAction::Error));
    }
}
