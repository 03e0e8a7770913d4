//! The embeddings API core-api calls for hybrid search (SPEC §4 "Embeddings", seed 004 §1
//! `openai` row): an OpenAI-compatible `POST {KOSHA_EMBEDDINGS_URL}/embeddings`.
//!
//! - [`EmbeddingsConfig`]: URL (the base includes `/v1`), model, dimensions and the `openai`
//!   policy, read once in `main` ([`EmbeddingsConfig::from_lookup`]); `None` when
//!   `KOSHA_EMBEDDINGS_URL` is unset (search is then full text only, reported as degraded).
//! - [`ApiKey`]: the bearer key, from the Secrets Manager secret
//!   `KOSHA_EMBEDDINGS_API_KEY_SECRET_ARN` when deployed (none locally); never logged.
//! - [`client::Embedder`]: the HTTP client under the policy, and [`client::EmbedError`].
//!
//! Neighbours: [`crate::search`] calls the embedder for a query (and degrades when it fails);
//! [`crate::backfill`] embeds article passages for `core-api embed`.

pub mod client;

use std::time::Duration;

use kosha_resilience::config::{PolicyConfig, Profile};
use kosha_runtime::config::ConfigError;

pub use client::{EmbedError, Embedder};

/// Seed 004 §1, OpenAI embeddings: 2 s attempt cap, 100 ms margin, 2 attempts, bulkhead 8,
/// breaker window 10 calls at 50 %, open 30 s.
pub const OPENAI_PROFILE: Profile = Profile {
    attempt_cap: Duration::from_secs(2),
    attempt_margin: Duration::from_millis(100),
    max_attempts: 2,
    bulkhead: 8,
    breaker_window: 10,
    open_for: Duration::from_secs(30),
};

/// Env prefix of the `openai` policy overrides (`KOSHA_POLICY_OPENAI_BREAKER_OPEN_MS`, …;
/// names in `kosha_resilience::config`).
pub const POLICY_ENV_PREFIX: &str = "KOSHA_POLICY_OPENAI";

/// Default `KOSHA_EMBEDDINGS_MODEL` (OpenAI's).
pub const DEFAULT_MODEL: &str = "text-embedding-3-small";

/// Default `KOSHA_EMBEDDINGS_DIMENSIONS`.
pub const DEFAULT_DIMENSIONS: u32 = 1536;

/// Largest accepted `KOSHA_EMBEDDINGS_DIMENSIONS` (OpenAI's largest model has 3,072).
pub const MAX_DIMENSIONS: u32 = 4096;

/// Where and how to embed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingsConfig {
    /// Base URL including `/v1`, without a trailing `/` (`http://127.0.0.1:PORT/v1`,
    /// `https://api.openai.com/v1`).
    pub url: String,
    /// `model` of every request, and the model name stored with each vector.
    pub model: String,
    /// `dimensions` of every request; answers of another length are refused.
    pub dimensions: u32,
    /// The `openai` policy (seed 004 §1 with `KOSHA_POLICY_OPENAI_*` overrides).
    pub policy: PolicyConfig,
    /// Secrets Manager id of the API key, when deployed.
    pub api_key_secret_arn: Option<String>,
}

impl EmbeddingsConfig {
    /// Reads `KOSHA_EMBEDDINGS_URL` (absent → `Ok(None)`), `KOSHA_EMBEDDINGS_MODEL`
    /// ([`DEFAULT_MODEL`]), `KOSHA_EMBEDDINGS_DIMENSIONS` (1–[`MAX_DIMENSIONS`],
    /// [`DEFAULT_DIMENSIONS`]), `KOSHA_EMBEDDINGS_API_KEY_SECRET_ARN` and the policy
    /// overrides through `lookup`.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable (never its value).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, ConfigError> {
        let get = |key: &str| lookup(key).filter(|v| !v.trim().is_empty());
        let Some(url) = get("KOSHA_EMBEDDINGS_URL") else {
            return Ok(None);
        };
        let url = url.trim().trim_end_matches('/').to_owned();
        let parsed = url::Url::parse(&url)
            .map_err(|_| ConfigError::new("KOSHA_EMBEDDINGS_URL", "must be an http(s) URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            return Err(ConfigError::new(
                "KOSHA_EMBEDDINGS_URL",
                "must be an http(s) URL",
            ));
        }
        let model = get("KOSHA_EMBEDDINGS_MODEL")
            .map_or_else(|| DEFAULT_MODEL.to_owned(), |m| m.trim().to_owned());
        let dimensions = match get("KOSHA_EMBEDDINGS_DIMENSIONS") {
            None => DEFAULT_DIMENSIONS,
            Some(d) => d
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|d| (1..=MAX_DIMENSIONS).contains(d))
                .ok_or_else(|| {
                    ConfigError::new(
                        "KOSHA_EMBEDDINGS_DIMENSIONS",
                        format!("must be an integer from 1 to {MAX_DIMENSIONS}"),
                    )
                })?,
        };
        let policy = PolicyConfig::from_lookup(OPENAI_PROFILE, POLICY_ENV_PREFIX, &lookup)
            .map_err(|e| ConfigError::new(POLICY_ENV_PREFIX, e.to_string()))?;
        Ok(Some(Self {
            url,
            model,
            dimensions,
            policy,
            api_key_secret_arn: get("KOSHA_EMBEDDINGS_API_KEY_SECRET_ARN"),
        }))
    }
}

/// The embeddings API key. `Debug` shows nothing of it; it is only ever put in the
/// `Authorization` header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// The key from a secret's `SecretString` (surrounding whitespace dropped); `None` when
    /// empty.
    pub fn from_secret(secret_string: &str) -> Option<Self> {
        let key = secret_string.trim();
        (!key.is_empty()).then(|| Self(key.to_owned()))
    }

    /// The key, for the `Authorization: Bearer` header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<EmbeddingsConfig>, String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        EmbeddingsConfig::from_lookup(|k| map.get(k).cloned()).map_err(|e| e.to_string())
    }

    #[test]
    fn absent_url_means_no_embedder() {
        assert_eq!(read(&[]), Ok(None));
        assert_eq!(read(&[("KOSHA_EMBEDDINGS_URL", " ")]), Ok(None));
    }

    #[test]
    fn reads_url_model_dimensions_and_the_seed_policy() {
        let c = read(&[
            ("KOSHA_EMBEDDINGS_URL", "http://127.0.0.1:9/v1/"),
            ("KOSHA_EMBEDDINGS_MODEL", "wordllama-l2-supercat-256"),
            ("KOSHA_EMBEDDINGS_DIMENSIONS", "256"),
            ("KOSHA_POLICY_OPENAI_BREAKER_OPEN_MS", "3000"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.url, "http://127.0.0.1:9/v1");
        assert_eq!(c.model, "wordllama-l2-supercat-256");
        assert_eq!(c.dimensions, 256);
        assert_eq!(c.policy.attempt.cap, Duration::from_secs(2));
        assert_eq!(c.policy.retry.max_attempts, 2);
        assert_eq!(c.policy.bulkhead.capacity, 8);
        assert_eq!(c.policy.breaker.window, 10);
        assert_eq!(c.policy.breaker.open_duration, Duration::from_secs(3));
    }

    #[test]
    fn refuses_bad_values_naming_the_variable() {
        for (pairs, name) in [
            (
                vec![("KOSHA_EMBEDDINGS_URL", "not a url")],
                "KOSHA_EMBEDDINGS_URL",
            ),
            (
                vec![("KOSHA_EMBEDDINGS_URL", "ftp://x/v1")],
                "KOSHA_EMBEDDINGS_URL",
            ),
            (
                vec![
                    ("KOSHA_EMBEDDINGS_URL", "http://x/v1"),
                    ("KOSHA_EMBEDDINGS_DIMENSIONS", "0"),
                ],
                "KOSHA_EMBEDDINGS_DIMENSIONS",
            ),
            (
                vec![
                    ("KOSHA_EMBEDDINGS_URL", "http://x/v1"),
                    ("KOSHA_POLICY_OPENAI_MAX_ATTEMPTS", "two"),
                ],
                "KOSHA_POLICY_OPENAI",
            ),
        ] {
            let e = read(&pairs).unwrap_err();
            assert!(e.contains(name), "{e}");
        }
    }

    #[test]
    fn the_key_is_never_shown() {
        let key = ApiKey::from_secret(" sk-secret\n").unwrap();
        assert_eq!(key.expose(), "sk-secret");
        assert!(!format!("{key:?}").contains("sk-secret"));
        assert_eq!(ApiKey::from_secret("  "), None);
    }
}
