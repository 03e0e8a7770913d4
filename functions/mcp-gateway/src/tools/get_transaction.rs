//! `get_transaction`: one transaction by id (SPEC §4; budget 3 s; core-api read).

use std::time::Duration;

use kosha_auth::Role;
use kosha_contract::core_api::Transaction;
use kosha_contract::ids;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::call::Call;
use super::catalogue::{DEFAULT_MIN_BUDGET, Hints, Need, READ_ERRORS, Spec, Tool};
use super::error::ToolError;
use crate::backends::Backend;
use kosha_contract::echo::clip;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The transaction id, such as `txn_000001`.
    #[schemars(extend("pattern" = ids::TRANSACTION.pattern()))]
    pub transaction_id: String,
}

/// `structuredContent`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// The transaction.
    pub transaction: Transaction,
}

/// The tool.
#[derive(Debug)]
pub struct GetTransaction;

impl Tool for GetTransaction {
    type Args = Args;
    type Output = Output;
    const SPEC: Spec = Spec {
        name: "get_transaction",
        title: "Get transaction",
        description: "Fetch one transaction by id (txn_000001). Use it to check a payment \
                      a customer asks about. Returns amount in minor units, currency, \
                      merchant, category, status and booking time.",
        errors: READ_ERRORS,
        hints: Hints::READ,
        roles: &[Role::Agent],
        budget: Duration::from_secs(3),
        min_budget: DEFAULT_MIN_BUDGET,
        needs: &[Need {
            backend: Backend::CoreApiRead,
            degraded_answer: false,
        }],
    };

    /// # Errors
    /// `not_found`, or the core-api errors of [`Call::core_api_read`].
    async fn run(call: &Call<'_>, args: Args) -> Result<Output, ToolError> {
        let id = args.transaction_id.as_str();
        if !ids::TRANSACTION.may_exist(id) {
            return Err(ToolError::NotFound(format!(
                "transaction {} not found",
                clip(id)
            )));
        }
        let transaction = call
            .core_api_read(|meta| call.deps.core_api.get_transaction(meta, id))
            .await?;
        Ok(Output { transaction })
    }
}
