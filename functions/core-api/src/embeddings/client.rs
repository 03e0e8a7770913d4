//! The embeddings HTTP client under the `openai` policy (seed 004 §1; SPEC §4, §7).
//!
//! - **Request:** `POST {url}/embeddings` with `{"model", "input": [..], "dimensions",
//!   "encoding_format": "float"}` and `Authorization: Bearer <key>` when a key is configured.
//! - **Answer:** `{"data": [{"index", "embedding": [..]}, ..]}`; each vector must have exactly
//!   the configured `dimensions`, finite components and a non-zero norm, and every input one
//!   vector; anything else is [`EmbedError::Malformed`] (a breaker failure, not retried). The
//!   vectors are returned L2-normalised, in input order, so cosine similarity is a dot product.
//! - **Policy:** every call goes through [`Policy::call_with_faults`]: deadline, bulkhead 8,
//!   breaker (10 calls, 50 %, open 30 s), 2 attempts, each under `min(remaining − 100 ms, 2 s)`
//!   (SPEC §7). The policy drops an attempt that runs out of time, which cancels the HTTP
//!   request. 429 is retried after `retry-after-ms` or `Retry-After` (seconds) when the
//!   deadline leaves room, and never counts against the breaker; 5xx, timeouts and connection
//!   errors do (seed 004 §3).
//! - **Chaos seam:** `faults` is the plan for the `openai` target of a verified chaos header
//!   (SPEC §9); `None` until core-api verifies the header.
//! - **Secrets:** the key is never logged; errors carry no body text from the API.

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

use kosha_contract::core_api::EmbedderHealth;
use kosha_contract::dependency::Dependency;
use kosha_resilience::chaos::{Faults, InjectedFault};
use kosha_resilience::classify::{Classify, ErrorClass};
use kosha_resilience::deadline::Deadline;
use kosha_resilience::error::ConfigError;
use kosha_resilience::overrides::OverrideSource;
use kosha_resilience::policy::{Health, Policy, PolicyError};
use kosha_resilience::retry::Idempotency;
use kosha_runtime::semconv;
use rand::rngs::SmallRng;
use reqwest::header::{AUTHORIZATION, HeaderMap, RETRY_AFTER};
use serde::{Deserialize, Serialize};

use super::{ApiKey, EmbeddingsConfig};

/// The chaos fault plan for the `openai` target (SPEC §9), drawn once per attempt.
pub type FaultPlan = Faults<SmallRng>;

/// Largest answer body read, in bytes (a batch of 32 vectors of 3,072 floats as JSON is about
/// 2 MB).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The dependency of the policy and the breaker override (SPEC §8).
pub const DEPENDENCY: Dependency = Dependency::OpenAi;

/// Why one attempt failed; classified for the policy through [`Classify`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    /// The API could not be reached, or the connection broke before an answer.
    #[error("cannot reach the embeddings API")]
    Connect,
    /// The API did not answer in time (reqwest's own timeout).
    #[error("the embeddings API did not answer in time")]
    Timeout,
    /// The API answered this status.
    #[error("the embeddings API answered {status}")]
    Status {
        /// HTTP status.
        status: u16,
        /// `retry-after-ms` or `Retry-After` (seconds), when sent.
        retry_after: Option<Duration>,
    },
    /// The answer is not the OpenAI shape, or a vector has the wrong length or bad numbers.
    #[error("the embeddings API answered an unusable body: {0}")]
    Malformed(String),
    /// The request could not be built (a configuration fault, not the API's).
    #[error("cannot build the embeddings request")]
    Request,
    /// A chaos fault (SPEC §9).
    #[error(transparent)]
    Injected(#[from] InjectedFault),
}

impl Classify for EmbedError {
    fn class(&self) -> ErrorClass {
        match self {
            Self::Connect => ErrorClass::Connect,
            Self::Timeout => ErrorClass::Timeout,
            Self::Status {
                status,
                retry_after,
            } => ErrorClass::Status {
                status: *status,
                retry_after: *retry_after,
            },
            Self::Malformed(_) => ErrorClass::Fatal,
            Self::Request => ErrorClass::Caller,
            Self::Injected(fault) => fault.class(),
        }
    }
}

impl From<reqwest::Error> for EmbedError {
    fn from(e: reqwest::Error) -> Self {
        if e.is_builder() {
            Self::Request
        } else if e.is_timeout() {
            Self::Timeout
        } else if e.is_decode() {
            Self::Malformed("the body could not be read".to_owned())
        } else {
            Self::Connect
        }
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
    dimensions: u32,
    encoding_format: &'static str,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    index: usize,
    embedding: Vec<f32>,
}

/// The client. Share one per process (`Arc`); it owns the `openai` policy and its breaker.
pub struct Embedder {
    http: reqwest::Client,
    endpoint: String,
    model: String,
    dimensions: u32,
    api_key: Option<ApiKey>,
    policy: Policy,
    min_time: Duration,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("dimensions", &self.dimensions)
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// A client for `config` over `http` (the process's shared client), reading the
    /// `breaker#openai` override from `overrides`.
    ///
    /// # Errors
    /// [`ConfigError`] when the policy does not validate.
    pub fn new(
        config: &EmbeddingsConfig,
        api_key: Option<ApiKey>,
        http: reqwest::Client,
        overrides: Arc<dyn OverrideSource>,
    ) -> Result<Self, ConfigError> {
        Ok(Self {
            http,
            endpoint: format!("{}/embeddings", config.url),
            model: config.model.clone(),
            dimensions: config.dimensions,
            api_key,
            policy: Policy::try_new(DEPENDENCY, config.policy, overrides)?,
            min_time: config.policy.attempt.margin + config.policy.retry.min_attempt,
        })
    }

    /// The model every vector is made with.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The length of every vector.
    pub fn dimensions(&self) -> u32 {
        self.dimensions
    }

    /// The policy's view of the dependency (breaker state, bulkhead).
    pub fn health(&self) -> Health {
        self.policy.health()
    }

    /// Model, dimensions and breaker state for `/v1/health`.
    pub fn info(&self) -> EmbedderHealth {
        EmbedderHealth {
            model: self.model.clone(),
            dimensions: self.dimensions,
            breaker: self.policy.health().state.as_str().to_owned(),
        }
    }

    /// One L2-normalised vector per input, in input order; no call for no inputs.
    ///
    /// No call either when the deadline leaves less than the attempt margin plus the shortest
    /// worthwhile attempt (100 + 100 ms by default, `KOSHA_POLICY_OPENAI_MIN_ATTEMPT_MS`): an
    /// attempt that short cannot get an answer from a remote API, and the time is better
    /// left to the full-text answer.
    ///
    /// # Errors
    /// [`PolicyError`]: the deadline (too little time), bulkhead or breaker refused, or the
    /// last attempt's [`EmbedError`] / timeout.
    pub async fn embed(
        &self,
        deadline: &Deadline,
        inputs: &[String],
        faults: Option<&mut FaultPlan>,
    ) -> Result<Vec<Vec<f32>>, PolicyError<EmbedError>> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        // SPEC §12 (exported only); the attempts' spans are its children.
        let span = tracing::info_span!(
            "embeddings",
            otel.status_code = tracing::field::Empty,
            { semconv::GEN_AI_OPERATION_NAME } = "embeddings",
            { semconv::GEN_AI_REQUEST_MODEL } = %self.model,
            inputs = semconv::int(inputs.len()),
            outcome = tracing::field::Empty,
        );
        let result = async {
            if deadline.remaining() < self.min_time {
                return Err(PolicyError::DeadlineExceeded);
            }
            self.policy
                .call_with_faults(deadline, Idempotency::Idempotent, faults, |_attempt| {
                    self.attempt(inputs)
                })
                .await
        }
        .instrument(span.clone())
        .await;
        if !span.is_disabled() {
            let outcome = match &result {
                Ok(_) => "ok",
                Err(PolicyError::DeadlineExceeded) => "deadline_exceeded",
                Err(PolicyError::CircuitOpen { .. } | PolicyError::ForcedOpen { .. }) => {
                    "circuit_open"
                }
                Err(_) => "error",
            };
            span.record("outcome", outcome);
            if result.is_err() {
                span.record("otel.status_code", "error");
            }
        }
        result
    }

    async fn attempt(&self, inputs: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = EmbeddingsRequest {
            model: &self.model,
            input: inputs,
            dimensions: self.dimensions,
            encoding_format: "float",
        };
        // `traceparent`/`tracestate` of the search (SPEC §12).
        let mut request =
            kosha_runtime::trace::propagate(self.http.post(&self.endpoint).json(&body));
        if let Some(key) = &self.api_key {
            request = request.header(AUTHORIZATION, format!("Bearer {}", key.expose()));
        }
        let mut response = request.send().await?;
        let status = response.status();
        if !status.is_success() {
            return Err(EmbedError::Status {
                status: status.as_u16(),
                retry_after: retry_after(response.headers()),
            });
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_BODY_BYTES as u64)
        {
            return Err(EmbedError::Malformed("the body is too large".to_owned()));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(EmbedError::Malformed("the body is too large".to_owned()));
            }
            bytes.extend_from_slice(&chunk);
        }
        vectors(&bytes, inputs.len(), self.dimensions as usize)
    }
}

/// The wait a 429 or 503 asks for: OpenAI's `retry-after-ms`, else `Retry-After` in whole
/// or fractional seconds (an HTTP date is ignored). At most an hour.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let wait = number("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| number(RETRY_AFTER.as_str()))?;
    Some(Duration::from_secs_f64(wait.min(3600.0)))
}

/// Decodes an answer into `count` normalised vectors of `dimensions` each, in index order.
fn vectors(body: &[u8], count: usize, dimensions: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let answer: EmbeddingsResponse = serde_json::from_slice(body)
        .map_err(|_| EmbedError::Malformed("not an embeddings list".to_owned()))?;
    if answer.data.len() != count {
        return Err(EmbedError::Malformed(format!(
            "{} vectors for {count} inputs",
            answer.data.len()
        )));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; count];
    for item in answer.data {
        let slot = out
            .get_mut(item.index)
            .filter(|slot| slot.is_none())
            .ok_or_else(|| EmbedError::Malformed(format!("unexpected index {}", item.index)))?;
        if item.embedding.len() != dimensions {
            return Err(EmbedError::Malformed(format!(
                "a vector has {} dimensions, expected {dimensions}",
                item.embedding.len()
            )));
        }
        *slot = Some(normalised(item.embedding)?);
    }
    out.into_iter()
        .map(|v| v.ok_or_else(|| EmbedError::Malformed("a vector is missing".to_owned())))
        .collect()
}

fn normalised(mut v: Vec<f32>) -> Result<Vec<f32>, EmbedError> {
    if v.iter().any(|x| !x.is_finite()) {
        return Err(EmbedError::Malformed(
            "a vector holds a non-finite number".to_owned(),
        ));
    }
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm < 1e-12 {
        return Err(EmbedError::Malformed("a vector is all zeros".to_owned()));
    }
    #[allow(clippy::cast_possible_truncation)]
    let scale = (1.0 / norm) as f32;
    for x in &mut v {
        *x *= scale;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_in_index_order_and_normalises() {
        let body = br#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0.0,2.0]},
            {"object":"embedding","index":0,"embedding":[3.0,4.0]}],"model":"m","usage":{}}"#;
        let v = vectors(body, 2, 2).unwrap();
        assert_eq!(v, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
    }

    #[test]
    fn refuses_wrong_shapes() {
        let cases: [(&[u8], usize); 7] = [
            (b"not json", 1),
            (br#"{"data":[]}"#, 1),
            (br#"{"data":[{"index":0,"embedding":[1.0]}]}"#, 1),
            (br#"{"data":[{"index":3,"embedding":[1.0,0.0]}]}"#, 1),
            (br#"{"data":[{"index":0,"embedding":[0.0,0.0]}]}"#, 1),
            (
                br#"{"data":[{"index":0,"embedding":[1.0,0.0]},{"index":0,"embedding":[1.0,0.0]}]}"#,
                2,
            ),
            (br#"{"data":[{"index":0,"embedding":["a","b"]}]}"#, 1),
        ];
        for (body, count) in cases {
            let e = vectors(body, count, 2).unwrap_err();
            assert!(matches!(e, EmbedError::Malformed(_)), "{e:?}");
            assert_eq!(e.class(), ErrorClass::Fatal);
        }
    }

    #[test]
    fn reads_retry_after_in_ms_or_seconds() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        h.insert("retry-after-ms", "soon".parse().unwrap());
        h.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn classifies_like_seed_004() {
        assert!(EmbedError::Connect.class().retryable());
        let limited = EmbedError::Status {
            status: 429,
            retry_after: Some(Duration::from_secs(1)),
        };
        assert!(limited.class().retryable() && !limited.class().counts_as_failure());
        assert!(
            EmbedError::Status {
                status: 500,
                retry_after: None
            }
            .class()
            .counts_as_failure()
        );
        assert!(!EmbedError::Request.class().counts_as_failure());
    }
}
