//! `get_service_health`: the gateway's view of its dependencies, from gateway state only — no
//! dependency is called, so it answers even when every backend is down (SPEC §4, §10).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Call, ToolError, ToolSpec};

/// Arguments: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {}

/// One dependency as this instance sees it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DependencyHealth {
    /// `closed`, `half_open`, `open` or `forced_open`.
    pub breaker: String,
    /// Calls in flight through this instance's bulkhead.
    pub in_flight: u32,
    /// The bulkhead's capacity.
    pub capacity: u32,
    /// The operator's forced-open override, when one is in force.
    #[serde(rename = "override", skip_serializing_if = "Option::is_none")]
    pub forced_open: Option<OverrideInfo>,
}

/// A forced-open override (SPEC §8 `breaker#<dependency>`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OverrideInfo {
    /// Always `forced_open`.
    pub state: String,
    /// The operator's reason.
    pub reason: String,
    /// Who set it.
    pub set_by: String,
    /// When, epoch seconds.
    pub set_at: i64,
    /// When it lapses, epoch seconds; absent = until cleared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

/// `structuredContent`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// `ok` when every breaker is closed, else `degraded`.
    pub status: String,
    /// Keyed by dependency name.
    pub dependencies: BTreeMap<String, DependencyHealth>,
}

/// The tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec::read::<Args, Output>(
        "get_service_health",
        "Service health",
        "Report the gateway's dependencies: circuit-breaker state, in-flight calls, capacity and \
         any operator override. Answers from gateway state without calling any dependency.",
        1_000,
    )
}

/// Runs the tool.
///
/// # Errors
/// None in practice; the signature matches the other tools.
pub async fn call(call: &Call<'_>, _args: Args) -> Result<Output, ToolError> {
    let dependencies = call.gateway.dependency_health();
    let status = if dependencies.values().all(|d| d.breaker == "closed") {
        "ok"
    } else {
        "degraded"
    };
    Ok(Output {
        status: status.to_owned(),
        dependencies,
    })
}
