use serde_json::json;

use super::*;

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(map) => map,
        _ => panic!("not an object"),
    }
}

fn eur(amount_minor: i64) -> Record {
    Record {
        account_id: "acc_0012".into(),
        amount_minor,
        currency: "EUR".into(),
    }
}

const READS_INPUT: Reads = Reads {
    input: true,
    record: false,
    now: false,
    confirmed: false,
    protocol_version: false,
};

const READS_RECORD: Reads = Reads {
    input: false,
    record: true,
    now: false,
    confirmed: false,
    protocol_version: false,
};

fn usage(result: Result<Call, Failure>) -> String {
    match result {
        Err(Failure::Usage(m)) => m,
        other => panic!("expected a usage error, got {other:?}"),
    }
}

#[test]
fn a_dispute_without_an_amount_takes_the_records() {
    let args = obj(json!({"transaction_id": "txn_000341", "reason": "twice"}));
    let call = prepare(READS_INPUT, "raise_dispute", args.clone(), Some(eur(81240))).unwrap();
    assert_eq!(call.input["amount_minor"], json!(81240));
    // The caller's amount stands.
    let mut given = args.clone();
    given.insert("amount_minor".into(), json!(100));
    let call = prepare(READS_INPUT, "raise_dispute", given, Some(eur(81240))).unwrap();
    assert_eq!(call.input["amount_minor"], json!(100));
    // null counts as absent.
    let mut null = args.clone();
    null.insert("amount_minor".into(), Value::Null);
    let call = prepare(READS_INPUT, "raise_dispute", null, Some(eur(81240))).unwrap();
    assert_eq!(call.input["amount_minor"], json!(81240));
    // Without a record, only a set that reads nothing can decide it.
    let m = usage(prepare(READS_INPUT, "raise_dispute", args.clone(), None));
    assert!(m.contains("--record") && m.contains("amount_minor"), "{m}");
    let call = prepare(Reads::default(), "raise_dispute", args.clone(), None).unwrap();
    assert_eq!(call.input, args);
}

#[test]
fn the_record_reaches_the_policies_only_when_they_read_it() {
    let args = obj(json!({"transaction_id": "txn_000341"}));
    let call = prepare(READS_RECORD, "get_transaction", args.clone(), Some(eur(5))).unwrap();
    assert_eq!(call.record, Some(eur(5)));
    let call = prepare(READS_INPUT, "get_transaction", args.clone(), Some(eur(5))).unwrap();
    assert_eq!(call.record, None);
    let m = usage(prepare(READS_RECORD, "get_transaction", args, None));
    assert!(
        m.contains("context.record") && m.contains("--record"),
        "{m}"
    );
}

#[test]
fn a_record_for_a_tool_that_addresses_none_is_bad_usage() {
    let args = obj(json!({"account_id": "acc_0012"}));
    let m = usage(prepare(
        READS_RECORD,
        "list_transactions",
        args,
        Some(eur(5)),
    ));
    assert!(
        m.contains("list_transactions addresses no transaction"),
        "{m}"
    );
}

#[test]
fn the_line_has_the_decision_its_policies_a_forbids_reason_and_the_listing() {
    let forbid = Decision::Forbid {
        reason: "over the cap".into(),
        policies: vec!["cap".into()],
    };
    assert_eq!(
        line(&forbid, true).unwrap(),
        r#"{"decision":"forbid","policies":["cap"],"reason":"over the cap","listed":true}"#
    );
    let allow = Decision::Allow {
        policies: vec!["a".into(), "b".into()],
    };
    assert_eq!(
        line(&allow, false).unwrap(),
        r#"{"decision":"allow","policies":["a","b"],"listed":false}"#
    );
    let confirm = Decision::Confirm {
        policies: vec!["big".into()],
    };
    assert_eq!(
        line(&confirm, true).unwrap(),
        r#"{"decision":"confirm","policies":["big"],"listed":true}"#
    );
}

#[test]
fn the_token_loses_its_scheme_and_never_shows_in_debug() {
    let given = |t: &str| token(&Token::Given(t.to_owned())).ok();
    assert_eq!(given("abc.def.ghi").as_deref(), Some("abc.def.ghi"));
    assert_eq!(
        given(" Bearer abc.def.ghi\n").as_deref(),
        Some("abc.def.ghi")
    );
    assert_eq!(given("bearer  abc").as_deref(), Some("abc"));
    assert!(matches!(
        token(&Token::Given("  ".into())),
        Err(Failure::Usage(_))
    ));
    assert!(matches!(
        token(&Token::Given("Bearer ".into())),
        Err(Failure::Usage(_))
    ));
    let shown = format!("{:?}", Token::Given("secret.token.value".into()));
    assert!(!shown.contains("secret"), "{shown}");
}

#[test]
fn arguments_are_parsed_strictly() {
    assert!(parse_object(r#"{"a": 1}"#).is_ok());
    assert!(parse_object("[1]").unwrap_err().contains("JSON object"));
    assert!(parse_object("{").unwrap_err().starts_with("not JSON"));
    assert_eq!(
        parse_record(r#"{"account_id":"acc_0012","amount_minor":81240,"currency":"EUR"}"#),
        Ok(eur(81240))
    );
    for bad in [
        r#"{"account_id":"acc_0012","amount_minor":812.4,"currency":"EUR"}"#,
        r#"{"account_id":"acc_0012","currency":"EUR"}"#,
        r#"{"account_id":"acc_0012","amount_minor":1,"currency":"EUR","x":1}"#,
    ] {
        assert!(parse_record(bad).is_err(), "{bad}");
    }
    assert!(parse_revision("2026-07-28").is_ok());
    for bad in ["2026-7-28", "latest", "2026/07/28", "２０２６-07-28"] {
        assert!(parse_revision(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_tool_is_one_of_the_schemas() {
    assert!(parse_tool("raise_dispute").is_ok());
    let m = parse_tool("drop_tables").unwrap_err();
    assert!(m.contains("get_service_health"), "{m}");
}
