//! The policy gate of `tools/list` and `tools/call` (SPEC §5a): both ask the operator's Cedar
//! policy set ([`kosha_authz::Policies`], the built-in set unless `KOSHA_POLICY_FILE` names
//! one), so listing and calling cannot disagree (ARCHITECTURE pitfall 31).
//!
//! - [`listed`]: a tool is in the caller's `tools/list`, and callable at all, when the listing
//!   rule allows it; any other call of it answers as an unknown tool (SPEC §5).
//! - [`decide`]: a call with checked arguments. When a policy for the tool reads
//!   `context.record`, or a policy reads anything of a dispute whose caller gave no amount
//!   (the default is the transaction's, SPEC §4), the addressed transaction is read first, through
//!   core-api's read policy (ARCHITECTURE pitfall 30: a policy on an account sees the record's
//!   account, not one the caller named). When no policy for the tool reads anything of the
//!   call, the listing answer is the decision and nothing more is evaluated.
//! - Every decision is counted, `authz{decision, tool}` (SPEC §12), and named in the call's
//!   log line with its deciding policies ([`crate::tools::observe::Decided`]).

use kosha_auth::Principal;
use kosha_authz::{Ask, Decision, Policies, Record};
use kosha_contract::core_api::Transaction;
use kosha_contract::ids;
use rmcp::model::JsonObject;
use serde_json::Value;

use crate::tools::call::Call;
use crate::tools::error::ToolError;

/// The revision a request without `MCP-Protocol-Version` speaks (MCP 2025-06-18, transports:
/// a server assumes 2025-03-26).
pub const DEFAULT_PROTOCOL_VERSION: &str = "2025-03-26";

/// Who asks, at which revision and time: what every decision of one request shares.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The verified caller.
    pub principal: &'a Principal,
    /// The request's `MCP-Protocol-Version` ([`DEFAULT_PROTOCOL_VERSION`] when absent).
    pub protocol_version: &'a str,
    /// `context.now`: seconds since the Unix epoch.
    pub now_s: i64,
}

/// Whether `tool` is listed for, and callable at all by, `caller` (SPEC §5a's listing rule),
/// with the policies that decided it.
pub fn listing(policies: &Policies, caller: Caller<'_>, tool: &str) -> Decision {
    policies.listing(caller.principal, tool, caller.protocol_version)
}

/// A call's decision, and the transaction read to make it, if one was.
#[derive(Debug)]
pub struct Decided {
    /// What the policies said.
    pub decision: Decision,
    /// The addressed transaction, when a policy read `context.record` (or a dispute's default
    /// amount): a confirmation's question shows it (SPEC §5b).
    pub transaction: Option<Transaction>,
}

/// Decides a call of `tool` with `checked` arguments (SPEC §5a), `listed` being its
/// [`listing`] (an allow), reading the addressed transaction first when a policy needs it, and
/// counts the decision.
///
/// # Errors
/// The record read's tool errors (`not_found` for an unknown transaction, a dependency's).
pub async fn decide(
    policies: &Policies,
    caller: Caller<'_>,
    call: &Call<'_>,
    (tool, listed): (&'static str, Decision),
    checked: &JsonObject,
) -> Result<Decided, ToolError> {
    let reads = policies.reads(tool);
    let decided = if reads.per_call() {
        let defaulted = tool == "raise_dispute" && !checked.contains_key("amount_minor");
        // A dispute without an amount is decided on the transaction's (SPEC §4): its context's
        // `input.amount_minor` is required, whatever the policies read.
        let wanted = kosha_authz::RECORD_TOOLS.contains(&tool) && (reads.record || defaulted);
        // Boxed: a call of a tool whose policies read no record never holds the read's future.
        let transaction = match wanted {
            true => Some(Box::pin(read_transaction(call, checked)).await?),
            false => None,
        };
        let record = transaction.as_ref().map(|t| Record {
            account_id: t.account_id.clone(),
            amount_minor: t.amount_minor,
            currency: t.currency.clone(),
        });
        let mut input;
        let input = match (&record, defaulted) {
            (Some(r), true) => {
                input = checked.clone();
                input.insert("amount_minor".to_owned(), Value::from(r.amount_minor));
                &input
            }
            _ => checked,
        };
        let ask = Ask {
            record: record.as_ref(),
            protocol_version: caller.protocol_version,
            now_s: caller.now_s,
            ..Ask::new(caller.principal, tool, input)
        };
        Decided {
            decision: policies.decide(&ask),
            transaction,
        }
    } else {
        // Nothing of the call is read (the revision is, and the listing read it exactly): the
        // listing set holds this tool's policies as written, so its answer is the call's.
        Decided {
            decision: listed,
            transaction: None,
        }
    };
    let name = decided.decision.as_str();
    metrics::counter!("authz", "decision" => name, "tool" => tool).increment(1);
    Ok(decided)
}

/// The transaction `checked.transaction_id` addresses (a tool that addresses one).
///
/// # Errors
/// `not_found` for an unknown transaction; core-api's errors as for any read.
pub async fn read_transaction(
    call: &Call<'_>,
    checked: &JsonObject,
) -> Result<Transaction, ToolError> {
    let id = checked
        .get("transaction_id")
        .and_then(Value::as_str)
        .ok_or(ToolError::Internal)?;
    if !ids::TRANSACTION.may_exist(id) {
        return Err(ToolError::NotFound(format!(
            "transaction {} not found",
            kosha_contract::echo::clip(id)
        )));
    }
    call.core_api_read(|meta| call.deps.core_api.get_transaction(meta, id))
        .await
}
