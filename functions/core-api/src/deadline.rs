//! The request deadline of SPEC §7 and seed 004 §2, at core-api's HTTP edge.
//!
//! The gateway sends `X-Request-Deadline`: an absolute UTC time in RFC 3339 (for example
//! `2026-11-30T12:00:07.850Z`). [`enforce`] decodes it once with the shared
//! [`Deadline::parse_header`] (which measures it on tokio's clock, so paused-clock tests see
//! all time, and clamps it to 60 s ahead) and then:
//!
//! - a malformed header is 400 `invalid_argument` naming the header;
//! - a deadline already past is 504 `deadline_exceeded`, without doing the work;
//! - each PostgreSQL statement runs under `SET LOCAL statement_timeout` =
//!   [`PostgresConfig::statement_timeout_for`] (`min(remaining − 100 ms, 3 s)`), and a
//!   remaining budget below the margin is `deadline_exceeded` before the statement is sent.
//!
//! Without the header, statements run under [`PostgresConfig::statement_timeout`] alone.

use std::time::Duration;

use crate::db::PostgresConfig;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
pub use kosha_resilience::deadline::Deadline;
use kosha_resilience::deadline::DeadlineError;

use crate::chaos::Chaos;
use crate::error::ApiError;

use kosha_contract::headers::REQUEST_DEADLINE as DEADLINE_HEADER;

/// What a request may spend on one PostgreSQL statement: its deadline (if the caller sent one)
/// and the PostgreSQL policy (statement timeout cap and margin, seed 004 §1), plus the
/// request's verified chaos header, whose `postgres` faults the transaction starter injects
/// (SPEC §9, [`crate::chaos`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// The request's deadline, if any.
    pub deadline: Option<Deadline>,
    /// The PostgreSQL settings the timeout is derived from.
    pub postgres: PostgresConfig,
    /// The request's chaos header (none: no faults).
    pub chaos: Chaos,
}

impl Budget {
    /// The statement timeout for a statement starting now; `None` when the deadline leaves no
    /// time for it.
    pub fn statement_timeout(&self) -> Option<Duration> {
        match &self.deadline {
            Some(deadline) => self.postgres.statement_timeout_for(deadline),
            None => Some(self.postgres.statement_timeout),
        }
    }
}

/// The header's deadline; `None` without a header.
///
/// # Errors
/// [`ApiError::InvalidArgument`] for a malformed header, [`ApiError::DeadlineExceeded`] for a
/// deadline already past.
fn parse(header: Option<&HeaderValue>) -> Result<Option<Deadline>, ApiError> {
    let Some(value) = header else {
        return Ok(None);
    };
    let malformed = || {
        ApiError::invalid(
            "X-Request-Deadline must be an RFC 3339 UTC time such as 2026-11-30T12:00:07.850Z",
        )
    };
    let text = value.to_str().map_err(|_| malformed())?;
    match Deadline::parse_header(text) {
        Ok(deadline) => Ok(Some(deadline)),
        Err(DeadlineError::Expired) => Err(ApiError::DeadlineExceeded),
        Err(DeadlineError::Malformed) => Err(malformed()),
    }
}

/// Middleware: validates the header and puts the [`Deadline`] into the request extensions.
pub async fn enforce(mut request: Request, next: Next) -> Response {
    match parse(request.headers().get(DEADLINE_HEADER)) {
        Ok(Some(deadline)) => {
            request.extensions_mut().insert(deadline);
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
