//! One attempt with a hedge: the primary, then (if still pending after the delay and every
//! gate allows) one duplicate; the first good answer wins and the other is dropped, which
//! cancels it and returns its bulkhead slot (rules in [`crate::hedge`]). Nothing here
//! touches the breaker permit or the retry budget: the caller records one outcome for the
//! logical call.

use std::future::Future;
use std::pin::{Pin, pin};
use std::time::Duration;

use tokio::time::{Instant, sleep_until, timeout_at};
use tracing::{Instrument, Span};

use super::{Attempt, Policy};
use crate::breaker::{BreakerState, CallPermit};
use crate::bulkhead::BulkheadPermit;
use crate::deadline::Deadline;
use crate::hedge::{HedgeOutcome, Hedger};
use crate::span;
use crate::timeout::AttemptBudget;

/// The primary attempt a hedge may race.
pub(super) struct Race<'h> {
    /// The policy's hedging state.
    pub hedger: &'h Hedger,
    /// The primary attempt (its number and timeout).
    pub attempt: Attempt,
    /// When the primary started.
    pub started: Instant,
    /// How long after `started` the hedge is due.
    pub delay: Duration,
}

impl Policy {
    /// Runs the already polled (pending) `primary` of `race` to its end, hedging it when due;
    /// `None` when every leg timed out. The `bool` is whether the hedge's answer won: then
    /// the hedge's span says `ok` and `primary_span` says `cancelled` (SPEC §12), and the
    /// caller records nothing more on it; a hedge dropped when the primary answers first says
    /// `cancelled`.
    pub(super) async fn hedged<T, E, F, Fut, P>(
        &self,
        race: Race<'_>,
        primary_span: &Span,
        mut primary: Pin<&mut P>,
        deadline: &Deadline,
        permit: &CallPermit<'_>,
        op: &mut F,
    ) -> (Option<Result<T, E>>, bool)
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        P: Future<Output = Result<T, E>>,
    {
        let Race {
            hedger,
            attempt,
            started,
            delay,
        } = race;
        let primary_end = started + attempt.timeout;
        let hedge_at = started + delay;
        if hedge_at >= primary_end {
            return (
                self.alone(primary, primary_end, started, hedger).await,
                false,
            );
        }
        tokio::select! {
            biased;
            r = primary.as_mut() => {
                self.observe(started, Some(hedger));
                return (Some(r), false);
            }
            () = sleep_until(hedge_at) => {}
        }
        let Some((budget, slot)) = self.hedge_gate(hedger, deadline, permit) else {
            return (
                self.alone(primary, primary_end, started, hedger).await,
                false,
            );
        };
        let hedge_started = Instant::now();
        let hedge_end = hedge_started + budget.timeout;
        let remaining = deadline.instant().saturating_duration_since(hedge_started);
        let span = span::attempt(&self.breaker, attempt.number, budget.timeout, remaining);
        span::hedge(&span);
        let hedge_span = span.clone();
        let call = span
            .in_scope(|| {
                op(Attempt {
                    timeout: budget.timeout,
                    hedge: true,
                    ..attempt
                })
            })
            .instrument(span);
        let mut hedge = pin!(async move {
            // The hedge's bulkhead slot lives exactly as long as the hedge.
            let _slot = slot;
            call.await
        });
        let (mut primary_done, mut hedge_done) = (false, false);
        let mut last_error = None;
        while !(primary_done && hedge_done) {
            tokio::select! {
                biased;
                r = timeout_at(primary_end, primary.as_mut()), if !primary_done => {
                    primary_done = true;
                    self.observe(started, Some(hedger));
                    match r {
                        Ok(Ok(value)) => {
                            hedger.count(HedgeOutcome::Lost);
                            if !hedge_done {
                                span::cancelled(&hedge_span);
                            }
                            return (Some(Ok(value)), false);
                        }
                        Ok(Err(e)) => last_error = Some(e),
                        Err(_) => {}
                    }
                }
                r = timeout_at(hedge_end, hedge.as_mut()), if !hedge_done => {
                    hedge_done = true;
                    self.observe(hedge_started, Some(hedger));
                    match r {
                        Ok(Ok(value)) => {
                            hedger.count(HedgeOutcome::Won);
                            span::ended(&hedge_span, Ok(()));
                            if !primary_done {
                                // Cancelled: it had run at least this long (a lower bound).
                                self.observe(started, Some(hedger));
                                span::cancelled(primary_span);
                            }
                            return (Some(Ok(value)), true);
                        }
                        Ok(Err(e)) => last_error = Some(e),
                        Err(_) => {}
                    }
                }
            }
        }
        hedger.count(HedgeOutcome::Lost);
        (last_error.map(Err), false)
    }

    /// The primary alone until `end` (no hedge), its time recorded.
    async fn alone<Fut: Future>(
        &self,
        primary: Pin<&mut Fut>,
        end: Instant,
        started: Instant,
        hedger: &Hedger,
    ) -> Option<Fut::Output> {
        let r = timeout_at(end, primary).await;
        self.observe(started, Some(hedger));
        r.ok()
    }

    /// Whether a due hedge may start now, checked in [`crate::hedge`]'s order: the breaker
    /// closed and the call not a probe, no origin backoff, a worthwhile attempt before the
    /// deadline, a free bulkhead slot now, then a budget token.
    fn hedge_gate(
        &self,
        hedger: &Hedger,
        deadline: &Deadline,
        permit: &CallPermit<'_>,
    ) -> Option<(AttemptBudget, BulkheadPermit)> {
        let now = Instant::now();
        let admitted = (!permit.is_probe()
            && self.breaker.state() == BreakerState::Closed
            && self.not_before.remaining(now).is_none())
        .then(|| self.attempt_budget(deadline, now))
        .flatten()
        .filter(|b| b.timeout >= self.config.retry.min_attempt)
        .and_then(|b| self.bulkhead.try_acquire_now().map(|slot| (b, slot)));
        let Some(admitted) = admitted else {
            hedger.count(HedgeOutcome::Refused);
            return None;
        };
        // Last, so a token is spent only on a hedge that is sent.
        hedger.try_spend().then_some(admitted)
    }
}
