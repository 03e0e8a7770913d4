use super::*;

#[test]
fn the_builtin_set_validates_and_names_its_policies() {
    let ids = Policies::builtin().ids();
    assert_eq!(ids, ["agents", "health"]);
}

#[test]
fn a_parse_error_names_the_line() {
    let text = "@id(\"ok\")\npermit (principal, action, resource);\n\n@id(\"bad\")\npermit (principal, action, resource) when { principal.client_id == };\n";
    let e = Policies::parse(text).unwrap_err();
    assert_eq!(e.line, Some(5), "{e}");
    assert_eq!(e.policy.as_deref(), Some("bad"), "{e}");
    assert!(e.to_string().starts_with("policy bad at line 5: "), "{e}");
}

#[test]
fn a_validation_error_names_the_policy_and_its_line() {
    let text = "@id(\"fine\")\npermit (principal, action, resource);\n\n@id(\"typo\")\nforbid (principal, action == Kosha::Action::\"raise_dispute\", resource)\nwhen { context.input.amount > 5 };\n";
    let e = Policies::parse(text).unwrap_err();
    assert_eq!(e.policy.as_deref(), Some("typo"), "{e}");
    assert_eq!(e.line, Some(6), "{e}");
    assert!(e.to_string().starts_with("policy typo at line 6: "), "{e}");
}

#[test]
fn an_unknown_tool_does_not_validate() {
    let e =
        Policies::parse("permit (principal, action == Kosha::Action::\"drop_tables\", resource);")
            .unwrap_err();
    assert_eq!(e.policy.as_deref(), Some("policy0"), "{e}");
}

#[test]
fn confirmed_read_for_a_read_tool_does_not_validate() {
    let text = "@id(\"confirm-reads\")\nforbid (principal, action == Kosha::Action::\"get_transaction\", resource)\nunless { context.confirmed };";
    let e = Policies::parse(text).unwrap_err();
    assert_eq!(e.policy.as_deref(), Some("confirm-reads"), "{e}");
    let writes = "forbid (principal, action == Kosha::Action::\"raise_dispute\", resource)\nunless { context.confirmed };";
    assert!(Policies::parse(writes).is_ok());
}

#[test]
fn two_policies_with_one_id_are_refused() {
    let text = "@id(\"a\")\npermit (principal, action, resource);\n@id(\"a\")\nforbid (principal, action, resource);";
    let e = Policies::parse(text).unwrap_err();
    assert_eq!(e.policy.as_deref(), Some("a"));
}

#[test]
fn reads_are_per_tool() {
    let text = "forbid (principal, action == Kosha::Action::\"raise_dispute\", resource)\nwhen { context has record && context.record.currency == \"EUR\" };";
    let p = Policies::parse(text).unwrap();
    assert!(p.reads("raise_dispute").record);
    assert!(!p.reads("get_transaction").any());
    assert!(!Policies::builtin().reads("raise_dispute").any());
}
