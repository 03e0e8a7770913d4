//! The per-instance, per-principal request limiter (SPEC §6: `KOSHA_PRINCIPAL_RPS`): every
//! authenticated request takes one token from its principal's bucket in this process's
//! memory, before the body is read or parsed, so one client cannot take the CPU from others.
//!
//! - **Counts** with the token-bucket arithmetic of [`crate::rate_limit::BucketConfig`]
//!   (capacity = one second of requests, refilled at `rps` tokens/s), on tokio's clock (so the
//!   paused test clock drives it).
//! - **Trips** when the principal's bucket holds less than one token:
//!   [`RateDecision::Limited`] with `retry_after_s` ≥ 1. No I/O, so it never fails open.
//! - **Returns** a [`RateDecision`]; the caller answers 429 and counts
//!   `shed{reason="principal_rate"}`.
//! - **Neighbours:** unlike the shared bucket of [`crate::rate_limit`] (one DynamoDB write per
//!   `tools/call`, SPEC §6), this one costs a lock and a map lookup and covers every request;
//!   it runs first. Memory is bounded: principals are authenticated (an allow-listed set), and
//!   full buckets are forgotten once the map holds [`PRUNE_AT`] entries.

use std::collections::HashMap;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::rate_limit::{BucketConfig, BucketState, InvalidBucket, RateDecision, Take};

/// Entries above which full (idle) buckets are dropped on the next insert.
pub const PRUNE_AT: usize = 4096;

/// Default requests per second per principal (`KOSHA_PRINCIPAL_RPS`): generous for any agent
/// (the shared bucket allows 1 `tools/call`/s sustained), small next to what one instance
/// serves.
pub const DEFAULT_RPS: f64 = 50.0;

/// Per-principal request limiter for one process.
#[derive(Debug)]
pub struct PrincipalLimiter {
    config: BucketConfig,
    /// The origin of the bucket clock (bucket times are ms since it).
    origin: Instant,
    buckets: Mutex<HashMap<String, BucketState>>,
}

impl PrincipalLimiter {
    /// The bucket of `rps` requests per second per principal: refilled at `rps` tokens/s,
    /// holding one second's worth (at least one request). Validated once, at start-up.
    ///
    /// # Errors
    /// [`InvalidBucket`] when `rps` is not a finite number > 0.
    pub fn bucket(rps: f64) -> Result<BucketConfig, InvalidBucket> {
        BucketConfig::try_new(rps.max(1.0), rps)
    }

    /// A limiter with one `bucket` (from [`Self::bucket`]) per principal.
    pub fn new(bucket: BucketConfig) -> Self {
        Self {
            config: bucket,
            origin: Instant::now(),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// [`Self::new`] over [`Self::bucket`]`(rps)`.
    ///
    /// # Errors
    /// As [`Self::bucket`].
    pub fn try_new(rps: f64) -> Result<Self, InvalidBucket> {
        Self::bucket(rps).map(Self::new)
    }

    /// Takes one token from `principal`'s bucket (the lock is never held across an await).
    pub fn check(&self, principal: &str) -> RateDecision {
        let now_ms = i64::try_from(self.origin.elapsed().as_millis()).unwrap_or(i64::MAX);
        let mut buckets = self.buckets.lock();
        match self.config.take(buckets.get(principal), now_ms) {
            Take::Granted { next, .. } => {
                if let Some(state) = buckets.get_mut(principal) {
                    *state = next;
                } else {
                    if buckets.len() >= PRUNE_AT {
                        let config = self.config;
                        buckets.retain(|_, s| config.refilled(Some(s), now_ms) < config.capacity());
                    }
                    buckets.insert(principal.to_owned(), next);
                }
                RateDecision::Allowed
            }
            Take::Denied { retry_after_s } => RateDecision::Limited { retry_after_s },
        }
    }

    /// Buckets held (for tests of the memory bound).
    pub fn len(&self) -> usize {
        self.buckets.lock().len()
    }

    /// Whether no bucket is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_one_second_then_limited_then_refilled() {
        let limiter = PrincipalLimiter::try_new(5.0).expect("rps");
        for _ in 0..5 {
            assert_eq!(limiter.check("a"), RateDecision::Allowed);
        }
        assert_eq!(
            limiter.check("a"),
            RateDecision::Limited { retry_after_s: 1 }
        );
        // Another principal is not affected.
        assert_eq!(limiter.check("b"), RateDecision::Allowed);
        tokio::time::advance(Duration::from_millis(250)).await;
        assert_eq!(limiter.check("a"), RateDecision::Allowed);
        assert!(!limiter.check("a").admits());
    }

    #[tokio::test(start_paused = true)]
    async fn a_sub_one_rate_still_admits_one_and_says_when_the_next_comes() {
        let limiter = PrincipalLimiter::try_new(0.25).expect("rps");
        assert_eq!(limiter.check("a"), RateDecision::Allowed);
        assert_eq!(
            limiter.check("a"),
            RateDecision::Limited { retry_after_s: 4 }
        );
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(limiter.check("a"), RateDecision::Allowed);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_buckets_are_forgotten_past_the_prune_size() {
        let limiter = PrincipalLimiter::try_new(10.0).expect("rps");
        for i in 0..PRUNE_AT {
            limiter.check(&format!("p{i}"));
        }
        assert_eq!(limiter.len(), PRUNE_AT);
        tokio::time::advance(Duration::from_secs(1)).await;
        limiter.check("new");
        assert_eq!(limiter.len(), 1);
    }

    #[test]
    fn a_rate_that_admits_nothing_is_refused() {
        for rps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(PrincipalLimiter::try_new(rps).is_err(), "{rps}");
        }
    }
}
