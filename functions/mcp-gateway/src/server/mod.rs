//! The MCP server (rmcp): `tools/list` and `tools/call` over stateless Streamable HTTP
//! (SPEC §3). Argument validation and tool errors are ours (SEP-1303), so `get_tool` stays
//! `None` and rmcp does no schema validation of its own.

use std::sync::Arc;

use kosha_resilience::deadline::{Deadline, LAMBDA_RESPONSE_MARGIN};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use kosha_auth::Principal;
use kosha_resilience::rate_limit::RateDecision;
use kosha_runtime::trace::RequestTrace;
use tracing::Instrument as _;

use crate::authz;
use crate::backends::Backend;
use crate::state::Gateway;
use crate::tools::args::DuplicateArgument;
use crate::tools::call::{Call, waiting};
use crate::tools::catalogue::{Catalogue, DEFAULT_COST};
use crate::tools::error::ToolError;
use crate::tools::observe;
use gate::Answer;
use kosha_contract::echo::clip;

mod gate;

/// How long, in ms, a client may serve `tools/list` from its cache (SEP-2549 `ttlMs`):
/// 5 min. The catalogue changes only with a deploy, and a stateless gateway cannot send
/// `notifications/tools/list_changed`, so this is also the longest a client keeps a list
/// from before a deploy. The scope is private: what a caller sees depends on its roles
/// (SPEC §5; the addition in docs/spec.md §3).
pub const TOOLS_LIST_TTL_MS: u64 = 300_000;

/// The server's `instructions` (MCP `InitializeResult.instructions`, also in
/// `server/discover`): what the model reads about the tool set as a whole.
pub const INSTRUCTIONS: &str = "Banking support tools. Knowledge: search_knowledge_base for \
     policy and how-to questions. Transactions: get_transaction by id, list_transactions by \
     account. Actions: raise_dispute when a customer contests a payment, \
     flag_transaction_for_review when fraud is suspected. Sanctions: \
     screen_entity for a name, get_screening_result for a deferred screening. Health: \
     get_service_health when calls keep failing. A failed call returns an error with a \
     stable `code`; wait `retry_after_s` when given. A call a policy refuses is \
     `forbidden`; its message says why.";

/// One MCP server per request (stateless; cheap to clone); all state lives in [`Gateway`]
/// and the [`Catalogue`].
#[derive(Debug, Clone)]
pub struct McpServer {
    gateway: Arc<Gateway>,
    catalogue: Arc<Catalogue>,
    /// The backends the served tools call, for `get_service_health`.
    backends: Arc<[Backend]>,
}

impl McpServer {
    /// A server over `gateway` serving `catalogue`, with the tool costs of its config
    /// (`KOSHA_TOOL_COSTS`, SPEC §6).
    pub fn new(gateway: Arc<Gateway>, catalogue: Catalogue) -> Self {
        let costs = gateway.tool_costs();
        let catalogue = catalogue.with_costs(|name| costs.get(name));
        let backends = catalogue.backends().into_iter().collect();
        Self {
            gateway,
            catalogue: Arc::new(catalogue),
            backends,
        }
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

/// The request's `MCP-Protocol-Version` (`context.protocol_version`, SPEC §5a).
fn protocol_version(ctx: &RequestContext<RoleServer>) -> &str {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-protocol-version"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or(authz::DEFAULT_PROTOCOL_VERSION)
}

impl McpServer {
    /// Who asks, for the policies (none when the edge put no principal: nothing is visible).
    fn caller<'c>(&self, ctx: &'c RequestContext<RoleServer>) -> Option<authz::Caller<'c>> {
        let now_s = self
            .gateway
            .config
            .policy_now
            .unwrap_or_else(|| time::OffsetDateTime::now_utc().unix_timestamp());
        Some(authz::Caller {
            principal: principal(ctx)?,
            protocol_version: protocol_version(ctx),
            now_s,
        })
    }
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

/// The gateway's own `deadline_exceeded` (no dependency to blame), counted in
/// `deadline_exceeded{hop="gateway"}` (SPEC §12).
fn out_of_time() -> ToolError {
    metrics::counter!("deadline_exceeded", "hop" => "gateway").increment(1);
    ToolError::DeadlineExceeded { dependency: None }
}

/// `min(now + budget, Lambda deadline − 50 ms)` (SPEC §7), or `now + budget` locally.
fn call_deadline(budget: std::time::Duration, lambda_deadline_ms: Option<u64>) -> Deadline {
    match lambda_deadline_ms {
        Some(ms) => Deadline::from_lambda_deadline_ms(ms, budget, LAMBDA_RESPONSE_MARGIN),
        None => Deadline::after(budget),
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::new("kosha-mcp-gateway", env!("CARGO_PKG_VERSION"));
        info.title = Some("Kosha tool gateway".to_owned());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let policies = self.gateway.authz();
        let tools = match self.caller(&context) {
            Some(caller) => self
                .catalogue
                .all()
                .filter(|e| authz::listing(policies, caller, e.spec.name).is_allow())
                .map(|e| e.tool().clone())
                .collect(),
            None => Vec::new(),
        };
        Ok(ListToolsResult::with_all_items(tools)
            .with_ttl_ms(TOOLS_LIST_TTL_MS)
            .with_cache_scope(CacheScope::Private))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // rmcp runs this in a task of its own: re-enter the request's span and trace context
        // (SPEC §12; the edge started it from `params._meta` when the client sent one there).
        let trace = request_trace(&context);
        let run = async {
            // The call's span (SPEC §12), a child of the request's.
            let caller = principal(&context);
            let span = observe::span(
                &request.name,
                caller.map(|p| p.client_id.as_str()),
                caller.map(Principal::user),
            );
            self.call_in(request, &context, trace.as_ref(), &span)
                .instrument(span.clone())
                .await
        };
        match &trace {
            Some(t) => t.scope(run).await,
            None => run.await,
        }
    }
}

impl McpServer {
    /// One `tools/call` inside its span: dispatch, then its record ([`observe::record`]).
    async fn call_in(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        trace: Option<&RequestTrace>,
        span: &tracing::Span,
    ) -> Result<CallToolResponse, McpError> {
        let started = tokio::time::Instant::now();
        let sent = observe::Sent::default();
        let decided = observe::Decided::default();
        let requested = request.name.clone();
        // Boxed where it is made: the dispatch future is the call's largest (the limit, the
        // gate, the tool), and the layers above move this one by value several times before
        // its first poll (callgrind, docs/benchmarks.md "Policy decisions").
        let (tool, answer) =
            Box::pin(self.dispatch(request, context, (&sent, &decided), trace)).await;
        observe::record(
            tool,
            &requested,
            answer.outcome(),
            &decided,
            observe::Timing {
                elapsed: started.elapsed(),
                overhead: trace.map(RequestTrace::own_time),
            },
            &sent,
            span,
        );
        if let Some(t) = trace {
            t.mark_logged();
        }
        answer.into_response()
    }
}

/// The request's trace ([`kosha_runtime::trace::RequestTrace`], put there by the request
/// span and started by the edge, from `params._meta.traceparent` when the message carries a
/// valid one: MCP 2026-07-28, SEP-414, the message's context wins over the header).
fn request_trace(ctx: &RequestContext<RoleServer>) -> Option<RequestTrace> {
    ctx.extensions
        .get::<http::request::Parts>()?
        .extensions
        .get::<RequestTrace>()
        .cloned()
}

impl McpServer {
    /// Rate limit, look-up, deadline and chaos checks, then the tool; returns the catalogue's
    /// name of the tool (when it is one the caller may call) and the answer.
    async fn dispatch(
        &self,
        mut request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        (sent, decided): (&observe::Sent, &observe::Decided),
        trace: Option<&RequestTrace>,
    ) -> (Option<&'static str>, Answer) {
        // A tool the caller may never call (SPEC §5a's listing rule) answers exactly as an
        // unknown one, and spends the default cost as one does, so draining the bucket
        // reveals nothing (SPEC §6).
        let policies = self.gateway.authz();
        let caller = self.caller(context);
        let listed = caller
            .zip(self.catalogue.named(&request.name))
            .and_then(|(c, e)| {
                let listing = authz::listing(policies, c, e.spec.name);
                listing.is_allow().then_some((e, listing))
            });
        let known = listed.as_ref().map(|(e, _)| *e);
        let tool = known.map(|e| e.spec.name);
        let cost = known.map_or(DEFAULT_COST, |e| gate::round_cost(policies, e, &request));
        // Every tools/call spends its tool's cost (SPEC §6). It is spent here, after rmcp has
        // checked the headers (Accept, Content-Type, MCP-Protocol-Version, Mcp-Method,
        // Mcp-Name) and the edge the envelope, so a refused request spends none (SPEC §3).
        // Beside it, an instance without a recent override read reads one first (SPEC §8).
        let client_id = principal(context).map(|p| p.client_id.as_str());
        // Whose bucket: the app client's, or with KOSHA_RATE_KEY=user the person's (SPEC §6).
        let bucket = principal(context).map(|p| self.gateway.config.rate_key.bucket(p));
        // The budget runs from the call's start (SPEC §4, §7): the limiter's round trip and
        // the override read below are spent from it.
        let deadline = known.map(|e| call_deadline(e.spec.budget, lambda_deadline_ms(context)));
        let gateway = &self.gateway;
        let limit = async {
            match bucket {
                Some(bucket) => {
                    tokio::join!(
                        gateway.rate_limiter.check(bucket, cost),
                        gateway.overrides.ensure_fresh()
                    )
                }
                None => (
                    RateDecision::Allowed,
                    gateway.overrides.ensure_fresh().await,
                ),
            }
        };
        // A wait that outlasts the budget ends the call (counted as waiting, not as the
        // gateway's own time). Dropping the limiter mid-write never over-admits: a client that
        // disconnects drops it too; at worst a lease reserved for this call is lost, or a
        // write that landed leaves this instance's cached item stale until its next write.
        let admitted = waiting(trace, async {
            match deadline {
                Some(d) => tokio::time::timeout_at(d.instant(), limit).await.ok(),
                None => Some(limit.await),
            }
        })
        .await;
        let (Some(entry), Some(deadline)) = (known, deadline) else {
            let error =
                McpError::invalid_params(format!("unknown tool: {}", clip(&request.name)), None);
            return (
                None,
                Answer::Rpc {
                    error,
                    outcome: "unknown_tool",
                },
            );
        };
        let Some((decision, ())) = admitted else {
            return (tool, Answer::Tool(Err(out_of_time())));
        };
        if let (RateDecision::Limited { retry_after_s }, Some(bucket)) = (decision, bucket) {
            // A tool error the model reads, valid against the tool's outputSchema (SPEC §6),
            // naming whose limit is spent (the client's or the user's).
            return (
                tool,
                Answer::Tool(Err(ToolError::RateLimited {
                    retry_after_s,
                    bucket: bucket.kind,
                })),
            );
        }
        let chaos = match (
            principal(context),
            context.extensions.get::<http::request::Parts>(),
        ) {
            (Some(p), Some(parts)) => match parts.headers.get(kosha_contract::headers::CHAOS) {
                Some(header) => {
                    let now_s = u64::try_from(time::OffsetDateTime::now_utc().unix_timestamp())
                        .unwrap_or(0);
                    // The signing key may be read from Secrets Manager (cached 5 min): that
                    // read's future is boxed, so a call without the header never holds it.
                    let within = deadline.remaining().saturating_sub(entry.spec.min_budget);
                    let evaluated = self.gateway.chaos.evaluate(Some(header), p, now_s, within);
                    waiting(trace, Box::pin(evaluated)).await
                }
                None => None,
            },
            _ => None,
        };
        let call = Call {
            deps: self.gateway.deps(),
            backends: &self.backends,
            principal: client_id,
            user: principal(context).map(Principal::user),
            username: principal(context).and_then(|p| p.username.as_deref()),
            deadline,
            chaos: chaos.as_ref(),
            sent,
            trace,
        };
        if call.remaining() < entry.spec.min_budget {
            metrics::counter!("shed", "reason" => "min_budget").increment(1);
            return (tool, Answer::Tool(Err(out_of_time())));
        }
        if let Some(dup) = duplicate_argument(context) {
            return (tool, Answer::Tool(Err(dup.refusal())));
        }
        let (Some(caller), Some((_, listing))) = (caller, listed) else {
            return (tool, Answer::Tool(Err(ToolError::Internal)));
        };
        let arguments = request.arguments.take();
        let gate = gate::Gate {
            policies,
            caller,
            entry,
            listing,
            request: &request,
            context,
            spent: (bucket, cost),
            within: deadline.remaining().saturating_sub(entry.spec.min_budget),
        };
        let answer = gate.pass(&self.gateway, &call, arguments, decided).await;
        (tool, answer)
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
