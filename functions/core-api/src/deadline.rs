//! The request deadline of SPEC §7 and seed 004 §2.
//!
//! The gateway sends `X-Request-Deadline`: an absolute UTC time in RFC 3339 (for example
//! `2026-11-30T12:00:07.850Z`). core-api converts it once, at the edge, into a tokio
//! [`Instant`] (so paused-clock tests see all time) and then:
//!
//! - a malformed header is 400 `invalid_argument` naming the header;
//! - a deadline already past is 504 `deadline_exceeded`, without doing the work;
//! - a deadline more than 60 s ahead is clamped to 60 s;
//! - each PostgreSQL statement runs under `SET LOCAL statement_timeout =
//!   min(remaining − 100 ms, cap)` (the cap is the pool's statement timeout, 3 s), and a
//!   remaining budget below the margin is `deadline_exceeded` before the statement is sent.
//!
//! Without the header, requests run under the cap alone.

use std::time::Duration;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::time::Instant;

use crate::error::ApiError;

/// The header carrying the absolute deadline.
pub const DEADLINE_HEADER: &str = "x-request-deadline";
/// Furthest a deadline may lie ahead; later ones are clamped (SPEC §7).
pub const MAX_AHEAD: Duration = Duration::from_secs(60);
/// Safety margin kept for the answer to travel back (seed 004 §2).
pub const MARGIN: Duration = Duration::from_millis(100);

/// The point by which this request must be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(Instant);

impl Deadline {
    /// A deadline `remaining` from now.
    pub fn after(remaining: Duration) -> Self {
        Self(Instant::now() + remaining)
    }

    /// Time left (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }

    /// The statement timeout for a call starting now: `min(remaining − MARGIN, cap)`, or
    /// `None` when nothing would be left after the margin.
    pub fn statement_timeout(&self, cap: Duration) -> Option<Duration> {
        let budget = self.remaining().saturating_sub(MARGIN);
        (!budget.is_zero()).then(|| budget.min(cap))
    }
}

/// What a request may spend on one PostgreSQL statement: its deadline (if the caller sent one)
/// and the configured cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The request's deadline, if any.
    pub deadline: Option<Deadline>,
    /// The statement timeout cap (seed 004 §1: 3 s).
    pub cap: Duration,
}

impl Budget {
    /// The statement timeout for a statement starting now; `None` when the deadline leaves no
    /// time for it.
    pub fn statement_timeout(&self) -> Option<Duration> {
        match self.deadline {
            Some(deadline) => deadline.statement_timeout(self.cap),
            None => Some(self.cap),
        }
    }
}

/// The time left before the header's deadline, measured against `now`, clamped to
/// [`MAX_AHEAD`]; `None` without a header.
///
/// # Errors
/// [`ApiError::InvalidArgument`] for a malformed header, [`ApiError::DeadlineExceeded`] for a
/// deadline at or before `now`.
pub fn remaining(
    header: Option<&HeaderValue>,
    now: OffsetDateTime,
) -> Result<Option<Duration>, ApiError> {
    let Some(value) = header else {
        return Ok(None);
    };
    let deadline = value
        .to_str()
        .ok()
        .and_then(|text| OffsetDateTime::parse(text, &Rfc3339).ok())
        .ok_or_else(|| {
            ApiError::invalid(
                "X-Request-Deadline must be an RFC 3339 UTC time such as 2026-11-30T12:00:07.850Z",
            )
        })?;
    let left = deadline - now;
    if !left.is_positive() {
        return Err(ApiError::DeadlineExceeded);
    }
    let left = Duration::try_from(left).unwrap_or(MAX_AHEAD);
    Ok(Some(left.min(MAX_AHEAD)))
}

/// Middleware: validates the header and puts the [`Deadline`] into the request extensions.
pub async fn enforce(mut request: Request, next: Next) -> Response {
    let header = request.headers().get(DEADLINE_HEADER);
    match remaining(header, OffsetDateTime::now_utc()) {
        Ok(Some(left)) => {
            request.extensions_mut().insert(Deadline::after(left));
            next.run(request).await
        }
        Ok(None) => next.run(request).await,
        Err(e) => {
            tracing::info!(error = %e, "deadline refused");
            e.into_response()
        }
    }
}

#[cfg(test)]
mod tests;
