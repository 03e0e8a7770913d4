//! `get_service_health`: the gateway's view of its dependencies, from gateway state only — no
//! dependency is called, so it answers even when every backend is down (SPEC §4, §10).

use std::collections::BTreeMap;
use std::time::Duration;

use kosha_auth::Role;
use kosha_contract::error::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::call::Call;
use super::catalogue::{Hints, Spec, Tool};
use super::error::ToolError;

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
    /// Distinct instances whose trips of this breaker this instance counts now (SPEC §4, §8
    /// "Fleet trips"); absent when fleet trips are off (`KOSHA_FLEET_TRIP_QUORUM=0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet_trips: Option<u32>,
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

/// The tool.
#[derive(Debug)]
pub struct GetServiceHealth;

impl Tool for GetServiceHealth {
    type Args = Args;
    type Output = Output;
    const SPEC: Spec = Spec {
        name: "get_service_health",
        title: "Service health",
        description: "Report each dependency's state: breaker, in-flight calls, capacity, \
                      operator override. Use it when other tools keep failing, to tell an \
                      outage from a bad request. Returns `ok` or `degraded`.",
        errors: &[
            ErrorCode::InvalidArgument,
            ErrorCode::DeadlineExceeded,
            ErrorCode::RateLimited,
            ErrorCode::Internal,
        ],
        hints: Hints::READ,
        roles: &[Role::Agent, Role::Operator],
        budget: Duration::from_secs(1),
        // Calls nothing, so it answers whatever is left.
        min_budget: Duration::ZERO,
        needs: &[],
    };

    /// # Errors
    /// None: it reads gateway state only.
    async fn run(call: &Call<'_>, _args: Args) -> Result<Output, ToolError> {
        let dependencies: BTreeMap<String, DependencyHealth> = call
            .backends
            .iter()
            .map(|&backend| {
                let h = call.policy(backend).health();
                let health = DependencyHealth {
                    breaker: h.state.as_str().to_owned(),
                    in_flight: u32::try_from(h.in_flight).unwrap_or(u32::MAX),
                    capacity: u32::try_from(h.capacity).unwrap_or(u32::MAX),
                    forced_open: h.forced.map(|f| OverrideInfo {
                        state: "forced_open".to_owned(),
                        reason: f.reason,
                        set_by: f.set_by,
                        set_at: f.set_at,
                        expires_at: f.expires_at,
                    }),
                    fleet_trips: h.fleet_trips.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
                };
                (backend.health_name().to_owned(), health)
            })
            .collect();
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
}
