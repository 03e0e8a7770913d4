//! The policy stack for one dependency: Deadline → Origin backoff → Bulkhead (fixed or
//! adaptive) → Circuit breaker → Retry → Hedge → Timeout (seed 004 §1; ARCHITECTURE.md
//! "Request path"; the origin backoff, adaptive limit and hedge of issue #33).
//!
//! - **Order, and why:**
//!   1. *Deadline* — nothing starts if the request budget is spent
//!      ([`PolicyError::DeadlineExceeded`]);
//!   2. *Origin backoff* ([`crate::not_before`]) — the dependency said "not before T" (a 429
//!      with `Retry-After`): refused at once ([`PolicyError::NotBefore`]), before taking a
//!      bulkhead slot or a breaker permit, so the hold costs nothing and is never a breaker
//!      outcome; after the deadline check, so a spent budget still says `deadline_exceeded`;
//!   3. *Bulkhead* — caps concurrency before any work queues ([`PolicyError::BulkheadFull`]);
//!      with an [`crate::adaptive`] limit, the cap follows the dependency's latency;
//!   4. *Breaker* — one permit per logical call, so retries and hedges inside it count once
//!      toward the failure rate ([`PolicyError::CircuitOpen`], [`PolicyError::ForcedOpen`]);
//!   5. *Retry* — [`crate::retry`] rules: retryable class, idempotency, attempts, deadline,
//!      budget; the last error is returned when it stops. A retry that would start while the
//!      dependency's hold is in force is not made;
//!   6. *Hedge* ([`crate::hedge`]) — inside retry, around one attempt: an attempt still
//!      pending after the recent latency percentile gets one duplicate (its own timeout, its
//!      own bulkhead slot, the hedge budget); the first good answer is the attempt's result.
//!      Inside the breaker so it sees one outcome, inside retry because a hedge is not a
//!      retry (pitfall 27);
//!   7. *Timeout* — each attempt (and each hedge) runs under `min(remaining − margin,
//!      attempt cap)` ([`PolicyError::AttemptTimeout`]).
//! - **Rejections are free (pitfall 5):** a bulkhead or breaker rejection happens before the
//!   retry loop, so it is never retried, never recorded as a breaker outcome and never
//!   withdraws from the budget.
//! - **The breaker outcome of a logical call** is that of its last attempt, by
//!   [`crate::classify`]; an attempt cut short by the caller's own deadline (a shrunk timeout
//!   that fired) does not count against the dependency and leaves the previous attempt's
//!   outcome (neutral if none). A success deposits into the retry budget.
//! - **Cancellation and panics:** the bulkhead permit and breaker permit are guards owned by
//!   the call's future; dropping the future or unwinding returns both (pitfall 12).
//! - **No allocation and no lock across an await** on the success path: the breaker's lock is
//!   taken twice for a few steps, the budget is an atomic, metric handles are pre-registered.
//! - **Chaos (SPEC §9, pitfall 21):** [`Policy::call_with_faults`] draws a
//!   [`crate::chaos::Faults`] plan once per attempt, where the policy calls `op`: after the
//!   deadline check, the bulkhead and the breaker (an open breaker rejects before anything is
//!   drawn) and inside the attempt timeout. An injected 503 or reset becomes the caller's own
//!   error (`E: From<InjectedFault>`) and is classified like a real one; an injected timeout
//!   pends until the attempt timeout fires; injected latency sleeps inside the attempt, so it
//!   counts against both the attempt timeout and the deadline. A hedge draws its own plan,
//!   as any attempt does.
//! - **Spans (SPEC §12):** each attempt runs in a span of its own (module `span`), `op`
//!   inside it, a hedge's marked `hedge = true`; rejections before the loop open none.
//! - **Metrics (SPEC §12):** `retries` and `deadline_exceeded` (`hop` = dependency) here;
//!   `bulkhead_*`, `bulkhead_limit`, `breaker_state`, `retry_budget_exhausted`, `hedges` in
//!   their modules.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;

use kosha_contract::dependency::Dependency;
use std::task::Poll;
use std::time::Duration;

use metrics::Counter;
use tokio::time::Instant;

use rand::Rng;

use crate::adaptive::{AdaptiveConfig, AdaptiveLimit};
use crate::breaker::{Breaker, BreakerState, Outcome, Rejected};
use crate::budget::RetryBudget;
use crate::bulkhead::Bulkhead;
use crate::chaos::{FaultAction, Faults, InjectedFault};
use crate::classify::{Classify, ErrorClass};
use crate::config::PolicyConfig;
use crate::deadline::Deadline;
use crate::error::ConfigError;
use crate::hedge::{HedgeConfig, Hedger};
use crate::not_before::NotBefore;
use crate::overrides::{ForcedOpen, OverrideSource};
use crate::retry::{Idempotency, RetryDecision};
use crate::span;
use crate::timeout::AttemptBudget;
use tracing::Instrument as _;

/// Why a protected call failed. The gateway maps each variant to a tool error (SPEC §3):
/// `DeadlineExceeded` → `deadline_exceeded`; `BulkheadFull` → `overloaded`; `CircuitOpen`,
/// `ForcedOpen` and `AttemptTimeout` → `dependency_unavailable` (with `retry_after_s` when
/// known); `Inner` → by the caller's own error.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError<E> {
    /// The deadline passed before or during the call.
    #[error("deadline exceeded")]
    DeadlineExceeded,
    /// The dependency's bulkhead was full.
    #[error("too many concurrent calls to the dependency")]
    BulkheadFull,
    /// The breaker is open (or half-open with every probe slot taken).
    #[error("dependency unavailable (circuit open)")]
    CircuitOpen {
        /// Earliest time a call may be admitted again.
        retry_after: Duration,
    },
    /// An operator forced the breaker open.
    #[error("dependency unavailable (forced open by an operator)")]
    ForcedOpen {
        /// The override in force.
        forced: ForcedOpen,
        /// Time until it expires, if it has an expiry.
        retry_after: Option<Duration>,
    },
    /// The last attempt did not answer within its full attempt cap.
    #[error("dependency did not answer in time")]
    AttemptTimeout,
    /// The dependency answered 429 with `Retry-After` and the time has not come: refused
    /// without an attempt ([`crate::not_before`]).
    #[error("dependency asked not to be called yet")]
    NotBefore {
        /// Time left before the dependency may be called, at most 60 s.
        retry_after: Duration,
    },
    /// The dependency's own error from the last attempt.
    #[error("dependency call failed")]
    Inner(#[source] E),
}

impl<E> PolicyError<E> {
    /// The wait to suggest to the client (`retry_after_s`), when one is known.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::CircuitOpen { retry_after } => Some(*retry_after),
            Self::ForcedOpen { retry_after, .. } => *retry_after,
            Self::NotBefore { retry_after } => Some(*retry_after),
            _ => None,
        }
    }
}

impl<E> From<Rejected> for PolicyError<E> {
    fn from(rejected: Rejected) -> Self {
        match rejected {
            Rejected::Open { retry_after } => Self::CircuitOpen { retry_after },
            Rejected::ForcedOpen {
                forced,
                retry_after,
            } => Self::ForcedOpen {
                forced,
                retry_after,
            },
        }
    }
}

/// What the operation learns about the attempt it is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    /// This attempt's timeout; the policy enforces it, the operation may also pass it on
    /// (e.g. as an HTTP client timeout or `statement_timeout`).
    pub timeout: Duration,
    /// Whether this is a hedge: a duplicate of attempt `number`, sent because it was slow
    /// ([`crate::hedge`]).
    pub hedge: bool,
}

/// A dependency's state for `get_service_health`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// Dependency name (SPEC §8).
    pub dependency: String,
    /// Breaker state; `state.as_str()` gives `closed`, `half_open`, `open`, `forced_open`.
    pub state: BreakerState,
    /// Calls in flight through the bulkhead.
    pub in_flight: usize,
    /// Bulkhead capacity.
    pub capacity: usize,
    /// The operator override in force, if any.
    pub forced: Option<ForcedOpen>,
    /// Distinct instances whose trips the breaker counts now (SPEC §4 `fleet_trips`); `None`
    /// when fleet trips are off.
    pub fleet_trips: Option<usize>,
}

/// The composed policy for one dependency. Share it (`Arc<Policy>`) across requests.
#[derive(Debug)]
pub struct Policy {
    config: PolicyConfig,
    bulkhead: Bulkhead,
    breaker: Arc<Breaker>,
    budget: RetryBudget,
    not_before: NotBefore,
    hedger: Option<Hedger>,
    retries: Counter,
    deadline_exceeded: Counter,
}

impl Policy {
    /// A policy with its own breaker for `dependency` (SPEC §8: its `breaker#<dependency>`
    /// override and its `dependency` metric dimension), reading overrides from `overrides`.
    /// Metric handles are registered here: install the metrics recorder first.
    ///
    /// # Errors
    /// [`ConfigError`] when `config` does not validate.
    pub fn try_new(
        dependency: Dependency,
        config: PolicyConfig,
        overrides: Arc<dyn OverrideSource>,
    ) -> Result<Self, ConfigError> {
        let breaker = Arc::new(Breaker::try_new(
            dependency.as_str(),
            config.breaker,
            overrides,
        )?);
        Self::try_with_breaker(config, breaker)
    }

    /// A policy toward a dependency SPEC §8 has no override for (the outbox-relay's `sqs`):
    /// `name` is only its metric dimension, and nothing can force its breaker open.
    ///
    /// # Errors
    /// [`ConfigError`] when `config` does not validate.
    pub fn try_without_overrides(name: &str, config: PolicyConfig) -> Result<Self, ConfigError> {
        let breaker = Arc::new(Breaker::try_new(
            name,
            config.breaker,
            Arc::new(crate::overrides::NoOverrides),
        )?);
        Self::try_with_breaker(config, breaker)
    }

    /// A policy that shares `breaker` with other policies of the same dependency (core-api
    /// reads and writes share the `core-api` breaker); `config.breaker` is then unused.
    pub fn try_with_breaker(
        config: PolicyConfig,
        breaker: Arc<Breaker>,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let dependency = breaker.name().to_owned();
        Ok(Self {
            config,
            bulkhead: Bulkhead::try_new(&dependency, config.bulkhead)?,
            budget: RetryBudget::try_new(&dependency, config.budget)?,
            not_before: NotBefore::new(&dependency),
            hedger: None,
            retries: metrics::counter!("retries", "dependency" => dependency.clone()),
            deadline_exceeded: metrics::counter!("deadline_exceeded", "hop" => dependency),
            breaker,
        })
    }

    /// The same policy, hedging its [`Idempotency::Idempotent`] calls ([`crate::hedge`]).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] when `config` does not validate.
    pub fn with_hedging(mut self, config: HedgeConfig) -> Result<Self, ConfigError> {
        self.hedger = Some(Hedger::try_new(self.breaker.name(), config)?);
        Ok(self)
    }

    /// The same policy with an adaptive bulkhead limit between `config.floor` and the
    /// bulkhead's capacity ([`crate::adaptive`]; `config.max` is set to that capacity),
    /// published as the `bulkhead_limit` gauge with `dependency` = `name`: one name per
    /// bulkhead (the gateway's core-api reads and writes are two bulkheads on one dependency;
    /// under one name the writes' limit overwrote the reads', found by the attack pass of
    /// 2026-12-03).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] when `config` does not validate.
    pub fn with_adaptive_concurrency(
        mut self,
        name: &str,
        config: AdaptiveConfig,
    ) -> Result<Self, ConfigError> {
        let config = AdaptiveConfig {
            max: self.config.bulkhead.capacity,
            ..config
        };
        let limit = AdaptiveLimit::try_new(name, config)?;
        self.bulkhead = self.bulkhead.with_adaptive(limit);
        Ok(self)
    }

    /// Runs `op` under the whole stack. `op` is called once per attempt with its [`Attempt`];
    /// its error type says how to treat each failure through [`Classify`].
    pub async fn call<T, E, F, Fut>(
        &self,
        deadline: &Deadline,
        idempotency: Idempotency,
        mut op: F,
    ) -> Result<T, PolicyError<E>>
    where
        E: Classify,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        // One clock read serves the deadline check and the first attempt's timeout unless the
        // bulkhead made us wait.
        let mut now = Instant::now();
        if self.attempt_budget(deadline, now).is_none() {
            return Err(self.expired());
        }
        if let Some(retry_after) = self.not_before.remaining(now) {
            return Err(PolicyError::NotBefore { retry_after });
        }
        let _slot = match self.bulkhead.try_acquire_now() {
            Some(slot) => slot,
            None => {
                let slot = self
                    .bulkhead
                    .acquire()
                    .await
                    .map_err(|_| PolicyError::BulkheadFull)?;
                now = Instant::now();
                slot
            }
        };
        let permit = self.breaker.try_acquire()?;
        let hedger = self
            .hedger
            .as_ref()
            .filter(|_| idempotency == Idempotency::Idempotent);
        if let Some(hedger) = hedger {
            hedger.on_call();
        }
        let mut outcome = Outcome::Neutral;
        let mut number = 1;
        loop {
            // Whether a hedge's answer won: its span holds the `ok`, the primary's `cancelled`.
            let mut hedge_won = false;
            let Some(budget) = self.attempt_budget(deadline, now) else {
                permit.record(outcome);
                return Err(self.expired());
            };
            let attempt = Attempt {
                number,
                timeout: budget.timeout,
                hedge: false,
            };
            let remaining = deadline.instant().saturating_duration_since(now);
            let span = span::attempt(&self.breaker, number, budget.timeout, remaining);
            // `op` is called inside the span, so a fault it draws is recorded there.
            let call = span.in_scope(|| op(attempt)).instrument(span.clone());
            // Poll once before arming the timer: a ready answer costs no timer at all.
            let mut call = pin!(call);
            // `None`: the attempt timed out.
            let result = match poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await {
                Poll::Ready(result) => {
                    self.observe(now, hedger);
                    Some(result)
                }
                Poll::Pending => match hedger.and_then(|h| h.delay().map(|d| (h, d))) {
                    Some((hedger, delay)) => {
                        let race = Race {
                            hedger,
                            attempt,
                            started: now,
                            delay,
                        };
                        let (r, won) = self
                            .hedged(race, &span, call, deadline, &permit, &mut op)
                            .await;
                        hedge_won = won;
                        r
                    }
                    None => {
                        let r = tokio::time::timeout_at(now + budget.timeout, call).await;
                        self.observe(now, hedger);
                        r.ok()
                    }
                },
            };
            let (error, class) = match result {
                Some(Ok(value)) => {
                    if !hedge_won {
                        span::ended(&span, Ok(()));
                    }
                    permit.record(Outcome::Success);
                    self.budget.deposit();
                    if self.not_before.is_set() {
                        self.not_before.clear_if_passed(Instant::now());
                    }
                    return Ok(value);
                }
                Some(Err(e)) => {
                    let class = e.class();
                    outcome = class.outcome();
                    if let ErrorClass::Status {
                        status: 429,
                        retry_after: Some(wait),
                    } = class
                    {
                        self.not_before.hold(wait, Instant::now());
                    }
                    (PolicyError::Inner(e), class)
                }
                // Cut short by our own deadline: not the dependency's fault.
                None if budget.shrunk => (PolicyError::DeadlineExceeded, ErrorClass::Timeout),
                None => {
                    outcome = Outcome::Failure;
                    self.bulkhead.dropped();
                    (PolicyError::AttemptTimeout, ErrorClass::Timeout)
                }
            };
            span::ended(&span, Err(&class));
            let decision = self.config.retry.decide(
                number,
                &class,
                idempotency,
                deadline.remaining(),
                self.config.attempt.margin,
                &self.budget,
            );
            span::decided(&span, &decision);
            // The attempt's span ends here, before any backoff.
            drop(span);
            match decision {
                RetryDecision::RetryAfter(delay) => {
                    self.retries.increment(1);
                    tokio::time::sleep(delay).await;
                    now = Instant::now();
                    if self.not_before.remaining(now).is_some() {
                        // Another caller's later 429 holds the dependency: no attempt now.
                        permit.record(outcome);
                        return Err(error);
                    }
                    number += 1;
                }
                RetryDecision::Stop(_) => {
                    permit.record(outcome);
                    if matches!(error, PolicyError::DeadlineExceeded) {
                        self.deadline_exceeded.increment(1);
                    }
                    return Err(error);
                }
            }
        }
    }

    /// [`Policy::call`] with an optional chaos plan (SPEC §9): when `faults` is `Some`, each
    /// attempt first draws ([`Faults::draw`]) and, on a hit, instead of calling `op`:
    /// - `Latency(d)`: sleeps `d` inside the attempt, then awaits `op`'s future (when
    ///   `d ≥ attempt.timeout`, it is never awaited and the attempt times out). `op` is called
    ///   as the attempt starts, with the attempt's own timeout, so what it derives from it at
    ///   once (the hop deadline `min(deadline, now + timeout) − 150 ms`, SPEC §7) is the
    ///   attempt's real end: the latency spends the dependency's time, it does not move its
    ///   deadline earlier (a dependency handed `end − d` would refuse a call it had time for);
    /// - `Error`: fails with `E::from(InjectedFault::Unavailable)` (a 503) without calling;
    /// - `Timeout`: pends until the attempt timeout fires (`AttemptTimeout`, or
    ///   `DeadlineExceeded` when the deadline shrank it);
    /// - `Reset`: fails with `E::from(InjectedFault::Reset)` without calling.
    ///
    /// Nothing is drawn for a call rejected by the deadline, bulkhead or breaker. With `None`
    /// this is exactly [`Policy::call`].
    pub async fn call_with_faults<T, E, F, Fut, R>(
        &self,
        deadline: &Deadline,
        idempotency: Idempotency,
        faults: Option<&mut Faults<R>>,
        mut op: F,
    ) -> Result<T, PolicyError<E>>
    where
        E: Classify + From<InjectedFault>,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        R: Rng,
    {
        let Some(faults) = faults else {
            return self.call(deadline, idempotency, op).await;
        };
        let faulted = |attempt: Attempt| {
            let drawn = faults.draw();
            if let Some(action) = drawn {
                span::faulted(action);
            }
            let step = match drawn {
                None => Step::Call(op(attempt)),
                Some(FaultAction::Latency(d)) if d < attempt.timeout => Step::Delay(d, op(attempt)),
                Some(FaultAction::Latency(_) | FaultAction::Timeout) => Step::Hang,
                Some(FaultAction::Error) => Step::Fail(InjectedFault::Unavailable),
                Some(FaultAction::Reset) => Step::Fail(InjectedFault::Reset),
            };
            async move {
                match step {
                    Step::Call(call) => call.await,
                    Step::Delay(d, call) => {
                        tokio::time::sleep(d).await;
                        call.await
                    }
                    Step::Fail(fault) => Err(E::from(fault)),
                    // The policy's attempt timer ends it.
                    Step::Hang => std::future::pending().await,
                }
            }
        };
        self.call(deadline, idempotency, faulted).await
    }

    /// Feeds the time since `started` to the hedge histogram and the adaptive limit (no
    /// clock read when the policy has neither).
    fn observe(&self, started: Instant, hedger: Option<&Hedger>) {
        if hedger.is_none() && self.bulkhead.adaptive().is_none() {
            return;
        }
        let took = started.elapsed();
        if let Some(hedger) = hedger {
            hedger.record(took);
        }
        self.bulkhead.observe(took);
    }

    fn attempt_budget(&self, deadline: &Deadline, now: Instant) -> Option<AttemptBudget> {
        let remaining = deadline.instant().saturating_duration_since(now);
        self.config.attempt.with_remaining(remaining)
    }

    fn expired<E>(&self) -> PolicyError<E> {
        self.deadline_exceeded.increment(1);
        PolicyError::DeadlineExceeded
    }

    /// A snapshot for `get_service_health`.
    pub fn health(&self) -> Health {
        let snapshot = self.breaker.snapshot();
        Health {
            dependency: self.breaker.name().to_owned(),
            state: snapshot.state,
            in_flight: self.bulkhead.in_flight(),
            capacity: self.bulkhead.capacity(),
            forced: snapshot.forced,
            fleet_trips: self.breaker.fleet_trips(),
        }
    }

    /// The same policy, its breaker sharing trips with the fleet ([`Breaker::set_fleet`],
    /// SPEC §8). Call it before the policy's breaker is shared.
    ///
    /// # Errors
    /// [`ConfigError`] when the breaker is already shared with another policy
    /// ([`Policy::try_with_breaker`]).
    pub fn with_fleet(mut self, fleet: crate::fleet::FleetTrips) -> Result<Self, ConfigError> {
        let breaker = Arc::get_mut(&mut self.breaker).ok_or(ConfigError::invalid(
            "fleet",
            "the breaker is shared with another policy; set fleet trips before sharing it",
        ))?;
        breaker.set_fleet(fleet);
        Ok(self)
    }

    /// The breaker (shared with any policy built by [`Policy::try_with_breaker`]).
    pub fn breaker(&self) -> &Arc<Breaker> {
        &self.breaker
    }

    /// The bulkhead.
    pub fn bulkhead(&self) -> &Bulkhead {
        &self.bulkhead
    }

    /// The retry budget.
    pub fn budget(&self) -> &RetryBudget {
        &self.budget
    }

    /// The origin backoff ("not before T") of this dependency.
    pub fn not_before(&self) -> &NotBefore {
        &self.not_before
    }

    /// The hedging state, when the policy hedges.
    pub fn hedger(&self) -> Option<&Hedger> {
        self.hedger.as_ref()
    }

    /// The settings.
    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }
}

mod hedged;

use hedged::Race;

/// One attempt under a fault plan.
enum Step<Fut> {
    Call(Fut),
    Delay(Duration, Fut),
    Fail(InjectedFault),
    Hang,
}
