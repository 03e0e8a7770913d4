//! Per-client (or per-user) token bucket: the arithmetic, the decision type and the limiter
//! trait (seed 004 §6, SPEC §6).
//!
//! - **Whose:** a [`Bucket`] names the caller's bucket: its app client's by default, its
//!   user's with `KOSHA_RATE_KEY=user` (SPEC §6); both have the same capacity and rate.
//! - **Counts** tokens, possibly fractional: capacity 20, refilled lazily at 1 token/s from the
//!   time of the last write (`KOSHA_RATE_CAPACITY`, `KOSHA_RATE_PER_SEC`).
//! - **Spends** a call's cost in whole tokens (default 1, per tool; SPEC §6). A store may take
//!   more than the cost in one grant (a lease, [`BucketConfig::grant`]) and spend the rest
//!   locally.
//! - **Trips** when the refilled bucket holds less than the cost: the call is
//!   [`RateDecision::Limited`] with `retry_after_s = ceil((cost − tokens) / rate)`, always ≥ 1
//!   (the time until the bucket holds the cost).
//! - **Returns** a [`RateDecision`]; the store decides where the bucket lives (the DynamoDB
//!   store in `kosha-state` takes leases with one conditional write each; [`LocalRateLimiter`]
//!   keeps it in memory). A store that cannot reach its backend answers
//!   [`RateDecision::FailOpen`] (availability over strict fairness, seed 004 §6).
//! - **Neighbours**: runs once per `tools/call`, before the deadline and any dependency policy;
//!   a limited call never reaches a breaker, bulkhead or retry.
//!
//! Time is epoch milliseconds passed in by the caller, so the maths is pure and testable.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use parking_lot::Mutex;

/// Seconds an idle bucket item lives after its last use (SPEC §8: `expires_at` = last use + 3600).
pub const BUCKET_TTL_S: i64 = 3600;

/// Bucket settings, validated by [`BucketConfig::try_new`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketConfig {
    capacity: f64,
    per_sec: f64,
}

/// A refused [`BucketConfig`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvalidBucket {
    /// Capacity must be finite and at least 1 (a bucket that can never hold a token admits nothing).
    #[error("rate limit capacity must be a finite number >= 1")]
    Capacity,
    /// Refill rate must be finite and positive.
    #[error("rate limit refill rate must be a finite number > 0")]
    Rate,
}

/// The stored state of one bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketState {
    /// Tokens at `updated_at_ms` (fractional).
    pub tokens: f64,
    /// When `tokens` was computed, epoch ms.
    pub updated_at_ms: i64,
}

/// The outcome of trying to take tokens ([`BucketConfig::grant`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Take {
    /// `granted` tokens taken; `next` is the state to store.
    Granted {
        /// The bucket after the take.
        next: BucketState,
        /// Whole tokens taken: at least the need, at most the want.
        granted: u32,
    },
    /// Fewer tokens than the need after refill.
    Denied {
        /// Whole seconds until the bucket holds the need, ≥ 1.
        retry_after_s: u64,
    },
}

impl BucketConfig {
    /// SPEC §6 defaults: capacity 20, 1 token/s.
    pub const DEFAULT: Self = Self {
        capacity: 20.0,
        per_sec: 1.0,
    };

    /// Validated settings.
    ///
    /// # Errors
    /// [`InvalidBucket`] when `capacity < 1` or `per_sec <= 0`, or either is not finite.
    pub fn try_new(capacity: f64, per_sec: f64) -> Result<Self, InvalidBucket> {
        if !capacity.is_finite() || capacity < 1.0 {
            return Err(InvalidBucket::Capacity);
        }
        if !per_sec.is_finite() || per_sec <= 0.0 {
            return Err(InvalidBucket::Rate);
        }
        Ok(Self { capacity, per_sec })
    }

    /// Maximum tokens.
    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// Tokens added per second.
    pub fn per_sec(&self) -> f64 {
        self.per_sec
    }

    /// Tokens in the bucket at `now_ms`: `min(capacity, tokens + elapsed · rate)`; a missing
    /// bucket is full. Time running backwards (another instance's clock ahead) refills nothing.
    pub fn refilled(&self, state: Option<&BucketState>, now_ms: i64) -> f64 {
        match state {
            None => self.capacity,
            Some(s) => {
                let elapsed_s = now_ms.saturating_sub(s.updated_at_ms).max(0) as f64 / 1000.0;
                (s.tokens.max(0.0) + elapsed_s * self.per_sec).min(self.capacity)
            }
        }
    }

    /// Takes one token at `now_ms` from `state` (`None` = fresh bucket): [`BucketConfig::grant`]
    /// with need and want 1.
    pub fn take(&self, state: Option<&BucketState>, now_ms: i64) -> Take {
        self.grant(state, now_ms, 1, 1)
    }

    /// Takes between `need` and `want` whole tokens at `now_ms` from `state` (`None` = fresh
    /// bucket): as many as the refilled bucket holds, up to `want` (a lease, SPEC §6), or
    /// [`Take::Denied`] when it holds fewer than `need`, with the seconds until it holds
    /// `need`. A `want` below `need` counts as `need`.
    ///
    /// The granted state's `updated_at_ms` is strictly greater than the previous one (at least
    /// +1 ms), so every write changes the compare-and-set version even when two writes fall in
    /// the same millisecond; that forfeits at most 1 ms of refill.
    ///
    /// ```
    /// use kosha_resilience::rate_limit::{BucketConfig, Take};
    /// let bucket = BucketConfig::try_new(20.0, 1.0).unwrap();
    /// // A fresh bucket grants the whole want; one holding 2.5 tokens grants 2 of 5.
    /// let Take::Granted { next, granted } = bucket.grant(None, 0, 1, 5) else { panic!() };
    /// assert_eq!((granted, next.tokens), (5, 15.0));
    /// let low = kosha_resilience::rate_limit::BucketState { tokens: 2.5, updated_at_ms: 0 };
    /// assert!(matches!(bucket.grant(Some(&low), 0, 1, 5), Take::Granted { granted: 2, .. }));
    /// // A cost of 4 waits until the bucket holds 4: 2 s at 1 token/s.
    /// assert_eq!(bucket.grant(Some(&low), 0, 4, 4), Take::Denied { retry_after_s: 2 });
    /// ```
    pub fn grant(&self, state: Option<&BucketState>, now_ms: i64, need: u32, want: u32) -> Take {
        let tokens = self.refilled(state, now_ms);
        let need_f = f64::from(need.max(1));
        if tokens < need_f {
            return Take::Denied {
                retry_after_s: self.retry_after_for(tokens, need.max(1)),
            };
        }
        // tokens >= need >= 1 here and at most the capacity (finite).
        let whole = tokens.floor().min(f64::from(u32::MAX)) as u32;
        let granted = want.max(need.max(1)).min(whole);
        let updated_at_ms = match state {
            Some(s) if s.updated_at_ms >= now_ms => s.updated_at_ms.saturating_add(1),
            _ => now_ms,
        };
        Take::Granted {
            next: BucketState {
                tokens: tokens - f64::from(granted),
                updated_at_ms,
            },
            granted,
        }
    }

    /// `ceil((1 − tokens) / rate)` whole seconds, at least 1.
    pub fn retry_after_s(&self, tokens: f64) -> u64 {
        self.retry_after_for(tokens, 1)
    }

    /// `ceil((cost − tokens) / rate)` whole seconds, at least 1: how long until a bucket
    /// holding `tokens` holds `cost` (SPEC §6 `retry_after_s`).
    pub fn retry_after_for(&self, tokens: f64, cost: u32) -> u64 {
        let secs = ((f64::from(cost) - tokens) / self.per_sec).ceil();
        if secs.is_finite() && secs >= 1.0 {
            secs as u64
        } else {
            1
        }
    }
}

/// `expires_at` (epoch seconds) for a bucket last used at `now_ms`.
pub fn bucket_expires_at(now_ms: i64) -> i64 {
    now_ms.div_euclid(1000).saturating_add(BUCKET_TTL_S)
}

/// What the rate limiter decided for one `tools/call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateDecision {
    /// The call's cost was taken (or the compare-and-set lost 3 times: SPEC §6 "then allow").
    Allowed,
    /// The bucket holds less than the cost: the gateway answers a tool error `rate_limited`
    /// with `retry_after_s` (SPEC §6).
    Limited {
        /// Whole seconds, ≥ 1.
        retry_after_s: u64,
    },
    /// The store could not be reached in time: the call proceeds (SPEC §6, §10).
    FailOpen,
}

impl RateDecision {
    /// The `decision` dimension of the `rate_limit` metric (SPEC §12).
    pub fn label(&self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Limited { .. } => "limited",
            Self::FailOpen => "fail_open",
        }
    }

    /// Whether the call may proceed.
    pub fn admits(&self) -> bool {
        !matches!(self, Self::Limited { .. })
    }

    /// Counts this decision in metric `rate_limit{decision, bucket}` (SPEC §12).
    pub fn record(&self, kind: BucketKind) {
        metrics::counter!("rate_limit", "decision" => self.label(), "bucket" => kind.label())
            .increment(1);
    }
}

/// Whose bucket a call spends from (SPEC §6: `KOSHA_RATE_KEY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BucketKind {
    /// The app client's bucket, `rl#<client_id>`: the default, and always a
    /// client-credentials token's.
    Client,
    /// One person's bucket, `rl#u#<sub>`, with `KOSHA_RATE_KEY=user`.
    User,
}

impl BucketKind {
    /// The `bucket` dimension of the `rate_limit` metric (SPEC §12): `client` or `user`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::User => "user",
        }
    }
}

/// One caller's bucket: its kind and the id it is kept under (a `client_id` or a user's
/// `sub`). Two buckets of different kinds never share tokens, whatever their ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bucket<'a> {
    /// Client or user.
    pub kind: BucketKind,
    /// The `client_id` ([`BucketKind::Client`]) or the `sub` ([`BucketKind::User`]).
    pub id: &'a str,
}

impl<'a> Bucket<'a> {
    /// `client_id`'s bucket.
    pub fn client(client_id: &'a str) -> Self {
        Self {
            kind: BucketKind::Client,
            id: client_id,
        }
    }

    /// The bucket of the user whose `sub` claim is `sub`.
    pub fn user(sub: &'a str) -> Self {
        Self {
            kind: BucketKind::User,
            id: sub,
        }
    }
}

/// A boxed future, so limiters can be used as trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Decides whether one call spending from `bucket` may proceed. Implementations record the
/// metric.
pub trait RateLimiter: Send + Sync + 'static {
    /// Takes `cost` tokens (≥ 1; 0 counts as 1) from `bucket`.
    fn check<'a>(&'a self, bucket: Bucket<'a>, cost: u32) -> BoxFuture<'a, RateDecision>;
}

/// An in-memory limiter (one process): for local runs without a state table, and tests.
#[derive(Debug)]
pub struct LocalRateLimiter {
    config: BucketConfig,
    now_ms: fn() -> i64,
    buckets: Mutex<HashMap<(BucketKind, String), BucketState>>,
}

impl LocalRateLimiter {
    /// A limiter with `config`, reading time from `now_ms` (epoch ms).
    pub fn new(config: BucketConfig, now_ms: fn() -> i64) -> Self {
        Self {
            config,
            now_ms,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes `cost` tokens synchronously (the lock is never held across an await).
    pub fn decide(&self, bucket: Bucket<'_>, cost: u32) -> RateDecision {
        let now = (self.now_ms)();
        let mut buckets = self.buckets.lock();
        let key = (bucket.kind, bucket.id.to_owned());
        match self.config.grant(buckets.get(&key), now, cost, cost) {
            Take::Granted { next, .. } => {
                buckets.insert(key, next);
                RateDecision::Allowed
            }
            Take::Denied { retry_after_s } => RateDecision::Limited { retry_after_s },
        }
    }
}

impl RateLimiter for LocalRateLimiter {
    fn check<'a>(&'a self, bucket: Bucket<'a>, cost: u32) -> BoxFuture<'a, RateDecision> {
        let decision = self.decide(bucket, cost);
        decision.record(bucket.kind);
        Box::pin(std::future::ready(decision))
    }
}

#[cfg(test)]
mod tests;
