//! The DynamoDB source of breaker forced-open overrides (seed 004 §4, SPEC §8).
//!
//! [`DynamoOverrides::current`] is called on the request path of every protected call, so it
//! only reads a cache and never waits on I/O:
//! - **Refresh**: lazily, when the cache is 5 s old (`refresh_every`) at the time of a call,
//!   one background read of the four `breaker#<dependency>` items (one `BatchGetItem`) is
//!   spawned, guarded so that at most one runs; the caller gets the cached value. No
//!   background timer: Lambda freezes the process between invocations (ARCHITECTURE.md
//!   pitfall 13). A process that has never read anything answers "no override".
//! - **Age**: a snapshot serves until it is 60 s old (`keep_on_error`): while reads fail or
//!   time out (`read_timeout`, 1 s) the last successful one keeps serving that long, then
//!   overrides are ignored until a read succeeds again. A value older than that is never
//!   used, even when no read failed (an instance frozen for minutes between invocations).
//! - **Fresh instances** ([`OverrideSource::ensure_fresh`], SPEC §8): with no successful read
//!   in the last 60 s (a new instance, or one thawed after a long freeze), a protected call
//!   waits for one read (at most `read_timeout`) before it is admitted, so a forced-open
//!   breaker holds from an instance's first call. Concurrent callers share that read; once a
//!   read was tried in the last `refresh_every`, callers do not wait again (DynamoDB down
//!   costs one bounded wait per 5 s, not one per call).
//! - **Expiry**: an override whose `expires_at` (epoch s, wall clock) has passed is absent.
//! - **Malformed items** (missing `state`/`reason`/`set_by`/`set_at`, wrong types, a state
//!   other than `forced_open`) are absent and logged as `breaker_override_malformed`.
//!
//! - **Audit** (SPEC §12): a read that finds an override this instance has not seen (new, or
//!   set again: another `set_at`/`set_by`), or no longer finds one it had, logs the audit event
//!   `breaker_override_observed` (`state` `forced_open` with who, when, until and why, or
//!   `cleared`): each instance writes when it first acts on an operator's decision.
//!
//! Staleness uses tokio's clock; expiry uses the injected wall [`Clock`].
//! The operator's side (force-open, clear, list) is on [`StateTable`].

mod items;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kosha_resilience::overrides::{ForcedOpen, OverrideSource};
use kosha_resilience::rate_limit::BoxFuture;
use parking_lot::Mutex;
use tokio::time::Instant;

pub use items::{BreakerItem, is_dependency};

use crate::{Clock, StateError, StateTable};

/// The overrides read at one time, by dependency (expired ones included; filtered on use).
pub type OverrideSnapshot = HashMap<String, ForcedOpen>;

/// Reads the current overrides: the state table in production, a fake in tests.
pub trait OverrideFetcher: Send + Sync + 'static {
    /// One read of all overrides.
    fn fetch(&self) -> BoxFuture<'_, Result<OverrideSnapshot, StateError>>;
}

impl OverrideFetcher for StateTable {
    fn fetch(&self) -> BoxFuture<'_, Result<OverrideSnapshot, StateError>> {
        Box::pin(items::fetch_snapshot(self))
    }
}

/// Refresh and staleness settings (SPEC §8 defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverrideSettings {
    /// Minimum time between two reads (5 s).
    pub refresh_every: Duration,
    /// How long the last successful read serves while reads fail (60 s).
    pub keep_on_error: Duration,
    /// Bound on one read (1 s).
    pub read_timeout: Duration,
}

impl Default for OverrideSettings {
    fn default() -> Self {
        Self {
            refresh_every: Duration::from_secs(5),
            keep_on_error: Duration::from_secs(60),
            read_timeout: Duration::from_secs(1),
        }
    }
}

#[derive(Default)]
struct Cache {
    values: OverrideSnapshot,
    last_attempt: Option<Instant>,
    last_success: Option<Instant>,
    refreshing: bool,
}

struct Inner {
    fetcher: Arc<dyn OverrideFetcher>,
    settings: OverrideSettings,
    clock: Arc<dyn Clock>,
    cache: Mutex<Cache>,
    /// Held by the caller doing an awaited read ([`OverrideSource::ensure_fresh`]).
    awaited_read: tokio::sync::Mutex<()>,
}

impl Inner {
    /// Whether the last successful read is at most `keep_on_error` old at `now`.
    fn usable(&self, cache: &Cache, now: Instant) -> bool {
        cache
            .last_success
            .is_some_and(|t| now.saturating_duration_since(t) <= self.settings.keep_on_error)
    }
}

/// The forced-open override source backed by the state table. Cheap to clone (shared cache).
#[derive(Clone)]
pub struct DynamoOverrides {
    inner: Arc<Inner>,
}

/// Resets the refresh guard even if the refresh task is cancelled or panics.
struct RefreshGuard(Arc<Inner>);

impl Drop for RefreshGuard {
    fn drop(&mut self) {
        self.0.cache.lock().refreshing = false;
    }
}

impl DynamoOverrides {
    /// A source reading `table`.
    pub fn new(table: StateTable, settings: OverrideSettings, clock: Arc<dyn Clock>) -> Self {
        Self::with_fetcher(Arc::new(table), settings, clock)
    }

    /// A source reading through `fetcher` (tests use a fake).
    pub fn with_fetcher(
        fetcher: Arc<dyn OverrideFetcher>,
        settings: OverrideSettings,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                fetcher,
                settings,
                clock,
                cache: Mutex::new(Cache::default()),
                awaited_read: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// Reads now and waits for the result (for start-up, before serving, and tests).
    ///
    /// # Errors
    /// The read's error; the cache then follows the error rules above.
    pub async fn refresh_now(&self) -> Result<(), StateError> {
        self.inner.cache.lock().last_attempt = Some(Instant::now());
        refresh(&self.inner).await
    }

    fn spawn_refresh(&self) {
        let inner = Arc::clone(&self.inner);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    let guard = RefreshGuard(inner);
                    // Errors are logged and recorded in the cache by `refresh`.
                    let _ = refresh(&guard.0).await;
                });
            }
            Err(_) => inner.cache.lock().refreshing = false,
        }
    }
}

async fn refresh(inner: &Inner) -> Result<(), StateError> {
    let result =
        match tokio::time::timeout(inner.settings.read_timeout, inner.fetcher.fetch()).await {
            Ok(r) => r,
            Err(_) => Err(StateError::Timeout {
                operation: "BatchGetItem",
            }),
        };
    let mut cache = inner.cache.lock();
    match result {
        Ok(values) => {
            audit_changes(&cache.values, &values, inner.clock.now_s());
            cache.values = values;
            cache.last_success = Some(Instant::now());
            Ok(())
        }
        Err(err) => {
            tracing::warn!(event = "breaker_override_read_failed", error = %err);
            Err(err)
        }
    }
}

/// The `breaker_override_observed` audit events between two snapshots (module docs); an
/// expired override counts as absent.
fn audit_changes(before: &OverrideSnapshot, after: &OverrideSnapshot, now_s: i64) {
    let live = |f: &&ForcedOpen| f.expires_at.is_none_or(|exp| exp > now_s);
    for (dependency, f) in after.iter().filter(|(_, f)| live(f)) {
        let known = before
            .get(dependency)
            .filter(live)
            .is_some_and(|b| b.set_at == f.set_at && b.set_by == f.set_by);
        if !known {
            kosha_runtime::audit!(
                kosha_runtime::audit::events::OVERRIDE_OBSERVED,
                dependency = %dependency,
                state = "forced_open",
                set_by = %f.set_by,
                set_at = f.set_at,
                expires_at = f.expires_at,
                reason = %f.reason,
                "breaker override in force"
            );
        }
    }
    for (dependency, _) in before.iter().filter(|(_, f)| live(f)) {
        if !after.get(dependency).is_some_and(|f| live(&f)) {
            kosha_runtime::audit!(
                kosha_runtime::audit::events::OVERRIDE_OBSERVED,
                dependency = %dependency,
                state = "cleared",
                "breaker override lifted"
            );
        }
    }
}

impl OverrideSource for DynamoOverrides {
    fn current(&self, dependency: &str) -> Option<ForcedOpen> {
        let now = Instant::now();
        let settings = &self.inner.settings;
        let (value, spawn) = {
            let mut cache = self.inner.cache.lock();
            let stale = cache
                .last_attempt
                .is_none_or(|t| now.saturating_duration_since(t) >= settings.refresh_every);
            let spawn = stale && !cache.refreshing;
            if spawn {
                cache.refreshing = true;
                cache.last_attempt = Some(now);
            }
            let value = if self.inner.usable(&cache, now) {
                cache.values.get(dependency).cloned()
            } else {
                None
            };
            (value, spawn)
        };
        if spawn {
            self.spawn_refresh();
        }
        let now_s = self.inner.clock.now_s();
        value.filter(|f| f.expires_at.is_none_or(|exp| exp > now_s))
    }

    fn ensure_fresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let inner = &self.inner;
            if inner.usable(&inner.cache.lock(), Instant::now()) {
                return;
            }
            let _turn = inner.awaited_read.lock().await;
            {
                let now = Instant::now();
                let mut cache = inner.cache.lock();
                let tried_recently = cache.last_attempt.is_some_and(|t| {
                    now.saturating_duration_since(t) < inner.settings.refresh_every
                });
                // Another caller's read succeeded, or was just tried (and failed): go on.
                if inner.usable(&cache, now) || (tried_recently && !cache.refreshing) {
                    return;
                }
                cache.last_attempt = Some(now);
            }
            // Errors are logged and recorded in the cache by `refresh`.
            let _ = refresh(inner).await;
        })
    }
}

#[cfg(test)]
mod tests;
