//! Deadlines: the absolute instant by which a whole request must be answered (seed 004 §2,
//! SPEC §7).
//!
//! - **What it counts:** nothing; it is a point in time. [`Deadline::remaining`] is the budget
//!   left, measured on tokio's clock so paused-clock tests see every sleep.
//! - **When it trips:** [`Deadline::is_expired`] once tokio's clock reaches the instant. The
//!   policy stack checks it first ([`crate::policy`]) and refuses to start work on an expired
//!   deadline; the per-attempt [`crate::timeout`] is derived from what remains.
//! - **What it returns:** [`Deadline::to_header`] encodes the `X-Request-Deadline` value (RFC 3339
//!   UTC, exactly three fractional digits and `Z`, e.g. `2026-11-30T12:00:07.850Z`).
//!   [`Deadline::parse_header`] decodes one: a past value is [`DeadlineError::Expired`] (the
//!   receiver answers 504 `deadline_exceeded`), an unparsable one [`DeadlineError::Malformed`]
//!   (400), and one more than [`MAX_AHEAD`] ahead is clamped to 60 s (SPEC §7).
//! - **Neighbours:** the gateway builds its deadline with [`Deadline::from_lambda_deadline_ms`]
//!   (min(now + tool budget, Lambda deadline − 50 ms)) and sends core-api
//!   [`Deadline::child`]`(150 ms)`; core-api gives each dependency `child(100 ms)` worth of slack
//!   through the policy's attempt margin.
//!
//! A deadline carries two views of the same instant: a `tokio::time::Instant` for local
//! arithmetic and the UTC wall-clock time it corresponded to when it was made, used only to
//! encode the header. Both move together under [`Deadline::child`].

use std::time::Duration;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use tokio::time::Instant;

/// Furthest a received `X-Request-Deadline` may lie ahead; later values are clamped (SPEC §7).
pub const MAX_AHEAD: Duration = Duration::from_secs(60);

/// Kept back from the Lambda invocation deadline for one request's response to leave
/// (SPEC §7: `− 50 ms`): the gateway's call deadline and the outbox-relay's run end there.
/// The screening-worker keeps a larger margin of its own for a batch's report and flush
/// (`BATCH_REPORT_MARGIN`, 200 ms).
pub const LAMBDA_RESPONSE_MARGIN: Duration = Duration::from_millis(50);

/// Why an `X-Request-Deadline` header was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeadlineError {
    /// The deadline has already passed: answer 504 `deadline_exceeded` without doing the work.
    #[error("request deadline already passed")]
    Expired,
    /// The value is not an RFC 3339 timestamp: answer 400.
    #[error("malformed X-Request-Deadline header")]
    Malformed,
}

/// An absolute instant by which the request must be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    wall: OffsetDateTime,
}

impl Deadline {
    /// The deadline `budget` from now (local runs and tests: no Lambda deadline).
    pub fn after(budget: Duration) -> Self {
        Self::after_at(budget, Instant::now(), OffsetDateTime::now_utc())
    }

    fn after_at(budget: Duration, now: Instant, wall_now: OffsetDateTime) -> Self {
        Self {
            at: now + budget,
            wall: wall_now + budget,
        }
    }

    /// `min(now + budget, lambda_deadline − margin)` where `lambda_deadline_ms` is the Lambda
    /// invocation deadline in epoch milliseconds (`lambda_runtime::Context::deadline`) and
    /// `margin` is normally [`LAMBDA_RESPONSE_MARGIN`]. A Lambda deadline already behind us gives an
    /// expired deadline. Converted to tokio's clock once, here, at the edge.
    pub fn from_lambda_deadline_ms(
        lambda_deadline_ms: u64,
        budget: Duration,
        margin: Duration,
    ) -> Self {
        Self::from_lambda_deadline_ms_at(
            lambda_deadline_ms,
            budget,
            margin,
            OffsetDateTime::now_utc(),
        )
    }

    /// [`Deadline::from_lambda_deadline_ms`] with an explicit wall-clock "now" (for tests).
    pub fn from_lambda_deadline_ms_at(
        lambda_deadline_ms: u64,
        budget: Duration,
        margin: Duration,
        wall_now: OffsetDateTime,
    ) -> Self {
        let now = Instant::now();
        let now_ms = wall_now.unix_timestamp_nanos() / 1_000_000;
        let lambda_left_ms = i128::from(lambda_deadline_ms) - now_ms;
        let lambda_left = u64::try_from(lambda_left_ms)
            .map(Duration::from_millis)
            .unwrap_or(Duration::ZERO)
            .saturating_sub(margin);
        Self::after_at(budget.min(lambda_left), now, wall_now)
    }

    /// Parses an `X-Request-Deadline` value received from the previous hop (SPEC §7).
    ///
    /// Accepts any RFC 3339 timestamp (the sender's format is the strict one of
    /// [`Deadline::to_header`]). Errors: [`DeadlineError::Malformed`], [`DeadlineError::Expired`].
    /// More than [`MAX_AHEAD`] ahead is clamped to `now + 60 s`.
    pub fn parse_header(value: &str) -> Result<Self, DeadlineError> {
        Self::parse_header_at(value, OffsetDateTime::now_utc())
    }

    /// [`Deadline::parse_header`] with an explicit wall-clock "now" (for tests).
    pub fn parse_header_at(value: &str, wall_now: OffsetDateTime) -> Result<Self, DeadlineError> {
        let parsed =
            OffsetDateTime::parse(value.trim(), &Rfc3339).map_err(|_| DeadlineError::Malformed)?;
        let ahead = parsed - wall_now;
        if !ahead.is_positive() {
            return Err(DeadlineError::Expired);
        }
        let ahead = Duration::try_from(ahead)
            .map_err(|_| DeadlineError::Malformed)?
            .min(MAX_AHEAD);
        Ok(Self::after_at(ahead, Instant::now(), wall_now))
    }

    /// The `X-Request-Deadline` value: UTC, RFC 3339, exactly three fractional digits
    /// (truncated, so the receiver never sees a later deadline than ours) and `Z`.
    pub fn to_header(&self) -> String {
        let format = format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
        );
        let utc = self.wall.to_offset(time::UtcOffset::UTC);
        // Formatting a UTC datetime into a String cannot fail for years 0..=9999; fall back to
        // the well-known encoder (which also always succeeds) rather than panic.
        utc.format(&format)
            .or_else(|_| utc.format(&Rfc3339))
            .unwrap_or_default()
    }

    /// Time left before the deadline; zero once it has passed.
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether the deadline has passed.
    pub fn is_expired(&self) -> bool {
        Instant::now() >= self.at
    }

    /// The deadline as an instant on tokio's clock.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// The deadline for the next hop: `margin` earlier, so this hop still has time to answer
    /// with a well-formed error (gateway → core-api 150 ms, core-api → dependencies 100 ms).
    pub fn child(&self, margin: Duration) -> Self {
        Self {
            at: self.at.checked_sub(margin).unwrap_or(self.at),
            wall: self.wall - margin,
        }
    }

    /// The earlier of two deadlines.
    pub fn min(self, other: Self) -> Self {
        if other.at < self.at { other } else { self }
    }
}

#[cfg(test)]
mod tests;
