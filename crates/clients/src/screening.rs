//! The screening-sim client (SPEC §4, §7): `POST /v1/screen` over reqwest/rustls, used by the
//! gateway's `screen_entity` and by the screening-worker (one client, so both sides of the
//! queue call the service the same way).
//!
//! Every call carries `X-Request-Deadline` (the caller's deadline less its hop margin) and,
//! from the gateway, `X-Kosha-Principal`. With a [`SigV4Signer`] ([`ScreeningClient::with_signer`],
//! `KOSHA_SCREENING_AUTH=iam`) every request is signed just before it is sent, for the
//! IAM-authenticated Function URL screening-sim sits behind on AWS.
//!
//! Errors ([`ScreeningError`]) keep screening-sim's `{"error": {...}}` body; their
//! [`Classify`] follows seed 004 §3: connect errors, timeouts, 502/503/504 and 429 are
//! retried, 5xx count against the breaker, a 400 is the caller's (a request screening-sim
//! refuses as invalid, which the worker records as `failed`).

use std::sync::Arc;
use std::time::Duration;

use kosha_contract::error::{ErrorBody, ErrorCode};
use kosha_contract::headers;
use kosha_contract::screening::{ScreenRequest, ScreenResponse};
use kosha_resilience::chaos::InjectedFault;
use kosha_resilience::classify::{Classify, ErrorClass};
use kosha_runtime::sigv4::{SigV4Signer, SignError};
use reqwest::{Client, StatusCode};

/// Why a screening-sim call failed.
#[derive(Debug, thiserror::Error)]
pub enum ScreeningError {
    /// screening-sim answered with an error status and (usually) its error body.
    #[error("screening-sim answered {status}: {}", code.as_str())]
    Status {
        /// The HTTP status.
        status: StatusCode,
        /// Its error code; [`ErrorCode::Unknown`] when the body had none we know.
        code: ErrorCode,
        /// Its message (names the field for a 400; safe to show the agent).
        message: String,
        /// `Retry-After`, when given.
        retry_after: Option<Duration>,
    },
    /// No connection could be made, or it broke before a response.
    #[error("screening-sim unreachable")]
    Connect,
    /// The attempt timed out.
    #[error("screening-sim timed out")]
    Timeout,
    /// The response was not the JSON we expected.
    #[error("screening-sim sent an unexpected response")]
    Decode,
    /// The request could not be signed: it was never sent.
    #[error("screening-sim request not signed: {0}")]
    Signing(#[from] SignError),
    /// The request could not be built: never sent, says nothing about screening-sim's health.
    #[error("screening-sim request could not be built")]
    Build,
}

impl ScreeningError {
    /// Whether screening-sim refused the request itself as invalid (400 `invalid_argument`):
    /// permanent, another attempt gets the same answer.
    pub fn is_invalid_request(&self) -> bool {
        matches!(self, Self::Status { status, .. } if *status == StatusCode::BAD_REQUEST)
    }
}

/// Who is calling and by when; sent with every request.
#[derive(Debug, Clone, Default)]
pub struct ScreenMeta {
    /// The caller's `client_id` (`X-Kosha-Principal`), from the gateway.
    pub principal: Option<String>,
    /// `X-Request-Deadline` value, already reduced by the hop margin.
    pub deadline_header: Option<String>,
    /// Hard cap on this attempt.
    pub timeout: Duration,
}

/// The screening-sim client. Cheap to clone (reqwest's pool is shared).
#[derive(Debug, Clone)]
pub struct ScreeningClient {
    http: Client,
    url: String,
    signer: Option<Arc<SigV4Signer>>,
}

impl ScreeningClient {
    /// A client for screening-sim at `base_url` (a trailing `/` is trimmed) over `http`, the
    /// process's shared client (`kosha_runtime::tls::http_client`).
    pub fn new(base_url: &str, http: Client) -> Self {
        Self {
            http,
            url: format!("{}/v1/screen", base_url.trim_end_matches('/')),
            signer: None,
        }
    }

    /// The same client, signing every request with `signer` (SigV4).
    #[must_use]
    pub fn with_signer(mut self, signer: Arc<SigV4Signer>) -> Self {
        self.signer = Some(signer);
        self
    }

    /// `POST /v1/screen`.
    ///
    /// # Errors
    /// [`ScreeningError`].
    pub async fn screen(
        &self,
        meta: &ScreenMeta,
        request: &ScreenRequest,
    ) -> Result<ScreenResponse, ScreeningError> {
        let mut req = self
            .http
            .post(&self.url)
            .timeout(meta.timeout)
            .json(request);
        if let Some(p) = &meta.principal {
            req = req.header(headers::PRINCIPAL, p);
        }
        if let Some(d) = &meta.deadline_header {
            req = req.header(headers::REQUEST_DEADLINE, d);
        }
        // `traceparent`/`tracestate` of the call (SPEC §12); before signing.
        req = kosha_runtime::trace::propagate(req);
        let mut built = req.build().map_err(|e| {
            tracing::error!(error = %e, "screening-sim request not built");
            ScreeningError::Build
        })?;
        if let Some(signer) = &self.signer {
            signer.sign(&mut built, meta.timeout).await?;
        }
        let timeout = |e: reqwest::Error| {
            if e.is_timeout() {
                ScreeningError::Timeout
            } else {
                ScreeningError::Connect
            }
        };
        let resp = self.http.execute(built).await.map_err(timeout)?;
        let status = resp.status();
        if status.is_success() {
            return resp.json::<ScreenResponse>().await.map_err(|e| {
                if e.is_timeout() {
                    ScreeningError::Timeout
                } else {
                    ScreeningError::Decode
                }
            });
        }
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let detail = resp.json::<ErrorBody>().await.ok().map(|b| b.error);
        Err(ScreeningError::Status {
            status,
            code: detail.as_ref().map_or(ErrorCode::Unknown, |d| d.code),
            message: detail.map(|d| d.message).unwrap_or_default(),
            retry_after,
        })
    }
}

impl From<InjectedFault> for ScreeningError {
    /// A chaos fault as the failure it stands for (SPEC §9): `error` is a 503, `reset` a
    /// broken connection.
    fn from(fault: InjectedFault) -> Self {
        match fault {
            InjectedFault::Unavailable => Self::Status {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: ErrorCode::DependencyUnavailable,
                message: String::new(),
                retry_after: None,
            },
            InjectedFault::Reset => Self::Connect,
        }
    }
}

impl Classify for ScreeningError {
    /// Seed 004 §3: connect errors, timeouts, 502/503/504 and 429 retried; 5xx count as
    /// breaker failures; other 4xx are the caller's.
    fn class(&self) -> ErrorClass {
        match self {
            Self::Status {
                status,
                retry_after,
                ..
            } if status.as_u16() == 429 || status.is_server_error() => ErrorClass::Status {
                status: status.as_u16(),
                retry_after: *retry_after,
            },
            Self::Status { .. } | Self::Build => ErrorClass::Caller,
            Self::Connect | Self::Signing(_) => ErrorClass::Connect,
            Self::Timeout => ErrorClass::Timeout,
            Self::Decode => ErrorClass::Fatal,
        }
    }
}
