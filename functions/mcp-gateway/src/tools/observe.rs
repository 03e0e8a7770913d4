//! The record of one `tools/call` (SPEC §12), written once by the MCP server's dispatch for
//! every tool, so a new tool gets it without a line of its own:
//!
//! - one JSON log line, `"message": "tool call"`, with `tool`, `outcome` (`ok`, an error code
//!   of SPEC §3, `rate_limited` or `unknown_tool`), `duration_ms`, `attempts` (requests sent
//!   to dependencies, hedges included; a chaos-injected failure sends none), `hedges` (the
//!   duplicates among them sent because an attempt was slow, issue #33), `degraded`, `overhead_us` (the
//!   gateway's own time so far: the request span's wall time less the time spent waiting on
//!   DynamoDB, core-api, screening-sim and Secrets Manager, µs;
//!   `kosha_runtime::trace::RequestTrace::own_time`), and from the request span
//!   `request_id`, `trace_id`, `principal` and `user` (the `sub`, SPEC §5), `authz` (the policy
//!   decision: `allow`, `forbid`, `confirm`, or `none` when the call ended before it) and
//!   `policies` (the deciding policies' ids, comma-separated; SPEC §5a). Level: `info`, `warn` when a dependency
//!   failed or time ran out (`dependency_unavailable`, `deadline_exceeded`, `overloaded`),
//!   `error` for `internal`;
//! - `tool_duration_ms{tool, outcome}` (a tool not in the catalogue has no series: its name
//!   is the caller's text);
//! - `degraded{tool, reason}` for a result that says `degraded: true` (SPEC §10);
//! - the call's span ([`span`], exported only, SPEC §12): `mcp.method.name` (`tools/call`),
//!   `gen_ai.operation.name` (`execute_tool`), `gen_ai.tool.name` (OpenTelemetry's MCP and
//!   GenAI names, `kosha_runtime::semconv`), `client_id`, `user` (the `sub`; never the
//!   `username`, SPEC §5), `outcome`,
//!   `degraded` (+ `degraded_reason`), `attempts`; status `error` for the outcomes logged at
//!   `warn` or `error`. The caller's token is never a field: `client_id` is its claim.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use kosha_resilience::policy::Attempt;
use tracing::field::Empty;

use serde_json::Value;

use kosha_contract::echo::clip;
use kosha_runtime::semconv;

/// How a call ended, as the record reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome<'a> {
    /// `ok`, an error code, `rate_limited` or `unknown_tool`.
    pub code: &'static str,
    /// The `degraded_reason` of a degraded result (`unknown` when it gives none).
    pub degraded: Option<&'a str>,
}

impl<'a> Outcome<'a> {
    /// The outcome of a successful result: degraded when it says `degraded: true`.
    pub fn ok(result: &'a Value) -> Self {
        let degraded = (result.get("degraded") == Some(&Value::Bool(true))).then(|| {
            result
                .get("degraded_reason")
                .and_then(Value::as_str)
                .filter(|r| is_reason(r))
                .unwrap_or("unknown")
        });
        Self {
            code: "ok",
            degraded,
        }
    }

    /// A refusal or error with `code`.
    pub fn error(code: &'static str) -> Self {
        Self {
            code,
            degraded: None,
        }
    }
}

/// A reason fit for a metric dimension: a short snake_case word.
fn is_reason(reason: &str) -> bool {
    !reason.is_empty()
        && reason.len() <= 64
        && reason.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// The requests one call sent to its dependencies, counted as they are sent.
#[derive(Debug, Default)]
pub struct Sent {
    attempts: AtomicU32,
    hedges: AtomicU32,
}

impl Sent {
    /// Counts one request about to be sent for `attempt`.
    pub fn count(&self, attempt: &Attempt) {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        if attempt.hedge {
            self.hedges.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Requests sent, hedges included.
    pub fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Relaxed)
    }

    /// Hedges sent.
    pub fn hedges(&self) -> u32 {
        self.hedges.load(Ordering::Relaxed)
    }
}

/// How long a call took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// The tool call's wall time (`duration_ms`, and the metric).
    pub elapsed: Duration,
    /// The gateway's own time in the request so far (`overhead_us`); `None` outside an HTTP
    /// request (no request span), then not logged.
    pub overhead: Option<Duration>,
}

/// Opens the span of one `tools/call` of the tool `requested` (clipped) for the caller
/// `client_id` (the principal's claim; `None` before authentication) and its `user` (the
/// `sub`, SPEC §5 "The user"); [`record`] fills in the rest. Disabled, and free, unless spans are exported (kosha-runtime's `otlp`).
///
/// The span is named `tools/call <tool>` here, as it opens: tracing-opentelemetry applies an
/// `otel.name` recorded later only to a span not yet entered (0.34, `SpanBuilderUpdates::
/// update_span` keeps status and attributes only), so a name set in [`record`] was lost.
pub fn span(requested: &str, client_id: Option<&str>, user: Option<&str>) -> tracing::Span {
    let span = tracing::info_span!(
        "tool_call",
        otel.name = Empty,
        otel.status_code = Empty,
        { semconv::MCP_METHOD_NAME } = "tools/call",
        { semconv::GEN_AI_OPERATION_NAME } = "execute_tool",
        { semconv::GEN_AI_TOOL_NAME } = Empty,
        client_id = client_id.unwrap_or_default(),
        user = user.unwrap_or_default(),
        outcome = Empty,
        degraded = Empty,
        degraded_reason = Empty,
        attempts = Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", format!("tools/call {}", clip(requested)));
    }
    span
}

/// The policy decision of a call (SPEC §5a: every decision is logged with the deciding
/// policies' ids): set once by the dispatch, read by [`record`].
#[derive(Debug, Default)]
pub struct Decided(std::sync::OnceLock<(&'static str, String)>);

impl Decided {
    /// Keeps `decision`'s name and deciding policies (comma-separated ids).
    pub fn set(&self, decision: &kosha_authz::Decision) {
        let _ = self
            .0
            .set((decision.as_str(), decision.policies().join(",")));
    }

    /// `allow`, `forbid` or `confirm`, and the ids; `none` before the policies were asked (a
    /// refusal by the rate limit, the deadline, the arguments, or an unknown tool).
    fn get(&self) -> (&'static str, &str) {
        self.0.get().map_or(("none", ""), |(d, p)| (*d, p.as_str()))
    }
}

/// Writes the record of one call: `tool` is the catalogue's name (`None` for an unknown tool,
/// then `requested` is logged, clipped), `decided` its policy decision, `timing` how long it
/// took, `sent` the requests it sent, `span` the call's ([`span`]).
pub fn record(
    tool: Option<&'static str>,
    requested: &str,
    outcome: Outcome<'_>,
    decided: &Decided,
    timing: Timing,
    sent: &Sent,
    span: &tracing::Span,
) {
    let (attempts, hedges) = (sent.attempts(), sent.hedges());
    let (authz, policies) = decided.get();
    let Timing { elapsed, overhead } = timing;
    let duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    let overhead_us = overhead.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    if let Some(tool) = tool {
        metrics::histogram!("tool_duration_ms", "tool" => tool, "outcome" => outcome.code)
            .record(elapsed.as_secs_f64() * 1000.0);
        if let Some(reason) = outcome.degraded {
            metrics::counter!("degraded", "tool" => tool, "reason" => reason.to_owned())
                .increment(1);
        }
    }
    let name = tool.map_or_else(|| clip(requested), Into::into);
    let degraded = outcome.degraded.is_some();
    let failed = matches!(
        outcome.code,
        "internal" | "dependency_unavailable" | "deadline_exceeded" | "overloaded"
    );
    if !span.is_disabled() {
        span.record(semconv::GEN_AI_TOOL_NAME, &*name);
        span.record("outcome", outcome.code);
        span.record("degraded", degraded);
        if let Some(reason) = outcome.degraded {
            span.record("degraded_reason", reason);
        }
        // An i64: tracing-opentelemetry exports a u64 field as a string.
        span.record("attempts", i64::from(attempts));
        if failed {
            span.record("otel.status_code", "error");
        }
    }
    macro_rules! line {
        ($level:ident) => {
            tracing::$level!(
                tool = %name,
                outcome = outcome.code,
                duration_ms,
                attempts,
                hedges,
                degraded,
                overhead_us,
                authz,
                policies,
                "tool call"
            )
        };
    }
    match outcome.code {
        "internal" => line!(error),
        "dependency_unavailable" | "deadline_exceeded" | "overloaded" => line!(warn),
        _ => line!(info),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Outcome;

    #[test]
    fn a_result_is_degraded_only_when_it_says_so_and_odd_reasons_are_not_dimensions() {
        let plain = json!({"results": []});
        assert_eq!(Outcome::ok(&plain).degraded, None);
        let off = json!({"degraded": false});
        assert_eq!(Outcome::ok(&off).degraded, None);
        let text = json!({"degraded": "true"});
        assert_eq!(Outcome::ok(&text).degraded, None);
        let on = json!({"degraded": true, "degraded_reason": "embeddings_unavailable"});
        assert_eq!(Outcome::ok(&on).degraded, Some("embeddings_unavailable"));
        for odd in [json!("Agent 7 says hi"), json!(3), json!("a".repeat(65))] {
            let r = json!({"degraded": true, "degraded_reason": odd});
            assert_eq!(Outcome::ok(&r).degraded, Some("unknown"));
        }
    }
}
