//! SigV4 signing of requests to Kosha's IAM-authenticated Function URLs (issue 6, issue 12,
//! SPEC §13): the gateway's calls to core-api and screening-sim, the screening-worker's calls
//! to screening-sim.
//!
//! On AWS, core-api and screening-sim sit behind Function URLs with `AuthType: AWS_IAM`:
//! Lambda rejects (403) any request not signed with SigV4 for service `lambda` by a principal
//! allowed to invoke it. With `KOSHA_CORE_API_AUTH=iam` (or `KOSHA_SCREENING_AUTH=iam`) the
//! client hands every request to [`SigV4Signer::sign`] just before sending it, which adds
//! `Authorization`, `X-Amz-Date` and, for temporary credentials (always, on Lambda),
//! `X-Amz-Security-Token`.
//!
//! - **What is signed:** method, path, query, every header already on the request (the
//!   `Host` is taken from the URL, as hyper will send it) and the SHA-256 of the body, so a
//!   changed body invalidates the signature. Settings are aws-sigv4's defaults, the ones the
//!   SDK uses for Lambda (normalised, double-encoded path; session token signed).
//! - **Credentials:** from the provider of the SDK config (the default chain: on Lambda the
//!   function role's keys from the environment). Resolved on the request path, never in the
//!   background (Lambda freezes the process between invocations), and cached here until
//!   [`REFRESH_BEFORE_EXPIRY`] before they expire; credentials without an expiry are kept for
//!   the life of the process. A lookup is bounded by the attempt's timeout, so an unreachable
//!   credential source costs one attempt, never a hung request.
//! - **Errors:** [`SignError`]; the clients return it as their `Signing` error,
//!   classed like a connect failure (the call was never made: retried, counted by the
//!   breaker) and answered `dependency_unavailable`. Neither the keys nor the signature ever
//!   appear in an error or a log line.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use parking_lot::Mutex;
use reqwest::header::{HeaderName, HeaderValue};

/// The SigV4 service name of a Lambda Function URL.
pub const SERVICE: &str = "lambda";

/// Cached credentials are refreshed this long before they expire (the SDK's own cache also
/// refreshes minutes early, so a signature never races the expiry).
pub const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(5 * 60);

/// Why a request could not be signed. Messages never contain key material.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The credential provider failed (no credentials configured, source unreachable).
    #[error("no AWS credentials for signing: {0}")]
    Credentials(String),
    /// The credential provider did not answer within the attempt's timeout.
    #[error("AWS credentials lookup timed out")]
    CredentialsTimeout,
    /// The request cannot be signed (e.g. a streaming body, whose hash is unknown).
    #[error("cannot sign the request: {0}")]
    Request(String),
}

/// Signs requests for one region with credentials from one provider. Build it once in
/// `main`; clients share it behind an `Arc`.
#[derive(Debug)]
pub struct SigV4Signer {
    provider: SharedCredentialsProvider,
    region: String,
    cached: Mutex<Option<Credentials>>,
    clock: fn() -> SystemTime,
}

impl SigV4Signer {
    /// A signer for `region` (e.g. `us-east-1`) using `provider` (the SDK config's
    /// credentials provider), with the system clock.
    pub fn new(provider: SharedCredentialsProvider, region: impl Into<String>) -> Self {
        Self {
            provider,
            region: region.into(),
            cached: Mutex::new(None),
            clock: SystemTime::now,
        }
    }

    /// The same signer reading wall-clock time from `clock` (tests use a fixed time).
    #[must_use]
    pub fn with_clock(mut self, clock: fn() -> SystemTime) -> Self {
        self.clock = clock;
        self
    }

    /// Adds the SigV4 headers to `request`, looking credentials up (or reusing cached ones)
    /// within `timeout`.
    ///
    /// # Errors
    /// [`SignError`] when no credentials are available in time or the request has a streaming
    /// body.
    pub async fn sign(
        &self,
        request: &mut reqwest::Request,
        timeout: Duration,
    ) -> Result<(), SignError> {
        let credentials = self.credentials(timeout).await?;
        let identity = credentials.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(SERVICE)
            .time((self.clock)())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| SignError::Request(e.to_string()))?
            .into();
        let body = match request.body() {
            None => &[][..],
            Some(b) => b
                .as_bytes()
                .ok_or_else(|| SignError::Request("streaming body".to_owned()))?,
        };
        let headers = request
            .headers()
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
        let signable = SignableRequest::new(
            request.method().as_str(),
            request.url().as_str(),
            headers,
            SignableBody::Bytes(body),
        )
        .map_err(|e| SignError::Request(e.to_string()))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|e| SignError::Request(e.to_string()))?
            .into_parts();
        let (new_headers, _params) = instructions.into_parts();
        for header in new_headers {
            let name = HeaderName::from_bytes(header.name().as_bytes())
                .map_err(|e| SignError::Request(e.to_string()))?;
            let mut value = HeaderValue::from_str(header.value())
                .map_err(|e| SignError::Request(e.to_string()))?;
            value.set_sensitive(header.sensitive() || name == reqwest::header::AUTHORIZATION);
            request.headers_mut().insert(name, value);
        }
        Ok(())
    }

    /// Cached credentials while fresh, otherwise a new lookup (no lock held across it; two
    /// concurrent refreshes both ask the provider, and the later answer is kept).
    async fn credentials(&self, timeout: Duration) -> Result<Credentials, SignError> {
        let now = (self.clock)();
        if let Some(c) = self.cached.lock().as_ref().filter(|c| fresh(c, now)) {
            return Ok(c.clone());
        }
        let looked_up = tokio::time::timeout(timeout, self.provider.provide_credentials())
            .await
            .map_err(|_| SignError::CredentialsTimeout)?
            .map_err(|e| SignError::Credentials(e.to_string()))?;
        *self.cached.lock() = Some(looked_up.clone());
        Ok(looked_up)
    }
}

/// Whether `c` is usable at `now` without a refresh.
fn fresh(c: &Credentials, now: SystemTime) -> bool {
    c.expiry()
        .is_none_or(|expiry| now + REFRESH_BEFORE_EXPIRY < expiry)
}
