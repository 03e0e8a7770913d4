//! screening-sim and the deferred-screening record (SPEC §4, §10; issue 12).
//!
//! - The HTTP client is [`kosha_clients::screening`], shared with the screening-worker so both
//!   call the service the same way.
//! - [`Screenings`] keeps `screening#<id>` items (through [`kosha_state::screening`]) and
//!   sends deferred ones to the screening queue. [`Screenings::defer`] is the only way to
//!   record a deferral: the item first, then the message; when the message cannot be sent the
//!   item is deleted, so no `pending` item is left that nothing will complete (ARCHITECTURE.md
//!   pitfall 20). Even when that delete fails too, the id was never handed out (the caller
//!   answers `dependency_unavailable`), so the item is unreachable and expires in 7 days.
//! - Every call is bounded by the caller's time (`timeout`): a hung DynamoDB or SQS costs the
//!   remaining budget at most, never the whole Lambda.

use std::sync::Arc;
use std::time::Duration;

use kosha_contract::screening::ScreeningMessage;
use kosha_state::screening::ScreeningItem;
use kosha_state::{StateError, StateTable};

/// Why a screening could not be recorded or read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The state table failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// The queue refused or did not answer.
    #[error("SendMessage failed: {0}")]
    Queue(String),
    /// No queue is configured (`KOSHA_SCREENING_QUEUE_URL` unset): nothing can be deferred.
    #[error("no screening queue configured")]
    NoQueue,
    /// The call did not finish within the time given.
    #[error("{0} timed out")]
    Timeout(&'static str),
}

/// The SQS client, built on the first deferral.
type LazySqs = kosha_runtime::aws::LazyClient<aws_sdk_sqs::Config, aws_sdk_sqs::Client>;

/// The state table's screening items and the screening queue.
#[derive(Debug, Clone)]
pub struct Screenings {
    table: StateTable,
    sqs: Arc<LazySqs>,
    queue_url: Option<String>,
}

async fn bounded<T, E: Into<RecordError>>(
    what: &'static str,
    timeout: Duration,
    f: impl Future<Output = Result<T, E>>,
) -> Result<T, RecordError> {
    tokio::time::timeout(timeout, f)
        .await
        .map_err(|_| RecordError::Timeout(what))?
        .map_err(Into::into)
}

impl Screenings {
    /// Items in `table`, deferred messages to `queue_url` through `sqs` (no queue: deferring
    /// always fails).
    pub fn new(table: StateTable, sqs: aws_sdk_sqs::Client, queue_url: Option<String>) -> Self {
        let config = sqs.config().clone();
        let sqs = LazySqs::built(config, aws_sdk_sqs::Client::from_conf, sqs);
        Self::over(table, sqs, queue_url)
    }

    /// The same, with an SQS client built from `sdk` on the first deferral: a Lambda init does
    /// not pay for it ([`kosha_runtime::aws::LazyClient`]).
    pub fn from_sdk(
        table: StateTable,
        sdk: &kosha_runtime::aws::SdkConfig,
        queue_url: Option<String>,
    ) -> Self {
        let sqs = LazySqs::new(
            aws_sdk_sqs::Config::new(sdk),
            aws_sdk_sqs::Client::from_conf,
        );
        Self::over(table, sqs, queue_url)
    }

    fn over(table: StateTable, sqs: LazySqs, queue_url: Option<String>) -> Self {
        Self {
            table,
            sqs: Arc::new(sqs),
            queue_url,
        }
    }

    /// Stores a finished screening (a synchronous answer), within `timeout`.
    ///
    /// # Errors
    /// [`RecordError`].
    pub async fn store(&self, item: &ScreeningItem, timeout: Duration) -> Result<(), RecordError> {
        bounded("PutItem", timeout, self.table.put_screening(item)).await
    }

    /// Records a pending screening and queues it for the worker, within `timeout` in all;
    /// on failure nothing is left behind that the caller would have to explain.
    ///
    /// # Errors
    /// [`RecordError`]: the item or the message could not be written.
    pub async fn defer(&self, item: &ScreeningItem, timeout: Duration) -> Result<(), RecordError> {
        let queue_url = self.queue_url.as_deref().ok_or(RecordError::NoQueue)?;
        let until = tokio::time::Instant::now() + timeout;
        let left = || until.saturating_duration_since(tokio::time::Instant::now());
        bounded("PutItem", left(), self.table.put_screening(item)).await?;
        let body = serde_json::to_string(&ScreeningMessage {
            screening_id: item.id.clone(),
            client_id: item.client_id.clone(),
        })
        .map_err(|e| RecordError::Queue(e.to_string()))?;
        let sent = bounded("SendMessage", left(), async {
            self.sqs
                .get()
                .send_message()
                .queue_url(queue_url)
                .message_body(body)
                .send()
                .await
                .map_err(|e| {
                    RecordError::Queue(aws_sdk_sqs::error::DisplayErrorContext(e).to_string())
                })
        })
        .await;
        if let Err(e) = sent {
            // Undo the item; the delete gets its own short bound (the budget may be spent).
            let undo = bounded(
                "DeleteItem",
                left().max(Duration::from_millis(200)),
                self.table.delete_screening(&item.id),
            )
            .await;
            if let Err(undo) = undo {
                tracing::warn!(event = "screening_undo_failed", error = %undo, "pending item left unreachable");
            }
            return Err(e);
        }
        Ok(())
    }

    /// Reads screening `id` as of `now_s`, within `timeout`.
    ///
    /// # Errors
    /// [`RecordError`].
    pub async fn read(
        &self,
        id: &str,
        now_s: i64,
        timeout: Duration,
    ) -> Result<Option<ScreeningItem>, RecordError> {
        bounded("GetItem", timeout, self.table.get_screening(id, now_s)).await
    }
}
