//! The breaker's transitions, permits and outcome handling. Every function here runs with the
//! state lock held for a few steps and never awaits.

use std::time::Duration;

use time::OffsetDateTime;
use tokio::time::Instant;

use super::{Breaker, BreakerSnapshot, BreakerState, Inner, Outcome, Rejected, Slot, State};
use crate::overrides::ForcedOpen;

/// Permission for one logical call, issued by [`Breaker::try_acquire`].
///
/// Report how the call ended with [`CallPermit::record`]. Dropping it unrecorded (the call
/// was cancelled or panicked) records nothing and, for a half-open probe, frees the slot.
#[derive(Debug)]
#[must_use = "record the call's outcome, or drop the permit to abandon the call"]
pub struct CallPermit<'a> {
    breaker: &'a Breaker,
    generation: u64,
    /// `(slot index, probe id)` for a half-open probe.
    probe: Option<(usize, u64)>,
    recorded: bool,
}

impl CallPermit<'_> {
    /// Reports the call's outcome. An outcome from an earlier generation is ignored.
    pub fn record(mut self, outcome: Outcome) {
        self.recorded = true;
        let mut inner = self.breaker.inner.lock();
        self.breaker
            .apply(&mut inner, self.generation, self.probe, outcome);
    }

    /// Whether this permit is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.probe.is_some()
    }

    /// The generation the permit was issued in.
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

impl Drop for CallPermit<'_> {
    fn drop(&mut self) {
        if self.recorded || self.probe.is_none() {
            return;
        }
        let mut inner = self.breaker.inner.lock();
        self.breaker
            .apply(&mut inner, self.generation, self.probe, Outcome::Neutral);
    }
}

impl Breaker {
    /// Asks to make one logical call.
    ///
    /// Reads the override source first (outside the lock), applies any due transition, then
    /// admits the call (closed), admits it as a probe (half-open with a free or expired slot),
    /// or rejects it.
    pub fn try_acquire(&self) -> Result<CallPermit<'_>, Rejected> {
        let forced = self.overrides.current(&self.name);
        let mut inner = self.inner.lock();
        self.sync(&mut inner, forced);
        let generation = inner.generation;
        let probe = match &inner.state {
            State::Closed => None,
            State::Open { until } => {
                let retry_after = until.saturating_duration_since(Instant::now());
                return Err(Rejected::Open { retry_after });
            }
            State::ForcedOpen(forced) => {
                return Err(Rejected::ForcedOpen {
                    retry_after: forced_retry_after(forced),
                    forced: forced.clone(),
                });
            }
            State::HalfOpen => Some(self.take_probe_slot(&mut inner)?),
        };
        Ok(CallPermit {
            breaker: self,
            generation,
            probe,
            recorded: false,
        })
    }

    /// A full view of the state (applying any due transition first).
    pub fn snapshot(&self) -> BreakerSnapshot {
        let forced = self.overrides.current(&self.name);
        let mut inner = self.inner.lock();
        self.sync(&mut inner, forced);
        BreakerSnapshot {
            state: inner.state.public(),
            generation: inner.generation,
            calls: inner.window.len(),
            failures: inner.window.failures(),
            probes_in_flight: inner
                .slots
                .iter()
                .filter(|s| matches!(s, Slot::InFlight { .. }))
                .count(),
            forced: match &inner.state {
                State::ForcedOpen(f) => Some(f.clone()),
                _ => None,
            },
        }
    }

    fn take_probe_slot(&self, inner: &mut Inner) -> Result<(usize, u64), Rejected> {
        let now = Instant::now();
        let free = inner
            .slots
            .iter()
            .position(|s| *s == Slot::Free)
            .or_else(|| {
                // ## HalfOpen: reclaim a slot whose probe outlived its lease (pitfall 2).
                inner.slots.iter().position(
                    |s| matches!(s, Slot::InFlight { lease_until, .. } if *lease_until <= now),
                )
            });
        let Some(index) = free else {
            let retry_after = inner
                .slots
                .iter()
                .filter_map(|s| match s {
                    Slot::InFlight { lease_until, .. } => {
                        Some(lease_until.saturating_duration_since(now))
                    }
                    _ => None,
                })
                .min()
                .unwrap_or(Duration::ZERO);
            return Err(Rejected::Open { retry_after });
        };
        let probe = inner.next_probe;
        inner.next_probe = inner.next_probe.wrapping_add(1);
        if let Some(slot) = inner.slots.get_mut(index) {
            *slot = Slot::InFlight {
                probe,
                lease_until: now + self.config.probe_lease,
            };
        }
        Ok((index, probe))
    }

    /// Applies override and time-driven transitions.
    fn sync(&self, inner: &mut Inner, forced: Option<ForcedOpen>) {
        match (forced, &inner.state) {
            // ## (Closed | Open | HalfOpen) => ForcedOpen, and refresh the stored override.
            (Some(forced), State::ForcedOpen(_)) => inner.state = State::ForcedOpen(forced),
            (Some(forced), _) => {
                self.transition(inner, State::ForcedOpen(forced), "override_set");
            }
            // ## ForcedOpen => Closed when the override is cleared.
            (None, State::ForcedOpen(_)) => {
                self.transition(inner, State::Closed, "override_cleared");
            }
            // ## Open => HalfOpen once the open duration has passed.
            (None, State::Open { until }) if Instant::now() >= *until => {
                self.transition(inner, State::HalfOpen, "open_duration_elapsed");
            }
            // ## Closed => Open on the quorum's fleet trips (SPEC §8).
            (None, State::Closed) => {
                if let Some(fleet) = &self.fleet
                    && fleet.counted(self.config.open_duration, inner.last_close_ms)
                        >= fleet.quorum()
                {
                    let until = Instant::now() + self.config.open_duration;
                    self.transition(inner, State::Open { until }, "fleet_trips");
                }
            }
            (None, _) => {}
        }
    }

    /// Handles one outcome for a permit of `generation`.
    fn apply(
        &self,
        inner: &mut Inner,
        generation: u64,
        probe: Option<(usize, u64)>,
        outcome: Outcome,
    ) {
        if inner.generation != generation {
            // Stale: started before the last transition (pitfall 3).
            return;
        }
        match (&inner.state, probe) {
            // ## Closed => (Closed | Open)
            (State::Closed, None) => {
                match outcome {
                    Outcome::Success => inner.window.push(false),
                    Outcome::Failure => inner.window.push(true),
                    Outcome::Neutral => return,
                }
                if inner
                    .window
                    .should_trip(self.config.min_calls, self.config.failure_rate_pct)
                {
                    let until = Instant::now() + self.config.open_duration;
                    self.transition(inner, State::Open { until }, "failure_rate");
                }
            }
            // ## HalfOpen => (HalfOpen | Closed | Open)
            (State::HalfOpen, Some((index, id))) => {
                let Some(slot) = inner.slots.get_mut(index) else {
                    return;
                };
                if !matches!(slot, Slot::InFlight { probe, .. } if *probe == id) {
                    // The lease expired and the slot went to another probe.
                    return;
                }
                match outcome {
                    Outcome::Success => *slot = Slot::Succeeded,
                    Outcome::Neutral => *slot = Slot::Free,
                    Outcome::Failure => {
                        let until = Instant::now() + self.config.open_duration;
                        return self.transition(inner, State::Open { until }, "probe_failed");
                    }
                }
                if inner.slots.iter().all(|s| *s == Slot::Succeeded) {
                    self.transition(inner, State::Closed, "probes_succeeded");
                }
            }
            _ => {}
        }
    }

    /// Moves to `to`, logging `why`: `failure_rate` (with the window's `calls` and
    /// `failures`), `probe_failed`, `probes_succeeded`, `open_duration_elapsed`,
    /// `override_set`, `override_cleared`, `fleet_trips`; counts `breaker_transition` with its
    /// [`reason`]. An open on own evidence records this instance's fleet trip (one write per
    /// transition); a close stamps the time fleet trips must be newer than.
    fn transition(&self, inner: &mut Inner, to: State, why: &'static str) {
        let reason = reason(why);
        if let Some(fleet) = &self.fleet {
            match &to {
                State::Open { .. } if reason == "own" => fleet.record(self.config.open_duration),
                State::Closed => inner.last_close_ms = Some(fleet.now_ms()),
                _ => {}
            }
        }
        let from = inner.state.public();
        let (calls, failures) = (inner.window.len(), inner.window.failures());
        let to_public = to.public();
        inner.state = to;
        inner.generation = inner.generation.wrapping_add(1);
        inner.window.reset();
        inner.slots.iter_mut().for_each(|s| *s = Slot::Free);
        self.gauge.set(to_public.gauge());
        self.count_transition(to_public, reason);
        match to_public {
            BreakerState::Open | BreakerState::ForcedOpen => tracing::warn!(
                dependency = %self.name,
                from = from.as_str(),
                to = to_public.as_str(),
                why,
                reason,
                calls,
                failures,
                generation = inner.generation,
                "breaker state change"
            ),
            BreakerState::Closed | BreakerState::HalfOpen => tracing::info!(
                dependency = %self.name,
                from = from.as_str(),
                to = to_public.as_str(),
                why,
                reason,
                calls,
                failures,
                generation = inner.generation,
                "breaker state change"
            ),
        }
    }
}

/// The `reason` dimension of `breaker_transition` (SPEC §12): `forced` for an operator's
/// override set or cleared, `fleet` for the quorum's trips, `own` for this instance's evidence
/// (failure rate, probes, the open duration passing).
fn reason(why: &str) -> &'static str {
    match why {
        "override_set" | "override_cleared" => "forced",
        "fleet_trips" => "fleet",
        _ => "own",
    }
}

/// Time until an override's `expires_at` (epoch seconds), on the wall clock.
fn forced_retry_after(forced: &ForcedOpen) -> Option<Duration> {
    let expires_at = forced.expires_at?;
    let left = expires_at.saturating_sub(OffsetDateTime::now_utc().unix_timestamp());
    Some(Duration::from_secs(u64::try_from(left).unwrap_or(0)))
}
