//! The worker's real dependencies: screening-sim under the worker's own policy
//! ([`PolicySim`]), the state table ([`kosha_state::StateTable`] as [`Store`]) and SQS
//! ([`SqsQueue`]).
//!
//! The worker's policy is its own seed 004 §1 row for screening-sim ([`PROFILE`]): the
//! gateway's 1.5 s attempts and 2 attempts, a bulkhead the size of a batch (10, so one batch
//! never rejects itself), and a 10 s open period (a message comes back every ≤ 30 s, so a
//! shorter open period lets the first message after recovery probe). It honours the
//! `breaker#screening-sim` override (SPEC §8). Settings: `KOSHA_POLICY_SCREENING_WORKER_*`.

use std::time::Duration;

use kosha_clients::hop::{HOP_MARGIN, hop_deadline};
use kosha_clients::screening::{ScreenMeta, ScreeningClient, ScreeningError};
use kosha_contract::screening::ScreenRequest;
use kosha_resilience::config::Profile;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::policy::{Policy, PolicyError};
use kosha_resilience::retry::Idempotency;
use kosha_state::screening::{Finished, ScreeningItem, ScreeningState};
use kosha_state::{Clock, StateError, StateTable, SystemClock};

use crate::handler::{Queue, Sim, SimAnswer, Store};

/// The worker's policy toward screening-sim (see the module doc).
pub const PROFILE: Profile = Profile {
    attempt_cap: Duration::from_millis(1_500),
    attempt_margin: HOP_MARGIN,
    max_attempts: 2,
    bulkhead: 10,
    breaker_window: 10,
    open_for: Duration::from_secs(10),
};

/// Prefix of the worker policy's `KOSHA_POLICY_*` overrides.
pub const POLICY_ENV_PREFIX: &str = "KOSHA_POLICY_SCREENING_WORKER";

/// screening-sim under a [`Policy`].
#[derive(Debug)]
pub struct PolicySim {
    /// The client.
    pub client: ScreeningClient,
    /// Its policy.
    pub policy: Policy,
}

impl Sim for PolicySim {
    async fn screen(&self, request: &ScreenRequest, deadline: &Deadline) -> SimAnswer {
        let answer = self
            .policy
            .call(deadline, Idempotency::Idempotent, |attempt| {
                let meta = ScreenMeta {
                    principal: None,
                    // SPEC §7: the attempt's end, not only the batch's, bounds the hop.
                    deadline_header: Some(hop_deadline(deadline, attempt.timeout).to_header()),
                    timeout: attempt.timeout,
                };
                async move { self.client.screen(&meta, request).await }
            })
            .await;
        match answer {
            Ok(result) => SimAnswer::Result(result),
            Err(PolicyError::Inner(e)) if e.is_invalid_request() => SimAnswer::Invalid(match e {
                ScreeningError::Status { message, .. } if !message.is_empty() => message,
                _ => "screening-sim refused the request as invalid".to_owned(),
            }),
            Err(e) => {
                if let PolicyError::Inner(inner) = &e {
                    tracing::warn!(event = "screening_sim_failed", error = %inner);
                }
                SimAnswer::Unavailable {
                    retry_after: e.retry_after(),
                }
            }
        }
    }
}

impl Store for StateTable {
    async fn get(&self, id: &str) -> Result<Option<ScreeningItem>, StateError> {
        self.get_screening(id, SystemClock.now_s()).await
    }

    async fn finish(&self, id: &str, outcome: &ScreeningState) -> Result<Finished, StateError> {
        self.finish_screening(id, outcome, SystemClock.now_s())
            .await
    }
}

/// The screening queue and its DLQ over SQS.
#[derive(Debug, Clone)]
pub struct SqsQueue {
    /// The client.
    pub sqs: aws_sdk_sqs::Client,
    /// `KOSHA_SCREENING_QUEUE_URL`.
    pub queue_url: String,
    /// `KOSHA_SCREENING_DLQ_URL`.
    pub dlq_url: String,
}

fn sqs_error(e: impl std::error::Error + 'static) -> String {
    aws_sdk_sqs::error::DisplayErrorContext(e).to_string()
}

impl Queue for SqsQueue {
    async fn retry_in(&self, receipt: &str, after: Duration) -> Result<(), String> {
        self.sqs
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt)
            .visibility_timeout(i32::try_from(after.as_secs()).unwrap_or(i32::MAX))
            .send()
            .await
            .map(|_| ())
            .map_err(sqs_error)
    }

    async fn dead_letter(&self, body: &str) -> Result<(), String> {
        self.sqs
            .send_message()
            .queue_url(&self.dlq_url)
            .message_body(body)
            .send()
            .await
            .map(|_| ())
            .map_err(sqs_error)
    }
}
