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

use crate::state::Gateway;
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

/// Whether the caller may see and call `tool` (one rule for `tools/list` and `tools/call`).
fn allowed(ctx: &RequestContext<RoleServer>, tool: &str) -> bool {
    principal(ctx).is_some_and(|p| visibility::tool_allowed(&p.roles, tool))
}

/// The Lambda invocation deadline (epoch ms), when running under the Lambda runtime.
fn lambda_deadline_ms(ctx: &RequestContext<RoleServer>) -> Option<u64> {
    let parts = ctx.extensions.get::<http::request::Parts>()?;
    parts
        .extensions
        .get::<lambda_http::Context>()
        .map(|c| c.deadline)
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
                format!("unknown tool: {}", request.name),
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
            return Ok(ToolError::DeadlineExceeded { dependency: None }
                .into_result()
                .into());
        }
        Ok(tools::dispatch(&call, &request.name, request.arguments)
            .await
            .into())
    }
}
