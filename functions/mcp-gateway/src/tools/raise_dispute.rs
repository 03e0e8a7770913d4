//! `raise_dispute`: open a dispute on a transaction (SPEC §4; budget 8 s; core-api write →
//! PostgreSQL and the outbox).
//!
//! Idempotent by key ([`super::idempotency`]): the agent's `idempotency_key`, or one derived
//! from the call, so a repeated call answers the first dispute with `created: false`. The
//! amount defaults to the transaction's and may not exceed it; a transaction has one open
//! dispute at most (`conflict` naming it). Both rules are core-api's, which sees the
//! transaction; the schema bounds what it can (amount 1 to 2^63 − 1, reason 1–1000 chars).

use std::time::Duration;

use kosha_auth::Role;
use kosha_contract::core_api::{DisputeRequest, REASON_MAX_CHARS};
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
    /// The disputed transaction, such as `txn_000001`.
    #[schemars(extend("pattern" = ids::TRANSACTION.pattern()))]
    pub transaction_id: String,
    /// Why the customer disputes it.
    #[schemars(length(min = 1, max = REASON_MAX_CHARS))]
    pub reason: String,
    /// Disputed amount in minor units (cents), at most the transaction's (the default).
    #[schemars(range(min = 1, max = i64::MAX))]
    pub amount_minor: Option<i64>,
    /// Rarely needed: the same call already returns the first dispute.
    #[schemars(extend("pattern" = KEY_PATTERN))]
    pub idempotency_key: Option<String>,
}

/// `structuredContent`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// `dsp_` and a ULID.
    pub dispute_id: String,
    /// Always `open`.
    pub status: String,
    /// `false` when an earlier call with the same key created it (a replay).
    pub created: bool,
}

/// The tool.
#[derive(Debug)]
pub struct RaiseDispute;

impl Tool for RaiseDispute {
    type Args = Args;
    type Output = Output;
    const SPEC: Spec = Spec {
        name: "raise_dispute",
        title: "Raise dispute",
        description: "Open a dispute on a transaction (txn_000001) when the customer \
                      contests it. `amount_minor` (cents) defaults to the whole amount and may \
                      not exceed it; one open dispute per transaction. Safe to retry: the same \
                      call returns the first dispute (`created: false`).",
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
    /// `not_found` (unknown transaction), `invalid_argument` (amount above the
    /// transaction's, bad reason), `conflict` (an open dispute, named; a key reused with
    /// other arguments), or the errors of [`Call::core_api_write`].
    async fn run(call: &Call<'_>, args: Args) -> Result<Output, ToolError> {
        let request = DisputeRequest {
            transaction_id: args.transaction_id,
            reason: args.reason,
            amount_minor: args.amount_minor,
        };
        let written =
            idempotency::run(call, Self::SPEC.name, args.idempotency_key, request).await?;
        Ok(Output {
            dispute_id: written.record.dispute_id,
            status: written.record.status,
            created: written.created,
        })
    }
}
