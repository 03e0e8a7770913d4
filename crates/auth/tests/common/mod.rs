//! Shared fixtures: one dev key pair per test binary, a counting/failing JWKS fetcher, tokens.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use kosha_auth::dev::{self, DevKeys, MintClaims};
use kosha_auth::jwks::{CacheTiming, FetchError, FetchFuture, JwksFetcher};
use kosha_auth::{Role, Verifier, VerifierConfig};
use parking_lot::Mutex;

pub const ISSUER: &str = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Test1";
pub const CLIENT: &str = "agent-client-1";

/// The signing key pair, generated once per test binary.
pub fn keys() -> &'static DevKeys {
    static KEYS: OnceLock<DevKeys> = OnceLock::new();
    KEYS.get_or_init(|| dev::generate().expect("keygen"))
}

/// A second, unrelated key pair.
pub fn other_keys() -> &'static DevKeys {
    static KEYS: OnceLock<DevKeys> = OnceLock::new();
    KEYS.get_or_init(|| dev::generate().expect("keygen"))
}

/// A JWKS fetcher that counts calls, can be switched down, and takes `delay` per call.
pub struct FakeJwks {
    body: Mutex<Option<Vec<u8>>>,
    calls: AtomicUsize,
    delay: Duration,
}

impl FakeJwks {
    pub fn serving(body: &str) -> Arc<Self> {
        Self::slow(body, Duration::from_millis(50))
    }

    pub fn slow(body: &str, delay: Duration) -> Arc<Self> {
        Arc::new(Self {
            body: Mutex::new(Some(body.as_bytes().to_vec())),
            calls: AtomicUsize::new(0),
            delay,
        })
    }

    pub fn down() -> Arc<Self> {
        let fake = Self::serving("");
        fake.set_down();
        fake
    }

    pub fn set_down(&self) {
        *self.body.lock() = None;
    }

    pub fn set_body(&self, body: &str) {
        *self.body.lock() = Some(body.as_bytes().to_vec());
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl JwksFetcher for FakeJwks {
    fn fetch(&self) -> FetchFuture<'_> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.body
                .lock()
                .clone()
                .ok_or_else(|| FetchError::Unavailable("status 503".into()))
        })
    }
}

pub fn config() -> VerifierConfig {
    VerifierConfig::new(ISSUER, None, [CLIENT, "operator-client"], None).expect("config")
}

pub fn verifier(fetcher: Arc<FakeJwks>) -> Verifier {
    Verifier::with_fetcher(config(), fetcher, CacheTiming::default())
}

/// A verifier whose JWKS serves `keys()`, and the fetcher.
pub fn serving_verifier() -> (Verifier, Arc<FakeJwks>) {
    let fake = FakeJwks::serving(&keys().jwks_json);
    (verifier(Arc::clone(&fake)), fake)
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// Valid claims for CLIENT with the agent role, as JSON to modify.
pub fn claims() -> serde_json::Value {
    MintClaims::new(ISSUER, CLIENT, &[Role::Agent])
        .to_json(now())
        .expect("claims")
}

/// `claims` signed with `keys()` under its kid.
pub fn sign(claims: &serde_json::Value) -> String {
    dev::sign_claims(&keys().private_pem, &keys().kid, claims).expect("sign")
}

pub fn valid_token() -> String {
    sign(&claims())
}

pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
