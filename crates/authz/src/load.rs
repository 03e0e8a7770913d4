//! Loading a policy set: parse, name each policy by its `@id`, validate against the schema
//! (strict mode), and prepare what a decision needs (SPEC §5a, ARCHITECTURE pitfall 29).

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use cedar_policy::{Authorizer, Policy, PolicyId, PolicySet, Schema, ValidationMode, Validator};
use miette::Diagnostic;

use crate::error::LoadError;
use crate::ids::Names;
use crate::listing;
use crate::reads::{self, Reads};

/// A validated policy set and what deciding with it needs.
#[derive(Debug)]
pub struct Policies {
    /// Kosha's schema: every policy was validated against it, and every call's request is.
    pub(crate) schema: Schema,
    pub(crate) set: PolicySet,
    /// The set the listing rule evaluates ([`listing::derive`]).
    pub(crate) listing: PolicySet,
    pub(crate) names: Names,
    /// What the policies that may apply to each tool read of its context.
    reads: HashMap<String, Reads>,
    pub(crate) authorizer: Authorizer,
    /// Listing decisions already made ([`crate::memo`]).
    pub(crate) memo: crate::memo::Memo,
}

impl Policies {
    /// The built-in set ([`crate::BUILTIN`]), parsed and validated on first use (not at
    /// Lambda init: SPEC §13's start-up budget).
    pub fn builtin() -> &'static Policies {
        static BUILTIN: OnceLock<Policies> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            #[expect(clippy::expect_used, reason = "a constant set, validated by a test")]
            Policies::parse(crate::BUILTIN).expect("the built-in policy set validates")
        })
    }

    /// The policy set in `text` (Cedar syntax), validated against [`crate::SCHEMA`].
    ///
    /// Each policy is named by its `@id("…")` annotation, or `policy<N>` (its place in the
    /// file, from 0) without one.
    ///
    /// # Errors
    /// [`LoadError`] when the text does not parse, two policies share an id, or a policy does
    /// not validate (strict mode): an unknown tool or attribute, a type error, a read of
    /// `context.confirmed` for a tool other than a write (SPEC §5b), an optional attribute read
    /// without `has`.
    pub fn parse(text: &str) -> Result<Self, LoadError> {
        let schema = schema()?;
        let parsed: PolicySet = text.parse().map_err(|e: cedar_policy::ParseErrors| {
            let mut error = located(text, None, &e, e.to_string());
            error.policy = first_offset(&e).and_then(|at| id_before(text, at));
            error
        })?;
        if parsed.templates().next().is_some() {
            return Err(LoadError {
                policy: None,
                line: None,
                message: "templates are not supported; write static policies".to_owned(),
            });
        }
        let set = named(text, parsed)?;
        let result = Validator::new(schema.clone()).validate(&set, ValidationMode::Strict);
        if let Some(e) = result.validation_errors().next() {
            let id = e.policy_id().to_string();
            return Err(located(text, Some(id), e, e.to_string()));
        }
        let names = Names::new(schema.actions());
        let reads = reads_by_tool(&set, &names)?;
        let listing = listing::derive(&set)?;
        Ok(Self {
            schema,
            set,
            listing,
            names,
            reads,
            authorizer: Authorizer::new(),
            memo: crate::memo::Memo::default(),
        })
    }

    /// What the policies that may apply to `tool` read of its context: the gateway builds
    /// only that, and reads the addressed transaction only when `record` is read.
    pub fn reads(&self, tool: &str) -> Reads {
        self.reads.get(tool).copied().unwrap_or_default()
    }

    /// The ids of every policy, in the set's order.
    pub fn ids(&self) -> Vec<String> {
        self.set.policies().map(|p| p.id().to_string()).collect()
    }
}

/// Kosha's schema ([`crate::SCHEMA`]).
fn schema() -> Result<Schema, LoadError> {
    Schema::from_cedarschema_str(crate::SCHEMA)
        .map(|(schema, _warnings)| schema)
        .map_err(|e| LoadError {
            policy: None,
            line: None,
            message: format!("the Cedar schema: {e}"),
        })
}

/// `parsed` with each policy renamed to its `@id` annotation.
fn named(text: &str, parsed: PolicySet) -> Result<PolicySet, LoadError> {
    let mut set = PolicySet::new();
    let mut seen = HashSet::new();
    for policy in parsed.policies() {
        let id = policy
            .annotation("id")
            .map_or_else(|| policy.id().clone(), PolicyId::new);
        if !seen.insert(id.clone()) {
            let line = text.find(&format!("\"{id}\"")).map(|at| line_of(text, at));
            return Err(LoadError {
                policy: Some(id.to_string()),
                line,
                message: "two policies have this @id".to_owned(),
            });
        }
        let renamed: Policy = policy.new_id(id);
        set.add(renamed).map_err(|e| LoadError {
            policy: None,
            line: None,
            message: e.to_string(),
        })?;
    }
    Ok(set)
}

/// For each tool, the union of what the policies that may apply to it read.
fn reads_by_tool(set: &PolicySet, names: &Names) -> Result<HashMap<String, Reads>, LoadError> {
    let mut by_tool: HashMap<String, Reads> = names
        .tools()
        .map(|t| (t.to_owned(), Reads::default()))
        .collect();
    for policy in set.policies() {
        let est = listing::est(policy)?;
        let read = Reads::of_policy(&est);
        match reads::actions(&est) {
            Some(actions) => {
                for action in actions {
                    if let Some(r) = by_tool.get_mut(&action) {
                        *r = r.union(read);
                    }
                }
            }
            None => by_tool.values_mut().for_each(|r| *r = r.union(read)),
        }
    }
    Ok(by_tool)
}

/// A [`LoadError`] at the first labelled place of `diagnostic` in `text`.
fn located(
    text: &str,
    policy: Option<String>,
    diagnostic: &dyn Diagnostic,
    message: String,
) -> LoadError {
    let line = first_offset(diagnostic).map(|at| line_of(text, at));
    LoadError {
        policy,
        line,
        message,
    }
}

/// The `@id` of the policy that a syntax error at byte `offset` is in: the last `@id("…")`
/// after the end (`;`) of the policy before it, if any.
fn id_before(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let start = before.rfind(';').map_or(0, |at| at + 1);
    let tail = before.get(start..)?;
    let at = tail.rfind("@id(\"")? + "@id(\"".len();
    let id = tail.get(at..)?.split('"').next()?;
    Some(id.to_owned())
}

/// The byte offset of `diagnostic`'s first label.
fn first_offset(diagnostic: &dyn Diagnostic) -> Option<usize> {
    diagnostic
        .labels()
        .and_then(|mut labels| labels.next())
        .map(|label| label.offset())
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len()))
        .map_or(1, |before| before.matches('\n').count() + 1)
}

#[cfg(test)]
mod tests;
