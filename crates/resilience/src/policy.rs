//! The policy stack for one dependency: Deadline → Bulkhead → Circuit breaker → Retry →
//! Timeout (seed 004 §1; ARCHITECTURE.md "Request path").
//!
//! - **Order, and why:**
//!   1. *Deadline* — nothing starts if the request budget is spent
//!      ([`PolicyError::DeadlineExceeded`]);
//!   2. *Bulkhead* — caps concurrency before any work queues ([`PolicyError::BulkheadFull`]);
//!   3. *Breaker* — one permit per logical call, so retries inside it count once toward the
//!      failure rate ([`PolicyError::CircuitOpen`], [`PolicyError::ForcedOpen`]);
//!   4. *Retry* — [`crate::retry`] rules: retryable class, idempotency, attempts, deadline,
//!      budget; the last error is returned when it stops;
//!   5. *Timeout* — each attempt runs under `min(remaining − margin, attempt cap)`
//!      ([`PolicyError::AttemptTimeout`]).
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
//!   counts against both the attempt timeout and the deadline.
//! - **Spans (SPEC §12):** each attempt runs in a span of its own (module `span`), `op`
//!   inside it; rejections before the loop open none.
//! - **Metrics (SPEC §12):** `retries` and `deadline_exceeded` (`hop` = dependency) here;
//!   `bulkhead_*`, `breaker_state`, `retry_budget_exhausted` in their modules.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use metrics::Counter;
use tokio::time::Instant;

use rand::Rng;

use crate::breaker::{Breaker, BreakerState, Outcome, Rejected};
use crate::budget::RetryBudget;
use crate::bulkhead::Bulkhead;
use crate::chaos::{FaultAction, Faults, InjectedFault};
use crate::classify::{Classify, ErrorClass};
use crate::config::PolicyConfig;
use crate::deadline::Deadline;
use crate::error::ConfigError;
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
}

/// The composed policy for one dependency. Share it (`Arc<Policy>`) across requests.
#[derive(Debug)]
pub struct Policy {
    config: PolicyConfig,
    bulkhead: Bulkhead,
    breaker: Arc<Breaker>,
    budget: RetryBudget,
    retries: Counter,
    deadline_exceeded: Counter,
}

impl Policy {
    /// A policy with its own breaker for `dependency`, reading overrides from `overrides`.
    /// Metric handles are registered here: install the metrics recorder first.
    pub fn try_new(
        dependency: &str,
        config: PolicyConfig,
        overrides: Arc<dyn OverrideSource>,
    ) -> Result<Self, ConfigError> {
        let breaker = Arc::new(Breaker::try_new(dependency, config.breaker, overrides)?);
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
            retries: metrics::counter!("retries", "dependency" => dependency.clone()),
            deadline_exceeded: metrics::counter!("deadline_exceeded", "hop" => dependency),
            breaker,
        })
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
        let mut outcome = Outcome::Neutral;
        let mut number = 1;
        loop {
            let Some(budget) = self.attempt_budget(deadline, now) else {
                permit.record(outcome);
                return Err(self.expired());
            };
            let attempt = Attempt {
                number,
                timeout: budget.timeout,
            };
            let remaining = deadline.instant().saturating_duration_since(now);
            let span = span::attempt(&self.breaker, number, budget.timeout, remaining);
            let result = {
                // `op` is called inside the span, so a fault it draws is recorded there.
                let call = span.in_scope(|| op(attempt)).instrument(span.clone());
                // Poll once before arming the timer: a ready answer costs no timer at all.
                let mut call = pin!(call);
                match poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await {
                    Poll::Ready(result) => Ok(result),
                    Poll::Pending => tokio::time::timeout_at(now + budget.timeout, call).await,
                }
            };
            let (error, class) = match result {
                Ok(Ok(value)) => {
                    span::ended(&span, Ok(()));
                    permit.record(Outcome::Success);
                    self.budget.deposit();
                    return Ok(value);
                }
                Ok(Err(e)) => {
                    let class = e.class();
                    outcome = class.outcome();
                    (PolicyError::Inner(e), class)
                }
                // Cut short by our own deadline: not the dependency's fault.
                Err(_) if budget.shrunk => (PolicyError::DeadlineExceeded, ErrorClass::Timeout),
                Err(_) => {
                    outcome = Outcome::Failure;
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
    /// - `Latency(d)`: sleeps `d`, then calls `op` with `attempt.timeout − d` (when
    ///   `d ≥ attempt.timeout`, `op` is never called and the attempt times out);
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
                Some(FaultAction::Latency(d)) if d < attempt.timeout => Step::Delay(
                    d,
                    op(Attempt {
                        timeout: attempt.timeout - d,
                        ..attempt
                    }),
                ),
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
        }
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

    /// The settings.
    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }
}

/// One attempt under a fault plan.
enum Step<Fut> {
    Call(Fut),
    Delay(Duration, Fut),
    Fail(InjectedFault),
    Hang,
}
