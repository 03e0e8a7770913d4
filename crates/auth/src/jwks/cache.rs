//! The JWKS key cache: fresh for 10 min, usable for 50 min more, refreshed lazily
//! (SPEC §5, SPEC §10 "JWKS" row, ARCHITECTURE pitfall 13).
//!
//! **What it holds.** One snapshot: the usable RS256 signing keys by `kid` and the tokio
//! [`Instant`] they were fetched. A successful fetch replaces the whole snapshot (a key dropped
//! from the JWKS is dropped here); a failed fetch, or a document with no usable key, keeps it.
//!
//! **Ages.** `age < fresh_for` (10 min): fresh. `fresh_for ≤ age < fresh_for + grace`
//! (10–60 min): stale but usable. `age ≥ 60 min`: unusable, as if cold.
//!
//! **When it fetches** (the rule):
//! 1. A known `kid` in a fresh snapshot: no fetch.
//! 2. A known `kid` in a stale-but-usable snapshot: the request is answered from the cache at
//!    once, and — unless a fetch is in flight or one started < 30 s ago — a refresh is
//!    *spawned* and not awaited (refresh-ahead). On Lambda the task runs while the invocation is
//!    still being processed; if the process is frozen mid-fetch, the fetch resumes or times out
//!    (3 s) at the next thaw and the next stale request tries again. Nothing blocks on it.
//! 3. An unknown `kid`, a cold cache or an unusable snapshot: the request waits for one fetch,
//!    then looks again. Single-flight: concurrent callers queue on one async mutex, and a caller
//!    that gets it after another caller's attempt re-reads the cache instead of fetching.
//! 4. Throttle: whatever the trigger, at most one fetch attempt starts per `min_refresh_interval`
//!    (30 s). A flood of junk `kid`s cannot stampede the endpoint; a down endpoint with a cold
//!    cache is retried at most every 30 s, and meanwhile tokens get `invalid_token`.
//!
//! The async mutex is held only around the fetch, never around verification; the state mutex
//! (parking_lot) is never held across an await.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, KeyAlgorithm, PublicKeyUse};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::fetch::JwksFetcher;

/// Cache ages (SPEC §5). [`CacheTiming::default`] is the specified 10 min / 50 min / 30 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheTiming {
    /// How long a fetched key set is fresh (10 min).
    pub fresh_for: Duration,
    /// How much longer a stale key set may serve when refreshing fails (50 min).
    pub grace: Duration,
    /// Smallest gap between two fetch attempts, whatever triggers them (30 s).
    pub min_refresh_interval: Duration,
}

impl Default for CacheTiming {
    fn default() -> Self {
        Self {
            fresh_for: Duration::from_secs(10 * 60),
            grace: Duration::from_secs(50 * 60),
            min_refresh_interval: Duration::from_secs(30),
        }
    }
}

/// Why no key was found; logged at debug level by the verifier, never shown to clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyMiss {
    /// No usable snapshot (cold, or past grace) and the fetch failed or was throttled.
    NoKeys,
    /// Usable keys exist but none has this `kid`.
    UnknownKid,
}

struct Snapshot {
    keys: HashMap<String, Arc<DecodingKey>>,
    fetched_at: Instant,
}

#[derive(Default)]
struct State {
    snapshot: Option<Arc<Snapshot>>,
    last_attempt: Option<Instant>,
    attempts: u64,
}

/// Keys by `kid`, fetched through a [`JwksFetcher`] under the rule in the module docs.
pub(crate) struct KeyCache {
    fetcher: Arc<dyn JwksFetcher>,
    timing: CacheTiming,
    state: Mutex<State>,
    refresh: Arc<tokio::sync::Mutex<()>>,
}

impl KeyCache {
    pub(crate) fn new(fetcher: Arc<dyn JwksFetcher>, timing: CacheTiming) -> Self {
        Self {
            fetcher,
            timing,
            state: Mutex::new(State::default()),
            refresh: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The key for `kid`, fetching per rules 2–4 of the module docs.
    pub(crate) async fn key(self: &Arc<Self>, kid: &str) -> Result<Arc<DecodingKey>, KeyMiss> {
        let (snapshot, seen_attempts) = {
            let state = self.state.lock();
            (state.snapshot.clone(), state.attempts)
        };
        if let Some(snapshot) = snapshot.as_deref().filter(|s| self.usable(s))
            && let Some(key) = snapshot.keys.get(kid)
        {
            if self.stale(snapshot) {
                self.refresh_ahead();
            }
            return Ok(Arc::clone(key));
        }
        self.refresh_inline(seen_attempts).await;
        let state = self.state.lock();
        match state.snapshot.as_deref().filter(|s| self.usable(s)) {
            Some(snapshot) => snapshot.keys.get(kid).cloned().ok_or(KeyMiss::UnknownKid),
            None => Err(KeyMiss::NoKeys),
        }
    }

    fn usable(&self, snapshot: &Snapshot) -> bool {
        snapshot.fetched_at.elapsed() < self.timing.fresh_for + self.timing.grace
    }

    fn stale(&self, snapshot: &Snapshot) -> bool {
        snapshot.fetched_at.elapsed() >= self.timing.fresh_for
    }

    /// Marks an attempt as started unless one started within `min_refresh_interval`.
    fn claim_attempt(&self, state: &mut State) -> bool {
        let now = Instant::now();
        let throttled = state.last_attempt.is_some_and(|last| {
            now.saturating_duration_since(last) < self.timing.min_refresh_interval
        });
        if throttled {
            return false;
        }
        state.last_attempt = Some(now);
        state.attempts += 1;
        true
    }

    // Rule 3: wait for the one fetch; skip it if another caller attempted since we looked.
    async fn refresh_inline(&self, seen_attempts: u64) {
        let _in_flight = self.refresh.lock().await;
        let go = {
            let mut state = self.state.lock();
            state.attempts == seen_attempts && self.claim_attempt(&mut state)
        };
        if go {
            self.fetch_and_store().await;
        }
    }

    // Rule 2: spawn a refresh without waiting; nothing if one is in flight or throttled.
    fn refresh_ahead(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Ok(in_flight) = Arc::clone(&self.refresh).try_lock_owned() else {
            return;
        };
        if !self.claim_attempt(&mut self.state.lock()) {
            return;
        }
        let cache = Arc::clone(self);
        runtime.spawn(async move {
            let _in_flight = in_flight;
            cache.fetch_and_store().await;
        });
    }

    async fn fetch_and_store(&self) {
        let body = match self.fetcher.fetch().await {
            Ok(body) => body,
            Err(error) => {
                tracing::warn!(%error, "JWKS fetch failed; cached keys serve until grace ends");
                return;
            }
        };
        let keys = match parse_jwks(&body) {
            Ok(keys) if !keys.is_empty() => keys,
            Ok(_) => {
                tracing::warn!("JWKS has no usable RS256 signing key; keeping cached keys");
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "JWKS is not a JSON key set; keeping cached keys");
                return;
            }
        };
        tracing::debug!(keys = keys.len(), "JWKS refreshed");
        let snapshot = Snapshot {
            keys,
            fetched_at: Instant::now(),
        };
        self.state.lock().snapshot = Some(Arc::new(snapshot));
    }
}

#[derive(serde::Deserialize)]
struct RawKeySet {
    keys: Vec<serde_json::Value>,
}

/// The RS256 signing keys of a JWKS by `kid`. Keys that are not RSA, declare another `alg` or
/// `use`, have no `kid`, or do not parse are skipped (a JWKS may list keys for other uses).
fn parse_jwks(body: &[u8]) -> Result<HashMap<String, Arc<DecodingKey>>, serde_json::Error> {
    let raw: RawKeySet = serde_json::from_slice(body)?;
    let mut keys = HashMap::new();
    for value in raw.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
            continue;
        };
        let Some(kid) = jwk.common.key_id.clone() else {
            continue;
        };
        let rsa = matches!(jwk.algorithm, AlgorithmParameters::RSA(_));
        let alg_ok = matches!(jwk.common.key_algorithm, None | Some(KeyAlgorithm::RS256));
        let use_ok = matches!(
            jwk.common.public_key_use,
            None | Some(PublicKeyUse::Signature)
        );
        if !(rsa && alg_ok && use_ok) {
            continue;
        }
        if let Ok(key) = DecodingKey::from_jwk(&jwk) {
            keys.insert(kid, Arc::new(key));
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rsa_signing_keys_with_a_kid_are_kept() {
        let body = br#"{"keys":[
            {"kty":"RSA","kid":"good","alg":"RS256","use":"sig","n":"sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw","e":"AQAB"},
            {"kty":"RSA","alg":"RS256","n":"AQAB","e":"AQAB"},
            {"kty":"oct","kid":"hmac","k":"c2VjcmV0"},
            {"kty":"RSA","kid":"enc","use":"enc","n":"AQAB","e":"AQAB"},
            {"kty":"RSA","kid":"ps","alg":"PS256","n":"AQAB","e":"AQAB"},
            {"kty":"weird"}
        ]}"#;
        let keys = parse_jwks(body).unwrap();
        assert_eq!(keys.keys().collect::<Vec<_>>(), vec!["good"]);
    }

    #[test]
    fn non_json_is_an_error() {
        assert!(parse_jwks(b"<html>").is_err());
    }
}
