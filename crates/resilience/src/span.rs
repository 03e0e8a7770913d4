//! The span of one dependency attempt (SPEC §12: "dependency attempt"), opened by
//! [`crate::policy::Policy`] around each call of its operation, so every call through a policy
//! (core-api, screening-sim, DynamoDB, SQS, the embeddings API) has one, and the operation's
//! outgoing request is its child (the operation runs inside it, where
//! `kosha_runtime::trace::inject` finds it).
//!
//! - **Fields:** `dependency`, `attempt` (1-based), `breaker` (its state as the attempt
//!   starts: `closed`, `half_open`; an open breaker admits no attempt), `timeout_ms` (this
//!   attempt's), `deadline_remaining_ms` (the request's, as it starts), then as it ends
//!   `outcome` (`ok`, `error`, `timeout`, or `cancelled` for the leg of a hedge race dropped
//!   when the other answered first; `error.type` the [`ErrorClass`]: `connect`,
//!   `timeout`, `status` with `http.response.status_code`, `fatal`, `caller`), `retry`
//!   (`after_<ms>ms` or why not: `not_retryable`, `not_idempotent`, `attempts_exhausted`,
//!   `deadline_too_close`, `budget_exhausted`) and `fault` (a chaos fault drawn for it:
//!   `latency`, `error`, `timeout`, `reset`; SPEC §9). The span ends before a retry's backoff.
//! - **Cost when nothing listens:** the callsite is disabled (kosha-runtime's subscriber
//!   disables it unless spans are exported), so opening one costs its cached interest and
//!   no field is computed; the recorders return at once on a disabled span.

use std::time::Duration;

use tracing::Span;
use tracing::field::Empty;

use crate::breaker::Breaker;
use crate::chaos::FaultAction;
use crate::classify::ErrorClass;
use crate::retry::{RetryDecision, StopReason};

/// `d` in whole ms as an `i64`: tracing-opentelemetry (0.34) exports an `i64` field as an
/// OTLP int and a `u64` or `u128` one as its `Debug` string.
fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Opens the span of attempt `number` on `breaker`'s dependency, with `timeout` and
/// `remaining` (the deadline's time left) as it starts.
pub(crate) fn attempt(
    breaker: &Breaker,
    number: u32,
    timeout: Duration,
    remaining: Duration,
) -> Span {
    let span = tracing::info_span!(
        "attempt",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        dependency = breaker.name(),
        attempt = i64::from(number),
        breaker = breaker.state().as_str(),
        timeout_ms = ms(timeout),
        deadline_remaining_ms = ms(remaining),
        outcome = Empty,
        error.type = Empty,
        http.response.status_code = Empty,
        retry = Empty,
        fault = Empty,
        hedge = Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", format!("{} attempt", breaker.name()));
    }
    span
}

/// Marks the span as a hedge's (SPEC §12; [`crate::hedge`]): a duplicate of a slow attempt.
pub(crate) fn hedge(span: &Span) {
    if !span.is_disabled() {
        span.record("hedge", true);
    }
}

/// Records that the attempt was dropped unfinished because the other leg of its hedge race
/// answered first (`outcome` `cancelled`; [`crate::hedge`]).
pub(crate) fn cancelled(span: &Span) {
    if !span.is_disabled() {
        span.record("outcome", "cancelled");
    }
}

/// Records how the attempt ended: `Ok(())`, or its error's class (a timeout is `timeout`).
pub(crate) fn ended(span: &Span, result: Result<(), &ErrorClass>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(()) => {
            span.record("outcome", "ok");
        }
        Err(class) => {
            let kind = match class {
                ErrorClass::Connect => "connect",
                ErrorClass::Timeout => "timeout",
                ErrorClass::Status { status, .. } => {
                    span.record("http.response.status_code", i64::from(*status));
                    "status"
                }
                ErrorClass::Fatal => "fatal",
                ErrorClass::Caller => "caller",
            };
            let timed_out = matches!(class, ErrorClass::Timeout);
            span.record("outcome", if timed_out { "timeout" } else { "error" });
            span.record("error.type", kind);
            // The caller's own fault (a 404) is an answer, not a failure of the dependency.
            if !matches!(class, ErrorClass::Caller) {
                span.record("otel.status_code", "error");
            }
        }
    }
}

/// Records the retry decision taken after the attempt failed.
pub(crate) fn decided(span: &Span, decision: &RetryDecision) {
    if span.is_disabled() {
        return;
    }
    match decision {
        RetryDecision::RetryAfter(delay) => {
            span.record("retry", format!("after_{}ms", delay.as_millis()));
        }
        RetryDecision::Stop(why) => {
            span.record("retry", stop_reason(*why));
        }
    }
}

/// Records a chaos fault drawn for the attempt being opened (the current span).
pub(crate) fn faulted(action: FaultAction) {
    let span = Span::current();
    if !span.is_disabled() {
        span.record("fault", action.fault().as_str());
    }
}

fn stop_reason(why: StopReason) -> &'static str {
    match why {
        StopReason::NotRetryable => "not_retryable",
        StopReason::NotIdempotent => "not_idempotent",
        StopReason::AttemptsExhausted => "attempts_exhausted",
        StopReason::DeadlineTooClose => "deadline_too_close",
        StopReason::BudgetExhausted => "budget_exhausted",
    }
}

#[cfg(test)]
mod tests {
    use super::stop_reason;
    use crate::retry::StopReason;

    #[test]
    fn stop_reasons_are_snake_case_words() {
        for why in [
            StopReason::NotRetryable,
            StopReason::NotIdempotent,
            StopReason::AttemptsExhausted,
            StopReason::DeadlineTooClose,
            StopReason::BudgetExhausted,
        ] {
            let s = stop_reason(why);
            assert!(
                s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{s}"
            );
            assert_eq!(s.replace('_', ""), format!("{why:?}").to_lowercase());
        }
    }
}
