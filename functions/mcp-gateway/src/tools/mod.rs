//! The tools (SPEC §4). One module per tool, each an implementation of [`catalogue::Tool`]:
//! its spec (name, schemas, annotations, roles, budget, dependencies) and its handler.
//! [`catalogue()`] lists them, once; [`catalogue::Catalogue`] derives `tools/list`, dispatch
//! and visibility from that list. [`call`] holds the per-call context and the mapping from
//! dependency errors to tool errors (SPEC §3); [`deps`] what a call may use of the gateway,
//! behind traits the tools' tests fake.
//!
//! Imports point one way: this module lists the tool modules; they use their siblings
//! ([`catalogue`], [`call`], [`error`], [`args`]) and never this module.

pub mod args;
pub mod call;
pub mod catalogue;
pub mod cost;
pub mod deps;
pub mod error;
pub mod flag_transaction_for_review;
pub mod get_screening_result;
pub mod get_service_health;
pub mod get_transaction;
pub mod idempotency;
pub mod list_transactions;
pub mod observe;
pub mod raise_dispute;
pub mod reference;
pub mod schema;
pub mod screen_entity;
pub mod search_knowledge_base;

#[cfg(test)]
mod fakes;
#[cfg(test)]
mod listing_tests;
#[cfg(test)]
mod tool_tests;

use catalogue::{Catalogue, Entry};

/// Every tool the gateway serves, in `tools/list` order: the one list.
pub fn catalogue() -> Catalogue {
    Catalogue::new(vec![
        Entry::of::<search_knowledge_base::SearchKnowledgeBase>(),
        Entry::of::<get_transaction::GetTransaction>(),
        Entry::of::<list_transactions::ListTransactions>(),
        Entry::of::<get_service_health::GetServiceHealth>(),
        Entry::of::<screen_entity::ScreenEntity>(),
        Entry::of::<get_screening_result::GetScreeningResult>(),
        Entry::of::<raise_dispute::RaiseDispute>(),
        Entry::of::<flag_transaction_for_review::FlagTransactionForReview>(),
    ])
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use kosha_auth::Role;
    use serde_json::{Value, json};

    use super::*;
    use crate::backends::Backend;
    use crate::tools::error::ToolError;

    fn names<'a>(it: impl Iterator<Item = &'a Entry>) -> Vec<&'static str> {
        it.map(|e| e.spec.name).collect()
    }

    /// The names `principal` may list under the built-in policy set, in catalogue order.
    fn listed(c: &Catalogue, principal: &kosha_auth::Principal) -> Vec<&'static str> {
        let set = kosha_authz::Policies::builtin();
        names(
            c.all()
                .filter(|e| set.may_list(principal, e.spec.name, "2025-11-25")),
        )
    }

    #[test]
    fn agents_see_the_data_tools_and_operators_only_health() {
        use kosha_authz::testing::principal;
        let c = catalogue();
        let agent = listed(&c, &principal("a", &["agent"]));
        assert_eq!(
            agent,
            [
                "search_knowledge_base",
                "get_transaction",
                "list_transactions",
                "get_service_health",
                "screen_entity",
                "get_screening_result",
                "raise_dispute",
                "flag_transaction_for_review"
            ]
        );
        assert_eq!(
            listed(&c, &principal("o", &["operator"])),
            ["get_service_health"]
        );
        assert_eq!(listed(&c, &principal("t", &["agent", "operator"])), agent);
        assert!(listed(&c, &principal("n", &["admins"])).is_empty());
        assert!(c.named("drop_tables").is_none());
        assert!(c.named("get_transaction").is_some());
    }

    proptest::proptest! {
        /// The built-in policy set is the catalogue's role table (SPEC §4, §5a): for every
        /// combination of roles, as a user's groups or a machine client's scopes, and every
        /// tool, listing and calling allow exactly the tools one of the roles may call.
        #[test]
        fn the_builtin_set_is_the_role_table(agent: bool, operator: bool, user: bool, tool in 0usize..8) {
            let roles: Vec<Role> = [(agent, Role::Agent), (operator, Role::Operator)]
                .into_iter()
                .filter_map(|(has, role)| has.then_some(role))
                .collect();
            let groups: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
            let p = if user {
                kosha_authz::testing::principal("u", &groups)
            } else {
                kosha_authz::testing::machine("m", &roles)
            };
            let c = catalogue();
            let Some(e) = c.all().nth(tool) else { return Err(proptest::test_runner::TestCaseError::fail("no tool")) };
            let set = kosha_authz::Policies::builtin();
            let expected = e.allowed(&roles);
            proptest::prop_assert_eq!(set.may_list(&p, e.spec.name, "2026-07-28"), expected);
            let decision = set.listing(&p, e.spec.name, "2025-11-25");
            proptest::prop_assert_eq!(decision.is_allow(), expected);
            proptest::prop_assert!(!set.reads(e.spec.name).any(), "the built-in set reads no call");
        }
    }

    #[test]
    fn names_are_unique_and_every_input_schema_compiles() {
        let c = catalogue();
        let all = names(c.all());
        let unique: BTreeSet<_> = all.iter().collect();
        assert_eq!(unique.len(), all.len());
        for e in c.all() {
            assert!(e.args_schema().is_ok(), "{}", e.spec.name);
            assert_eq!(e.tool().input_schema.get("type"), Some(&json!("object")));
        }
    }

    #[test]
    fn output_schemas_admit_the_result_and_the_error_shape() {
        for e in catalogue().all() {
            let schema = Value::Object((*e.tool().output_schema.clone().unwrap()).clone());
            assert_eq!(schema["type"], "object", "{}", e.spec.name);
            let v = jsonschema::draft202012::new(&schema).unwrap();
            let error = ToolError::NotFound("x".into()).to_json();
            assert!(v.is_valid(&error), "{}", e.spec.name);
            let busy = ToolError::DependencyUnavailable {
                dependency: kosha_contract::dependency::Dependency::CoreApi,
                retry_after_s: Some(3),
            }
            .to_json();
            assert!(v.is_valid(&busy), "{}", e.spec.name);
            assert!(!v.is_valid(&json!({"error": {"code": "teapot", "message": "m"}})));
        }
    }

    #[test]
    fn only_standard_formats_remain() {
        let c = catalogue();
        for e in c.all() {
            for schema in [
                Value::Object((*e.tool().input_schema).clone()),
                Value::Object((*e.tool().output_schema.clone().unwrap()).clone()),
            ] {
                let text = schema.to_string();
                for bad in [
                    "uint32", "uint64", "int64", "int32", "uint", "double", "float",
                ] {
                    assert!(
                        !text.contains(&format!("\"format\":\"{bad}\"")),
                        "{}: {text}",
                        e.spec.name
                    );
                }
            }
        }
    }

    #[test]
    fn health_lists_the_backends_the_tools_call() {
        assert_eq!(
            catalogue().backends().into_iter().collect::<Vec<_>>(),
            [
                Backend::CoreApiRead,
                Backend::CoreApiWrite,
                Backend::ScreeningSim
            ]
        );
    }

    #[test]
    fn docs_print_the_role_table() {
        let docs = include_str!("../../../../docs/operations.md");
        let table = catalogue().role_table();
        assert!(
            docs.contains(&table),
            "docs/operations.md is out of date:\n{table}"
        );
    }

    #[test]
    fn docs_tools_md_is_generated_from_the_catalogue() {
        let docs = include_str!("../../../../docs/tools.md");
        assert!(
            docs == reference::markdown(&catalogue()),
            "docs/tools.md is out of date: run \
             `cargo run -p mcp-gateway --example tools_reference > docs/tools.md`"
        );
    }
}
