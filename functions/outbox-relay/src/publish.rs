//! Publishing events to the events queue: [`Publish`] is one `SendMessageBatch` (at most
//! [`MAX_BATCH`] entries, SQS's limit); [`Sqs`] is the real one. The relay calls it through
//! its resilience policy and marks only the entries the answer lists as `Successful`
//! (ARCHITECTURE pitfall 17: a 200 may carry `Failed` entries).
//!
//! Each message's body is the event's JSON ([`kosha_contract::events::Event`]) with the
//! String attribute `event_type` (SPEC §4); its batch entry id is the event id (a ULID:
//! alphanumeric, 26 characters, unique in a batch as SQS requires).

use std::future::Future;

use aws_sdk_sqs::config::http::HttpResponse;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use kosha_contract::events::{EVENT_TYPE_ATTRIBUTE, Event};
use kosha_resilience::classify::{Classify, ErrorClass};

/// SQS accepts at most 10 entries per `SendMessageBatch`.
pub const MAX_BATCH: usize = 10;

/// What SQS did with one batch. Entry ids are event ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// Entries SQS stored.
    pub accepted: Vec<String>,
    /// Entries SQS refused, with its error code (`sender_fault` says whether it is ours).
    pub failed: Vec<Refused>,
}

/// One refused entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The entry (event) id.
    pub id: String,
    /// SQS's error code, such as `InternalError`.
    pub code: String,
    /// Whether SQS blames the request (a retry will fail the same way) rather than itself.
    pub sender_fault: bool,
}

/// Why a whole batch call failed (nothing is known to be stored).
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// No connection, or it broke before an answer.
    #[error("SQS unreachable: {0}")]
    Unreachable(String),
    /// The SDK's own timeout fired.
    #[error("SQS timed out")]
    Timeout,
    /// SQS answered with an error status.
    #[error("SQS answered {status}: {code}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The error code, when SQS sent one.
        code: String,
    },
    /// The request could not be built (an entry SQS's model refuses): never sent.
    #[error("SQS request not built: {0}")]
    Build(String),
}

impl Classify for PublishError {
    /// Seed 004 §3: connect errors, timeouts, 5xx and 429 are retried and count against the
    /// breaker; other statuses and unbuilt requests are ours and do neither.
    fn class(&self) -> ErrorClass {
        match self {
            Self::Unreachable(_) => ErrorClass::Connect,
            Self::Timeout => ErrorClass::Timeout,
            Self::Status { status, .. } if *status == 429 || *status >= 500 => ErrorClass::Status {
                status: *status,
                retry_after: None,
            },
            Self::Status { .. } | Self::Build(_) => ErrorClass::Caller,
        }
    }
}

/// One `SendMessageBatch` call.
pub trait Publish: Send + Sync {
    /// Sends `events` (at most [`MAX_BATCH`]) as one batch.
    fn send_batch(
        &self,
        events: &[&Event],
    ) -> impl Future<Output = Result<BatchOutcome, PublishError>> + Send;
}

/// The events queue on SQS.
#[derive(Debug, Clone)]
pub struct Sqs {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl Sqs {
    /// Publishes to `queue_url` with `client` (build it without SDK retries: the relay's
    /// policy retries).
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }
}

fn entry(event: &Event) -> Result<SendMessageBatchRequestEntry, PublishError> {
    let body = serde_json::to_string(event).map_err(|e| PublishError::Build(e.to_string()))?;
    let attribute = MessageAttributeValue::builder()
        .data_type("String")
        .string_value(&event.event_type)
        .build()
        .map_err(|e| PublishError::Build(e.to_string()))?;
    SendMessageBatchRequestEntry::builder()
        .id(&event.event_id)
        .message_body(body)
        .message_attributes(EVENT_TYPE_ATTRIBUTE, attribute)
        .build()
        .map_err(|e| PublishError::Build(e.to_string()))
}

impl Publish for Sqs {
    async fn send_batch(&self, events: &[&Event]) -> Result<BatchOutcome, PublishError> {
        let entries = events
            .iter()
            .map(|e| entry(e))
            .collect::<Result<Vec<_>, _>>()?;
        let answer = self
            .client
            .send_message_batch()
            .queue_url(&self.queue_url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(BatchOutcome {
            accepted: answer
                .successful()
                .iter()
                .map(|s| s.id().to_owned())
                .collect(),
            failed: answer
                .failed()
                .iter()
                .map(|f| Refused {
                    id: f.id().to_owned(),
                    code: f.code().to_owned(),
                    sender_fault: f.sender_fault(),
                })
                .collect(),
        })
    }
}

fn sdk_error(e: SdkError<SendMessageBatchError, HttpResponse>) -> PublishError {
    match e {
        SdkError::TimeoutError(_) => PublishError::Timeout,
        SdkError::DispatchFailure(d) => PublishError::Unreachable(format!("{d:?}")),
        SdkError::ConstructionFailure(c) => PublishError::Build(format!("{c:?}")),
        SdkError::ServiceError(s) => PublishError::Status {
            status: s.raw().status().as_u16(),
            code: s.err().code().unwrap_or("unknown").to_owned(),
        },
        SdkError::ResponseError(r) => PublishError::Status {
            status: r.raw().status().as_u16(),
            code: "unparsable response".to_owned(),
        },
        other => PublishError::Unreachable(other.to_string()),
    }
}
