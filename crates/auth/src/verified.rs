//! [`VerifiedTokens`]: tokens already verified, remembered until they expire, so an agent's
//! every call does not pay an RS256 verification (issue 16; Envoy's `jwt_authn` keeps the
//! same kind of cache of verified tokens).
//!
//! - **Key:** a 128-bit SipHash-2-4 of the token under a key drawn at random per cache; no
//!   token text is kept. SipHash is a pseudorandom function (Aumasson and Bernstein, 2012): a
//!   caller without the key cannot aim a token at another's entry, and two of
//!   [`MAX_ENTRIES`] tokens share a key by chance with odds below 2⁻¹⁰⁰. It costs about a
//!   tenth of the SHA-256 it replaces (28,738 instructions per ~800-byte token under
//!   callgrind, issue 29). Without randomness from the OS the cache stays off.
//! - **Lifetime:** until the token's `exp` plus the leeway: the instant verification itself
//!   would start refusing it.
//! - **The key still counts:** an entry keeps the `kid` the token was signed with, and
//!   [`crate::Verifier`] looks that key up in the JWKS cache on every hit (a map look-up;
//!   it starts the cache's refreshes as a verification would). A key withdrawn from the JWKS,
//!   or keys lost past the JWKS grace, refuse the token at once, exactly as before the cache.
//! - **What enters:** only tokens that passed every check of [`crate::Verifier`]. A refused
//!   token is never remembered, so a flood of bad tokens costs verification each time and
//!   cannot push the good ones out.
//! - **Size:** at most [`MAX_ENTRIES`]; a full cache first drops its expired entries, then,
//!   if still full, everything (each client then pays one verification again).

use std::collections::HashMap;

use std::hash::Hasher as _;

use parking_lot::Mutex;
use siphasher::sip128::{Hasher128 as _, SipHasher24};

use crate::principal::Principal;

/// Most tokens remembered at once.
pub const MAX_ENTRIES: usize = 10_000;

/// Tokens already verified, with their principals. Share one per verifier.
pub struct VerifiedTokens {
    /// The SipHash key, 128 random bits; `None` when the OS gave no randomness, and then
    /// nothing is remembered (every call pays a verification).
    key: Option<[u8; 16]>,
    entries: Mutex<HashMap<u128, Entry>>,
}

impl Default for VerifiedTokens {
    /// An empty cache with a fresh random key.
    fn default() -> Self {
        use rand::TryRngCore as _;
        let mut key = [0; 16];
        // The OS source, not aws-lc's: its first use seeds aws-lc's generator, which took
        // ~60 ms of CPU, and this runs in the Lambda init.
        let key = match rand::rngs::OsRng.try_fill_bytes(&mut key) {
            Ok(()) => Some(key),
            Err(_) => {
                tracing::warn!("no randomness for the verified-token cache: it stays off");
                None
            }
        };
        Self {
            key,
            entries: Mutex::default(),
        }
    }
}

impl std::fmt::Debug for VerifiedTokens {
    /// The number of entries; never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedTokens")
            .field("entries", &self.entries.lock().len())
            .finish_non_exhaustive()
    }
}

/// A verified token: its principal and signing key id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Who the token says is calling.
    pub principal: Principal,
    /// The `kid` of the key that signed it.
    pub kid: String,
}

#[derive(Debug)]
struct Entry {
    verified: Verified,
    /// `exp` + leeway: remembered while `now_s < until_s`.
    until_s: u64,
}

impl VerifiedTokens {
    fn key(&self, token: &str) -> Option<u128> {
        let mut hasher = SipHasher24::new_with_key(self.key.as_ref()?);
        hasher.write(token.as_bytes());
        Some(hasher.finish128().as_u128())
    }

    /// What `token` was verified as, when it is still remembered at `now_s` (seconds since
    /// the Unix epoch). The caller still checks the key ([`Verified::kid`]).
    pub fn get(&self, token: &str, now_s: u64) -> Option<Verified> {
        let key = self.key(token)?;
        let mut entries = self.entries.lock();
        match entries.get(&key) {
            Some(e) if now_s < e.until_s => Some(e.verified.clone()),
            Some(_) => {
                entries.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Remembers `token`, verified at `now_s`, until its `exp + leeway_s`.
    pub fn insert(&self, token: &str, verified: Verified, leeway_s: u64, now_s: u64) {
        let until_s = verified.principal.expires_at.saturating_add(leeway_s);
        let Some(key) = self.key(token).filter(|_| now_s < until_s) else {
            return;
        };
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, e| now_s < e.until_s);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, Entry { verified, until_s });
    }

    /// How many tokens are remembered (expired ones included until looked up or dropped).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::Role;

    const NOW: u64 = 1_796_000_000;

    fn verified(expires_at: u64) -> Verified {
        Verified {
            principal: Principal {
                client_id: "agent-1".into(),
                subject: "agent-1".into(),
                username: None,
                roles: vec![Role::Agent],
                scopes: vec![],
                groups: vec![],
                tags: Default::default(),
                expires_at,
            },
            kid: "k1".into(),
        }
    }

    #[test]
    fn a_token_is_remembered_until_its_expiry_plus_leeway() {
        let cache = VerifiedTokens::default();
        cache.insert("tok", verified(NOW + 100), 60, NOW);
        assert_eq!(cache.get("tok", NOW), Some(verified(NOW + 100)));
        assert!(cache.get("tok", NOW + 159).is_some());
        assert!(cache.get("tok", NOW + 160).is_none());
        assert_eq!(cache.len(), 0, "an expired entry is dropped when met");
    }

    #[test]
    fn another_token_finds_nothing_and_an_expired_token_is_not_stored() {
        let cache = VerifiedTokens::default();
        cache.insert("tok", verified(NOW + 100), 0, NOW);
        assert!(cache.get("tok2", NOW).is_none());
        assert!(cache.get("to", NOW).is_none());
        cache.insert("old", verified(NOW - 61), 60, NOW);
        assert!(cache.get("old", NOW).is_none());
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn without_a_key_nothing_is_remembered_and_debug_never_shows_the_key() {
        let off = VerifiedTokens {
            key: None,
            entries: Mutex::default(),
        };
        off.insert("tok", verified(NOW + 100), 60, NOW);
        assert!(off.get("tok", NOW).is_none());
        assert_eq!(off.len(), 0);
        let on = VerifiedTokens::default();
        on.insert("tok", verified(NOW + 100), 60, NOW);
        assert_eq!(
            format!("{on:?}"),
            "VerifiedTokens { entries: 1, .. }",
            "the key is a secret"
        );
    }

    #[test]
    fn a_full_cache_drops_expired_entries_first_then_everything() {
        let cache = VerifiedTokens::default();
        for i in 0..MAX_ENTRIES {
            // Half of them expire at NOW + 10.
            let exp = if i % 2 == 0 { NOW + 10 } else { NOW + 200 };
            cache.insert(&format!("t{i}"), verified(exp), 0, NOW);
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        cache.insert("new", verified(NOW + 200), 0, NOW + 20);
        assert_eq!(cache.len(), MAX_ENTRIES / 2 + 1);
        assert!(cache.get("t1", NOW + 20).is_some(), "live entries kept");
        assert!(cache.get("new", NOW + 20).is_some());
        for i in 0..MAX_ENTRIES - cache.len() {
            cache.insert(&format!("u{i}"), verified(NOW + 200), 0, NOW + 20);
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        cache.insert("last", verified(NOW + 200), 0, NOW + 20);
        assert_eq!(cache.len(), 1, "full of live entries: starts over");
        assert!(cache.get("last", NOW + 20).is_some());
    }
}
