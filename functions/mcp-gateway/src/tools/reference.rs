//! `docs/tools.md`, generated from the catalogue: every served tool's roles, budget,
//! dependencies, annotations and schemas, and the tool error codes (SPEC §3, §4). A test
//! keeps the file equal to [`markdown`]; regenerate it with
//! `cargo run -p mcp-gateway --example tools_reference > docs/tools.md`.

use kosha_contract::error::ErrorCode;
use serde_json::Value;

use super::catalogue::Catalogue;

/// What each tool error code means to the agent.
fn meaning(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::InvalidArgument => {
            "an argument is missing, mistyped, out of range or malformed; the message names it"
        }
        ErrorCode::NotFound => "a well-formed id that does not exist",
        ErrorCode::Conflict => "the request conflicts with current state",
        ErrorCode::DeadlineExceeded => "the tool's budget ran out; retrying may succeed",
        ErrorCode::DependencyUnavailable => {
            "a dependency is down or its breaker is open; `retry_after_s` says when to retry"
        }
        ErrorCode::Overloaded => "at capacity; retry after `retry_after_s`",
        ErrorCode::RateLimited => {
            "this client's token bucket holds less than the tool's cost; retry after `retry_after_s`"
        }
        ErrorCode::Forbidden => {
            "a policy refused these arguments, this record or this time; the message says why"
        }
        ErrorCode::ConfirmationRequired => {
            "a person must approve the call and this client cannot ask them (a revision before \
             2026-07-28, no elicitation capability, or a machine token)"
        }
        ErrorCode::Declined => "the person asked to confirm the call declined it; nothing was done",
        ErrorCode::Internal | ErrorCode::Unknown => "a bug on our side; details are logged",
    }
}

fn pretty(schema: &Value) -> String {
    serde_json::to_string_pretty(schema).unwrap_or_default()
}

/// The reference as Markdown.
pub fn markdown(catalogue: &Catalogue) -> String {
    let mut out = String::from(
        "# Tools reference\n\n\
         Generated from the gateway's tool catalogue \
         (`cargo run -p mcp-gateway --example tools_reference > docs/tools.md`); a test fails \
         when this file and the code differ. The contract behind it is [spec.md](spec.md) §3–§6.\n\n\
         Every result carries `structuredContent` and the same JSON as one text block. A tool \
         that fails answers `isError: true` with \
         `structuredContent: {\"error\": {\"code\", \"message\", \"retry_after_s\"?, \"dependency\"?}}`; \
         each `outputSchema` admits both shapes (`anyOf`).\n\n\
         ## Error codes\n\n| code | meaning |\n|---|---|\n",
    );
    for code in ErrorCode::ALL {
        out.push_str(&format!("| `{}` | {} |\n", code.as_str(), meaning(code)));
    }
    for e in catalogue.all() {
        let s = &e.spec;
        let roles: Vec<_> = s
            .roles
            .iter()
            .map(|r| format!("`{}`", r.as_str()))
            .collect();
        let needs: Vec<_> = s
            .needs
            .iter()
            .map(|n| {
                let degraded = if n.degraded_answer {
                    " (degraded answer when down)"
                } else {
                    ""
                };
                format!("`{}`{degraded}", n.backend.health_name())
            })
            .collect();
        let h = s.hints;
        out.push_str(&format!(
            "\n## `{}`\n\n{}\n\n- title: {}\n- roles: {}\n- cost: {} token(s) per call (`KOSHA_TOOL_COSTS` may change it)\n- budget: {} ms; least remaining budget to start: {} ms\n- dependencies: {}\n- annotations: readOnlyHint {}, destructiveHint {}, idempotentHint {}, openWorldHint {}\n\ninputSchema:\n\n```json\n{}\n```\n\noutputSchema:\n\n```json\n{}\n```\n",
            s.name,
            s.for_model(),
            s.title,
            roles.join(", "),
            e.cost(),
            s.budget.as_millis(),
            s.min_budget.as_millis(),
            if needs.is_empty() { "none (gateway state only)".to_owned() } else { needs.join(", ") },
            h.read_only,
            h.destructive,
            h.idempotent,
            h.open_world,
            pretty(&Value::Object((*e.tool().input_schema).clone())),
            pretty(&e.tool().output_schema.as_ref().map_or(Value::Null, |o| Value::Object((**o).clone()))),
        ));
    }
    out
}
