//! The chaos HMAC key from Secrets Manager, cached 5 minutes (SPEC §9).
//!
//! **Format.** The secret `KOSHA_CHAOS_SECRET_ID` (default `kosha/chaos-hmac-key`) holds the
//! key as a `SecretString` of hex digits — `kosha-ops bootstrap` writes 64 lowercase hex
//! characters (32 random bytes) — and the *decoded bytes* are the HMAC-SHA256 key. Surrounding
//! whitespace is ignored; at least 32 hex characters (16 bytes) are required. A
//! `SecretBinary` is used as raw key bytes (same minimum). Anything else is
//! [`StateError::MalformedSecret`].
//!
//! **Caching.** [`SecretCache::get`] serves the key for 5 minutes (tokio clock) after a fetch;
//! concurrent callers after expiry share one fetch. A failed fetch returns the error and
//! caches nothing, so the next call tries again. The key never appears in logs, errors or
//! `Debug` output.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use kosha_resilience::rate_limit::BoxFuture;
use tokio::time::Instant;

use crate::StateError;

/// Environment variable naming the secret (SPEC §9).
pub const CHAOS_SECRET_ENV: &str = "KOSHA_CHAOS_SECRET_ID";
/// The default secret id (SPEC §9).
pub const DEFAULT_CHAOS_SECRET_ID: &str = "kosha/chaos-hmac-key";
const CACHE_TTL: Duration = Duration::from_secs(300);
const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
const MIN_KEY_BYTES: usize = 16;

/// HMAC key bytes. Cheap to clone; `Debug` shows only the length.
#[derive(Clone, PartialEq, Eq)]
pub struct ChaosKey(Arc<[u8]>);

impl ChaosKey {
    /// The key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for ChaosKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChaosKey(<redacted {} bytes>)", self.0.len())
    }
}

/// Decodes a `SecretString` (hex, see the module docs) into key bytes.
///
/// # Errors
/// A reason (never the value) when it is not hex or shorter than 16 bytes.
pub fn decode_chaos_key(secret_string: &str) -> Result<ChaosKey, &'static str> {
    let bytes = hex::decode(secret_string.trim()).map_err(|_| "not a hex string")?;
    if bytes.len() < MIN_KEY_BYTES {
        return Err("shorter than 16 bytes");
    }
    Ok(ChaosKey(bytes.into()))
}

/// Fetches the key: Secrets Manager in production, a fake in tests.
pub trait SecretFetcher: Send + Sync + 'static {
    /// One fetch of the key.
    fn fetch(&self) -> BoxFuture<'_, Result<ChaosKey, StateError>>;
}

/// The Secrets Manager client, built on the first fetch.
type LazySecretsClient = kosha_runtime::aws::LazyClient<aws_sdk_secretsmanager::Config, Client>;

struct SecretsManager {
    client: LazySecretsClient,
    secret_id: String,
}

impl SecretsManager {
    async fn get(&self) -> Result<ChaosKey, StateError> {
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
            return decode_chaos_key(s).map_err(malformed);
        }
        match out.secret_binary() {
            Some(b) if b.as_ref().len() >= MIN_KEY_BYTES => Ok(ChaosKey(b.as_ref().into())),
            Some(_) => Err(malformed("shorter than 16 bytes")),
            None => Err(malformed("no SecretString or SecretBinary")),
        }
    }
}

impl SecretFetcher for SecretsManager {
    fn fetch(&self) -> BoxFuture<'_, Result<ChaosKey, StateError>> {
        Box::pin(self.get())
    }
}

/// The cached chaos key. Share one per process.
pub struct SecretCache {
    fetcher: Arc<dyn SecretFetcher>,
    secret_id: String,
    ttl: Duration,
    cached: tokio::sync::Mutex<Option<(Instant, ChaosKey)>>,
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
        Self::over(
            LazySecretsClient::built(config, Client::from_conf, client),
            secret_id,
        )
    }

    /// The same, with a client built from `sdk` on the first fetch: a process that never
    /// verifies a chaos header (production: `CHAOS_ENABLED` is off) never builds it, and a
    /// Lambda init does not pay for it ([`kosha_runtime::aws::LazyClient`]).
    pub fn from_sdk(sdk: &aws_config::SdkConfig, secret_id: impl Into<String>) -> Self {
        let config = aws_sdk_secretsmanager::Config::new(sdk);
        Self::over(LazySecretsClient::new(config, Client::from_conf), secret_id)
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

    fn over(client: LazySecretsClient, secret_id: impl Into<String>) -> Self {
        let secret_id = secret_id.into();
        let fetcher = Arc::new(SecretsManager {
            client,
            secret_id: secret_id.clone(),
        });
        Self::with_fetcher(fetcher, secret_id, CACHE_TTL)
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

    /// The key: cached when fetched less than the TTL ago, else fetched now (2 s bound).
    ///
    /// # Errors
    /// [`StateError::Aws`], [`StateError::Timeout`] or [`StateError::MalformedSecret`].
    pub async fn get(&self) -> Result<ChaosKey, StateError> {
        let mut cached = self.cached.lock().await;
        if let Some((at, key)) = cached.as_ref()
            && at.elapsed() < self.ttl
        {
            return Ok(key.clone());
        }
        let key = tokio::time::timeout(FETCH_TIMEOUT, self.fetcher.fetch())
            .await
            .map_err(|_| StateError::Timeout {
                operation: "GetSecretValue",
            })??;
        *cached = Some((Instant::now(), key.clone()));
        Ok(key)
    }
}

#[cfg(test)]
mod tests;
