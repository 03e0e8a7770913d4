//! screening-sim's own chaos knobs (SPEC §4 `/admin/chaos`, §9; issue 12): `latency_ms`,
//! `error_rate`, `down`, each set with a TTL (`ttl_s`, default 15 minutes); and how injected
//! errors look (issue #33): `status` (default 503; 429 or any 5xx) and `retry_after_s` (a
//! `Retry-After` sent with them), so a test can make the sim say "too many, not for 10 s".
//!
//! - **Fleet-wide**: knobs live in the state table (`simchaos#screening-sim`,
//!   [`kosha_state::sim_chaos`]), not in one instance's memory, so a knob set through one
//!   instance holds for every instance of the function.
//! - **Read lazily, at most once a second per instance** ([`Chaos::current`]): on the request
//!   path, never in a background task (Lambda freezes the process between invocations,
//!   ARCHITECTURE.md pitfall 13). The first request after the second has passed reads
//!   (bounded by [`READ_TIMEOUT`]); requests meanwhile use the cached value. A failed read
//!   keeps the last value (an expired knob still stops at its `expires_at`). A knob set or
//!   cleared through this instance applies here at once.
//! - **Effect** ([`Effect`]): latency first (so a slow *and* failing service is slow to fail),
//!   then `down` (every answer an error) or, with probability `error_rate`, one error; the
//!   error has the `status` knob's status and, when set, `Retry-After: <retry_after_s>`.
//! - **POST replaces**: a POST sets all the knobs (absent ones off or default) with one
//!   expiry.

use std::sync::Arc;
use std::time::Duration;

use kosha_resilience::rate_limit::BoxFuture;
use kosha_state::sim_chaos::SimChaosItem;
use kosha_state::{Clock, StateError, StateTable};
use parking_lot::Mutex;
use serde::Deserialize;
use tokio::time::Instant;

use crate::error::ScreenError;

/// The `simchaos#<service>` key of this service.
pub const SERVICE: &str = "screening-sim";
/// How often an instance reads the knobs, at most (issue 12).
pub const REFRESH_EVERY: Duration = Duration::from_secs(1);
/// How long a knob read may take before the request goes on with the cached value.
pub const READ_TIMEOUT: Duration = Duration::from_millis(250);
/// A knob without `ttl_s` lasts 15 minutes (SPEC §4).
pub const DEFAULT_TTL_S: u64 = 15 * 60;
/// Longest `ttl_s`: one day.
pub const MAX_TTL_S: u64 = 24 * 3600;
/// Largest `latency_ms`: 30 s, as the chaos header's (SPEC §9).
pub const MAX_LATENCY_MS: u64 = 30_000;
/// Largest `retry_after_s`: one hour (a client caps what it honours anyway).
pub const MAX_RETRY_AFTER_S: u64 = 3_600;
pub use kosha_state::sim_chaos::DEFAULT_STATUS;

/// Body of `POST /admin/chaos` (SPEC §4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChaosRequest {
    /// Extra latency before every answer, 0–30 000 ms.
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// Probability in [0, 1] that an answer is a 503.
    #[serde(default)]
    pub error_rate: Option<f64>,
    /// Every answer is an error.
    #[serde(default)]
    pub down: Option<bool>,
    /// HTTP status of injected errors: 429 or 500–599; default 503.
    #[serde(default)]
    pub status: Option<u16>,
    /// `Retry-After` seconds sent with injected errors, 0–3600; none by default.
    #[serde(default)]
    pub retry_after_s: Option<u64>,
    /// How long the knobs hold, 1–86 400 s; default 900.
    #[serde(default)]
    pub ttl_s: Option<u64>,
}

impl ChaosRequest {
    /// The knobs this request sets at `now_s`.
    ///
    /// # Errors
    /// [`ScreenError::InvalidArgument`] naming the field out of range, or when no knob is
    /// given.
    pub fn knobs(&self, now_s: i64) -> Result<SimChaosItem, ScreenError> {
        if self.latency_ms.is_none() && self.error_rate.is_none() && self.down.is_none() {
            return Err(ScreenError::invalid(
                "latency_ms",
                "give at least one of latency_ms, error_rate or down",
            ));
        }
        let latency_ms = self.latency_ms.unwrap_or(0);
        if latency_ms > MAX_LATENCY_MS {
            return Err(ScreenError::invalid(
                "latency_ms",
                format!("latency_ms must be 0 to {MAX_LATENCY_MS}"),
            ));
        }
        let error_rate = self.error_rate.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&error_rate) {
            return Err(ScreenError::invalid(
                "error_rate",
                "error_rate must be between 0 and 1",
            ));
        }
        let status = self.status.unwrap_or(DEFAULT_STATUS);
        if !(status == 429 || (500..=599).contains(&status)) {
            return Err(ScreenError::invalid(
                "status",
                "status must be 429 or 500 to 599",
            ));
        }
        if self.retry_after_s.is_some_and(|s| s > MAX_RETRY_AFTER_S) {
            return Err(ScreenError::invalid(
                "retry_after_s",
                format!("retry_after_s must be 0 to {MAX_RETRY_AFTER_S}"),
            ));
        }
        let ttl_s = self.ttl_s.unwrap_or(DEFAULT_TTL_S);
        if !(1..=MAX_TTL_S).contains(&ttl_s) {
            return Err(ScreenError::invalid(
                "ttl_s",
                format!("ttl_s must be 1 to {MAX_TTL_S}"),
            ));
        }
        Ok(SimChaosItem {
            latency_ms,
            error_rate,
            down: self.down.unwrap_or(false),
            status,
            retry_after_s: self.retry_after_s,
            set_at: now_s,
            expires_at: now_s.saturating_add(i64::try_from(ttl_s).unwrap_or(i64::MAX)),
        })
    }
}

/// Where the knobs are kept: the state table in production, memory in tests.
pub trait KnobStore: Send + Sync + 'static {
    /// The knobs in force at `now_s`, if any.
    fn get(&self, now_s: i64) -> BoxFuture<'_, Result<Option<SimChaosItem>, StateError>>;
    /// Replaces the knobs.
    fn put(&self, knobs: SimChaosItem) -> BoxFuture<'_, Result<(), StateError>>;
    /// Clears them.
    fn clear(&self) -> BoxFuture<'_, Result<(), StateError>>;
}

impl KnobStore for StateTable {
    fn get(&self, now_s: i64) -> BoxFuture<'_, Result<Option<SimChaosItem>, StateError>> {
        Box::pin(self.get_sim_chaos(SERVICE, now_s))
    }
    fn put(&self, knobs: SimChaosItem) -> BoxFuture<'_, Result<(), StateError>> {
        Box::pin(async move { self.put_sim_chaos(SERVICE, &knobs).await })
    }
    fn clear(&self) -> BoxFuture<'_, Result<(), StateError>> {
        Box::pin(self.delete_sim_chaos(SERVICE))
    }
}

/// Knobs in memory, shared by clones (tests; one instance only).
#[derive(Debug, Clone, Default)]
pub struct MemoryKnobs(pub Arc<Mutex<Option<SimChaosItem>>>);

impl KnobStore for MemoryKnobs {
    fn get(&self, now_s: i64) -> BoxFuture<'_, Result<Option<SimChaosItem>, StateError>> {
        let k = *self.0.lock();
        Box::pin(async move { Ok(k.filter(|k| k.expires_at > now_s)) })
    }
    fn put(&self, knobs: SimChaosItem) -> BoxFuture<'_, Result<(), StateError>> {
        *self.0.lock() = Some(knobs);
        Box::pin(async { Ok(()) })
    }
    fn clear(&self) -> BoxFuture<'_, Result<(), StateError>> {
        *self.0.lock() = None;
        Box::pin(async { Ok(()) })
    }
}

/// An injected error: its status and optional `Retry-After` (seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Injected {
    /// HTTP status: 429 or 5xx.
    pub status: u16,
    /// `Retry-After` seconds, when the knob sets one.
    pub retry_after_s: Option<u64>,
}

/// What the knobs do to one answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effect {
    /// Wait this long first.
    pub delay: Duration,
    /// Then answer this error.
    pub fail: Option<Injected>,
}

impl Effect {
    /// No chaos.
    pub const NONE: Self = Self {
        delay: Duration::ZERO,
        fail: None,
    };

    /// The effect of `knobs` on one answer; `draw` is a uniform number in [0, 1).
    pub fn of(knobs: Option<&SimChaosItem>, draw: f64) -> Self {
        knobs.map_or(Self::NONE, |k| Self {
            delay: Duration::from_millis(k.latency_ms),
            fail: (k.down || draw < k.error_rate).then_some(Injected {
                status: k.status,
                retry_after_s: k.retry_after_s,
            }),
        })
    }
}

struct Cached {
    knobs: Option<SimChaosItem>,
    read_at: Option<Instant>,
}

/// The knobs of this instance: a [`KnobStore`] read at most once a second.
pub struct Chaos {
    store: Arc<dyn KnobStore>,
    clock: Arc<dyn Clock>,
    cached: Mutex<Cached>,
}

impl std::fmt::Debug for Chaos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chaos").finish_non_exhaustive()
    }
}

impl Chaos {
    /// Knobs from `store`, expiry judged by `clock` (wall time, shared by instances).
    pub fn new(store: Arc<dyn KnobStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            cached: Mutex::new(Cached {
                knobs: None,
                read_at: None,
            }),
        }
    }

    /// Epoch seconds now.
    pub fn now_s(&self) -> i64 {
        self.clock.now_s()
    }

    /// The knobs in force: the cached value, read again first when it is a second old.
    pub async fn current(&self) -> Option<SimChaosItem> {
        let due = {
            let mut c = self.cached.lock();
            let now = Instant::now();
            let due = c
                .read_at
                .is_none_or(|at| now.duration_since(at) >= REFRESH_EVERY);
            if due {
                // Claimed before reading: concurrent requests use the cached value.
                c.read_at = Some(now);
            }
            due
        };
        if due {
            match tokio::time::timeout(READ_TIMEOUT, self.store.get(self.now_s())).await {
                Ok(Ok(knobs)) => self.cached.lock().knobs = knobs,
                Ok(Err(e)) => tracing::warn!(event = "sim_chaos_read_failed", error = %e),
                Err(_) => tracing::warn!(event = "sim_chaos_read_failed", error = "timed out"),
            }
        }
        let now_s = self.now_s();
        self.cached.lock().knobs.filter(|k| k.expires_at > now_s)
    }

    /// Reads the store now (for `GET /admin/chaos`: what every instance will see).
    ///
    /// # Errors
    /// [`StateError`] when the store cannot be read.
    pub async fn read(&self) -> Result<Option<SimChaosItem>, StateError> {
        let knobs = self.store.get(self.now_s()).await?;
        self.remember(knobs);
        Ok(knobs)
    }

    /// Sets the knobs fleet-wide (and here at once).
    ///
    /// # Errors
    /// [`StateError`] when the store cannot be written.
    pub async fn set(&self, knobs: SimChaosItem) -> Result<(), StateError> {
        self.store.put(knobs).await?;
        self.remember(Some(knobs));
        Ok(())
    }

    /// Clears the knobs fleet-wide (and here at once).
    ///
    /// # Errors
    /// [`StateError`] when the store cannot be written.
    pub async fn clear(&self) -> Result<(), StateError> {
        self.store.clear().await?;
        self.remember(None);
        Ok(())
    }

    fn remember(&self, knobs: Option<SimChaosItem>) {
        let mut c = self.cached.lock();
        c.knobs = knobs;
        c.read_at = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use kosha_state::ManualClock;

    use super::*;

    struct Counting(MemoryKnobs, AtomicUsize);

    impl KnobStore for Counting {
        fn get(&self, now_s: i64) -> BoxFuture<'_, Result<Option<SimChaosItem>, StateError>> {
            self.1.fetch_add(1, Ordering::SeqCst);
            self.0.get(now_s)
        }
        fn put(&self, knobs: SimChaosItem) -> BoxFuture<'_, Result<(), StateError>> {
            self.0.put(knobs)
        }
        fn clear(&self) -> BoxFuture<'_, Result<(), StateError>> {
            self.0.clear()
        }
    }

    fn knobs(down: bool, expires_at: i64) -> SimChaosItem {
        SimChaosItem {
            latency_ms: 0,
            error_rate: 0.0,
            down,
            status: DEFAULT_STATUS,
            retry_after_s: None,
            set_at: 0,
            expires_at,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_store_is_read_at_most_once_a_second_and_another_instances_knob_holds() {
        let shared = MemoryKnobs::default();
        let store = Arc::new(Counting(shared.clone(), AtomicUsize::new(0)));
        let clock = Arc::new(ManualClock::new(1_000_000));
        let chaos = Chaos::new(store.clone(), clock.clone());
        assert_eq!(chaos.current().await, None);
        // Another instance sets `down`; this one sees it within a second.
        shared.put(knobs(true, 2_000)).await.unwrap();
        for _ in 0..50 {
            assert_eq!(chaos.current().await, None, "cached for a second");
        }
        assert_eq!(store.1.load(Ordering::SeqCst), 1);
        tokio::time::advance(REFRESH_EVERY).await;
        assert!(chaos.current().await.is_some_and(|k| k.down));
        assert_eq!(store.1.load(Ordering::SeqCst), 2);
        // Expiry applies to the cached value too.
        clock.set_ms(2_000_000);
        assert_eq!(chaos.current().await, None);
    }

    #[test]
    fn requests_are_checked_and_default_to_fifteen_minutes() {
        let k = ChaosRequest {
            down: Some(true),
            ..ChaosRequest::default()
        }
        .knobs(100)
        .unwrap();
        assert_eq!(k.expires_at, 100 + 900);
        assert!(k.down && k.latency_ms == 0 && k.error_rate == 0.0);
        for (bad, field) in [
            (ChaosRequest::default(), "latency_ms"),
            (
                ChaosRequest {
                    latency_ms: Some(30_001),
                    ..ChaosRequest::default()
                },
                "latency_ms",
            ),
            (
                ChaosRequest {
                    error_rate: Some(1.5),
                    ..ChaosRequest::default()
                },
                "error_rate",
            ),
            (
                ChaosRequest {
                    error_rate: Some(f64::NAN),
                    ..ChaosRequest::default()
                },
                "error_rate",
            ),
            (
                ChaosRequest {
                    down: Some(true),
                    ttl_s: Some(0),
                    ..ChaosRequest::default()
                },
                "ttl_s",
            ),
        ] {
            assert_eq!(bad.knobs(0).unwrap_err().field(), Some(field), "{bad:?}");
        }
    }

    #[test]
    fn effects_follow_the_knobs() {
        assert_eq!(Effect::of(None, 0.0), Effect::NONE);
        let mut k = knobs(false, 1);
        k.error_rate = 0.25;
        k.latency_ms = 40;
        let unavailable = Injected {
            status: 503,
            retry_after_s: None,
        };
        assert_eq!(Effect::of(Some(&k), 0.1).fail, Some(unavailable));
        assert_eq!(Effect::of(Some(&k), 0.3).fail, None);
        assert_eq!(Effect::of(Some(&k), 0.3).delay, Duration::from_millis(40));
        assert!(Effect::of(Some(&knobs(true, 1)), 0.99).fail.is_some());
    }

    #[test]
    fn status_and_retry_after_shape_the_injected_error() {
        let k = ChaosRequest {
            down: Some(true),
            status: Some(429),
            retry_after_s: Some(10),
            ..ChaosRequest::default()
        }
        .knobs(0)
        .unwrap();
        assert_eq!(
            Effect::of(Some(&k), 0.5).fail,
            Some(Injected {
                status: 429,
                retry_after_s: Some(10)
            })
        );
        for (bad, field) in [
            (Some(404), None),
            (Some(200), None),
            (Some(429), Some(3_601)),
        ] {
            let r = ChaosRequest {
                down: Some(true),
                status: bad,
                retry_after_s: field,
                ..ChaosRequest::default()
            };
            let expected = if field.is_some() {
                "retry_after_s"
            } else {
                "status"
            };
            assert_eq!(r.knobs(0).unwrap_err().field(), Some(expected), "{r:?}");
        }
    }
}
