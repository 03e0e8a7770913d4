//! The MCP server (rmcp): `tools/list` and `tools/call` over stateless Streamable HTTP
//! (SPEC §3). Argument validation and tool errors are ours (SEP-1303), so `get_tool` stays
//! `None` and rmcp does no schema validation of its own.

use std::sync::Arc;

use kosha_resilience::deadline::{Deadline, LAMBDA_MARGIN};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use kosha_auth::{Principal, visibility};

use crate::echo::clip;
use crate::state::Gateway;
use crate::tools::args::DuplicateArgument;
use crate::tools::{self, Call, ToolError};

/// One MCP server per request (stateless); all state lives in [`Gateway`].
#[derive(Debug, Clone)]
pub struct McpServer {
    gateway: Arc<Gateway>,
}

impl McpServer {
    /// A server over `gateway`.
    pub fn new(gateway: Arc<Gateway>) -> Self {
        Self { gateway }
    }
}

/// The authenticated caller, put into the request extensions by the HTTP edge.
fn principal(ctx: &RequestContext<RoleServer>) -> Option<&Principal> {
    ctx.extensions
        .get::<http::request::Parts>()?
        .extensions
        .get::<Principal>()
}

/// A duplicate key in the call's arguments, as found by the HTTP edge.
fn duplicate_argument(ctx: &RequestContext<RoleServer>) -> Option<&DuplicateArgument> {
    ctx.extensions
        .get::<http::request::Parts>()?
        .extensions
        .get::<DuplicateArgument>()
}

/// Whether the caller may see and call `tool` (one rule for `tools/list` and `tools/call`).
fn allowed(ctx: &RequestContext<RoleServer>, tool: &str) -> bool {
    principal(ctx).is_some_and(|p| visibility::tool_allowed(&p.roles, tool))
}

/// The Lambda invocation deadline (epoch ms), when running under the Lambda runtime and the
/// value can belong to a live invocation (see [`live_deadline_ms`]).
fn lambda_deadline_ms(ctx: &RequestContext<RoleServer>) -> Option<u64> {
    let parts = ctx.extensions.get::<http::request::Parts>()?;
    let deadline = parts.extensions.get::<lambda_http::Context>()?.deadline;
    let now_ms = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    live_deadline_ms(deadline, u64::try_from(now_ms).unwrap_or(0))
}

/// Longest a Lambda invocation can run: 15 minutes.
const MAX_INVOCATION_MS: u64 = 15 * 60 * 1000;

/// `deadline_ms`, unless it lies more than the longest invocation before `now_ms`: such a
/// value cannot belong to a live invocation (Lambda stops a function at its deadline). The
/// Runtime API emulator of `cargo lambda watch` sends the constant `600000` (1970), which
/// would otherwise expire every call; it is ignored and the tool budget alone applies.
fn live_deadline_ms(deadline_ms: u64, now_ms: u64) -> Option<u64> {
    (deadline_ms.saturating_add(MAX_INVOCATION_MS) >= now_ms).then_some(deadline_ms)
}

/// `min(now + budget, Lambda deadline − 50 ms)` (SPEC §7), or `now + budget` locally.
fn call_deadline(budget: std::time::Duration, lambda_deadline_ms: Option<u64>) -> Deadline {
    match lambda_deadline_ms {
        Some(ms) => Deadline::from_lambda_deadline_ms(ms, budget, LAMBDA_MARGIN),
        None => Deadline::after(budget),
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::new("kosha-mcp-gateway", env!("CARGO_PKG_VERSION"));
        info.title = Some("Kosha tool gateway".to_owned());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(
                "Banking support tools: search the knowledge base, read transactions, and check \
                 service health. Failed calls return a structured error with a stable `code`; \
                 honour `retry_after_s` when present.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self
            .gateway
            .tools
            .iter()
            .filter(|t| allowed(&context, &t.tool.name))
            .map(|t| t.tool.clone())
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // A tool the caller may not use answers exactly as an unknown one.
        let spec = self
            .gateway
            .tool(&request.name)
            .filter(|_| allowed(&context, &request.name));
        let Some(spec) = spec else {
            return Err(McpError::invalid_params(
                format!("unknown tool: {}", clip(&request.name)),
                None,
            ));
        };
        let deadline = call_deadline(spec.budget, lambda_deadline_ms(&context));
        let call = Call {
            gateway: &self.gateway,
            principal: principal(&context).map(|p| p.client_id.as_str()),
            deadline,
        };
        if call.remaining() < spec.min_budget {
            metrics::counter!("shed", "reason" => "min_budget").increment(1);
            metrics::counter!("deadline_exceeded", "hop" => "gateway").increment(1);
            return Ok(ToolError::DeadlineExceeded { dependency: None }
                .into_result()
                .into());
        }
        if let Some(dup) = duplicate_argument(&context) {
            return Ok(dup.refusal().into_result().into());
        }
        Ok(tools::dispatch(&call, &request.name, request.arguments)
            .await
            .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW_MS: u64 = 1_796_058_833_521;

    #[test]
    fn a_real_deadline_is_kept_even_when_passed() {
        assert_eq!(
            live_deadline_ms(NOW_MS + 3_000, NOW_MS),
            Some(NOW_MS + 3_000)
        );
        assert_eq!(live_deadline_ms(NOW_MS - 10, NOW_MS), Some(NOW_MS - 10));
        let oldest = NOW_MS - MAX_INVOCATION_MS;
        assert_eq!(live_deadline_ms(oldest, NOW_MS), Some(oldest));
    }

    #[test]
    fn a_deadline_older_than_any_invocation_is_ignored() {
        assert_eq!(live_deadline_ms(600_000, NOW_MS), None);
        assert_eq!(
            live_deadline_ms(NOW_MS - MAX_INVOCATION_MS - 1, NOW_MS),
            None
        );
    }
}
