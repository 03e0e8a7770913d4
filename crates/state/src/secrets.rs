//! HMAC keys from Secrets Manager, cached 5 minutes: the chaos-header key (SPEC §9) and the
//! key that seals a confirmation's `requestState` (SPEC §5b). One cache type serves both; each
//! function builds one [`SecretCache`] per secret it reads.
//!
//! **Format.** The secret (`KOSHA_CHAOS_SECRET_ID`, default `kosha/chaos-hmac-key`;
//! `KOSHA_CONFIRM_SECRET_ID`, default `kosha/confirm-hmac-key`) holds the key as a
//! `SecretString` of hex digits — `kosha-ops bootstrap` writes 64 lowercase hex characters
//! (32 random bytes) — and the *decoded bytes* are the HMAC-SHA256 key. Surrounding
//! whitespace is ignored; at least 32 hex characters (16 bytes) are required (the
//! confirmation key's user asks 32 bytes: rmcp's `RequestStateCodec` minimum). A
//! `SecretBinary` is used as raw key bytes (same minimum). Anything else is
//! [`StateError::MalformedSecret`].
//!
//! **Caching.** [`SecretCache::get`] serves the key for 5 minutes (tokio clock) after a fetch;
//! concurrent callers after expiry share one fetch. A failed fetch (an error, or no answer
//! within 2 s or the caller's limit) is remembered for 30 s: until then every call fails at
//! once without asking Secrets Manager (issue #30: with it down, every operator request with
//! a chaos header spent 0.6–2.0 s retrying, and `get_service_health` overran its 1 s budget).
//! [`SecretCache::get_within`] bounds the wait by the caller's time left. The key never
//! appears in logs, errors or `Debug` output.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use kosha_resilience::rate_limit::BoxFuture;
use tokio::time::Instant;

use crate::StateError;

/// Environment variable naming the chaos-header secret (SPEC §9).
pub const CHAOS_SECRET_ENV: &str = "KOSHA_CHAOS_SECRET_ID";
/// The default chaos-header secret id (SPEC §9).
pub const DEFAULT_CHAOS_SECRET_ID: &str = "kosha/chaos-hmac-key";
/// Environment variable naming the secret that seals confirmation states (SPEC §5b).
pub const CONFIRM_SECRET_ENV: &str = "KOSHA_CONFIRM_SECRET_ID";
/// The default confirmation secret id (SPEC §5b).
pub const DEFAULT_CONFIRM_SECRET_ID: &str = "kosha/confirm-hmac-key";
const CACHE_TTL: Duration = Duration::from_secs(300);
const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a failed fetch is remembered (module docs).
pub const FAILURE_TTL: Duration = Duration::from_secs(30);
const MIN_KEY_BYTES: usize = 16;
/// The shortest wait without an answer that marks the store as failing (500 ms; the fetch's
/// own cap is 2 s): a shorter caller's limit that runs out is not remembered. The gateway
/// gives the fetch its tool's budget less the tool's minimum (`get_service_health`: 1 s,
/// `get_transaction`: 2.7 s, capped at 2 s), so a hanging store is remembered from any of
/// them; core-api gives half the request's remaining time, so a request with under 1 s left
/// is not taken as proof.
const CONCLUSIVE_WAIT: Duration = Duration::from_millis(500);

/// HMAC key bytes. Cheap to clone; `Debug` shows only the length.
#[derive(Clone, PartialEq, Eq)]
pub struct HmacKey(Arc<[u8]>);

impl HmacKey {
    /// The key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HmacKey(<redacted {} bytes>)", self.0.len())
    }
}

/// Decodes a `SecretString` (hex, see the module docs) into key bytes.
///
/// # Errors
/// A reason (never the value) when it is not hex or shorter than 16 bytes.
pub fn decode_hmac_key(secret_string: &str) -> Result<HmacKey, &'static str> {
    let bytes = hex::decode(secret_string.trim()).map_err(|_| "not a hex string")?;
    if bytes.len() < MIN_KEY_BYTES {
        return Err("shorter than 16 bytes");
    }
    Ok(HmacKey(bytes.into()))
}

/// Fetches the key: Secrets Manager in production, a fake in tests.
pub trait SecretFetcher: Send + Sync + 'static {
    /// One fetch of the key.
    fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>>;
}

/// The Secrets Manager client, built on the first fetch.
type LazySecretsClient = kosha_runtime::aws::LazyClient<aws_sdk_secretsmanager::Config, Client>;

/// Secrets Manager behind one client built on its first use, shared by the cache of every
/// secret made from it ([`SecretsClient::cache`]): a gateway reading both the chaos and the
/// confirmation key builds one client, not two (about 0.8 ms each, `LazyClient`'s docs).
#[derive(Clone)]
pub struct SecretsClient(Arc<LazySecretsClient>);

impl std::fmt::Debug for SecretsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretsClient")
            .field("built", &self.0.is_built())
            .finish()
    }
}

impl SecretsClient {
    /// A client built from `sdk` on the first fetch: a process that never reads a secret
    /// (production: `CHAOS_ENABLED` is off, and no call needed a confirmation) never builds
    /// it, and a Lambda init does not pay for it ([`kosha_runtime::aws::LazyClient`]).
    pub fn from_sdk(sdk: &aws_config::SdkConfig) -> Self {
        let config = aws_sdk_secretsmanager::Config::new(sdk);
        Self(Arc::new(LazySecretsClient::new(config, Client::from_conf)))
    }

    /// The cache of secret `secret_id` through this client, refreshed every 5 minutes.
    pub fn cache(&self, secret_id: impl Into<String>) -> SecretCache {
        let secret_id = secret_id.into();
        let fetcher = Arc::new(SecretsManager {
            client: self.0.clone(),
            secret_id: secret_id.clone(),
        });
        SecretCache::with_fetcher(fetcher, secret_id, CACHE_TTL)
    }

    /// Whether the client has been built (tests of start-up cost).
    pub fn is_built(&self) -> bool {
        self.0.is_built()
    }
}

struct SecretsManager {
    client: Arc<LazySecretsClient>,
    secret_id: String,
}

impl SecretsManager {
    async fn get(&self) -> Result<HmacKey, StateError> {
        let out = self
            .client
            .get()
            .get_secret_value()
            .secret_id(&self.secret_id)
            .send()
            .await
            .map_err(|e| StateError::aws("GetSecretValue", e))?;
        let malformed = |reason| StateError::MalformedSecret {
            secret_id: self.secret_id.clone(),
            reason,
        };
        if let Some(s) = out.secret_string() {
            return decode_hmac_key(s).map_err(malformed);
        }
        match out.secret_binary() {
            Some(b) if b.as_ref().len() >= MIN_KEY_BYTES => Ok(HmacKey(b.as_ref().into())),
            Some(_) => Err(malformed("shorter than 16 bytes")),
            None => Err(malformed("no SecretString or SecretBinary")),
        }
    }
}

impl SecretFetcher for SecretsManager {
    fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
        Box::pin(self.get())
    }
}

/// One secret's cached key. Share one per secret per process.
pub struct SecretCache {
    fetcher: Arc<dyn SecretFetcher>,
    secret_id: String,
    ttl: Duration,
    cached: tokio::sync::Mutex<Option<Cached>>,
}

/// The last fetch's outcome.
enum Cached {
    /// The key, fetched at this instant.
    Key(Instant, HmacKey),
    /// A fetch failed at this instant.
    Failed(Instant),
}

impl std::fmt::Debug for SecretCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretCache")
            .field("secret_id", &self.secret_id)
            .field("ttl", &self.ttl)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl SecretCache {
    /// A cache over Secrets Manager secret `secret_id` through `client`, refreshed every
    /// 5 minutes.
    pub fn new(client: Client, secret_id: impl Into<String>) -> Self {
        let config = client.config().clone();
        let client = LazySecretsClient::built(config, Client::from_conf, client);
        SecretsClient(Arc::new(client)).cache(secret_id)
    }

    /// The same, with a client of its own built from `sdk` on the first fetch
    /// ([`SecretsClient::from_sdk`]; a process reading several secrets shares one
    /// [`SecretsClient`] instead).
    pub fn from_sdk(sdk: &aws_config::SdkConfig, secret_id: impl Into<String>) -> Self {
        SecretsClient::from_sdk(sdk).cache(secret_id)
    }

    /// A lazily built cache ([`SecretCache::from_sdk`]) over the secret named by
    /// `KOSHA_CHAOS_SECRET_ID` (default `kosha/chaos-hmac-key`).
    pub fn from_env(sdk: &aws_config::SdkConfig) -> Self {
        let id = std::env::var(CHAOS_SECRET_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_CHAOS_SECRET_ID.to_owned());
        Self::from_sdk(sdk, id.trim())
    }

    /// A cache over any fetcher, keeping each key for `ttl` (tests).
    pub fn with_fetcher(
        fetcher: Arc<dyn SecretFetcher>,
        secret_id: impl Into<String>,
        ttl: Duration,
    ) -> Self {
        Self {
            fetcher,
            secret_id: secret_id.into(),
            ttl,
            cached: tokio::sync::Mutex::new(None),
        }
    }

    /// The secret's id.
    pub fn secret_id(&self) -> &str {
        &self.secret_id
    }

    /// The key: cached when fetched less than the TTL ago, else fetched now (2 s bound); an
    /// error at once while a failure is remembered (module docs).
    ///
    /// # Errors
    /// [`StateError::Aws`], [`StateError::Timeout`] or [`StateError::MalformedSecret`].
    pub async fn get(&self) -> Result<HmacKey, StateError> {
        self.get_within(FETCH_TIMEOUT).await
    }

    /// [`SecretCache::get`], waiting at most `limit` in all (for the lock a concurrent fetch
    /// holds, and for a fetch of its own): a key fetch never takes a request past its budget.
    ///
    /// # Errors
    /// As [`SecretCache::get`]; [`StateError::Timeout`] when `limit` passes.
    pub async fn get_within(&self, limit: Duration) -> Result<HmacKey, StateError> {
        let until = Instant::now() + limit.min(FETCH_TIMEOUT);
        let timeout = || StateError::Timeout {
            operation: "GetSecretValue",
        };
        let mut cached = tokio::time::timeout_at(until, self.cached.lock())
            .await
            .map_err(|_| timeout())?;
        match cached.as_ref() {
            Some(Cached::Key(at, key)) if at.elapsed() < self.ttl => return Ok(key.clone()),
            Some(Cached::Failed(at)) if at.elapsed() < FAILURE_TTL => {
                return Err(StateError::Aws {
                    operation: "GetSecretValue",
                    message: "failed less than 30 s ago; not asked again yet".into(),
                });
            }
            _ => {}
        }
        let fetched = match tokio::time::timeout_at(until, self.fetcher.fetch()).await {
            Ok(fetched) => fetched,
            // A store that gave no answer within the time we gave it is remembered as failing
            // only when that time was long enough to conclude it ([`CONCLUSIVE_WAIT`]): a fetch
            // cut short by one caller's nearly spent budget says nothing of the store, and
            // remembering it turned chaos verification off for every caller for 30 s (found
            // by the attack pass of 2026-12-03).
            Err(_) if limit < CONCLUSIVE_WAIT => return Err(timeout()),
            Err(_) => Err(timeout()),
        };
        *cached = Some(match &fetched {
            Ok(key) => Cached::Key(Instant::now(), key.clone()),
            Err(_) => Cached::Failed(Instant::now()),
        });
        fetched
    }
}

#[cfg(test)]
mod tests;
