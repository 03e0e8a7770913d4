//! Fleet trips: a breaker the fleet shares (SPEC §8 "Fleet trips", issue #27).
//!
//! Breakers live in each instance (seed 004 §4), so with N warm instances each one discovers
//! an outage on its own evidence. With fleet trips on, a breaker that opens on its own evidence
//! (failure rate, or a failed half-open probe: not forced, not from this signal) records its
//! trip through a [`FleetSignal`] (`trip#<breaker>` in the state table: this instance's id →
//! epoch ms). A closed breaker that counts trips from at least `quorum` distinct instances, its
//! own included, each newer than the open duration and newer than its own last close of that
//! breaker, opens as an ordinary open (half-open after the open duration, closed by its own
//! probes), logged and counted with `reason: "fleet"`. So one sick instance (its own network,
//! its own bug) never opens the fleet, and an instance that has just closed after its own
//! probes does not reopen on trips older than that close.
//!
//! The breaker asks the signal only for a count from its cache (no I/O on the request path) and
//! hands it a trip to record (the signal writes in the background).

use std::sync::Arc;
use std::time::Duration;

use crate::error::ConfigError;

/// The state table's side of fleet trips: the last read of the `trip#<breaker>` items, the
/// trip write, and the wall clock the entries are stamped with.
pub trait FleetSignal: Send + Sync + 'static {
    /// Distinct instances (this one included) whose last read trip of `breaker` is later than
    /// `after_ms` (epoch ms, exclusive). From the cache only: never waits on I/O.
    fn count_after(&self, breaker: &str, after_ms: i64) -> usize;

    /// Records this instance's trip of `breaker` now, dropping entries older than `open_for`
    /// (one write, in the background; a failure is logged, never surfaced to the call).
    fn record_trip(&self, breaker: &str, open_for: Duration);

    /// The wall clock the trips are stamped with, epoch ms.
    fn now_ms(&self) -> i64;
}

/// A breaker's part in the fleet signal: the name of its `trip#<name>` item, the quorum, and
/// the signal.
#[derive(Clone)]
pub struct FleetTrips {
    name: String,
    quorum: usize,
    signal: Arc<dyn FleetSignal>,
}

impl std::fmt::Debug for FleetTrips {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetTrips")
            .field("name", &self.name)
            .field("quorum", &self.quorum)
            .finish_non_exhaustive()
    }
}

impl FleetTrips {
    /// Fleet trips for the breaker whose item is `trip#<name>` (SPEC §8: `core-api`,
    /// `core-api-writes`, `screening-sim`), opening on `quorum` distinct instances' trips.
    ///
    /// # Errors
    /// [`ConfigError`] when `quorum` < 2: one instance alone must never open the fleet
    /// (SPEC §8; `KOSHA_FLEET_TRIP_QUORUM=0` turns the signal off before this is built).
    pub fn try_new(
        name: &str,
        quorum: usize,
        signal: Arc<dyn FleetSignal>,
    ) -> Result<Self, ConfigError> {
        if quorum < 2 {
            return Err(ConfigError::invalid(
                "fleet.quorum",
                "must be at least 2 (one instance alone never opens the fleet; 0 turns fleet trips off)",
            ));
        }
        Ok(Self {
            name: name.to_owned(),
            quorum,
            signal,
        })
    }

    /// The item name (`trip#<name>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Distinct instances needed.
    pub fn quorum(&self) -> usize {
        self.quorum
    }

    /// The trips that count now: newer than `open_for` before now and than `last_close_ms`.
    pub(crate) fn counted(&self, open_for: Duration, last_close_ms: Option<i64>) -> usize {
        let open_ms = i64::try_from(open_for.as_millis()).unwrap_or(i64::MAX);
        let window_start = self.signal.now_ms().saturating_sub(open_ms);
        let after = last_close_ms.map_or(window_start, |c| c.max(window_start));
        self.signal.count_after(&self.name, after)
    }

    pub(crate) fn record(&self, open_for: Duration) {
        self.signal.record_trip(&self.name, open_for);
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.signal.now_ms()
    }
}
