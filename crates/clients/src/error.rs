//! The one error of both clients ([`ClientError`]) and the one decoding of a dependency's
//! answer into it: the status, `Retry-After` (or the body's `retry_after_s`), SPEC §7's
//! `{"error": {...}}` body, and the chaos faults of SPEC §9. Its [`Classify`] follows
//! seed 004 §3.

use std::time::Duration;

use kosha_contract::dependency::Dependency;
use kosha_contract::error::{ErrorBody, ErrorCode};
use kosha_resilience::chaos::InjectedFault;
use kosha_resilience::classify::{Classify, ErrorClass};
use kosha_runtime::sigv4::SignError;
use reqwest::StatusCode;

/// Why a call to core-api or screening-sim failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The dependency answered with an error status and (usually) its error body (SPEC §7).
    #[error("answered {status}: {}", code.as_str())]
    Status {
        /// The HTTP status.
        status: StatusCode,
        /// Its error code; [`ErrorCode::Unknown`] when the body had none we know.
        code: ErrorCode,
        /// Its message (names the field for a 400; safe to show the agent for 4xx).
        message: String,
        /// `Retry-After` (whole seconds) or the body's `retry_after_s`, when given.
        retry_after: Option<Duration>,
        /// The dependency's own failing dependency (core-api's `postgres`, `openai`), when it
        /// named one we know.
        dependency: Option<Dependency>,
    },
    /// No connection could be made, or it broke before a response.
    #[error("unreachable")]
    Connect,
    /// The attempt timed out.
    #[error("timed out")]
    Timeout,
    /// The response was not the JSON we expected.
    #[error("sent an unexpected response")]
    Decode,
    /// The request could not be signed (no AWS credentials in time): it was never sent.
    #[error("request not signed: {0}")]
    Signing(#[from] SignError),
    /// The request could not be built (a URL or header our client refuses): it was never
    /// sent, and says nothing about the dependency's health.
    #[error("request could not be built")]
    Build,
}

impl ClientError {
    /// Whether the dependency refused the request itself as invalid (400
    /// `invalid_argument`): permanent, another attempt gets the same answer.
    pub fn is_invalid_request(&self) -> bool {
        matches!(self, Self::Status { status, .. } if *status == StatusCode::BAD_REQUEST)
    }
}

/// A transport failure: a timeout, or any other failure to exchange the request.
pub(crate) fn transport(e: &reqwest::Error) -> ClientError {
    if e.is_timeout() {
        ClientError::Timeout
    } else {
        ClientError::Connect
    }
}

/// A success's body as `T`: a body that times out is [`ClientError::Timeout`], one that does
/// not decode [`ClientError::Decode`].
pub(crate) async fn body<T: serde::de::DeserializeOwned>(
    resp: reqwest::Response,
) -> Result<T, ClientError> {
    resp.json::<T>().await.map_err(|e| {
        if e.is_timeout() {
            ClientError::Timeout
        } else {
            ClientError::Decode
        }
    })
}

/// An error answer as [`ClientError::Status`]. A body that is not SPEC §7's (a proxy's page,
/// an empty 502) still has a status; `Retry-After` wins over `retry_after_s`.
pub(crate) async fn refusal(resp: reqwest::Response) -> ClientError {
    let status = resp.status();
    let header_retry = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let detail = resp.json::<ErrorBody>().await.ok().map(|b| b.error);
    let code = detail.as_ref().map_or(ErrorCode::Unknown, |d| d.code);
    let message = detail
        .as_ref()
        .map(|d| d.message.clone())
        .unwrap_or_default();
    let retry_after = header_retry.or_else(|| {
        detail
            .as_ref()
            .and_then(|d| d.retry_after_s)
            .map(Duration::from_secs)
    });
    let dependency = detail
        .and_then(|d| d.dependency)
        .and_then(|name| Dependency::parse(&name));
    ClientError::Status {
        status,
        code,
        message,
        retry_after,
        dependency,
    }
}

impl From<InjectedFault> for ClientError {
    /// A chaos fault as the failure it stands for (SPEC §9): `error` is a 503 from the
    /// dependency, `reset` a broken connection.
    fn from(fault: InjectedFault) -> Self {
        match fault {
            InjectedFault::Unavailable => Self::Status {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: ErrorCode::DependencyUnavailable,
                message: String::new(),
                retry_after: None,
                dependency: None,
            },
            InjectedFault::Reset => Self::Connect,
        }
    }
}

impl Classify for ClientError {
    /// Seed 004 §3: connect errors, timeouts, 502/503/504 and 429 are retried; 5xx count as
    /// breaker failures; other 4xx are the caller's and neither.
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
            Self::Status { .. } => ErrorClass::Caller,
            // The call was not made; another attempt may find credentials (a transient
            // credential-source failure), and a breaker should count it like an outage.
            Self::Connect | Self::Signing(_) => ErrorClass::Connect,
            Self::Timeout => ErrorClass::Timeout,
            Self::Decode => ErrorClass::Fatal,
            // Never sent: neither retried nor counted against the dependency's breaker.
            Self::Build => ErrorClass::Caller,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chaos_error_is_a_retried_503_and_a_reset_a_broken_connection() {
        let e = ClientError::from(InjectedFault::Unavailable);
        assert_eq!(
            e.class(),
            ErrorClass::Status {
                status: 503,
                retry_after: None
            }
        );
        assert_eq!(
            ClientError::from(InjectedFault::Reset).class(),
            ErrorClass::Connect
        );
    }

    #[test]
    fn only_a_400_is_an_invalid_request() {
        let status = |status: StatusCode| ClientError::Status {
            status,
            code: ErrorCode::Unknown,
            message: String::new(),
            retry_after: None,
            dependency: None,
        };
        assert!(status(StatusCode::BAD_REQUEST).is_invalid_request());
        assert!(!status(StatusCode::NOT_FOUND).is_invalid_request());
        assert_eq!(status(StatusCode::NOT_FOUND).class(), ErrorClass::Caller);
        assert!(!ClientError::Connect.is_invalid_request());
    }
}
