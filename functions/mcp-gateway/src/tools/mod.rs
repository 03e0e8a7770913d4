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

use kosha_resilience::deadline::Deadline;
use kosha_resilience::policy::PolicyError;
use kosha_resilience::retry::Idempotency;
use rmcp::handler::server::tool::{schema_for_output, schema_for_type};
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Serialize;

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
    pub deadline: Deadline,
}

impl Call<'_> {
    /// Time left before the deadline (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.remaining()
    }

    /// Runs one core-api read under the gateway's policy and maps its errors to tool errors.
    ///
    /// # Errors
    /// [`ToolError`] per SPEC §3: core-api's 4xx as the matching tool error, 5xx or an
    /// unreachable core-api as `dependency_unavailable`, a passed deadline as
    /// `deadline_exceeded`.
    pub async fn core_api_read<T, F, Fut>(&self, mut op: F) -> Result<T, ToolError>
    where
        F: FnMut(CallMeta) -> Fut,
        Fut: Future<Output = Result<T, CoreApiError>>,
    {
        let downstream = self.deadline.child(CORE_API_HOP_MARGIN);
        let header = downstream.to_header();
        self.gateway
            .core_api_read
            .call(&self.deadline, Idempotency::Idempotent, |attempt| {
                op(CallMeta {
                    principal: self.principal.map(str::to_owned),
                    deadline_header: Some(header.clone()),
                    timeout: attempt.timeout,
                })
            })
            .await
            .map_err(|e| map_policy_error(e, "core-api"))
    }
}

/// Seconds for `retry_after_s`, rounded up so a client never retries early.
fn ceil_secs(d: Duration) -> u64 {
    d.as_millis().div_ceil(1000).try_into().unwrap_or(u64::MAX)
}

/// How long a client should wait on a forced-open breaker with no expiry: the override is
/// re-read every 5 s (SPEC §8), so sooner cannot succeed.
const FORCED_OPEN_RETRY: Duration = Duration::from_secs(5);

/// The one mapping from the policy's rejections and failures to tool errors (SPEC §3, §6).
fn map_policy_error(e: PolicyError<CoreApiError>, dependency: &'static str) -> ToolError {
    match e {
        PolicyError::DeadlineExceeded => ToolError::DeadlineExceeded {
            dependency: Some(dependency),
        },
        PolicyError::BulkheadFull => ToolError::Overloaded {
            dependency: Some(dependency),
            retry_after_s: Some(1),
        },
        PolicyError::CircuitOpen { retry_after } => {
            metrics::counter!("shed", "reason" => "breaker_open").increment(1);
            ToolError::DependencyUnavailable {
                dependency,
                retry_after_s: Some(ceil_secs(retry_after).max(1)),
            }
        }
        PolicyError::ForcedOpen { retry_after, .. } => {
            metrics::counter!("shed", "reason" => "forced_open").increment(1);
            ToolError::DependencyUnavailable {
                dependency,
                retry_after_s: Some(ceil_secs(retry_after.unwrap_or(FORCED_OPEN_RETRY)).max(1)),
            }
        }
        PolicyError::AttemptTimeout => ToolError::DependencyUnavailable {
            dependency,
            retry_after_s: None,
        },
        PolicyError::Inner(e) => map_core_api_error(e),
    }
}

/// The one mapping from core-api failures to tool errors (SPEC §3, §7).
fn map_core_api_error(e: CoreApiError) -> ToolError {
    const DEP: &str = "core-api";
    let secs = |d: Option<Duration>| d.map(ceil_secs);
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
        CoreApiError::Connect
        | CoreApiError::Timeout
        | CoreApiError::Decode
        | CoreApiError::Signing(_) => ToolError::DependencyUnavailable {
            dependency: DEP,
            retry_after_s: None,
        },
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
    result.unwrap_or_else(|e| {
        // The code only: messages may quote the caller's input.
        tracing::warn!(tool = name, code = e.code(), "tool error");
        e.into_result()
    })
}
