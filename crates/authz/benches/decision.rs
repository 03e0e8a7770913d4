//! The cost of one decision (SPEC §5a): at most 20 µs on average over a set of 100 policies
//! that are all in scope for the call, half of them reading `context.input`; and the built-in
//! set's decision, which the gateway pays on every call.
//!
//! `cargo bench -p kosha-authz --bench decision`

#![allow(
    clippy::expect_used,
    reason = "a bench: a set that does not validate is a bug to stop on"
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kosha_authz::{Ask, Decision, Policies, testing};
use serde_json::json;

/// 100 policies in scope for `raise_dispute`: 50 permits on the principal, 50 forbids on the
/// arguments (none of which applies to the call measured); with `permits = false`, the 50
/// forbids and one permit, to show what Cedar spends on forbids alone.
fn bench_set(permits: bool) -> String {
    let mut text = String::from(if permits {
        ""
    } else {
        "@id(\"p\")\npermit (principal, action, resource);\n"
    });
    for i in 0..50 {
        if permits {
            text.push_str(&format!(
                "@id(\"p{i}\")\npermit (principal, action == Kosha::Action::\"raise_dispute\", resource)\n\
                 when {{ principal.roles.contains(\"agent\") && principal.client_id != \"c{i}\" }};\n"
            ));
        }
        text.push_str(&format!(
            "@id(\"f{i}\")\nforbid (principal, action == Kosha::Action::\"raise_dispute\", resource)\n\
             when {{ context.input.amount_minor > {} && context.input.reason like \"*x{i}*\" }};\n",
            1_000_000 + i
        ));
    }
    text
}

fn decision(c: &mut Criterion) {
    let hundred = Policies::parse(&bench_set(true)).expect("the bench set validates");
    let forbids = Policies::parse(&bench_set(false)).expect("the bench set validates");
    let agent = testing::principal("u1", &["agent"]);
    let args =
        json!({"transaction_id": "txn_000001", "reason": "charged twice", "amount_minor": 81240});
    let args = args.as_object().expect("an object");
    let ask = Ask::new(&agent, "raise_dispute", args);
    assert!(matches!(hundred.decide(&ask), Decision::Allow { .. }));
    c.bench_function("decide/100 policies in scope, 50 reading input", |b| {
        b.iter(|| black_box(hundred.decide(black_box(&ask))))
    });
    assert!(matches!(forbids.decide(&ask), Decision::Allow { .. }));
    c.bench_function("decide/50 forbids reading input, 1 permit", |b| {
        b.iter(|| black_box(forbids.decide(black_box(&ask))))
    });
    let read = json!({"transaction_id": "txn_000001"});
    let read = read.as_object().expect("an object");
    let ask = Ask::new(&agent, "get_transaction", read);
    let builtin = Policies::builtin();
    c.bench_function("decide/built-in set, get_transaction", |b| {
        b.iter(|| black_box(builtin.decide(black_box(&ask))))
    });
    c.bench_function("may_list/built-in set, get_transaction (remembered)", |b| {
        b.iter(|| black_box(builtin.may_list(black_box(&agent), "get_transaction", "2025-11-25")))
    });
    c.bench_function("parse/built-in set", |b| {
        b.iter(|| black_box(Policies::parse(kosha_authz::BUILTIN)))
    });
}

criterion_group!(benches, decision);
criterion_main!(benches);
