//! Circuit breaker: stop calling a dependency that keeps failing, and probe carefully before
//! trusting it again (seed 004 §4, SPEC §8).
//!
//! - **What it counts:** the outcomes of the last `window` logical calls, in a ring buffer
//!   with running counters (a retried call is one outcome: retries run inside the breaker).
//!   [`Outcome::Failure`] = timeouts, connection errors, 5xx; [`Outcome::Neutral`] = 4xx and
//!   other answers that say nothing about the dependency's health: not recorded while closed,
//!   and in half-open they free the probe slot (pitfall 4).
//! - **Trip conditions:** closed → open when at least `min_calls` outcomes are in the window
//!   and failures / calls ≥ `failure_rate_pct` %. Half-open → open on any probe failure.
//!   Any state → forced-open while the [`OverrideSource`] has an override for the dependency.
//!   Closed → open when fleet trips are on ([`Breaker::set_fleet`], SPEC §8) and trips from
//!   at least the quorum of distinct instances count ([`crate::fleet`]); an open on its own
//!   evidence (failure rate, failed probe) records this instance's trip, once per transition.
//! - **Recovery conditions:** open → half-open once `open_duration` has passed (checked lazily
//!   by the next caller: no timer task, pitfall 13). Half-open admits exactly
//!   `half_open_probes` (K, default 3) probes; K successes out of K close it. A probe slot is
//!   leased: a probe that neither reports nor is dropped within `probe_lease` loses its slot
//!   to the next caller (pitfall 2), and a dropped unrecorded permit frees its slot at once.
//!   Forced-open → closed when the override is cleared.
//! - **Generations:** every transition bumps the generation and starts a fresh window
//!   (pitfall 6). A permit remembers the generation it was issued in; an outcome reported for
//!   another generation is stale and ignored, so calls started before the breaker opened
//!   cannot close it (pitfall 3).
//! - **What it returns:** [`Breaker::try_acquire`] gives a [`CallPermit`] or [`Rejected`]
//!   (`Open { retry_after }` or `ForcedOpen`), which the gateway maps to
//!   `dependency_unavailable` with `retry_after_s`.
//! - **Neighbours:** it sits after the bulkhead and before retry ([`crate::policy`]).
//!   Rejections are not outcomes: they are never recorded, retried or charged to the budget.
//! - **Concurrency:** one `parking_lot::Mutex` guards the state; it is held for a few
//!   arithmetic steps and never across an await. The open → half-open switch happens under it,
//!   so any number of racing callers get at most K probes (pitfall 1).
//! - **Observability:** `breaker_state` gauge (dimension `dependency`; 0 closed, 1 half-open,
//!   2 open, 3 forced open — SPEC §8), the `breaker_transition` counter (dimensions
//!   `dependency`, `to`, `reason`: `own` | `fleet` | `forced`, SPEC §12) and a log event on
//!   every transition, with the dependency, `from`, `to`, `why` and `reason` (warn when it
//!   opens, info otherwise).

mod window;

use std::sync::Arc;
use std::time::Duration;

use metrics::{Counter, Gauge};
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::error::ConfigError;
use crate::fleet::FleetTrips;
use crate::overrides::{ForcedOpen, OverrideSource};
use window::Window;

/// Breaker settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Outcomes kept in the sliding window, 1..=10,000.
    pub window: usize,
    /// Outcomes needed in the window before the failure rate can trip it, 1..=`window`.
    pub min_calls: usize,
    /// Failure rate that opens the breaker, percent, 1..=100.
    pub failure_rate_pct: u8,
    /// How long it stays open before admitting probes, > 0.
    pub open_duration: Duration,
    /// Probes admitted in half-open (K), 1..=100.
    pub half_open_probes: usize,
    /// How long a probe may hold its slot without reporting, > 0.
    pub probe_lease: Duration,
}

impl BreakerConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=10_000).contains(&self.window) {
            return Err(ConfigError::invalid(
                "breaker.window",
                "must be in 1..=10000",
            ));
        }
        if !(1..=self.window).contains(&self.min_calls) {
            return Err(ConfigError::invalid(
                "breaker.min_calls",
                "must be in 1..=window",
            ));
        }
        if !(1..=100).contains(&self.failure_rate_pct) {
            return Err(ConfigError::invalid(
                "breaker.failure_rate_pct",
                "must be in 1..=100",
            ));
        }
        if self.open_duration.is_zero() {
            return Err(ConfigError::invalid(
                "breaker.open_duration",
                "must be positive",
            ));
        }
        if !(1..=100).contains(&self.half_open_probes) {
            return Err(ConfigError::invalid(
                "breaker.half_open_probes",
                "must be in 1..=100",
            ));
        }
        if self.probe_lease.is_zero() {
            return Err(ConfigError::invalid(
                "breaker.probe_lease",
                "must be positive",
            ));
        }
        Ok(())
    }
}

/// How a logical call ended, as far as the breaker is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The dependency answered well.
    Success,
    /// A timeout, connection error or 5xx.
    Failure,
    /// Neither (a 4xx, a call cut short by the caller's own deadline): not recorded; frees a
    /// half-open probe slot.
    Neutral,
}

/// The breaker's state, with its `breaker_state` gauge value (SPEC §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls flow; outcomes are counted.
    Closed,
    /// Probing: at most K calls admitted.
    HalfOpen,
    /// Calls rejected until the open duration passes.
    Open,
    /// Calls rejected while an operator override is in force.
    ForcedOpen,
}

impl BreakerState {
    /// Gauge value: 0 closed, 1 half-open, 2 open, 3 forced open.
    pub fn gauge(self) -> f64 {
        match self {
            Self::Closed => 0.0,
            Self::HalfOpen => 1.0,
            Self::Open => 2.0,
            Self::ForcedOpen => 3.0,
        }
    }

    /// Name used in logs and health reports: `closed`, `half_open`, `open`, `forced_open`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::HalfOpen => "half_open",
            Self::Open => "open",
            Self::ForcedOpen => "forced_open",
        }
    }
}

/// Why the breaker refused a call. Never counted as a failure, never retried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// Open, or half-open with every probe slot taken.
    #[error("circuit open")]
    Open {
        /// When a call may be admitted again, at the earliest.
        retry_after: Duration,
    },
    /// An operator forced the breaker open.
    #[error("circuit forced open by an operator")]
    ForcedOpen {
        /// The override in force.
        forced: ForcedOpen,
        /// Time until the override expires; `None` when it has no expiry.
        retry_after: Option<Duration>,
    },
}

/// A point-in-time view of a breaker, for health reports and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerSnapshot {
    /// Current state.
    pub state: BreakerState,
    /// Transitions so far.
    pub generation: u64,
    /// Outcomes in the window (closed) — 0 in other states.
    pub calls: usize,
    /// Failures in the window.
    pub failures: usize,
    /// Probes in flight (half-open).
    pub probes_in_flight: usize,
    /// The operator override, when forced open.
    pub forced: Option<ForcedOpen>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Free,
    InFlight { probe: u64, lease_until: Instant },
    Succeeded,
}

#[derive(Debug)]
enum State {
    Closed,
    Open { until: Instant },
    HalfOpen,
    ForcedOpen(ForcedOpen),
}

impl State {
    fn public(&self) -> BreakerState {
        match self {
            Self::Closed => BreakerState::Closed,
            Self::Open { .. } => BreakerState::Open,
            Self::HalfOpen => BreakerState::HalfOpen,
            Self::ForcedOpen(_) => BreakerState::ForcedOpen,
        }
    }
}

#[derive(Debug)]
struct Inner {
    state: State,
    generation: u64,
    window: Window,
    /// Half-open probe slots, allocated once.
    slots: Vec<Slot>,
    next_probe: u64,
    /// When this breaker last closed, epoch ms on the fleet signal's clock (fleet trips
    /// only): trips older than this do not count.
    last_close_ms: Option<i64>,
}

/// A circuit breaker for one dependency.
pub struct Breaker {
    name: String,
    config: BreakerConfig,
    overrides: Arc<dyn OverrideSource>,
    fleet: Option<FleetTrips>,
    inner: Mutex<Inner>,
    gauge: Gauge,
    /// `breaker_transition` by (`to`, `reason`), every pair a transition can take.
    transitions: Vec<(BreakerState, &'static str, Counter)>,
}

/// The (`to`, `reason`) pairs of `breaker_transition` (SPEC §12).
const TRANSITIONS: [(BreakerState, &str); 6] = [
    (BreakerState::Open, "own"),
    (BreakerState::Open, "fleet"),
    (BreakerState::HalfOpen, "own"),
    (BreakerState::Closed, "own"),
    (BreakerState::Closed, "forced"),
    (BreakerState::ForcedOpen, "forced"),
];

impl std::fmt::Debug for Breaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Breaker")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("inner", &*self.inner.lock())
            .finish_non_exhaustive()
    }
}

mod machine;

pub use machine::CallPermit;

impl Breaker {
    /// A closed breaker for `dependency` (the metrics dimension and the override key).
    /// Metric handles are registered here: install the recorder first.
    pub fn try_new(
        dependency: &str,
        config: BreakerConfig,
        overrides: Arc<dyn OverrideSource>,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let gauge = metrics::gauge!("breaker_state", "dependency" => dependency.to_owned());
        gauge.set(BreakerState::Closed.gauge());
        let transitions = TRANSITIONS
            .iter()
            .map(|&(to, reason)| {
                let counter = metrics::counter!(
                    "breaker_transition",
                    "dependency" => dependency.to_owned(),
                    "to" => to.as_str(),
                    "reason" => reason
                );
                (to, reason, counter)
            })
            .collect();
        Ok(Self {
            transitions,
            name: dependency.to_owned(),
            config,
            overrides,
            fleet: None,
            inner: Mutex::new(Inner {
                state: State::Closed,
                generation: 0,
                window: Window::new(config.window),
                slots: vec![Slot::Free; config.half_open_probes],
                next_probe: 0,
                last_close_ms: None,
            }),
            gauge,
        })
    }

    /// The same breaker sharing its trips with the fleet (SPEC §8 "Fleet trips"): it records
    /// its own-evidence opens through `fleet`, and a closed breaker opens when the quorum's
    /// trips count. A breaker that never closed counts every trip within the open duration.
    pub fn set_fleet(&mut self, fleet: FleetTrips) {
        self.fleet = Some(fleet);
    }

    /// The fleet trips this breaker shares, if on.
    pub fn fleet(&self) -> Option<&FleetTrips> {
        self.fleet.as_ref()
    }

    /// Distinct instances whose trips this breaker counts now (`fleet_trips` of SPEC §4);
    /// `None` when fleet trips are off.
    pub fn fleet_trips(&self) -> Option<usize> {
        let fleet = self.fleet.as_ref()?;
        let last_close_ms = self.inner.lock().last_close_ms;
        Some(fleet.counted(self.config.open_duration, last_close_ms))
    }

    /// Counts one `breaker_transition` to `to` for `reason`.
    fn count_transition(&self, to: BreakerState, reason: &str) {
        if let Some((_, _, counter)) = self
            .transitions
            .iter()
            .find(|(t, r, _)| *t == to && *r == reason)
        {
            counter.increment(1);
        }
    }

    /// The dependency this breaker guards.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The settings.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// The current state (applying any due transition first).
    pub fn state(&self) -> BreakerState {
        self.snapshot().state
    }
}

#[cfg(test)]
mod tests;
