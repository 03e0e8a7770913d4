//! `flag_transaction_for_review`: ask for a human review of a transaction (SPEC §4; budget
//! 8 s; core-api write → PostgreSQL and the outbox).
//!
//! Idempotent by key ([`super::idempotency`]), like `raise_dispute`: a repeated call answers
//! the first review with `created: false`. Unlike disputes, a transaction may have several
//! reviews (each under its own key).

use std::time::Duration;

use kosha_auth::Role;
use kosha_contract::core_api::{REASON_MAX_CHARS, ReviewRequest};
use kosha_contract::ids;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::call::Call;
use super::catalogue::{DEFAULT_MIN_BUDGET, Hints, KEYED_WRITE_ERRORS, Need, Spec, Tool};
use super::error::ToolError;
use super::idempotency::{self, KEY_PATTERN};
use crate::backends::Backend;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The transaction to review, such as `txn_000001`.
    #[schemars(extend("pattern" = ids::TRANSACTION.pattern()))]
    pub transaction_id: String,
    /// What the reviewer should look at.
    #[schemars(length(min = 1, max = REASON_MAX_CHARS))]
    pub reason: String,
    /// Rarely needed: the same call already returns the first review.
    #[schemars(extend("pattern" = KEY_PATTERN))]
    pub idempotency_key: Option<String>,
}

/// `structuredContent`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// `rev_` and a ULID.
    pub review_id: String,
    /// Always `pending_review`.
    pub status: String,
    /// `false` when an earlier call with the same key created it (a replay).
    pub created: bool,
}

/// The tool.
#[derive(Debug)]
pub struct FlagTransactionForReview;

impl Tool for FlagTransactionForReview {
    type Args = Args;
    type Output = Output;
    const SPEC: Spec = Spec {
        name: "flag_transaction_for_review",
        title: "Flag transaction for review",
        description: "Ask for a human review of a suspicious transaction \
                      (txn_000001) with a reason. Use it when fraud is suspected but the \
                      customer does not dispute. Returns review_id. Safe to retry: the same \
                      call returns the first review (`created: false`).",
        errors: KEYED_WRITE_ERRORS,
        hints: Hints::KEYED_WRITE,
        roles: &[Role::Agent],
        budget: Duration::from_secs(8),
        min_budget: DEFAULT_MIN_BUDGET,
        needs: &[Need {
            backend: Backend::CoreApiWrite,
            degraded_answer: false,
        }],
    };

    /// # Errors
    /// `not_found` (unknown transaction), `invalid_argument` (bad reason), `conflict` (a key
    /// reused with other arguments), or the errors of [`Call::core_api_write`].
    async fn run(call: &Call<'_>, args: Args) -> Result<Output, ToolError> {
        let request = ReviewRequest {
            transaction_id: args.transaction_id,
            reason: args.reason,
        };
        let written =
            idempotency::run(call, Self::SPEC.name, args.idempotency_key, request).await?;
        Ok(Output {
            review_id: written.record.review_id,
            status: written.record.status,
            created: written.created,
        })
    }
}
