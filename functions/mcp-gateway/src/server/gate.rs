//! A `tools/call` past the rate limit: its arguments, the policies (SPEC §5a), a person's
//! confirmation (SPEC §5b), then the tool; and how the call ends ([`Answer`]).
//!
//! | the policies say | the call |
//! |---|---|
//! | allow | runs (a confirmable write's asking round first spends the rest of its cost) |
//! | forbid | the tool error `forbidden`, the deciding policy's `@reason` as message |
//! | confirm | the confirmation step ([`crate::confirm`]): asked (an `InputRequiredResult`), run once confirmed, or refused |
//!
//! Rate limit (SPEC §5b): a round of a write that may need its person's yes and carries no
//! `requestState` spends one token before deciding ([`round_cost`]); if the policies then let
//! it run, it spends the rest of the tool's cost first. A round that carries a state (the
//! confirmed one) spends the tool's cost up front.

use std::time::Duration;

use kosha_authz::{Decision, Policies};
use kosha_resilience::rate_limit::{Bucket, RateDecision};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, InputRequiredResult, JsonObject,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;

use crate::authz;
use crate::confirm::{self, Pending, Reply, Step};
use crate::state::Gateway;
use crate::tools::call::Call;
use crate::tools::catalogue::Entry;
use crate::tools::error::ToolError;
use crate::tools::observe;

/// How a `tools/call` ended, before it becomes rmcp's answer.
pub(super) enum Answer {
    /// The tool's result or tool error (SPEC §3).
    Tool(Result<Value, ToolError>),
    /// The person must confirm: the client asks them and calls again (SPEC §5b, SEP-2322).
    Ask(InputRequiredResult),
    /// A JSON-RPC error instead of a result: an unknown tool.
    Rpc {
        error: McpError,
        outcome: &'static str,
    },
}

impl Answer {
    pub(super) fn outcome(&self) -> observe::Outcome<'_> {
        match self {
            Self::Tool(Ok(value)) => observe::Outcome::ok(value),
            Self::Tool(Err(e)) => observe::Outcome::error(e.code().as_str()),
            Self::Ask(_) => observe::Outcome::error("input_required"),
            Self::Rpc { outcome, .. } => observe::Outcome::error(outcome),
        }
    }

    pub(super) fn into_response(self) -> Result<CallToolResponse, McpError> {
        match self {
            Self::Tool(Ok(value)) => Ok(CallToolResult::structured(value).into()),
            Self::Tool(Err(e)) => Ok(e.into_result().into()),
            Self::Ask(question) => Ok(CallToolResponse::InputRequired(question)),
            Self::Rpc { error, .. } => Err(error),
        }
    }
}

/// Whether a call of `tool` may need its person's confirmation under `policies`: a write
/// tool some policy reads `context.confirmed` for (SPEC §5b).
pub(super) fn may_ask(policies: &Policies, tool: &str) -> bool {
    kosha_authz::WRITE_TOOLS.contains(&tool) && policies.reads(tool).confirmed
}

/// Tokens this round spends before deciding (SPEC §5b): one for a round of a write that may
/// be asked and carries no `requestState`, else the tool's cost.
pub(super) fn round_cost(
    policies: &Policies,
    entry: &Entry,
    request: &CallToolRequestParams,
) -> u32 {
    if may_ask(policies, entry.spec.name) && request.request_state.is_none() {
        entry.cost().min(1)
    } else {
        entry.cost()
    }
}

/// One call past the rate limit: who asks, what they call, and what was spent.
pub(super) struct Gate<'a> {
    /// The policy set.
    pub policies: &'a Policies,
    /// Who asks.
    pub caller: authz::Caller<'a>,
    /// The tool.
    pub entry: &'a Entry,
    /// Its listing decision (an allow).
    pub listing: Decision,
    /// The request (its `requestState` and `inputResponses`).
    pub request: &'a CallToolRequestParams,
    /// The request's context: what it says of its client (revision, capabilities), read
    /// only for a confirmation.
    pub context: &'a RequestContext<RoleServer>,
    /// The caller's bucket and the tokens this round spent already ([`round_cost`]).
    pub spent: (Option<Bucket<'a>>, u32),
    /// How long the confirmation key's fetch may take.
    pub within: Duration,
}

impl Gate<'_> {
    /// Checks the arguments, asks the policies, asks the person when they say so, and runs
    /// the tool when it may.
    pub(super) async fn pass(
        self,
        gateway: &Gateway,
        call: &Call<'_>,
        arguments: Option<JsonObject>,
        decided: &observe::Decided,
    ) -> Answer {
        match self.decide(gateway, call, arguments, decided).await {
            Ok(answer) => answer,
            Err(e) => Answer::Tool(Err(e)),
        }
    }

    async fn decide(
        self,
        gateway: &Gateway,
        call: &Call<'_>,
        arguments: Option<JsonObject>,
        decided: &observe::Decided,
    ) -> Result<Answer, ToolError> {
        let Gate {
            policies,
            caller,
            entry,
            listing,
            request,
            context,
            spent,
            within,
        } = self;
        let tool = entry.spec.name;
        let checked = entry.check(arguments)?;
        let authz::Decided {
            decision,
            transaction,
        } = authz::decide(policies, caller, call, (tool, listing), &checked).await?;
        decided.set(&decision);
        match decision {
            Decision::Allow { .. } => {
                spend_the_rest(gateway, entry, spent).await?;
                Ok(Answer::Tool(entry.run(call, checked).await))
            }
            Decision::Forbid { reason, .. } => Err(ToolError::Forbidden(reason)),
            // Boxed: the confirmation's futures (the key's read, the record's) are held only
            // by a call that needs one, not by every call's future.
            Decision::Confirm { .. } => {
                let confirming = Confirming {
                    caller,
                    entry,
                    request,
                    context,
                    within,
                };
                Box::pin(confirming.run(gateway, call, checked, transaction)).await
            }
        }
    }
}

/// A call the policies said needs its person's yes (SPEC §5b).
struct Confirming<'a> {
    caller: authz::Caller<'a>,
    entry: &'a Entry,
    request: &'a CallToolRequestParams,
    context: &'a RequestContext<RoleServer>,
    within: Duration,
}

impl Confirming<'_> {
    /// Asks, refuses, or runs the tool once confirmed ([`crate::confirm`]).
    async fn run(
        self,
        gateway: &Gateway,
        call: &Call<'_>,
        checked: JsonObject,
        transaction: Option<kosha_contract::core_api::Transaction>,
    ) -> Result<Answer, ToolError> {
        let transaction = match transaction {
            Some(t) => t,
            None => authz::read_transaction(call, &checked).await?,
        };
        let client = confirm::reach::Client::of(self.context);
        let pending = Pending {
            tool: self.entry.spec.name,
            arguments: &checked,
            record: (&transaction).into(),
            principal: self.caller.principal,
            client: &client,
            reply: Reply::of(self.request),
        };
        match gateway.confirm.decide(&pending, self.within).await {
            Step::Ask(question) => Ok(Answer::Ask(question)),
            Step::Refuse(e) => Err(e),
            Step::Run(_) => Ok(Answer::Tool(self.entry.run(call, checked).await)),
        }
    }
}

/// Spends what this round did not spend yet of `entry`'s cost (`spent`: the bucket and what
/// it gave already): an asking round that needs no asking after all.
///
/// # Errors
/// [`ToolError::RateLimited`] when the bucket holds less than the rest.
async fn spend_the_rest(
    gateway: &Gateway,
    entry: &Entry,
    (bucket, spent): (Option<Bucket<'_>>, u32),
) -> Result<(), ToolError> {
    let rest = entry.cost().saturating_sub(spent);
    let Some(bucket) = bucket.filter(|_| rest > 0) else {
        return Ok(());
    };
    match gateway.rate_limiter.check(bucket, rest).await {
        RateDecision::Limited { retry_after_s } => Err(ToolError::RateLimited {
            retry_after_s,
            bucket: bucket.kind,
        }),
        _ => Ok(()),
    }
}
