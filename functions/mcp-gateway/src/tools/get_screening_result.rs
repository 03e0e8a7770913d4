//! `get_screening_result`: a screening by id, as `screen_entity` issued it (SPEC §4; budget
//! 3 s; the state table, issue 12).
//!
//! Reads `screening#<id>` ([`kosha_state::screening`]): `pending` while the screening-worker
//! has not finished it (with `retry_after_s`: 5), then the full result (`clear` or
//! `potential_match` with its matches), or `failed` with `failure_reason` when screening-sim
//! refused the request as invalid. An unknown or expired id is `not_found`, and so is another
//! client's screening or one stored without an owner (before issue #30): SPEC §4, the same
//! answer, so an id tells nothing about whose it is. A malformed one
//! `invalid_argument` (from the `inputSchema`). The state table unreadable, or not answering
//! within [`READ_WAIT`]: the error code `dependency_unavailable` with `retry_after_s`, well
//! within the 3 s budget (issue #30: a hanging DynamoDB held each call for its whole budget).

use std::time::Duration;

use kosha_auth::Role;
use kosha_contract::error::ErrorCode;
use kosha_contract::ids;
use kosha_contract::screening::{ScreenMatch, ScreenStatus};
use kosha_state::screening::ScreeningState;
use kosha_state::{Clock, StateError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::call::Call;
use super::catalogue::{DEFAULT_MIN_BUDGET, Hints, Spec, Tool};
use super::error::ToolError;
use crate::backends::screening::RecordError;
use kosha_contract::echo::clip;

/// How long to wait before asking again about a pending screening, seconds.
pub const PENDING_RETRY_AFTER_S: u64 = 5;

/// Longest wait for the state table's read: a `GetItem` answers in milliseconds when DynamoDB
/// is healthy; waiting longer only holds an in-flight slot (SPEC §6) for an answer that will
/// not come.
pub const READ_WAIT: Duration = Duration::from_secs(1);

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The `screening_id` that `screen_entity` answered.
    #[schemars(extend("pattern" = ids::SCREENING.pattern()))]
    pub screening_id: String,
}

/// `status` of a stored screening.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    /// No watchlist entry matched.
    Clear,
    /// At least one did: a human must review `matches`.
    PotentialMatch,
    /// Deferred and not finished yet: ask again after `retry_after_s`.
    Pending,
    /// screening-sim refused the request as invalid: see `failure_reason`.
    Failed,
}

/// `structuredContent`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// The id asked about.
    pub screening_id: String,
    /// Where the screening stands.
    pub status: ResultStatus,
    /// Matching entries, best first; empty unless `potential_match`.
    pub matches: Vec<ScreenMatch>,
    /// When pending: seconds before asking again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
    /// When failed: why screening-sim refused the request (names the field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

/// The tool.
#[derive(Debug)]
pub struct GetScreeningResult;

impl Tool for GetScreeningResult {
    type Args = Args;
    type Output = Output;
    const SPEC: Spec = Spec {
        name: "get_screening_result",
        title: "Get screening result",
        description: "Read a screening by the screening_id screen_entity gave. Use it \
                      for a deferred screening, after its retry_after_s. Returns pending, \
                      then clear or potential_match with matches, or failed with \
                      failure_reason.",
        errors: &[
            ErrorCode::InvalidArgument,
            ErrorCode::NotFound,
            ErrorCode::DeadlineExceeded,
            ErrorCode::DependencyUnavailable,
            ErrorCode::RateLimited,
            ErrorCode::Internal,
        ],
        hints: Hints::READ,
        roles: &[Role::Agent],
        budget: Duration::from_secs(3),
        min_budget: DEFAULT_MIN_BUDGET,
        needs: &[],
    };

    /// # Errors
    /// `not_found` for an unknown or expired id; `dependency_unavailable` when the state
    /// table cannot be read; `internal` for an item this gateway did not write.
    async fn run(call: &Call<'_>, args: Args) -> Result<Output, ToolError> {
        let id = args.screening_id;
        let unavailable = ToolError::StoreUnavailable {
            retry_after_s: Some(1),
        };
        let Some(screenings) = call.deps.screenings else {
            return Err(unavailable);
        };
        let now_s = kosha_state::SystemClock.now_s();
        let item = match call
            .waiting(screenings.read(&id, now_s, READ_WAIT.min(call.remaining())))
            .await
        {
            Ok(Some(item)) if item.readable_by(call.principal, call.user) => item,
            Ok(_) => {
                return Err(ToolError::NotFound(format!(
                    "screening {} not found (unknown, or older than 7 days)",
                    clip(&id)
                )));
            }
            Err(RecordError::State(e @ StateError::MalformedItem { .. })) => {
                tracing::error!(error = %e, screening_id = %id, "malformed screening item");
                return Err(ToolError::Internal);
            }
            Err(e) => {
                tracing::warn!(event = "screening_read_failed", error = %e);
                return Err(unavailable);
            }
        };
        let mut out = Output {
            screening_id: id,
            status: ResultStatus::Pending,
            matches: Vec::new(),
            retry_after_s: None,
            failure_reason: None,
        };
        match item.state {
            ScreeningState::Pending => out.retry_after_s = Some(PENDING_RETRY_AFTER_S),
            ScreeningState::Done(result) => {
                out.status = match result.status {
                    ScreenStatus::Clear => ResultStatus::Clear,
                    ScreenStatus::PotentialMatch => ResultStatus::PotentialMatch,
                };
                out.matches = result.matches;
            }
            ScreeningState::Failed { reason } => {
                out.status = ResultStatus::Failed;
                out.failure_reason = Some(reason);
            }
        }
        Ok(out)
    }
}
