//! The tool catalogue: every tool's spec, declared once in its module as a [`Tool`]
//! implementation, and everything derived from it — `tools/list`, dispatch, role visibility,
//! the budgets, and `get_service_health`'s dependency list.
//!
//! A tool is served if and only if [`Catalogue::new`] lists it; its name, schemas, roles,
//! budget and handler come from the one `impl Tool`, so it cannot be half-registered (listed
//! but not dispatched, or visible to no role by accident).
//!
//! - **Visibility (SPEC §5, §5a):** who sees and may call a tool is the policy set's answer
//!   (`crate::authz`); [`Spec::roles`] is the built-in set's role table, for the docs. A
//!   tool a principal may never call is absent from its `tools/list` and calling it answers
//!   as an unknown tool (−32602).
//! - **Costs (SPEC §6):** each tool spends [`Tool::COST`] tokens of the caller's bucket per
//!   call (default [`DEFAULT_COST`]), or the cost `KOSHA_TOOL_COSTS` gives it
//!   ([`Catalogue::with_costs`], checked at start by [`super::cost::parse`]).
//! - **Schemas (SPEC §3):** `inputSchema` from the argument type, written for the model;
//!   `outputSchema` is `{"type": "object", "anyOf": [<result>, <error>]}`, so a client that
//!   validates `structuredContent` (the TypeScript SDK does) accepts tool errors too, with no
//!   prose ([`super::schema`]).
//! - **Descriptions (SPEC §3, issue 45):** the model reads [`Spec::description`] followed by
//!   the codes of [`Spec::errors`], spelled by [`ErrorCode::as_str`].

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kosha_auth::Role;
use kosha_contract::error::{ErrorBody, ErrorCode};
use rmcp::handler::server::tool::{schema_for_output, schema_for_type};
use rmcp::model::{JsonObject, ToolAnnotations};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::args::ArgsSchema;
use super::call::Call;
use super::error::ToolError;
use super::schema;
use crate::backends::Backend;

/// The default minimum remaining budget at tool start (SPEC §6): below it the call fails
/// `deadline_exceeded` without calling anything.
pub const DEFAULT_MIN_BUDGET: Duration = Duration::from_millis(300);

/// Tokens a call spends when its tool sets no other cost, and what an unknown tool (or one the
/// caller may not see) spends (SPEC §6).
pub const DEFAULT_COST: u32 = 1;

/// A dependency a tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// Which backend.
    pub backend: Backend,
    /// Whether the tool still answers (degraded, SPEC §10) when this backend is unavailable.
    pub degraded_answer: bool,
}

/// The MCP tool annotations (hints to the client, MCP 2025-06-18 `ToolAnnotations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// A modification may be destructive.
    pub destructive: bool,
    /// Repeating a call with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool talks to an open world (the internet) rather than a closed one.
    pub open_world: bool,
}

impl Hints {
    /// A read-only, idempotent, closed-world tool.
    pub const READ: Self = Self {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };

    /// A write made idempotent by its key (SPEC §4): not read-only, not destructive (it adds
    /// a record), idempotent (the same call returns the first result), closed-world.
    pub const KEYED_WRITE: Self = Self {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
}

/// The error codes a core-api read by id can answer (SPEC §3, §10): a bad or unknown id,
/// core-api slow, down or full, the caller's rate limit, a bug.
pub const READ_ERRORS: &[ErrorCode] = &[
    ErrorCode::InvalidArgument,
    ErrorCode::NotFound,
    ErrorCode::DeadlineExceeded,
    ErrorCode::DependencyUnavailable,
    ErrorCode::Overloaded,
    ErrorCode::RateLimited,
    ErrorCode::Internal,
];

/// The error codes a keyed write can answer (SPEC §4, §5b): a read's, `conflict` (an open
/// dispute, or a key reused with other arguments), and a person's confirmation that this
/// client cannot ask for (`confirmation_required`) or that was refused (`declined`).
pub const KEYED_WRITE_ERRORS: &[ErrorCode] = &[
    ErrorCode::InvalidArgument,
    ErrorCode::NotFound,
    ErrorCode::Conflict,
    ErrorCode::DeadlineExceeded,
    ErrorCode::DependencyUnavailable,
    ErrorCode::Overloaded,
    ErrorCode::RateLimited,
    ErrorCode::ConfirmationRequired,
    ErrorCode::Declined,
    ErrorCode::Internal,
];

/// Everything about a tool but its types and handler.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// The tool's name (`get_transaction`).
    pub name: &'static str,
    /// Human-readable title.
    pub title: &'static str,
    /// For the model, in plain words: what it does, when to use it and what it returns
    /// (SPEC §3). [`Spec::for_model`] appends [`Spec::errors`].
    pub description: &'static str,
    /// The error codes a call can answer, in [`ErrorCode::ALL`]'s order.
    pub errors: &'static [ErrorCode],
    /// Annotations.
    pub hints: Hints,
    /// The roles the built-in policy set lets see and call it (SPEC §4 "role"; the set is
    /// `kosha_authz::BUILTIN`, and a property test keeps the two equal). Who may call it is
    /// the policies' business (SPEC §5a).
    pub roles: &'static [Role],
    /// Time budget from call start (SPEC §4 "budget").
    pub budget: Duration,
    /// Least remaining budget to start the tool (SPEC §6); zero for tools that call nothing.
    pub min_budget: Duration,
    /// Dependencies it calls (SPEC §4 "deps").
    pub needs: &'static [Need],
}

impl Spec {
    /// The description the model reads: [`Spec::description`] and the error codes
    /// (`… Errors: invalid_argument, not_found.`).
    pub fn for_model(&self) -> String {
        let codes: Vec<&str> = self.errors.iter().map(|c| c.as_str()).collect();
        format!("{} Errors: {}.", self.description, codes.join(", "))
    }
}

/// A tool: its spec, argument and result types, and its handler.
pub trait Tool: Send + Sync + 'static {
    /// The arguments; their JSON Schema is the `inputSchema`.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// The result's `structuredContent`; its JSON Schema is half of the `outputSchema`.
    type Output: Serialize + JsonSchema + 'static;
    /// The spec.
    const SPEC: Spec;
    /// Tokens of the caller's bucket one call spends (SPEC §6), unless `KOSHA_TOOL_COSTS`
    /// sets another.
    const COST: u32 = DEFAULT_COST;
    /// Runs the tool with checked arguments.
    fn run(
        call: &Call<'_>,
        args: Self::Args,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
type Handler = for<'c, 'g> fn(&'c Call<'g>, JsonObject) -> BoxFuture<'c, Result<Value, ToolError>>;

/// One served tool.
pub struct Entry {
    /// The spec.
    pub spec: Spec,
    /// Tokens one call spends ([`Tool::COST`], or its `KOSHA_TOOL_COSTS` override).
    cost: u32,
    /// What `tools/list` shows, made on first use ([`Entry::tool`]).
    tool: OnceLock<rmcp::model::Tool>,
    describe: fn() -> rmcp::model::Tool,
    /// The `inputSchema`, compiled on the first call (not at start-up: Lambda init time).
    args: OnceLock<Result<ArgsSchema, String>>,
    handler: Handler,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl Entry {
    /// The entry of tool `T`.
    pub fn of<T: Tool>() -> Self {
        Self {
            spec: T::SPEC,
            cost: T::COST,
            tool: OnceLock::new(),
            describe: describe::<T>,
            args: OnceLock::new(),
            handler: handle::<T>,
        }
    }

    /// What `tools/list` shows: name, title, description, schemas and annotations. Made on
    /// the first call, not at start-up: generating every tool's schemas with schemars was
    /// 0.67 ms of a 5 ms Lambda init (issue 6, docs/benchmarks.md), which a fresh instance
    /// whose first request is one `tools/call` needs only for that tool.
    pub fn tool(&self) -> &rmcp::model::Tool {
        self.tool.get_or_init(self.describe)
    }

    /// Tokens one call spends (SPEC §6).
    pub fn cost(&self) -> u32 {
        self.cost
    }

    /// Whether a principal with `roles` may see and call this tool under the built-in policy
    /// set ([`Spec::roles`]).
    pub fn allowed(&self, roles: &[Role]) -> bool {
        self.spec.roles.iter().any(|r| roles.contains(r))
    }

    /// The compiled `inputSchema`.
    ///
    /// # Errors
    /// [`ToolError::Internal`] when the schema does not compile (a bug in the tool's argument
    /// type; the catalogue's tests compile every one).
    pub fn args_schema(&self) -> Result<&ArgsSchema, ToolError> {
        self.args
            .get_or_init(|| {
                let schema = Value::Object((*self.tool().input_schema).clone());
                ArgsSchema::compile(&schema)
            })
            .as_ref()
            .map_err(|e| {
                tracing::error!(tool = self.spec.name, error = %e, "inputSchema does not compile");
                ToolError::Internal
            })
    }

    /// Checks `arguments` against the `inputSchema` ([`ArgsSchema::check`]): what the
    /// policies read and [`Entry::run`] takes.
    ///
    /// # Errors
    /// [`ToolError::InvalidArgument`] naming the field; [`ToolError::Internal`] when the
    /// schema does not compile.
    pub fn check(&self, arguments: Option<JsonObject>) -> Result<JsonObject, ToolError> {
        self.args_schema()?.check(arguments)
    }

    /// Runs the tool with `checked` arguments ([`Entry::check`]) and serializes its result.
    ///
    /// # Errors
    /// [`ToolError`]: `invalid_argument` where the argument type and schema disagree, or the
    /// tool's own.
    pub async fn run(&self, call: &Call<'_>, checked: JsonObject) -> Result<Value, ToolError> {
        (self.handler)(call, checked).await
    }
}

/// [`Entry::tool`] of tool `T`.
fn describe<T: Tool>() -> rmcp::model::Tool {
    let spec = T::SPEC;
    let hints = spec.hints;
    // No annotation title: the tool's own `title` comes first in a host's display-name
    // order (MCP 2025-06-18, `Tool`), so the model reads it once.
    let annotations = ToolAnnotations::new()
        .read_only(hints.read_only)
        .destructive(hints.destructive)
        .idempotent(hints.idempotent)
        .open_world(hints.open_world);
    let input = schema::for_model(
        Value::Object((*schema_for_type::<T::Args>()).clone()),
        &format!("{} arguments", spec.title),
    );
    rmcp::model::Tool::new_with_raw(
        spec.name,
        Some(spec.for_model().into()),
        Arc::new(object(input)),
    )
    .with_title(spec.title)
    .with_raw_output_schema(Arc::new(object(output_schema::<T::Output>())))
    .with_annotations(annotations)
}

fn handle<'c, T: Tool>(
    call: &'c Call<'_>,
    checked: JsonObject,
) -> BoxFuture<'c, Result<Value, ToolError>> {
    Box::pin(async move {
        let args = super::args::deserialize::<T::Args>(checked)?;
        let out = T::run(call, args).await?;
        serde_json::to_value(out).map_err(|e| {
            tracing::error!(tool = T::SPEC.name, error = %e, "tool output did not serialize");
            ToolError::Internal
        })
    })
}

/// Every tool the gateway serves, in `tools/list` order.
#[derive(Debug)]
pub struct Catalogue {
    entries: Vec<Entry>,
}

impl Catalogue {
    /// A catalogue serving `entries`, in that order ([`super::catalogue()`] is the gateway's).
    pub fn new(entries: Vec<Entry>) -> Self {
        Self { entries }
    }

    /// The same catalogue with the cost `cost_of(name)` gives each tool (`None`: it keeps
    /// its own), e.g. `|name| costs.get(name)` for the `KOSHA_TOOL_COSTS` that
    /// [`super::cost::parse`] checked. A lookup rather than the parsed type, so this module
    /// does not import the one that reads the catalogue (issue 42).
    #[must_use]
    pub fn with_costs(mut self, cost_of: impl Fn(&str) -> Option<u32>) -> Self {
        for e in &mut self.entries {
            if let Some(cost) = cost_of(e.spec.name) {
                e.cost = cost;
            }
        }
        self
    }

    /// Every tool, in `tools/list` order.
    pub fn all(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    /// Tool `name`, whoever asks: who may list and call it is the policies' business
    /// (SPEC §5a, `crate::authz`).
    pub fn named(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.spec.name == name)
    }

    /// Every backend some tool calls: `get_service_health`'s dependencies.
    pub fn backends(&self) -> BTreeSet<Backend> {
        self.entries
            .iter()
            .flat_map(|e| e.spec.needs.iter().map(|n| n.backend))
            .collect()
    }

    /// The role table as Markdown (`| tool | agent | operator |`), as printed in
    /// `docs/operations.md` (a test keeps them equal).
    pub fn role_table(&self) -> String {
        let roles = [Role::Agent, Role::Operator];
        let mut out = String::from("| tool | agent | operator |\n|---|---|---|\n");
        for e in &self.entries {
            out.push_str(&format!("| `{}` |", e.spec.name));
            for role in roles {
                out.push_str(if e.allowed(&[role]) {
                    " yes |"
                } else {
                    " no |"
                });
            }
            out.push('\n');
        }
        out
    }
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// `{"type": "object", "anyOf": [<result>, <error>], "$defs": …}` (SPEC §3): both halves'
/// `$defs` are hoisted to the top, where their `$ref`s (`#/$defs/…`) resolve.
fn output_schema<O: JsonSchema + 'static>() -> Value {
    let mut defs = Map::new();
    let mut half = |schema: Arc<JsonObject>| {
        let mut s = (*schema).clone();
        s.remove("$schema");
        if let Some(Value::Object(d)) = s.remove("$defs") {
            defs.extend(d);
        }
        Value::Object(s)
    };
    let result = half(schema_for_output::<O>());
    let error = half(schema_for_output::<ErrorBody>());
    let mut out = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "anyOf": [result, error],
    });
    if !defs.is_empty() {
        out["$defs"] = Value::Object(defs);
    }
    schema::for_client(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tools_description_is_made_on_first_use_only_and_once() {
        let catalogue = crate::tools::catalogue();
        assert!(
            catalogue.all().all(|e| e.tool.get().is_none()),
            "no schema is generated when the catalogue is built"
        );
        let entry = catalogue.all().next().unwrap();
        let first = entry.tool();
        assert_eq!(first.name, entry.spec.name);
        assert!(first.output_schema.is_some());
        assert!(std::ptr::eq(first, entry.tool()), "made once");
        assert!(
            catalogue.all().skip(1).all(|e| e.tool.get().is_none()),
            "the other tools' descriptions are not made"
        );
    }
}
