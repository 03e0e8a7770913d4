//! Error classification: which failures are retried and which count against the breaker
//! (seed 004 §3 and §4).
//!
//! - **What it decides:** for each error a call returns, two independent facts —
//!   *retryable* (retry may try again) and *counts as failure* (the breaker's window records a
//!   failure) — plus an optional server-requested wait (`Retry-After`).
//! - **The rules:**
//!
//!   | error | retryable | breaker failure |
//!   |---|---|---|
//!   | connect error, connection reset | yes | yes |
//!   | timeout (no answer in time) | yes | yes |
//!   | 502, 503, 504 | yes | yes |
//!   | 500, 501, other 5xx | no | yes |
//!   | 429 (honours `Retry-After`) | yes | no |
//!   | other 4xx | no | no |
//!   | [`ErrorClass::Fatal`] (e.g. an undecodable answer) | no | yes |
//!   | [`ErrorClass::Caller`] (our own bad request) | no | no |
//!
//!   A non-idempotent call without an idempotency key is never retried whatever its class
//!   ([`crate::retry::Idempotency`]).
//! - **Neighbours:** the caller's error type implements [`Classify`]; [`crate::retry`] reads
//!   `retryable` and `retry_after`, [`crate::breaker`] receives the final call's
//!   [`crate::breaker::Outcome`] from [`ErrorClass::outcome`]. The crate never sees HTTP types,
//!   only status numbers.

use std::time::Duration;

use crate::breaker::Outcome;

/// What kind of failure an error is, as far as resilience is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Could not connect, or the connection broke before an answer.
    Connect,
    /// No answer within the time allowed.
    Timeout,
    /// The dependency answered with this HTTP status (≥ 400), and optionally `Retry-After`.
    Status {
        /// HTTP status code.
        status: u16,
        /// Parsed `Retry-After`, if the answer carried one.
        retry_after: Option<Duration>,
    },
    /// The dependency misbehaved in a way another attempt will not fix (e.g. a malformed
    /// body): a breaker failure, not retried.
    Fatal,
    /// The caller's own fault (bad input, not found, conflict): not retried, not a failure.
    Caller,
}

impl ErrorClass {
    /// Whether another attempt may succeed: connect errors, timeouts, 502/503/504 and 429.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Connect | Self::Timeout => true,
            Self::Status { status, .. } => matches!(status, 429 | 502 | 503 | 504),
            Self::Fatal | Self::Caller => false,
        }
    }

    /// Whether the breaker counts it as a dependency failure: timeouts, connection errors,
    /// 5xx and fatal answers; never 4xx (429 included).
    pub fn counts_as_failure(&self) -> bool {
        match self {
            Self::Connect | Self::Timeout | Self::Fatal => true,
            Self::Status { status, .. } => (500..=599).contains(status),
            Self::Caller => false,
        }
    }

    /// The wait the dependency asked for (`Retry-After` on a 429 or 503), if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The breaker outcome of a logical call that ended with this error.
    pub fn outcome(&self) -> Outcome {
        if self.counts_as_failure() {
            Outcome::Failure
        } else {
            Outcome::Neutral
        }
    }
}

/// Implemented by the caller's error type so the policy can classify it.
pub trait Classify {
    /// The class of this error.
    fn class(&self) -> ErrorClass;
}

impl Classify for ErrorClass {
    fn class(&self) -> ErrorClass {
        *self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> ErrorClass {
        ErrorClass::Status {
            status,
            retry_after: None,
        }
    }

    #[test]
    fn seed_004_table() {
        for (class, retryable, failure) in [
            (ErrorClass::Connect, true, true),
            (ErrorClass::Timeout, true, true),
            (status(502), true, true),
            (status(503), true, true),
            (status(504), true, true),
            (status(500), false, true),
            (status(501), false, true),
            (status(429), true, false),
            (status(400), false, false),
            (status(404), false, false),
            (status(409), false, false),
            (status(408), false, false),
            (ErrorClass::Fatal, false, true),
            (ErrorClass::Caller, false, false),
        ] {
            assert_eq!(class.retryable(), retryable, "{class:?} retryable");
            assert_eq!(class.counts_as_failure(), failure, "{class:?} failure");
            let expected = if failure {
                Outcome::Failure
            } else {
                Outcome::Neutral
            };
            assert_eq!(class.outcome(), expected);
        }
    }

    #[test]
    fn retry_after_is_carried_on_status() {
        let wait = Some(Duration::from_millis(1_500));
        assert_eq!(
            ErrorClass::Status {
                status: 429,
                retry_after: wait
            }
            .retry_after(),
            wait
        );
        assert_eq!(ErrorClass::Timeout.retry_after(), None);
    }
}
