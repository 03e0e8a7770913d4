//! One batch of screening-queue messages (issue 12): the same handler under Lambda's SQS event
//! source and under the local polling loop. Generic over [`Sim`], [`Store`] and [`Queue`],
//! so tests use fakes on tokio's paused clock.
//!
//! Per message (`{"screening_id"}`, [`ScreeningMessage`]), concurrently within a batch:
//!
//! | situation | what happens | message |
//! |---|---|---|
//! | body not a screening message | [`Queue::dead_letter`] | handled (deleted) |
//! | item missing or expired | nothing to complete, logged | handled |
//! | item already `done` / `failed` | nothing (a redelivery: idempotent, the sim is not called) | handled |
//! | sim answers | conditional update `pending` → `done` | handled |
//! | sim refuses the request as invalid | [`Queue::dead_letter`], then `pending` → `failed` with `failure_reason` | handled |
//! | sim unavailable, or the state table fails | [`Queue::retry_in`] [`retry_delay`], then reported in `batchItemFailures` | redelivered |
//!
//! - **Backoff** ([`retry_delay`]): `min(30 s, max(2^(n−1) s, breaker wait))` for the n-th
//!   receive (`ApproximateReceiveCount`), so while screening-sim is down each message comes
//!   back at least every 30 s, and a screening completes within 30 s (plus one call) of the
//!   sim's recovery. An outage never fails a screening; the queue's `maxReceiveCount` is
//!   sized so 6 hours of 30 s returns stay below it (infra/template.yaml).
//! - **Poison** goes to the DLQ explicitly (SendMessage), not by exhausting
//!   `maxReceiveCount`: that count is sized for outages, so waiting for it would keep a
//!   poison message cycling for hours. The DLQ copy is sent before the item is marked
//!   `failed`, so a crash between the two repeats the pair (at least once), never loses one.
//! - **Time**: every sim call ends [`FINISH_RESERVE`] before the batch's deadline, which
//!   leaves time to record the outcome or hand the message back.

use std::future::Future;
use std::time::Duration;
use tracing::Instrument as _;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsMessage};
use kosha_contract::ids;
use kosha_contract::screening::{ScreenRequest, ScreenResponse, ScreeningMessage};
use kosha_resilience::deadline::Deadline;
use kosha_runtime::semconv;
use kosha_state::StateError;
use kosha_state::screening::{Finished, ScreeningItem, ScreeningState};

/// Longest visibility backoff while screening-sim is unavailable (issue 12).
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The screening queue's `maxReceiveCount` (infra/template.yaml, `kosha-ops bootstrap`):
/// SQS's largest. With [`retry_delay`], a message is received about 725 times in 6 hours of
/// outage (5 receives in the first 31 s, then one every 30 s), so an outage of up to ~8 hours
/// sends nothing to the DLQ.
pub const MAX_RECEIVE_COUNT: u32 = 1000;
/// Time kept after the sim call to record the outcome or hand the message back.
pub const FINISH_RESERVE: Duration = Duration::from_secs(2);

/// What screening-sim made of one request, under the worker's policy.
#[derive(Debug, Clone, PartialEq)]
pub enum SimAnswer {
    /// The verdict.
    Result(ScreenResponse),
    /// Refused as invalid (400): permanent. The message names the field.
    Invalid(String),
    /// Down, failing, breaker open, or out of time: try again later, not before `retry_after`
    /// when the breaker said.
    Unavailable {
        /// The breaker's remaining open time, when it is open.
        retry_after: Option<Duration>,
    },
}

/// screening-sim under the worker's policy.
pub trait Sim: Send + Sync {
    /// Screens `request`, ending by `deadline`.
    fn screen(
        &self,
        request: &ScreenRequest,
        deadline: &Deadline,
    ) -> impl Future<Output = SimAnswer> + Send;
}

/// The state table's screening items.
pub trait Store: Send + Sync {
    /// The item, if present and not expired.
    fn get(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<ScreeningItem>, StateError>> + Send;
    /// `pending` → `outcome`, only from `pending`.
    fn finish(
        &self,
        id: &str,
        outcome: &ScreeningState,
    ) -> impl Future<Output = Result<Finished, StateError>> + Send;
}

/// The screening queue and its DLQ.
pub trait Queue: Send + Sync {
    /// Makes the message (by receipt handle) visible again after `after`.
    fn retry_in(
        &self,
        receipt: &str,
        after: Duration,
    ) -> impl Future<Output = Result<(), String>> + Send;
    /// Sends `body` to the dead-letter queue.
    fn dead_letter(&self, body: &str) -> impl Future<Output = Result<(), String>> + Send;
}

/// How one message ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The screening is now `done`.
    Completed,
    /// The screening is now `failed`; the message was dead-lettered.
    Failed,
    /// Nothing to do: already final, missing, or (after dead-lettering) not a screening
    /// message.
    Skipped,
    /// Handed back for later, after this long.
    Retry(Duration),
}

/// The visibility backoff for the `receive_count`-th receive (1-based), at least
/// `breaker_wait`, at most [`MAX_BACKOFF`]: 1, 2, 4, 8, 16, 30, 30 … s.
pub fn retry_delay(receive_count: u32, breaker_wait: Option<Duration>) -> Duration {
    let exp = receive_count.saturating_sub(1).min(5);
    let backoff = Duration::from_secs(1u64 << exp);
    backoff
        .max(breaker_wait.unwrap_or(Duration::ZERO))
        .min(MAX_BACKOFF)
}

/// The worker: a handler over its three dependencies.
#[derive(Debug)]
pub struct Worker<S, T, Q> {
    /// screening-sim.
    pub sim: S,
    /// The screening items.
    pub store: T,
    /// The queue.
    pub queue: Q,
}

impl<S: Sim, T: Store, Q: Queue> Worker<S, T, Q> {
    /// Handles a batch ending by `deadline`; the answer lists the messages to redeliver
    /// (`batchItemFailures`, by message id). In a span of its own (SPEC §12, exported only:
    /// `messages`, `retried`), the parent of each screening-sim attempt's.
    pub async fn handle_batch(
        &self,
        messages: &[SqsMessage],
        deadline: &Deadline,
    ) -> SqsBatchResponse {
        let span = tracing::info_span!(
            "screening_batch",
            otel.kind = "consumer",
            messages = semconv::int(messages.len()),
            retried = tracing::field::Empty,
        );
        let outcomes = futures::future::join_all(messages.iter().map(|m| self.handle(m, deadline)))
            .instrument(span.clone())
            .await;
        let mut response = SqsBatchResponse::default();
        for (message, outcome) in messages.iter().zip(outcomes) {
            if let Outcome::Retry(_) = outcome {
                response.add_failure(message.message_id.clone().unwrap_or_default());
            }
        }
        span.record("retried", semconv::int(response.batch_item_failures.len()));
        response
    }

    /// Handles one message.
    pub async fn handle(&self, message: &SqsMessage, deadline: &Deadline) -> Outcome {
        let body = message.body.as_deref().unwrap_or_default();
        let receives = message
            .attributes
            .get("ApproximateReceiveCount")
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(1);
        let parsed = serde_json::from_str::<ScreeningMessage>(body)
            .ok()
            .filter(|m| ids::SCREENING.matches(&m.screening_id));
        let Some(parsed) = parsed else {
            tracing::warn!(event = "screening_message_malformed", message_id = ?message.message_id);
            return match self.queue.dead_letter(body).await {
                Ok(()) => Outcome::Skipped,
                Err(e) => self.back_off(message, receives, None, &e).await,
            };
        };
        let id = parsed.screening_id.as_str();
        let item = match self.store.get(id).await {
            Ok(Some(item)) => item,
            Ok(None) => {
                tracing::warn!(event = "screening_missing", screening_id = id);
                return Outcome::Skipped;
            }
            Err(e) => return self.back_off(message, receives, None, &e.to_string()).await,
        };
        // The message names the item's owner (SPEC §4); one that does not is not this
        // item's message (a pre-#30 item and message both have none).
        if item.client_id != parsed.client_id {
            tracing::warn!(event = "screening_owner_mismatch", screening_id = id);
            return Outcome::Skipped;
        }
        if item.state != ScreeningState::Pending {
            tracing::info!(event = "screening_already_final", screening_id = id);
            return Outcome::Skipped;
        }
        let sim_deadline = deadline.child(FINISH_RESERVE);
        let (outcome, done) = match self.sim.screen(&item.request, &sim_deadline).await {
            SimAnswer::Result(result) => (ScreeningState::Done(result), Outcome::Completed),
            SimAnswer::Invalid(reason) => {
                if let Err(e) = self.queue.dead_letter(body).await {
                    return self.back_off(message, receives, None, &e).await;
                }
                (ScreeningState::Failed { reason }, Outcome::Failed)
            }
            SimAnswer::Unavailable { retry_after } => {
                return self
                    .back_off(message, receives, retry_after, "screening-sim unavailable")
                    .await;
            }
        };
        match self.store.finish(id, &outcome).await {
            Ok(Finished::Updated) => {
                tracing::info!(
                    event = "screening_finished",
                    screening_id = id,
                    status = outcome.status()
                );
                done
            }
            Ok(Finished::AlreadyFinal | Finished::Missing) => Outcome::Skipped,
            Err(e) => self.back_off(message, receives, None, &e.to_string()).await,
        }
    }

    /// Hands `message` back to the queue for later.
    async fn back_off(
        &self,
        message: &SqsMessage,
        receives: u32,
        breaker_wait: Option<Duration>,
        why: &str,
    ) -> Outcome {
        let delay = retry_delay(receives, breaker_wait);
        if let Some(receipt) = message.receipt_handle.as_deref()
            && let Err(e) = self.queue.retry_in(receipt, delay).await
        {
            // The queue's own visibility timeout applies instead (longer, never lost).
            tracing::warn!(event = "screening_visibility_failed", error = %e);
        }
        tracing::info!(
            event = "screening_retry",
            message_id = ?message.message_id,
            receives,
            delay_s = delay.as_secs(),
            why
        );
        Outcome::Retry(delay)
    }
}
