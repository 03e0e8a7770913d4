//! Which role may use which tool: the one table (SPEC §4 "role" column, SPEC §5, SPEC §9).
//!
//! A tool the principal may not use is absent from its `tools/list`, and calling it answers as
//! for an unknown tool (-32602), so both paths must ask [`tool_allowed`]. A principal with
//! several roles gets the union. A tool missing from [`TOOL_ROLES`] is allowed to nobody.
//! `docs/operations.md` renders this same table ([`markdown_table`]); a test keeps them equal.

use crate::principal::Role;

/// `(tool name, roles that may use it)`, in the order of SPEC §4.
pub const TOOL_ROLES: &[(&str, &[Role])] = &[
    ("search_knowledge_base", &[Role::Agent]),
    ("get_transaction", &[Role::Agent]),
    ("list_transactions", &[Role::Agent]),
    ("screen_entity", &[Role::Agent]),
    ("get_screening_result", &[Role::Agent]),
    ("raise_dispute", &[Role::Agent]),
    ("flag_transaction_for_review", &[Role::Agent]),
    ("get_service_health", &[Role::Agent, Role::Operator]),
];

/// The role whose holders may have an `X-Kosha-Chaos` header honoured (SPEC §9).
pub const CHAOS_ROLE: Role = Role::Operator;

/// Whether any of `roles` may list and call `tool`. Unknown tools: `false`.
pub fn tool_allowed(roles: &[Role], tool: &str) -> bool {
    TOOL_ROLES
        .iter()
        .find(|(name, _)| *name == tool)
        .is_some_and(|(_, allowed)| allowed.iter().any(|role| roles.contains(role)))
}

/// Whether any of `roles` may send the chaos header (SPEC §9). Signature and
/// `CHAOS_ENABLED` are checked elsewhere.
pub fn chaos_allowed(roles: &[Role]) -> bool {
    roles.contains(&CHAOS_ROLE)
}

/// The tools `roles` may see, in table order.
pub fn visible_tools(roles: &[Role]) -> impl Iterator<Item = &'static str> + '_ {
    TOOL_ROLES
        .iter()
        .filter(|(_, allowed)| allowed.iter().any(|role| roles.contains(role)))
        .map(|(name, _)| *name)
}

/// The table as Markdown (`| tool | agent | operator |` with `yes`/`no`), as printed in
/// `docs/operations.md`.
pub fn markdown_table() -> String {
    let roles = [Role::Agent, Role::Operator];
    let mut out = String::from("| tool | agent | operator |\n|---|---|---|\n");
    for (tool, allowed) in TOOL_ROLES {
        out.push_str(&format!("| `{tool}` |"));
        for role in roles {
            out.push_str(if allowed.contains(&role) {
                " yes |"
            } else {
                " no |"
            });
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_sees_the_data_tools() {
        let tools: Vec<_> = visible_tools(&[Role::Agent]).collect();
        assert_eq!(tools.len(), 8);
        assert!(tool_allowed(&[Role::Agent], "raise_dispute"));
        assert!(!chaos_allowed(&[Role::Agent]));
    }

    #[test]
    fn operator_sees_only_health() {
        let tools: Vec<_> = visible_tools(&[Role::Operator]).collect();
        assert_eq!(tools, vec!["get_service_health"]);
        assert!(!tool_allowed(&[Role::Operator], "get_transaction"));
        assert!(chaos_allowed(&[Role::Operator]));
    }

    #[test]
    fn both_roles_get_the_union() {
        let both = [Role::Agent, Role::Operator];
        assert_eq!(visible_tools(&both).count(), 8);
        assert!(tool_allowed(&both, "screen_entity"));
        assert!(chaos_allowed(&both));
    }

    #[test]
    fn unknown_tools_and_no_roles_are_denied() {
        assert!(!tool_allowed(&[Role::Agent, Role::Operator], "drop_tables"));
        assert!(!tool_allowed(&[], "get_service_health"));
    }

    #[test]
    fn docs_print_this_table() {
        let docs = include_str!("../../../docs/operations.md");
        assert!(
            docs.contains(&markdown_table()),
            "docs/operations.md is out of date:\n{}",
            markdown_table()
        );
    }
}
