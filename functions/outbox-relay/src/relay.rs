//! One relay run ([`Relay::run`]): claim a batch, publish it in `SendMessageBatch` calls of
//! 10, mark what SQS accepted, commit; repeat until the outbox is drained, SQS fails or
//! refuses a whole batch, or too little of the run's deadline is left for another batch. Then the
//! retention sweep and the backlog gauges.
//!
//! - **Never lost:** a row is marked only in the transaction that claimed it and only for
//!   entries SQS listed as `Successful`; a failed call, a refused entry, a crash or a
//!   timeout leaves the row unpublished for the next run (ARCHITECTURE pitfalls 16, 17).
//! - **Never published by two relays at once:** the claim is `FOR UPDATE SKIP LOCKED` and
//!   the lock is held until the mark commits ([`crate::store`]).
//! - **At least once:** a relay that dies after SQS accepted a batch and before its commit
//!   publishes it again on the next run; consumers dedupe by `event_id` (SPEC §4).
//! - **Toward SQS** every batch call goes through the relay's own kosha-resilience
//!   [`Policy`] (deadline from the run, bulkhead, breaker, retries with budget; seed 004 §1
//!   style, [`crate::config::SQS_PROFILE`]). A call the policy gives up on ends the run: the
//!   next scheduled run tries again, and an open breaker makes those runs cheap.
//! - **Metrics (SPEC §12 style, EMF):** `outbox_published` (counter), `outbox_pending` and
//!   `outbox_lag_seconds` (gauges, age of the oldest unpublished row), `outbox_refused`
//!   (counter of entries SQS refused), `outbox_swept` (counter).

use std::collections::HashMap;
use std::time::Duration;
use tracing::Instrument as _;

use kosha_contract::events::Event;
use kosha_pg::PgPool;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::policy::{Policy, PolicyError};
use kosha_resilience::retry::Idempotency;
use kosha_runtime::semconv;

use crate::publish::{MAX_BATCH, Publish, PublishError};
use crate::store::{self, Backlog, StoreError, Swept};

/// How a run uses the database.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Rows claimed per transaction (each sent in calls of [`MAX_BATCH`]).
    pub batch: i64,
    /// `statement_timeout` of the relay's statements.
    pub statement_timeout: Duration,
    /// `idle_in_transaction_session_timeout` of a claiming transaction: a relay frozen with
    /// its locks loses them after this.
    pub idle_timeout: Duration,
    /// A new batch starts only with at least this much of the run's deadline left.
    pub min_batch_time: Duration,
    /// Published events are deleted after this (7 days).
    pub retention: Duration,
    /// Rows deleted per table per sweep.
    pub sweep_limit: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            batch: 100,
            statement_timeout: Duration::from_secs(3),
            idle_timeout: Duration::from_secs(30),
            min_batch_time: Duration::from_secs(3),
            retention: Duration::from_secs(7 * 24 * 3600),
            sweep_limit: 1_000,
        }
    }
}

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Nothing is left to claim (other relays may hold some rows).
    Drained,
    /// Too little of the deadline was left for another batch.
    Deadline,
    /// SQS refused every entry of a batch; they wait for the next run.
    Refused,
    /// The policy gave up on a batch call (SQS down, breaker open, bulkhead full); the text
    /// says which.
    Sqs(String),
}

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// Events marked published.
    pub published: u64,
    /// Entries SQS refused.
    pub refused: u64,
    /// Claiming transactions committed.
    pub batches: u32,
    /// Why it stopped.
    pub stop: Stop,
    /// What the sweep deleted.
    pub swept: Swept,
    /// The backlog at the end.
    pub backlog: Backlog,
}

/// Why a run failed: the database (SQS trouble is a [`Stop`], not an error).
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// A database step failed; everything of the current batch is rolled back.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<deadpool_postgres::PoolError> for RelayError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        Self::Store(StoreError::Pool(e.to_string()))
    }
}

impl From<tokio_postgres::Error> for RelayError {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Store(StoreError::Query(e))
    }
}

/// One batch's result.
struct BatchReport {
    claimed: usize,
    published: u64,
    refused: u64,
    sqs: Option<String>,
}

/// The relay: the database, the events queue and the policy toward it.
pub struct Relay<P> {
    pool: PgPool,
    publisher: P,
    policy: Policy,
    settings: Settings,
}

impl<P> std::fmt::Debug for Relay<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl<P: Publish> Relay<P> {
    /// A relay over `pool`, publishing with `publisher` under `policy`.
    pub fn new(pool: PgPool, publisher: P, policy: Policy, settings: Settings) -> Self {
        Self {
            pool,
            publisher,
            policy,
            settings,
        }
    }

    /// The publisher (tests read what their fakes saw).
    pub fn publisher(&self) -> &P {
        &self.publisher
    }

    /// The policy toward SQS (for its health in logs and tests).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// One run, bounded by `deadline`.
    ///
    /// # Errors
    /// [`RelayError`] when the database fails; SQS failures end the run with a [`Stop`].
    pub async fn run(&self, deadline: &Deadline) -> Result<RunReport, RelayError> {
        // SPEC §12 (exported only): the run, its batches, their SQS attempts.
        let span = tracing::info_span!(
            "outbox_relay_run",
            published = tracing::field::Empty,
            batches = tracing::field::Empty,
        );
        let report = self.run_in(deadline).instrument(span.clone()).await;
        if let Ok(r) = &report {
            span.record("published", semconv::int(r.published));
            span.record("batches", i64::from(r.batches));
        }
        report
    }

    async fn run_in(&self, deadline: &Deadline) -> Result<RunReport, RelayError> {
        let (mut published, mut refused, mut batches) = (0, 0, 0);
        let stop = loop {
            if deadline.remaining() < self.settings.min_batch_time {
                break Stop::Deadline;
            }
            let report = self.batch(deadline).await?;
            batches += 1;
            published += report.published;
            refused += report.refused;
            if let Some(why) = report.sqs {
                break Stop::Sqs(why);
            }
            // A refused entry stays unpublished and first in line; a batch that got others
            // through goes on (one poison entry must not throttle the outbox), one that got
            // nothing through ends the run.
            if report.refused > 0 && report.published == 0 {
                break Stop::Refused;
            }
            if report.claimed < usize::try_from(self.settings.batch).unwrap_or(usize::MAX) {
                break Stop::Drained;
            }
        };
        let client = self.pool.get().await?;
        let swept =
            store::sweep(&client, self.settings.retention, self.settings.sweep_limit).await?;
        let backlog = store::backlog(&client).await?;
        metrics::gauge!("outbox_pending").set(backlog.pending as f64);
        metrics::gauge!("outbox_lag_seconds").set(backlog.lag_seconds);
        metrics::counter!("outbox_swept").increment(swept.events);
        let report = RunReport {
            published,
            refused,
            batches,
            stop,
            swept,
            backlog,
        };
        tracing::info!(
            published,
            refused,
            batches,
            stop = ?report.stop,
            pending = backlog.pending,
            lag_seconds = backlog.lag_seconds,
            swept_events = swept.events,
            swept_keys = swept.keys,
            "outbox relay run"
        );
        Ok(report)
    }

    /// Claims one batch, publishes it and marks what SQS accepted, in one transaction; in a
    /// span of its own (`claimed`, `published`, `refused`).
    async fn batch(&self, deadline: &Deadline) -> Result<BatchReport, RelayError> {
        let span = tracing::info_span!(
            "outbox_batch",
            otel.kind = "producer",
            claimed = tracing::field::Empty,
            published = tracing::field::Empty,
            refused = tracing::field::Empty,
        );
        let report = self.batch_in(deadline).instrument(span.clone()).await;
        if let Ok(r) = &report {
            span.record("claimed", semconv::int(r.claimed));
            span.record("published", semconv::int(r.published));
            span.record("refused", semconv::int(r.refused));
        }
        report
    }

    async fn batch_in(&self, deadline: &Deadline) -> Result<BatchReport, RelayError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        store::guard(
            &tx,
            self.settings.statement_timeout,
            self.settings.idle_timeout,
        )
        .await?;
        let rows = store::claim(&tx, self.settings.batch).await?;
        let ids: HashMap<&str, i64> = rows
            .iter()
            .map(|p| (p.event.event_id.as_str(), p.id))
            .collect();
        let mut accepted = Vec::with_capacity(rows.len());
        let (mut refused, mut sqs) = (0, None);
        for chunk in rows.chunks(MAX_BATCH) {
            let events: Vec<&Event> = chunk.iter().map(|p| &p.event).collect();
            let sent = self
                .policy
                .call(deadline, Idempotency::Keyed, |_attempt| {
                    self.publisher.send_batch(&events)
                })
                .await;
            match sent {
                Ok(outcome) => {
                    accepted.extend(
                        outcome
                            .accepted
                            .iter()
                            .filter_map(|id| ids.get(id.as_str())),
                    );
                    for f in &outcome.failed {
                        tracing::warn!(
                            event_id = %f.id,
                            code = %f.code,
                            sender_fault = f.sender_fault,
                            "SQS refused an outbox event; it stays for the next run"
                        );
                    }
                    refused += u64::try_from(outcome.failed.len()).unwrap_or(u64::MAX);
                }
                Err(e) => {
                    sqs = Some(describe(&e));
                    tracing::warn!(error = %describe(&e), "publishing stopped; events wait in ops.outbox");
                    break;
                }
            }
        }
        let published = store::mark(&tx, &accepted).await?;
        tx.commit().await?;
        metrics::counter!("outbox_published").increment(published);
        metrics::counter!("outbox_refused").increment(refused);
        Ok(BatchReport {
            claimed: rows.len(),
            published,
            refused,
            sqs,
        })
    }
}

fn describe(e: &PolicyError<PublishError>) -> String {
    match e {
        PolicyError::Inner(inner) => inner.to_string(),
        other => other.to_string(),
    }
}
