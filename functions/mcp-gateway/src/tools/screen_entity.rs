//! `screen_entity`: screen a person's or an entity's name against the sanctions watchlist
//! (SPEC §4; budget 5 s; screening-sim), degrading to `deferred` when screening-sim is
//! unavailable (SPEC §10, seed 004 §8; issue 12).
//!
//! - **Synchronous**: screening-sim answers within the policy (seed 004 §1: 1.5 s attempts,
//!   2 of them, bulkhead 8, breaker 10 calls / 50 %, open 30 s) → `clear` or
//!   `potential_match`, stored as a `done` `screening#<id>` item (7 days) so
//!   `get_screening_result` can read it back. The store is waited for at most
//!   [`STORE_WAIT`] (100 ms, SPEC §4); one that fails or takes longer does not withhold the
//!   verdict (DynamoDB down is "metric only", SPEC §10): the answer keeps its id, and the
//!   failure is counted as `screening_store_failed` (such an id may not be found later).
//! - **Deferred**: the breaker is open or forced open, screening-sim asked not to be called
//!   yet (a 429 with `Retry-After`, honoured by every call on this instance until its time:
//!   `kosha_resilience::not_before`), the attempts failed (5xx, timeouts, connection errors,
//!   429), the bulkhead is full, or too little time is left → the request
//!   is recorded (`pending` item, then a message on the screening queue) and the answer is
//!   `status: "deferred"` with `retry_after_s` = the breaker's remaining open time, at least
//!   5 s. The screening-worker completes it. The sim call ends [`RECORD_RESERVE`] before the
//!   tool's deadline, so that time is left to record.
//! - **Not recorded**: when the deferral cannot be recorded (DynamoDB or SQS down, no queue
//!   configured) → `dependency_unavailable` naming `screening-sim`: never a `deferred` that
//!   nothing will complete (ARCHITECTURE.md pitfall 20). [`Screenings::defer`] leaves nothing
//!   half-recorded.
//! - **Invalid**: screening-sim's 400 (a name without letters, an unassigned country code,
//!   a future date of birth) → `invalid_argument` with its message, which names the field.
//!
//! [`Screenings::defer`]: crate::backends::screening::Screenings::defer

use std::time::Duration;

use kosha_auth::Role;
use kosha_contract::dependency::Dependency;
use kosha_contract::error::ErrorCode;
use kosha_contract::screening::{NAME_MAX_CHARS, ScreenMatch, ScreenRequest, ScreenStatus};
use kosha_resilience::breaker::BreakerState;
use kosha_resilience::policy::PolicyError;
use kosha_state::Clock;
use kosha_state::screening::{ScreeningItem, ScreeningState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::NOT_BLANK;
use super::call::{Call, ceil_secs};
use super::catalogue::{DEFAULT_MIN_BUDGET, Hints, Need, Spec, Tool};
use super::error::ToolError;
use crate::backends::Backend;
use kosha_clients::screening::ScreeningError;

/// Time kept after the sim call for recording a deferral (a PutItem and a SendMessage, a
/// few ms each when healthy).
pub const RECORD_RESERVE: Duration = Duration::from_millis(500);

/// Longest wait for storing a synchronous answer (SPEC §4, issue #30: a hanging DynamoDB made
/// every screening take its whole 5 s budget, holding an in-flight slot).
pub const STORE_WAIT: Duration = Duration::from_millis(100);

/// The shortest `retry_after_s` of a deferred answer (SPEC §4).
pub const MIN_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The person's or entity's name, in any script and word order.
    #[schemars(length(min = 1, max = NAME_MAX_CHARS), extend("pattern" = NOT_BLANK))]
    pub name: String,
    /// Country, ISO 3166-1 alpha-2 (`GB`, `RU`), if known.
    #[schemars(extend("pattern" = "^[A-Za-z]{2}$"))]
    pub country: Option<String>,
    /// Date of birth `YYYY-MM-DD`, if known (persons).
    #[schemars(extend("format" = "date"))]
    pub date_of_birth: Option<String>,
}

/// `status` of a `screen_entity` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntityStatus {
    /// No watchlist entry matched.
    Clear,
    /// At least one did: a human must review `matches`.
    PotentialMatch,
    /// screening-sim is unavailable: recorded, ask `get_screening_result` after
    /// `retry_after_s`.
    Deferred,
}

impl From<ScreenStatus> for EntityStatus {
    fn from(s: ScreenStatus) -> Self {
        match s {
            ScreenStatus::Clear => Self::Clear,
            ScreenStatus::PotentialMatch => Self::PotentialMatch,
        }
    }
}

/// `structuredContent`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// `scr_` + a ULID; `get_screening_result` reads it back for 7 days.
    pub screening_id: String,
    /// The verdict, or `deferred`.
    pub status: EntityStatus,
    /// Matching entries, best first (`score` 0–1); empty unless `potential_match`.
    pub matches: Vec<ScreenMatch>,
    /// When deferred: seconds until `get_screening_result` may have the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
}

/// The tool.
#[derive(Debug)]
pub struct ScreenEntity;

impl Tool for ScreenEntity {
    type Args = Args;
    type Output = Output;
    const SPEC: Spec = Spec {
        name: "screen_entity",
        title: "Screen entity",
        description: "Screen a person's or company's name against the sanctions watchlist, \
                      with country and date of birth if known. Use it before acting for a new party. Returns a screening_id \
                      and clear or potential_match with scored matches, or deferred: then \
                      call get_screening_result after retry_after_s.",
        errors: &[
            ErrorCode::InvalidArgument,
            ErrorCode::DeadlineExceeded,
            ErrorCode::DependencyUnavailable,
            ErrorCode::RateLimited,
            ErrorCode::Internal,
        ],
        hints: Hints {
            read_only: false,
            destructive: false,
            idempotent: false,
            // It calls the sanctions screening service, outside the gateway (issue 45).
            open_world: true,
        },
        roles: &[Role::Agent],
        budget: Duration::from_secs(5),
        min_budget: DEFAULT_MIN_BUDGET,
        needs: &[Need {
            backend: Backend::ScreeningSim,
            degraded_answer: true,
        }],
    };

    /// # Errors
    /// `invalid_argument` when screening-sim refuses the request; `dependency_unavailable`
    /// when it is unavailable and the deferral cannot be recorded; `internal` for a request
    /// the client cannot build.
    async fn run(call: &Call<'_>, args: Args) -> Result<Output, ToolError> {
        let request = ScreenRequest {
            name: args.name,
            country: args.country,
            date_of_birth: args.date_of_birth,
        };
        let id = format!("scr_{}", ulid::Ulid::new());
        let now_s = kosha_state::SystemClock.now_s();
        let sim_deadline = call.deadline.child(RECORD_RESERVE);
        let failure = match call.screening_sim(&sim_deadline, &request).await {
            Ok(answer) => {
                let output = Output {
                    screening_id: id.clone(),
                    status: answer.status.into(),
                    matches: answer.matches.clone(),
                    retry_after_s: None,
                };
                let item = ScreeningItem::new(id, request, ScreeningState::Done(answer), now_s)
                    .owned_by(call.principal, call.user);
                store_answer(call, item).await;
                return Ok(output);
            }
            Err(e) => e,
        };
        let retry_after = defer_because(call, failure)?;
        let retry_after_s = ceil_secs(retry_after.max(MIN_RETRY_AFTER));
        let unavailable = ToolError::DependencyUnavailable {
            dependency: Dependency::ScreeningSim,
            retry_after_s: Some(retry_after_s),
        };
        let Some(screenings) = call.deps.screenings else {
            return Err(unavailable);
        };
        let item = ScreeningItem::new(id.clone(), request, ScreeningState::Pending, now_s)
            .owned_by(call.principal, call.user);
        if let Err(e) = call
            .waiting(screenings.defer(&item, call.remaining()))
            .await
        {
            tracing::warn!(event = "screening_defer_failed", error = %e);
            return Err(unavailable);
        }
        metrics::counter!("degraded", "tool" => Self::SPEC.name, "reason" => "screening_deferred")
            .increment(1);
        Ok(Output {
            screening_id: id,
            status: EntityStatus::Deferred,
            matches: Vec::new(),
            retry_after_s: Some(retry_after_s),
        })
    }
}

/// Stores a synchronous answer within [`STORE_WAIT`]; a failure is counted and logged, the
/// verdict still goes out.
async fn store_answer(call: &Call<'_>, item: ScreeningItem) {
    let stored = match call.deps.screenings {
        Some(s) => call
            .waiting(s.store(&item, STORE_WAIT.min(call.remaining())))
            .await
            .map_err(|e| e.to_string()),
        None => Err("no screening store configured".to_owned()),
    };
    if let Err(error) = stored {
        metrics::counter!("screening_store_failed").increment(1);
        tracing::warn!(event = "screening_store_failed", %error, screening_id = %item.id);
    }
}

/// Whether `failure` defers the screening (screening-sim unavailable), and for how long the
/// breaker says; otherwise the tool error it is.
fn defer_because(
    call: &Call<'_>,
    failure: PolicyError<ScreeningError>,
) -> Result<Duration, ToolError> {
    let policy = call.policy(Backend::ScreeningSim);
    // After failures the breaker may just have opened: then its whole open period is left;
    // after a 429 with `Retry-After`, the time screening-sim asked for.
    let breaker_wait = || {
        let open = match policy.breaker().state() {
            BreakerState::Open => policy.config().breaker.open_duration,
            _ => Duration::ZERO,
        };
        let asked = policy.not_before().remaining(tokio::time::Instant::now());
        open.max(asked.unwrap_or_default())
    };
    match failure {
        PolicyError::CircuitOpen { retry_after } | PolicyError::NotBefore { retry_after } => {
            Ok(retry_after)
        }
        PolicyError::ForcedOpen { retry_after, .. } => Ok(retry_after.unwrap_or(MIN_RETRY_AFTER)),
        PolicyError::DeadlineExceeded | PolicyError::BulkheadFull | PolicyError::AttemptTimeout => {
            Ok(breaker_wait())
        }
        PolicyError::Inner(e) if e.is_invalid_request() => match e {
            ScreeningError::Status { message, .. } => Err(ToolError::invalid("", message)),
            _ => Err(ToolError::Internal),
        },
        PolicyError::Inner(ScreeningError::Build) => Err(ToolError::Internal),
        PolicyError::Inner(ScreeningError::Status { status, .. })
            if status.is_client_error() && status.as_u16() != 429 =>
        {
            tracing::error!(status = status.as_u16(), "unexpected screening-sim status");
            Err(ToolError::Internal)
        }
        PolicyError::Inner(
            ScreeningError::Status { .. }
            | ScreeningError::Connect
            | ScreeningError::Timeout
            | ScreeningError::Decode
            | ScreeningError::Signing(_),
        ) => Ok(breaker_wait()),
    }
}
