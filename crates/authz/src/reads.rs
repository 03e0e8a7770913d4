//! What a policy reads of the request's context, and which actions it applies to, found in
//! its JSON form (Cedar's EST): `context.input.amount_minor` is
//! `{".": {"left": {".": {"left": {"Var": "context"}, "attr": "input"}}, "attr": "amount_minor"}}`.
//!
//! Any other use of `context` (compared whole, passed to a function) counts as reading all of
//! it. The listing rule ([`crate::listing`]) and the record read ([`crate::Policies::reads`])
//! depend on this.

use serde_json::Value;

/// The parts of `context` a policy (or a set, for one tool) reads (SPEC §5a).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// `context.input`: the call's arguments.
    pub input: bool,
    /// `context.record`: the addressed transaction.
    pub record: bool,
    /// `context.now`, `context.time_of_day` or `context.weekday`: the clock.
    pub now: bool,
    /// `context.confirmed` (SPEC §5b).
    pub confirmed: bool,
    /// `context.protocol_version`.
    pub protocol_version: bool,
}

impl Reads {
    /// Reads everything (a use of `context` that is not one attribute).
    const ALL: Self = Self {
        input: true,
        record: true,
        now: true,
        confirmed: true,
        protocol_version: true,
    };

    /// Whether the answer can depend on the call (its arguments, record, time or
    /// confirmation), not only on who calls which tool: such a policy is not evaluated as
    /// written by the listing rule (SPEC §5a).
    pub fn per_call(self) -> bool {
        self.input || self.record || self.now || self.confirmed
    }

    /// Whether anything of the context is read.
    pub fn any(self) -> bool {
        self.per_call() || self.protocol_version
    }

    /// Both sets' reads.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self {
            input: self.input || other.input,
            record: self.record || other.record,
            now: self.now || other.now,
            confirmed: self.confirmed || other.confirmed,
            protocol_version: self.protocol_version || other.protocol_version,
        }
    }

    /// What the policy whose EST is `est` reads of `context`.
    pub(crate) fn of_policy(est: &Value) -> Self {
        let mut reads = Self::default();
        if let Some(conditions) = est.get("conditions") {
            scan(conditions, &mut reads);
        }
        reads
    }

    fn attribute(&mut self, name: &str) {
        match name {
            "input" => self.input = true,
            "record" => self.record = true,
            "now" | "time_of_day" | "weekday" => self.now = true,
            "confirmed" => self.confirmed = true,
            "protocol_version" => self.protocol_version = true,
            _ => *self = self.union(Self::ALL),
        }
    }
}

/// Whether `v` is the variable `context`.
fn is_context(v: &Value) -> bool {
    v.get("Var").and_then(Value::as_str) == Some("context")
}

fn scan(v: &Value, reads: &mut Reads) {
    match v {
        Value::Object(map) => {
            for (key, inner) in map {
                let one_attribute = matches!(key.as_str(), "." | "has")
                    && inner.get("left").is_some_and(is_context);
                if one_attribute {
                    match inner.get("attr").and_then(Value::as_str) {
                        Some(name) => reads.attribute(name),
                        None => *reads = reads.union(Reads::ALL),
                    }
                } else if is_context(v) {
                    *reads = reads.union(Reads::ALL);
                } else {
                    scan(inner, reads);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| scan(i, reads)),
        _ => {}
    }
}

/// The actions the policy whose EST is `est` applies to: `None` for every action.
pub(crate) fn actions(est: &Value) -> Option<Vec<String>> {
    let scope = est.get("action")?;
    let id = |e: &Value| e.get("id").and_then(Value::as_str).map(str::to_owned);
    match scope.get("op").and_then(Value::as_str) {
        Some("==") => Some(scope.get("entity").and_then(id).into_iter().collect()),
        Some("in") => match (scope.get("entities"), scope.get("entity")) {
            (Some(Value::Array(list)), _) => Some(list.iter().filter_map(id).collect()),
            // `action in Kosha::Action::"x"`: Kosha has no action groups, so it is `==`.
            (_, Some(one)) => Some(id(one).into_iter().collect()),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cedar_policy::Policy;

    fn est(text: &str) -> Value {
        Policy::parse(None, text).unwrap().to_json().unwrap()
    }

    #[test]
    fn attributes_of_context_are_found_where_they_are_read() {
        let reads = Reads::of_policy(&est(r#"forbid (principal, action, resource)
               when { context.input.amount_minor > 5 && context has record }
               unless { principal.groups.contains("supervisor") };"#));
        assert_eq!(
            reads,
            Reads {
                input: true,
                record: true,
                ..Reads::default()
            }
        );
        assert!(reads.per_call());
        let reads = Reads::of_policy(&est(
            r#"permit (principal, action, resource) when { context.protocol_version == "2026-07-28" };"#,
        ));
        assert!(reads.any() && !reads.per_call());
        let none = Reads::of_policy(&est(
            r#"permit (principal, action, resource) when { principal.roles.contains("agent") };"#,
        ));
        assert!(!none.any());
    }

    #[test]
    fn context_used_whole_reads_everything() {
        let reads = Reads::of_policy(&est(
            r#"permit (principal, action, resource) when { context == {} };"#,
        ));
        assert_eq!(reads, Reads::ALL);
    }

    #[test]
    fn the_action_scope_names_the_actions() {
        let one = est(r#"permit (principal, action == Kosha::Action::"a", resource);"#);
        assert_eq!(actions(&one), Some(vec!["a".to_owned()]));
        let two = est(
            r#"permit (principal, action in [Kosha::Action::"a", Kosha::Action::"b"], resource);"#,
        );
        assert_eq!(actions(&two), Some(vec!["a".to_owned(), "b".to_owned()]));
        assert_eq!(actions(&est("permit (principal, action, resource);")), None);
    }
}
