//! A person's confirmation of a write, over MCP 2026-07-28 (SPEC §5b; SEP-2322 multi
//! round-trip requests; ARCHITECTURE pitfalls 32–33).
//!
//! **When.** A policy decides that a call of a write tool (`raise_dispute`,
//! `flag_transaction_for_review`) needs its person's yes (SPEC §5a–§5b: a deny that
//! `context.confirmed` would lift). The dispatcher then hands the call to
//! [`Confirmer::decide`], which answers one [`Step`]:
//!
//! | the call | step |
//! |---|---|
//! | from a client that cannot be asked ([`reach`]) | refuse: `confirmation_required` |
//! | first round (no `requestState`) | ask: an `InputRequiredResult` with one form |
//! | a state that is not ours for this call ([`seal`]) | refuse: `invalid_argument` |
//! | a state past its TTL | ask again, with a new state |
//! | a valid state and a yes ([`answer`]) | run, confirmed |
//! | a valid state and a no, or a dismissal | refuse: `declined` |
//! | a valid state and no usable answer | refuse: `invalid_argument` |
//! | the sealing key unreadable | refuse: `dependency_unavailable` (nothing runs unasked) |
//!
//! Everything is checked before anything runs. A confirmed call runs once: the write tools'
//! idempotency (SPEC §4) makes a replayed accepted state answer the first result with
//! `created: false`, so no nonce is kept.
//!
//! **Neighbours.** The question's text and form are [`question`]'s (amounts by [`amount`],
//! caller text by [`quote`]); the state is sealed with the key from Secrets Manager
//! (`KOSHA_CONFIRM_SECRET_ID`, cached by `kosha_state::SecretCache` like the chaos key). The
//! policy decision, the record read and the rate-limit charge are the dispatcher's.
//!
//! **Records.** Every decision is counted in `confirmations{tool, outcome}` (SPEC §12;
//! outcomes: `asked`, `expired` (asked again), `accepted`, `declined`, `cancelled`, `invalid`,
//! `unreachable`, `unavailable`, `internal`); an answer also writes the audit event
//! `confirmation_answered` naming the client, the user (`sub` and `username`), the tool, the
//! transaction, the arguments' digest and the person's note, clipped.

pub mod amount;
pub mod answer;
pub mod question;
pub mod quote;
pub mod reach;
pub mod seal;

use std::sync::Arc;
use std::time::Duration;

use kosha_auth::Principal;
use kosha_contract::echo::clip;
use kosha_runtime::audit::events;
use kosha_state::{Clock, SecretCache};
use rmcp::model::{CallToolRequestParams, InputRequiredResult, InputResponses, JsonObject};

use crate::tools::error::ToolError;
use answer::Answer;
use question::{Record, Subject};
use reach::Client;
use seal::{Binding, Opened, Sealer};

/// The metric (SPEC §12).
const METRIC: &str = "confirmations";

/// The retry part of a `tools/call` (SEP-2322): what the client echoes and answers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reply<'a> {
    /// `params.requestState`, as sent.
    pub request_state: Option<&'a str>,
    /// `params.inputResponses`.
    pub input_responses: Option<&'a InputResponses>,
}

impl<'a> Reply<'a> {
    /// The reply parts of `request`.
    pub fn of(request: &'a CallToolRequestParams) -> Self {
        Self {
            request_state: request.request_state.as_deref(),
            input_responses: request.input_responses.as_ref(),
        }
    }
}

/// A call a policy says needs its person's confirmation.
#[derive(Debug, Clone, Copy)]
pub struct Pending<'a> {
    /// The tool (a write tool), the catalogue's name: also the metric's `tool` dimension, so
    /// a name the caller wrote never becomes one.
    pub tool: &'static str,
    /// The call's arguments as sent, already accepted by the tool's schema (absent
    /// arguments: an empty object).
    pub arguments: &'a JsonObject,
    /// The transaction the call addresses.
    pub record: Record<'a>,
    /// Who calls.
    pub principal: &'a Principal,
    /// What the request says about its client ([`Client::of`]).
    pub client: &'a Client,
    /// The retry's state and answers, if this is a retry.
    pub reply: Reply<'a>,
}

/// What the dispatcher does with the call.
#[derive(Debug)]
pub enum Step {
    /// The person said yes: run the call, deciding with `context.confirmed = true`.
    Run(Confirmed),
    /// Answer this instead of a result; the client asks the person and retries.
    Ask(InputRequiredResult),
    /// Answer this tool error; nothing runs.
    Refuse(ToolError),
}

/// A yes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmed {
    /// The person's note, if they wrote one (already in the audit event).
    pub note: Option<String>,
}

/// The gateway's confirmations: the sealing key's cache, the states' TTL and the wall clock
/// that stamps and checks them. Built once per process.
pub struct Confirmer {
    keys: Option<SecretCache>,
    ttl: Duration,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Confirmer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confirmer")
            .field("keys", &self.keys)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Confirmer {
    /// Confirmations sealed with the key from `keys` (`None`: no key, so every call that
    /// needs a confirmation is refused as unavailable), living `ttl`, on `clock`.
    pub fn new(keys: Option<SecretCache>, ttl: Duration, clock: Arc<dyn Clock>) -> Self {
        Self { keys, ttl, clock }
    }

    /// The step for `pending` (module docs). `within` bounds the key fetch (the call's time
    /// left beyond its minimum budget), as for the chaos key.
    pub async fn decide(&self, pending: &Pending<'_>, within: Duration) -> Step {
        match self.decide_inner(pending, within).await {
            Ok(step) => step,
            Err((outcome, error)) => {
                count(pending.tool, outcome);
                Step::Refuse(error)
            }
        }
    }

    async fn decide_inner(
        &self,
        pending: &Pending<'_>,
        within: Duration,
    ) -> Result<Step, (&'static str, ToolError)> {
        let p = pending.principal;
        if let Err(why) = reach::reach(pending.client, p) {
            tracing::info!(
                tool = pending.tool,
                reason = why.as_str(),
                "confirmation required, client cannot ask"
            );
            return Err(("unreachable", ToolError::ConfirmationRequired));
        }
        let subject = Subject::of(pending.tool, pending.arguments).map_err(refused)?;
        let sealer = self.sealer(within).await?;
        let binding = Binding {
            client_id: &p.client_id,
            user: p.user(),
            tool: pending.tool,
            arguments: pending.arguments,
        };
        let now_ms = self.clock.now_ms();
        let Some(state) = pending.reply.request_state else {
            return ask(pending, &sealer, &binding, &subject, now_ms, "asked");
        };
        match sealer.open(state, &binding, now_ms) {
            Opened::Invalid(why) => {
                tracing::warn!(
                    tool = pending.tool,
                    reason = why.as_str(),
                    "confirmation state refused"
                );
                Err((
                    "invalid",
                    ToolError::invalid(
                        "requestState",
                        "is not a confirmation this server issued for this call by this user \
                         with these arguments; call the tool again without it",
                    ),
                ))
            }
            Opened::Expired => ask(pending, &sealer, &binding, &subject, now_ms, "expired"),
            Opened::Valid => {
                let answer = answer::read(pending.reply.input_responses)
                    .map_err(|e| ("invalid", ToolError::invalid(e.field, e.message)))?;
                count(pending.tool, answer.outcome());
                audit(pending, &binding, &answer);
                Ok(match answer {
                    Answer::Accepted { note } => Step::Run(Confirmed { note }),
                    Answer::Declined { .. } | Answer::Cancelled => {
                        Step::Refuse(ToolError::Declined)
                    }
                })
            }
        }
    }

    /// A sealer over the current key.
    async fn sealer(&self, within: Duration) -> Result<Sealer, (&'static str, ToolError)> {
        let unavailable = || {
            (
                "unavailable",
                ToolError::ConfirmUnavailable {
                    retry_after_s: Some(kosha_state::SECRET_FAILURE_TTL.as_secs()),
                },
            )
        };
        let Some(keys) = &self.keys else {
            tracing::error!("a call needs a confirmation and no confirmation key is configured");
            return Err(unavailable());
        };
        let key = keys.get_within(within).await.map_err(|e| {
            tracing::warn!(secret = keys.secret_id(), error = %e, "confirmation key unavailable");
            unavailable()
        })?;
        Sealer::try_new(key.as_bytes(), self.ttl).map_err(|e| {
            tracing::error!(secret = keys.secret_id(), error = %e, "confirmation key unusable");
            unavailable()
        })
    }
}

/// Seals a new state and builds the question for `pending`; counts `outcome` (`asked` or
/// `expired`).
fn ask(
    pending: &Pending<'_>,
    sealer: &Sealer,
    binding: &Binding<'_>,
    subject: &Subject<'_>,
    now_ms: i64,
    outcome: &'static str,
) -> Result<Step, (&'static str, ToolError)> {
    let state = sealer.seal(binding, now_ms);
    let message = question::message(subject, &pending.record);
    let result = question::ask(message, state).map_err(refused)?;
    count(pending.tool, outcome);
    Ok(Step::Ask(result))
}

/// `error` with its outcome: `internal` for a bug, `invalid` for the caller's mistake.
fn refused(error: ToolError) -> (&'static str, ToolError) {
    let outcome = if error == ToolError::Internal {
        "internal"
    } else {
        "invalid"
    };
    (outcome, error)
}

/// One `confirmations{tool, outcome}`. `tool` is a catalogue name ([`Pending::tool`]), so
/// the dimension stays low-cardinality.
fn count(tool: &'static str, outcome: &'static str) {
    metrics::counter!(METRIC, "tool" => tool, "outcome" => outcome).increment(1);
}

/// The `confirmation_answered` audit event: who answered what, and how.
fn audit(pending: &Pending<'_>, binding: &Binding<'_>, answer: &Answer) {
    let p = pending.principal;
    let note = match answer {
        Answer::Accepted { note } | Answer::Declined { note } => note.as_deref(),
        Answer::Cancelled => None,
    };
    kosha_runtime::audit!(
        events::CONFIRMATION,
        principal = %clip(&p.client_id),
        user = %clip(p.user()),
        username = %clip(p.username.as_deref().unwrap_or("")),
        tool = pending.tool,
        outcome = answer.outcome(),
        transaction_id = %clip(pending.record.transaction_id),
        arguments_sha256 = %binding.arguments_digest(),
        note = %quote::quote(note.unwrap_or("")),
        "confirmation answered"
    );
}

#[cfg(test)]
mod tests;
