//! `get_transaction`: one transaction by id (SPEC §4; budget 3 s; core-api read).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::types::Transaction;
use super::{Call, ToolError, ToolSpec, args};

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The transaction id, `txn_` and six digits.
    #[schemars(regex(pattern = r"^txn_[0-9]{6}$"))]
    pub transaction_id: String,
}

/// `structuredContent`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// The transaction.
    pub transaction: Transaction,
}

/// The tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec::read::<Args, Output>(
        "get_transaction",
        "Get transaction",
        "Fetch one transaction by id (txn_000001 form): amount in minor units, currency, \
         merchant, category, status and booking time.",
        3_000,
    )
}

/// Runs the tool.
///
/// # Errors
/// `invalid_argument` for a malformed id, `not_found`, or the core-api errors of [`Call`].
pub async fn call(call: &Call<'_>, args: Args) -> Result<Output, ToolError> {
    args::check_id("transaction_id", &args.transaction_id, "txn_", 6)?;
    let id = args.transaction_id.as_str();
    let transaction = call
        .core_api_read(|meta| async move { call.gateway.core_api.get_transaction(&meta, id).await })
        .await?;
    Ok(Output { transaction })
}
