//! The tools (SPEC §4). One module per tool: its argument and result types (which generate
//! `inputSchema` and `outputSchema`), its budget, and its call. This module holds the registry,
//! the per-call context and the mapping from dependency errors to tool errors (SPEC §3).

pub mod args;
pub mod error;
pub mod get_service_health;
pub mod get_transaction;
pub mod list_transactions;
pub mod search_knowledge_base;
pub mod types;

use std::future::Future;
use std::time::Duration;

use rmcp::handler::server::tool::{schema_for_output, schema_for_type};
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Serialize;
use tokio::time::Instant;

pub use error::ToolError;

use crate::backends::core_api::{CallMeta, CoreApiError};
use crate::state::Gateway;

/// Margin the gateway keeps for itself on the hop to core-api (SPEC §7): core-api is sent
/// `deadline − 150 ms`.
pub const CORE_API_HOP_MARGIN: Duration = Duration::from_millis(150);

/// A tool's declaration plus the gateway's policy for it.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// What `tools/list` shows: name, schemas, annotations.
    pub tool: Tool,
    /// The tool's time budget (SPEC §4), from call start.
    pub budget: Duration,
    /// Below this remaining time at tool start the call fails with `deadline_exceeded` without
    /// calling anything (SPEC §6); zero for tools that call nothing.
    pub min_budget: Duration,
}

impl ToolSpec {
    /// A read-only, idempotent, closed-world tool calling a dependency, with `budget_ms`.
    pub fn read<A: JsonSchema + 'static, O: JsonSchema + 'static>(
        name: &'static str,
        title: &'static str,
        description: &'static str,
        budget_ms: u64,
    ) -> Self {
        let annotations = ToolAnnotations::with_title(title)
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false);
        let tool = Tool::new_with_raw(name, Some(description.into()), schema_for_type::<A>())
            .with_title(title)
            .with_raw_output_schema(schema_for_output::<O>())
            .with_annotations(annotations);
        Self {
            tool,
            budget: Duration::from_millis(budget_ms),
            min_budget: Duration::from_millis(300),
        }
    }
}

/// Every tool the gateway serves, in `tools/list` order.
pub fn registry() -> Vec<ToolSpec> {
    let mut health = get_service_health::spec();
    health.min_budget = Duration::ZERO;
    vec![
        search_knowledge_base::spec(),
        get_transaction::spec(),
        list_transactions::spec(),
        health,
    ]
}

/// One `tools/call` in progress: who is calling and by when it must answer.
#[derive(Debug)]
pub struct Call<'a> {
    /// Shared gateway state (clients, policies).
    pub gateway: &'a Gateway,
    /// The caller's `client_id`, forwarded as `X-Kosha-Principal`.
    pub principal: Option<&'a str>,
    /// The absolute deadline of this call.
    pub deadline: Instant,
}

impl Call<'_> {
    /// Time left before the deadline (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Runs one core-api read under the gateway's policy and maps its errors to tool errors.
    ///
    /// # Errors
    /// [`ToolError`] per SPEC §3: core-api's 4xx as the matching tool error, 5xx or an
    /// unreachable core-api as `dependency_unavailable`, a passed deadline as
    /// `deadline_exceeded`.
    pub async fn core_api_read<T, F, Fut>(&self, op: F) -> Result<T, ToolError>
    where
        F: FnOnce(CallMeta) -> Fut,
        Fut: Future<Output = Result<T, CoreApiError>>,
    {
        let budget = self.remaining().saturating_sub(CORE_API_HOP_MARGIN);
        if budget.is_zero() {
            return Err(ToolError::DeadlineExceeded {
                dependency: Some("core-api"),
            });
        }
        let meta = CallMeta {
            principal: self.principal.map(str::to_owned),
            deadline_header: Some(wall_clock_header(budget)),
            timeout: budget,
        };
        let _in_flight = self.gateway.core_api_in_flight();
        op(meta)
            .await
            .map_err(|e| map_core_api_error(e, self.remaining().is_zero()))
    }
}

/// RFC 3339 UTC with milliseconds and `Z`, `budget` from now (SPEC §7).
fn wall_clock_header(budget: Duration) -> String {
    let at = time::OffsetDateTime::now_utc() + budget;
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    at.format(&fmt).unwrap_or_default()
}

/// The one mapping from core-api failures to tool errors (SPEC §3, §7).
fn map_core_api_error(e: CoreApiError, deadline_passed: bool) -> ToolError {
    const DEP: &str = "core-api";
    let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64().ceil() as u64);
    match e {
        CoreApiError::Status {
            status,
            code,
            message,
            retry_after,
            dependency,
        } => match (status.as_u16(), code.as_str()) {
            (400 | 422, _) => ToolError::invalid("", message),
            (404, _) => ToolError::NotFound(message),
            (409, _) => ToolError::Conflict(message),
            (_, "deadline_exceeded") | (504, _) => ToolError::DeadlineExceeded {
                dependency: Some(DEP),
            },
            (429, _) | (503, "overloaded") => ToolError::Overloaded {
                dependency: Some(DEP),
                retry_after_s: secs(retry_after).or(Some(1)),
            },
            (500..=599, _) => ToolError::DependencyUnavailable {
                dependency: known_dependency(dependency.as_deref()),
                retry_after_s: secs(retry_after),
            },
            _ => {
                tracing::error!(status = status.as_u16(), code, "unexpected core-api status");
                ToolError::Internal
            }
        },
        CoreApiError::Timeout if deadline_passed => ToolError::DeadlineExceeded {
            dependency: Some(DEP),
        },
        CoreApiError::Connect | CoreApiError::Timeout | CoreApiError::Decode => {
            ToolError::DependencyUnavailable {
                dependency: DEP,
                retry_after_s: None,
            }
        }
    }
}

/// Names core-api may report for its own dependencies; anything else is core-api's fault.
fn known_dependency(name: Option<&str>) -> &'static str {
    match name {
        Some("postgres") => "postgres",
        Some("openai") => "openai",
        _ => "core-api",
    }
}

/// Serializes a tool's output as its `structuredContent` (plus the same JSON as text).
fn finish<O: Serialize>(out: Result<O, ToolError>) -> Result<CallToolResult, ToolError> {
    let out = out?;
    let value = serde_json::to_value(out).map_err(|e| {
        tracing::error!(error = %e, "tool output did not serialize");
        ToolError::Internal
    })?;
    Ok(CallToolResult::structured(value))
}

/// Runs tool `name` (already known to exist and be allowed) with `arguments`.
pub async fn dispatch(
    call: &Call<'_>,
    name: &str,
    arguments: Option<JsonObject>,
) -> CallToolResult {
    let result = async {
        match name {
            "search_knowledge_base" => {
                finish(search_knowledge_base::call(call, args::parse(arguments)?).await)
            }
            "get_transaction" => finish(get_transaction::call(call, args::parse(arguments)?).await),
            "list_transactions" => {
                finish(list_transactions::call(call, args::parse(arguments)?).await)
            }
            "get_service_health" => {
                finish(get_service_health::call(call, args::parse(arguments)?).await)
            }
            _ => Err(ToolError::Internal),
        }
    }
    .await;
    result.unwrap_or_else(ToolError::into_result)
}
