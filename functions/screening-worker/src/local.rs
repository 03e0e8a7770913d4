//! Local mode (`scripts/dev up`): the same handler fed by a polling loop on the screening
//! queue instead of Lambda's SQS event source.
//!
//! Each turn receives up to 10 messages with `ApproximateReceiveCount` (short polls: an
//! empty answer waits [`IDLE_POLL`] before the next; the local AWS emulator serves one request
//! at a time (scripts/moto_server.py), so a long poll would stall every other client of it
//! for its whole wait), gives the batch the Lambda function's timeout
//! ([`BATCH_TIMEOUT`]), then deletes the messages the handler did not report as failures —
//! what Lambda's event source does with `ReportBatchItemFailures`. A failed receive (the
//! emulator restarting) waits a second and tries again. Runs until the process is stopped.

use std::time::Duration;

use aws_lambda_events::event::sqs::SqsMessage;
use aws_sdk_sqs::types::MessageSystemAttributeName;
use kosha_resilience::deadline::Deadline;

use crate::handler::{Queue, Sim, Store, Worker};

/// Pause after an empty receive.
pub const IDLE_POLL: Duration = Duration::from_millis(500);
/// A batch's time, as the Lambda function's `Timeout` (infra/template.yaml).
pub const BATCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Polls `queue_url` forever, handing each batch to `worker`.
pub async fn run<S: Sim, T: Store, Q: Queue>(
    worker: &Worker<S, T, Q>,
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
) {
    tracing::info!(mode = "local", queue_url, "polling");
    loop {
        let received = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(0)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await;
        let messages = match received {
            Ok(out) => out.messages.unwrap_or_default(),
            Err(e) => {
                tracing::warn!(event = "receive_failed", error = %aws_sdk_sqs::error::DisplayErrorContext(e));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if messages.is_empty() {
            tokio::time::sleep(IDLE_POLL).await;
            continue;
        }
        let batch: Vec<SqsMessage> = messages.iter().map(to_event).collect();
        let response = worker
            .handle_batch(&batch, &Deadline::after(BATCH_TIMEOUT))
            .await;
        for m in &messages {
            let failed = response
                .batch_item_failures
                .iter()
                .any(|f| Some(f.item_identifier.as_str()) == m.message_id());
            if failed {
                continue;
            }
            let Some(receipt) = m.receipt_handle() else {
                continue;
            };
            let deleted = sqs
                .delete_message()
                .queue_url(queue_url)
                .receipt_handle(receipt)
                .send()
                .await;
            if let Err(e) = deleted {
                tracing::warn!(event = "delete_failed", error = %aws_sdk_sqs::error::DisplayErrorContext(e));
            }
        }
    }
}

/// A received message in the shape Lambda's event source delivers it.
fn to_event(m: &aws_sdk_sqs::types::Message) -> SqsMessage {
    let mut e = SqsMessage::default();
    e.message_id = m.message_id().map(str::to_owned);
    e.receipt_handle = m.receipt_handle().map(str::to_owned);
    e.body = m.body().map(str::to_owned);
    if let Some(attrs) = m.attributes() {
        for (k, v) in attrs {
            e.attributes.insert(k.as_str().to_owned(), v.clone());
        }
    }
    e
}
