//! The DynamoDB source of breaker forced-open overrides (seed 004 §4, SPEC §8).
//!
//! [`DynamoOverrides::current`] is called on the request path of every protected call, so it
//! only reads a cache and never waits on I/O:
//! - **Refresh**: lazily, when the cache is 5 s old (`refresh_every`, default
//!   [`OVERRIDE_REFRESH`]) at the time of a call, one background read of the four
//!   `breaker#<dependency>` items (one `BatchGetItem`) is spawned, guarded so that at most
//!   one runs; the caller gets the cached value. No
//!   background timer: Lambda freezes the process between invocations (ARCHITECTURE.md
//!   pitfall 13). A process that has never read anything answers "no override".
//! - **Age**: a snapshot serves until it is 60 s old (`keep_on_error`): while reads fail or
//!   time out (`read_timeout`, 1 s) the last successful one keeps serving that long, then
//!   overrides are ignored until a read succeeds again. A value older than that is never
//!   used, even when no read failed (an instance frozen for minutes between invocations).
//!   Ages are the larger of tokio's clock and the injected wall [`Clock`], so an instance
//!   thawed after a freeze its monotonic clock did not see still knows its value is old.
//! - **Read before deciding** ([`OverrideSource::ensure_fresh`], SPEC §8, #26): when the last
//!   successful read is older than `refresh_every` (5 s: a busy, idle, new or thawed
//!   instance), a protected call waits for a read before it is admitted: at most
//!   `fresh_wait` (100 ms) while a value less than 60 s old is held (then it decides on that
//!   value and the next call waits again on the same read), at most `read_timeout` (1 s) when
//!   none is. Concurrent callers share one read; once a read was tried and failed in the last
//!   `refresh_every`, callers do not wait again (DynamoDB down costs one bounded wait per
//!   5 s, not one per call). So while DynamoDB answers, no decision uses a value older than
//!   5 s plus one read, both ways (set and cleared).
//! - **Expiry**: an override whose `expires_at` (epoch s, wall clock) has passed is absent.
//! - **Malformed items** (missing `state`/`reason`/`set_by`/`set_at`, wrong types, a state
//!   other than `forced_open`) are absent and logged as `breaker_override_malformed`.
//!
//! - **Audit** (SPEC §12): a read that finds an override this instance has not seen (new, or
//!   set again: another `set_at`/`set_by`), or no longer finds one it had, logs the audit event
//!   `breaker_override_observed` (`state` `forced_open` with who, when, until and why, or
//!   `cleared`): each instance writes when it first acts on an operator's decision.
//!
//! - **Fleet trips** (SPEC §8 "Fleet trips", gateway only, [`DynamoOverrides::with_trips`]):
//!   the same `BatchGetItem` also fetches the `trip#<breaker>` items; the snapshot's age rules
//!   apply to them too. As the breakers' [`FleetSignal`], the source counts the trips
//!   from its cache and records this instance's trip with one `UpdateItem` in the background
//!   ([`trips`]), under an instance id made once per process ([`instance_id`]).
//!
//! Staleness uses tokio's clock; expiry uses the injected wall [`Clock`].
//! The operator's side (force-open, clear, list) is on [`StateTable`].

mod items;
mod trips;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kosha_resilience::fleet::FleetSignal;
use kosha_resilience::overrides::{ForcedOpen, OverrideSource};
use kosha_resilience::rate_limit::BoxFuture;
use parking_lot::Mutex;
use tokio::time::Instant;

pub use items::{BreakerItem, is_dependency};
pub use trips::{MAX_WRITES, TRIP_BREAKERS, TripItem, TripWrite};

use crate::{Clock, StateError, StateTable};

/// The overrides read at one time, by dependency (expired ones included; filtered on use).
pub type OverrideSnapshot = HashMap<String, ForcedOpen>;

/// The `trip#<breaker>` items read at one time, by breaker (present ones only).
pub type TripSnapshot = HashMap<String, TripItem>;

/// One read: the overrides, and the trip items asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fetched {
    /// `breaker#<dependency>` items, by dependency.
    pub overrides: OverrideSnapshot,
    /// `trip#<breaker>` items, by breaker.
    pub trips: TripSnapshot,
}

/// Reads the current overrides and trips, and writes trips: the state table in production, a
/// fake in tests.
pub trait OverrideFetcher: Send + Sync + 'static {
    /// One read of all overrides and of the `trip#<breaker>` items of `trips` (empty: none).
    fn fetch<'a>(&'a self, trips: &'a [String]) -> BoxFuture<'a, Result<Fetched, StateError>>;

    /// Records one trip ([`StateTable::record_trip`]); returns the writes made.
    fn write_trip<'a>(&'a self, trip: &'a TripWrite) -> BoxFuture<'a, Result<usize, StateError>>;
}

impl OverrideFetcher for StateTable {
    fn fetch<'a>(&'a self, trips: &'a [String]) -> BoxFuture<'a, Result<Fetched, StateError>> {
        Box::pin(items::fetch_snapshot(self, trips))
    }

    fn write_trip<'a>(&'a self, trip: &'a TripWrite) -> BoxFuture<'a, Result<usize, StateError>> {
        Box::pin(self.record_trip(trip))
    }
}

/// This process's instance id for fleet trips: 16 random hex digits, made once per process
/// (a Lambda execution environment), SPEC §8.
pub fn instance_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| format!("{:016x}", rand::random::<u64>()))
}

/// How often an instance re-reads the overrides (SPEC §8: "every 5 s per instance"): the
/// default [`OverrideSettings::refresh_every`], and so the soonest a forced-open breaker
/// without an expiry can be seen cleared (the `retry_after_s` the gateway and core-api give
/// for one). The fleet simulator's `REFRESH_S` (`benches/fleet/scenarios.py`) is checked
/// against it by a test.
pub const OVERRIDE_REFRESH: Duration = Duration::from_secs(5);

/// Refresh and staleness settings (SPEC §8 defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverrideSettings {
    /// Minimum time between two reads ([`OVERRIDE_REFRESH`], 5 s).
    pub refresh_every: Duration,
    /// How long the last successful read serves while reads fail (60 s).
    pub keep_on_error: Duration,
    /// Bound on one read (1 s); also the longest a protected call waits for a read when no
    /// usable value is held.
    pub read_timeout: Duration,
    /// The longest a protected call waits for a read while it holds a usable but older than
    /// `refresh_every` value (100 ms, SPEC §8).
    pub fresh_wait: Duration,
}

impl Default for OverrideSettings {
    fn default() -> Self {
        Self {
            refresh_every: OVERRIDE_REFRESH,
            keep_on_error: Duration::from_secs(60),
            read_timeout: Duration::from_secs(1),
            fresh_wait: Duration::from_millis(100),
        }
    }
}

/// A moment on both clocks: tokio's (monotonic, paused in tests) and the wall clock.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    mono: Instant,
    wall_ms: i64,
}

impl Stamp {
    /// How long before `now` this was: the larger of the two clocks' elapsed times (a wall
    /// clock stepping back counts as no time).
    fn age(self, now: Stamp) -> Duration {
        let mono = now.mono.saturating_duration_since(self.mono);
        let wall_ms = u64::try_from(now.wall_ms.saturating_sub(self.wall_ms)).unwrap_or(0);
        mono.max(Duration::from_millis(wall_ms))
    }
}

#[derive(Default)]
struct Cache {
    values: OverrideSnapshot,
    trips: TripSnapshot,
    last_attempt: Option<Stamp>,
    last_success: Option<Stamp>,
    refreshing: bool,
}

struct Inner {
    fetcher: Arc<dyn OverrideFetcher>,
    settings: OverrideSettings,
    clock: Arc<dyn Clock>,
    cache: Mutex<Cache>,
    /// The breakers whose `trip#<breaker>` items are read (empty: fleet trips off).
    trip_breakers: Vec<String>,
    /// This instance's id in trip entries.
    instance: String,
    /// Bumped each time a read ends (success, failure, timeout or cancellation): what callers
    /// waiting in [`OverrideSource::ensure_fresh`] wait on.
    reads_done: tokio::sync::watch::Sender<u64>,
}

impl Inner {
    fn now(&self) -> Stamp {
        Stamp {
            mono: Instant::now(),
            wall_ms: self.clock.now_ms(),
        }
    }

    /// Whether the last successful read is at most `keep_on_error` old at `now`.
    fn usable(&self, cache: &Cache, now: Stamp) -> bool {
        cache
            .last_success
            .is_some_and(|t| t.age(now) <= self.settings.keep_on_error)
    }

    /// Whether the last successful read is less than `refresh_every` old at `now`.
    fn fresh(&self, cache: &Cache, now: Stamp) -> bool {
        cache
            .last_success
            .is_some_and(|t| t.age(now) < self.settings.refresh_every)
    }

    /// Whether a read was started less than `refresh_every` before `now`.
    fn tried_recently(&self, cache: &Cache, now: Stamp) -> bool {
        cache
            .last_attempt
            .is_some_and(|t| t.age(now) < self.settings.refresh_every)
    }
}

/// The forced-open override source backed by the state table. Cheap to clone (shared cache).
#[derive(Clone)]
pub struct DynamoOverrides {
    inner: Arc<Inner>,
}

/// Resets the refresh guard and wakes waiting callers even if the refresh task is cancelled
/// or panics.
struct RefreshGuard(Arc<Inner>);

impl Drop for RefreshGuard {
    fn drop(&mut self) {
        self.0.cache.lock().refreshing = false;
        self.0.reads_done.send_modify(|n| *n = n.wrapping_add(1));
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
        Self::with_trips(fetcher, settings, clock, &[], instance_id())
    }

    /// A source that also reads, counts and records the fleet trips of `breakers` (SPEC §8
    /// "Fleet trips"; the gateway passes [`TRIP_BREAKERS`]), writing this instance's entries
    /// under `instance` ([`instance_id`] in production; tests run several instances in one
    /// process).
    pub fn with_trips(
        fetcher: Arc<dyn OverrideFetcher>,
        settings: OverrideSettings,
        clock: Arc<dyn Clock>,
        breakers: &[&str],
        instance: &str,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                fetcher,
                settings,
                clock,
                cache: Mutex::new(Cache::default()),
                trip_breakers: breakers.iter().map(|b| (*b).to_owned()).collect(),
                instance: instance.to_owned(),
                reads_done: tokio::sync::watch::Sender::new(0),
            }),
        }
    }

    /// This source's instance id in trip entries.
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    /// Reads now and waits for the result (for start-up, before serving, and tests).
    ///
    /// # Errors
    /// The read's error; the cache then follows the error rules above.
    pub async fn refresh_now(&self) -> Result<(), StateError> {
        self.inner.cache.lock().last_attempt = Some(self.inner.now());
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
    let read = inner.fetcher.fetch(&inner.trip_breakers);
    let result = match tokio::time::timeout(inner.settings.read_timeout, read).await {
        Ok(r) => r,
        Err(_) => Err(StateError::Timeout {
            operation: "BatchGetItem",
        }),
    };
    let mut cache = inner.cache.lock();
    match result {
        Ok(Fetched { overrides, trips }) => {
            audit_changes(&cache.values, &overrides, inner.clock.now_s());
            cache.values = overrides;
            cache.trips = trips;
            cache.last_success = Some(inner.now());
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
        let now = self.inner.now();
        let (value, spawn) = {
            let mut cache = self.inner.cache.lock();
            let spawn = !self.inner.tried_recently(&cache, now) && !cache.refreshing;
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
        value.filter(|f| {
            f.expires_at
                .is_none_or(|exp| exp > now.wall_ms.div_euclid(1000))
        })
    }

    fn ensure_fresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let inner = &self.inner;
            let now = inner.now();
            let (wait, mut done, spawn) = {
                let mut cache = inner.cache.lock();
                if inner.fresh(&cache, now) {
                    return;
                }
                // A read was just tried and failed: decide on what is held (SPEC §8).
                if !cache.refreshing && inner.tried_recently(&cache, now) {
                    return;
                }
                let wait = if inner.usable(&cache, now) {
                    inner.settings.fresh_wait
                } else {
                    inner.settings.read_timeout
                };
                // Subscribed under the lock, before the read can end: its end is not missed.
                let done = inner.reads_done.subscribe();
                let spawn = !cache.refreshing;
                if spawn {
                    cache.refreshing = true;
                    cache.last_attempt = Some(now);
                }
                (wait, done, spawn)
            };
            if spawn {
                self.spawn_refresh();
            }
            // Timing out leaves the read running; the next call waits on it again.
            let _ = tokio::time::timeout(wait, done.changed()).await;
        })
    }
}

impl FleetSignal for DynamoOverrides {
    fn count_after(&self, breaker: &str, after_ms: i64) -> usize {
        let now = self.inner.now();
        let cache = self.inner.cache.lock();
        if !self.inner.usable(&cache, now) {
            return 0;
        }
        cache
            .trips
            .get(breaker)
            .map_or(0, |t| t.count_after(after_ms, now.wall_ms))
    }

    fn record_trip(&self, breaker: &str, open_for: Duration) {
        let inner = Arc::clone(&self.inner);
        let trip = TripWrite {
            breaker: breaker.to_owned(),
            instance: inner.instance.clone(),
            at_ms: inner.clock.now_ms(),
            open_for,
            seen: inner.cache.lock().trips.get(breaker).cloned(),
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                event = "fleet_trip_write_failed",
                breaker,
                error = "no runtime"
            );
            return;
        };
        handle.spawn(async move {
            let write = inner.fetcher.write_trip(&trip);
            match tokio::time::timeout(inner.settings.read_timeout, write).await {
                Ok(Ok(writes)) => tracing::info!(
                    event = "fleet_trip_recorded",
                    breaker = %trip.breaker,
                    instance = %trip.instance,
                    at_ms = trip.at_ms,
                    writes,
                    "fleet trip recorded"
                ),
                Ok(Err(error)) => {
                    tracing::warn!(event = "fleet_trip_write_failed", breaker = %trip.breaker, %error);
                }
                Err(_) => tracing::warn!(
                    event = "fleet_trip_write_failed",
                    breaker = %trip.breaker,
                    error = "timed out"
                ),
            }
        });
    }

    fn now_ms(&self) -> i64 {
        self.inner.clock.now_ms()
    }
}

#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod tests;
