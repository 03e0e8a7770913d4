//! Cost of refusing a hostile 1 MiB body in the one bounded parse (issue 16, "Unbounded parse
//! cost"; attack pass of 2026-12-01, commit 5152bfa): each body breaks a bound of [`Limits::REQUEST`] early and
//! holds far more after it. Since the parse stops at the bound, the figures stay near what
//! the first 10,000 values cost; scanning each body to its end cost 2.6–6.8 ms.
//!
//! Run: `cargo bench -p kosha-contract --bench parse -- --warm-up-time 1 --measurement-time 3`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kosha_contract::json::{self, Fault, Limits};

/// A `ping` whose `params._meta` is `meta`.
fn ping_with_meta(meta: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{meta}}}}}"#)
        .into_bytes()
}

fn benches(c: &mut Criterion) {
    let zeros = ping_with_meta(&format!(r#"{{"a":[{}]}}"#, vec!["0"; 400_000].join(",")));
    let keys = ping_with_meta(&format!(
        "{{{}}}",
        (0..90_000)
            .map(|i| format!(r#""k{i}":0"#))
            .collect::<Vec<_>>()
            .join(",")
    ));
    let deep = ping_with_meta(&"[".repeat(500_000));
    let mut group = c.benchmark_group("refuse a hostile body");
    for (name, body) in [
        ("400,000 values (800 KB)", &zeros),
        ("90,000 keys (980 KB)", &keys),
        ("500,000 levels (500 KB)", &deep),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let parsed = json::parse(black_box(body), Limits::REQUEST, json::watch_jsonrpc);
                assert!(matches!(parsed, Err(Fault::Limit(_))));
            });
        });
    }
    group.finish();
}

criterion_group!(parse, benches);
criterion_main!(parse);
