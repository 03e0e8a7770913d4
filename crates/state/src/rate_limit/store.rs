//! The limiter's DynamoDB requests on a bucket item: the consistent read, the conditional
//! `PutItem` (with the full-bucket condition) and the bound every request runs under.
//!
//! - **The write** puts the next state conditional on the cached item's `updated_at`
//!   (`attribute_not_exists(pk)` when there was none, unconditional over a malformed one),
//!   with `ReturnValuesOnConditionCheckFailure = ALL_OLD`: a lost compare-and-set answers
//!   [`WriteOutcome::Conflict`] with the current item, at no extra round trip. Tokens are
//!   written to the micro-token, rounded down.
//! - **The full-bucket condition.** When the cached item refills to capacity by now, the
//!   condition is widened to `… OR (tokens >= :full AND updated_at <= :quiet)`: `:full` is
//!   capacity − `lease_max_tokens` (what a grant from a full bucket leaves) and `:quiet` is
//!   now less the time the rest takes to refill, so any item meeting it is full by now and
//!   the write (the full bucket less the grant) is exact whatever another instance wrote
//!   before. A client within its limits calling through many instances, whose caches go stale
//!   on each other's writes, then pays one write per lease instead of two. Only over a
//!   well-formed item seen before: a cold instance's conditional create is not widened, and
//!   the emulator refuses to compare a malformed item's attributes where DynamoDB finds the
//!   condition false.
//! - **The bound.** Each request is bounded by the call timeout (default 100 ms, SDK retries
//!   off: [`crate::StateTable::single_attempt`]); an error or no answer in time is a
//!   [`StoreFailure`], which the caller fails open on (SPEC §6).

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use kosha_resilience::rate_limit::{BucketState, bucket_expires_at};

use super::DynamoRateLimiter;
use super::key::BucketKey;
use super::seen::{Seen, Version};
use crate::StateError;
use crate::attr::{Item, nv, sv};

/// A condition that holds only on an item whose bucket has refilled to capacity: stored
/// `tokens ≥ :full` and `updated_at ≤ :quiet` give `full + (now − quiet) · rate ≥ capacity`
/// whatever was written in between ([`DynamoRateLimiter::full_guard`]).
const FULL_CONDITION: &str = "(tokens >= :full AND updated_at <= :quiet)";

/// The values of [`FULL_CONDITION`].
#[derive(Debug, Clone, Copy)]
struct FullGuard {
    /// `:full`, tokens.
    tokens: f64,
    /// `:quiet`, epoch ms.
    updated_at_ms: i64,
}

/// The answer to a conditional write.
pub(super) enum WriteOutcome {
    /// The condition held; the item is what was written.
    Written,
    /// The condition failed; the current item, if any.
    Conflict(Option<Item>),
}

/// Which request to the bucket item failed.
#[derive(Debug, Clone, Copy)]
pub(super) enum Request {
    Read,
    Write,
    /// The atomic charge after lost races ([`super::charge`]).
    Charge,
}

/// A bucket request that got no answer: an error, or none within the call timeout
/// (`error` `None`).
pub(super) struct StoreFailure {
    request: Request,
    error: Option<StateError>,
}

impl StoreFailure {
    /// The `reason` of the fail-open WARN: `read_error`, `write_timeout`, `charge_error`, ….
    pub(super) fn reason(&self) -> &'static str {
        match (self.request, self.error.is_some()) {
            (Request::Read, true) => "read_error",
            (Request::Read, false) => "read_timeout",
            (Request::Write, true) => "write_error",
            (Request::Write, false) => "write_timeout",
            (Request::Charge, true) => "charge_error",
            (Request::Charge, false) => "charge_timeout",
        }
    }
}

impl std::fmt::Display for StoreFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.error {
            Some(err) => err.fmt(f),
            None => f.write_str("timeout"),
        }
    }
}

impl DynamoRateLimiter {
    /// `request` bounded by the call timeout.
    pub(super) async fn bounded<T>(
        &self,
        request: Request,
        call: impl Future<Output = Result<T, StateError>>,
    ) -> Result<T, StoreFailure> {
        match tokio::time::timeout(self.settings.call_timeout, call).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err(StoreFailure {
                request,
                error: Some(error),
            }),
            Err(_) => Err(StoreFailure {
                request,
                error: None,
            }),
        }
    }

    /// The client's item, read consistently and bounded by the call timeout (`None`: no item).
    pub(super) async fn read(&self, key: &BucketKey) -> Result<Option<Item>, StoreFailure> {
        let read = self.table.get_item(key.clone().into());
        self.bounded(Request::Read, read).await
    }

    /// Writes `next` over `seen` (the cached item, refilled to `live` at `now_ms`), bounded
    /// by the call timeout, with the full-bucket condition when `live` shows the bucket full
    /// (module doc).
    pub(super) async fn put_next(
        &self,
        key: &BucketKey,
        seen: &Seen,
        live: Option<&BucketState>,
        now_ms: i64,
        next: BucketState,
    ) -> Result<WriteOutcome, StoreFailure> {
        let bucket = &self.settings.bucket;
        let full = (matches!(seen.version, Version::At(_))
            && seen.state.is_some()
            && bucket.refilled(live, now_ms) >= bucket.capacity())
        .then(|| self.full_guard(now_ms));
        let expires_at_s = bucket_expires_at(next.updated_at_ms);
        let write = self.write(key, seen, &next, expires_at_s, full);
        self.bounded(Request::Write, write).await
    }

    /// The [`FullGuard`] at `now_ms`: stored tokens of at least capacity − `lease_max_tokens`
    /// (what a grant from a full bucket leaves) and an `updated_at` old enough for the rest to
    /// have refilled (plus 1 ms against rounding).
    fn full_guard(&self, now_ms: i64) -> FullGuard {
        let bucket = &self.settings.bucket;
        let tokens = (bucket.capacity() - f64::from(self.settings.lease_max_tokens)).max(0.0);
        let refill_ms = ((bucket.capacity() - tokens) * 1000.0 / bucket.per_sec()).ceil();
        // A float past i64's range saturates: no item is that old, so the guard never holds.
        let refill_ms = refill_ms as i64;
        FullGuard {
            tokens,
            updated_at_ms: now_ms.saturating_sub(refill_ms).saturating_sub(1),
        }
    }

    /// The conditional `PutItem` of `next` over `seen`, widened by `full` when given.
    async fn write(
        &self,
        key: &BucketKey,
        seen: &Seen,
        next: &BucketState,
        expires_at_s: i64,
        full: Option<FullGuard>,
    ) -> Result<WriteOutcome, StateError> {
        // Micro-token precision, rounded down: DynamoDB numbers stay short and exact.
        let tokens = (next.tokens * 1e6).floor() / 1e6;
        let mut put = self
            .table
            .client()
            .put_item()
            .table_name(self.table.name())
            .item("pk", sv(key.clone()))
            .item("tokens", nv(format!("{tokens:.6}")))
            .item("updated_at", nv(next.updated_at_ms))
            .item("expires_at", nv(expires_at_s))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let exact = match seen.version {
            Version::Absent => Some("attribute_not_exists(pk)"),
            Version::At(seen_ms) => {
                put = put.expression_attribute_values(":seen", nv(seen_ms));
                Some("updated_at = :seen")
            }
            Version::Corrupt => None,
        };
        put = match (exact, full) {
            (None, _) => put,
            (Some(exact), None) => put.condition_expression(exact),
            (Some(exact), Some(guard)) => put
                .condition_expression(format!("{exact} OR {FULL_CONDITION}"))
                // Rounded up: a guard rounded down could hold on a bucket a hair short.
                .expression_attribute_values(
                    ":full",
                    nv(format!("{:.6}", (guard.tokens * 1e6).ceil() / 1e6)),
                )
                .expression_attribute_values(":quiet", nv(guard.updated_at_ms)),
        };
        match put.send().await {
            Ok(_) => Ok(WriteOutcome::Written),
            Err(err) => match err.into_service_error() {
                PutItemError::ConditionalCheckFailedException(ccf) => {
                    Ok(WriteOutcome::Conflict(ccf.item().cloned()))
                }
                other => Err(StateError::aws("PutItem", other)),
            },
        }
    }
}
