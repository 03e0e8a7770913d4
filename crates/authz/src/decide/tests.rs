use kosha_auth::Role;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;
use crate::request::Record;
use crate::testing::{machine, principal};

/// Every tool, and the roles that may call it (SPEC §4's role table).
const TABLE: [(&str, &[Role]); 8] = [
    ("search_knowledge_base", &[Role::Agent]),
    ("get_transaction", &[Role::Agent]),
    ("list_transactions", &[Role::Agent]),
    ("get_service_health", &[Role::Agent, Role::Operator]),
    ("screen_entity", &[Role::Agent]),
    ("get_screening_result", &[Role::Agent]),
    ("raise_dispute", &[Role::Agent]),
    ("flag_transaction_for_review", &[Role::Agent]),
];

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn input(tool: &str) -> Map<String, Value> {
    obj(match tool {
        "search_knowledge_base" => json!({"query": "chargeback"}),
        "get_transaction" => json!({"transaction_id": "txn_000001"}),
        "list_transactions" => json!({"account_id": "acc_0001"}),
        "screen_entity" => json!({"name": "Ann"}),
        "get_screening_result" => json!({"screening_id": "scr_01"}),
        "raise_dispute" => {
            json!({"transaction_id": "txn_000001", "reason": "r", "amount_minor": 100})
        }
        "flag_transaction_for_review" => json!({"transaction_id": "txn_000001", "reason": "r"}),
        _ => json!({}),
    })
}

proptest! {
    /// The built-in set is the role table: for every combination of roles (as groups of a
    /// user or scopes of a machine client) and every tool, calling and listing agree with it.
    #[test]
    fn the_builtin_set_is_the_role_table(agent: bool, operator: bool, user: bool, tool in 0usize..8) {
        let mut roles = Vec::new();
        if agent { roles.push(Role::Agent); }
        if operator { roles.push(Role::Operator); }
        let groups: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
        let p = if user { principal("u1", &groups) } else { machine("m1", &roles) };
        let (name, allowed) = TABLE[tool];
        let expected = allowed.iter().any(|r| roles.contains(r));
        let args = input(name);
        let decision = Policies::builtin().decide(&Ask::new(&p, name, &args));
        prop_assert_eq!(matches!(decision, Decision::Allow { .. }), expected, "{:?}", decision);
        prop_assert_eq!(Policies::builtin().may_list(&p, name, "2025-11-25"), expected);
    }
}

const CAP: &str = r#"
@id("disputes-capped")
@reason("disputes over 500.00 EUR need a supervisor")
forbid (principal, action == Kosha::Action::"raise_dispute", resource)
when { context has record && context.record.currency == "EUR" && context.input.amount_minor > 50000 }
unless { principal.groups.contains("supervisor") };
"#;

fn with_builtin(extra: &str) -> Policies {
    Policies::parse(&format!("{}\n{extra}", crate::BUILTIN)).unwrap()
}

fn eur(amount_minor: i64) -> Record {
    Record {
        account_id: "acc_0001".into(),
        amount_minor,
        currency: "EUR".into(),
    }
}

#[test]
fn a_forbid_on_arguments_and_record_answers_its_reason() {
    let set = with_builtin(CAP);
    let agent = principal("u1", &["agent"]);
    let big = obj(json!({"transaction_id": "txn_000001", "reason": "r", "amount_minor": 60000}));
    let record = eur(60000);
    let mut ask = Ask::new(&agent, "raise_dispute", &big);
    ask.record = Some(&record);
    assert_eq!(
        set.decide(&ask),
        Decision::Forbid {
            reason: "disputes over 500.00 EUR need a supervisor".into(),
            policies: vec!["disputes-capped".into()]
        }
    );
    // Listed all the same: some dispute is under the cap.
    assert!(set.may_list(&agent, "raise_dispute", "2025-11-25"));
    let supervisor = principal("u2", &["agent", "supervisor"]);
    let mut ask = Ask::new(&supervisor, "raise_dispute", &big);
    ask.record = Some(&record);
    assert!(matches!(set.decide(&ask), Decision::Allow { .. }));
    let small = obj(json!({"transaction_id": "txn_000001", "reason": "r", "amount_minor": 100}));
    let mut ask = Ask::new(&agent, "raise_dispute", &small);
    ask.record = Some(&record);
    assert!(matches!(set.decide(&ask), Decision::Allow { .. }));
}

#[test]
fn a_deny_that_a_confirmation_lifts_asks_and_any_other_forbids() {
    let set = with_builtin(
        r#"@id("confirm-big")
        forbid (principal, action == Kosha::Action::"raise_dispute", resource)
        when { context.input.amount_minor > 50000 } unless { context.confirmed };"#,
    );
    let agent = principal("u1", &["agent"]);
    let big = obj(json!({"transaction_id": "txn_000001", "reason": "r", "amount_minor": 60000}));
    assert_eq!(
        set.decide(&Ask::new(&agent, "raise_dispute", &big)),
        Decision::Confirm {
            policies: vec!["confirm-big".into()]
        }
    );
    // An operator has no permit at all: no confirmation would help.
    let operator = principal("u3", &["operator"]);
    assert!(matches!(
        set.decide(&Ask::new(&operator, "raise_dispute", &big)),
        Decision::Forbid { .. }
    ));
}

#[test]
fn an_evaluation_error_is_a_deny_never_an_unasked_run() {
    // Overflow at run time: validation passes, evaluation errors.
    let set = with_builtin(
        r#"@id("broken-confirm")
        forbid (principal, action == Kosha::Action::"raise_dispute", resource)
        when { context.input.amount_minor * 9223372036854775807 > 0 } unless { context.confirmed };"#,
    );
    let agent = principal("u1", &["agent"]);
    let big = obj(json!({"transaction_id": "txn_000001", "reason": "r", "amount_minor": 60000}));
    let d = set.decide(&Ask::new(&agent, "raise_dispute", &big));
    assert_eq!(
        d,
        Decision::Forbid {
            reason: NOT_PERMITTED.into(),
            policies: vec!["broken-confirm".into()]
        }
    );
}

#[test]
fn context_that_does_not_fit_the_schema_is_a_deny() {
    let set = with_builtin(CAP);
    let agent = principal("u1", &["agent"]);
    // amount_minor missing: the gateway must fill the dispute's default first.
    let args = obj(json!({"transaction_id": "txn_000001", "reason": "r"}));
    assert!(matches!(
        set.decide(&Ask::new(&agent, "raise_dispute", &args)),
        Decision::Forbid { .. }
    ));
}

#[test]
fn tags_and_client_ids_are_readable() {
    let set = Policies::parse(
        r#"permit (principal, action == Kosha::Action::"get_transaction", resource)
        when { principal.hasTag("custom:branch") && principal.getTag("custom:branch") == "north" };"#,
    )
    .unwrap();
    let mut p = principal("u1", &["agent"]);
    let args = input("get_transaction");
    assert!(matches!(
        set.decide(&Ask::new(&p, "get_transaction", &args)),
        Decision::Forbid { .. }
    ));
    p.tags.insert("custom:branch".into(), "north".into());
    assert!(matches!(
        set.decide(&Ask::new(&p, "get_transaction", &args)),
        Decision::Allow { .. }
    ));
}

#[test]
fn the_time_is_the_given_clock() {
    let set = with_builtin(
        r#"@id("office-hours")
        @reason("raise_dispute is closed outside 08:00-18:00 UTC")
        forbid (principal, action == Kosha::Action::"raise_dispute", resource)
        when { context.time_of_day < 28800 || context.time_of_day >= 64800 || context.weekday > 5 };"#,
    );
    let agent = principal("u1", &["agent"]);
    let args = input("raise_dispute");
    let mut ask = Ask::new(&agent, "raise_dispute", &args);
    // 2026-12-07 is a Monday: 1_796_601_600 is its midnight UTC.
    ask.now_s = 1_796_601_600 + 7 * 3600; // 07:00 UTC
    assert!(matches!(set.decide(&ask), Decision::Forbid { .. }));
    ask.now_s += 2 * 3600; // 09:00 UTC
    assert!(matches!(set.decide(&ask), Decision::Allow { .. }));
    ask.now_s -= 2 * 86_400; // Saturday 09:00 UTC
    assert!(matches!(set.decide(&ask), Decision::Forbid { .. }));
    assert!(set.may_list(&agent, "raise_dispute", "2025-11-25"));
}

#[test]
fn a_permit_on_arguments_lists_its_tool_and_a_static_forbid_hides_it() {
    let set = Policies::parse(
        r#"permit (principal, action == Kosha::Action::"list_transactions", resource)
        when { context.input.account_id == "acc_0001" };
        forbid (principal, action == Kosha::Action::"get_transaction", resource)
        when { principal.client_id == "app" };
        permit (principal, action == Kosha::Action::"get_transaction", resource);"#,
    )
    .unwrap();
    let p = principal("u1", &["agent"]);
    assert!(set.may_list(&p, "list_transactions", "2025-11-25"));
    assert!(!set.may_list(&p, "get_transaction", "2025-11-25"));
    assert!(!set.may_list(&p, "search_knowledge_base", "2025-11-25"));
    let other = obj(json!({"account_id": "acc_0002"}));
    assert!(matches!(
        set.decide(&Ask::new(&p, "list_transactions", &other)),
        Decision::Forbid { .. }
    ));
}

#[test]
fn a_remembered_listing_is_never_another_principals() {
    let set = Policies::parse(
        r#"permit (principal, action == Kosha::Action::"get_transaction", resource)
        when { principal.hasTag("custom:branch") && principal.getTag("custom:branch") == "north" };"#,
    )
    .unwrap();
    let mut north = principal("u1", &["agent"]);
    north.tags.insert("custom:branch".into(), "north".into());
    let mut south = north.clone();
    south.tags.insert("custom:branch".into(), "south".into());
    for _ in 0..2 {
        assert!(set.may_list(&north, "get_transaction", "2025-11-25"));
        assert!(!set.may_list(&south, "get_transaction", "2025-11-25"));
    }
}

#[test]
fn input_of_the_wrong_type_is_a_deny_not_a_guess() {
    let set = with_builtin(CAP);
    let agent = principal("u1", &["agent"]);
    let record = eur(60000);
    for amount in [json!("60000"), json!(600.5), json!([60000])] {
        let args =
            obj(json!({"transaction_id": "txn_000001", "reason": "r", "amount_minor": amount}));
        let mut ask = Ask::new(&agent, "raise_dispute", &args);
        ask.record = Some(&record);
        assert!(
            matches!(set.decide(&ask), Decision::Forbid { .. }),
            "{amount}"
        );
    }
}
