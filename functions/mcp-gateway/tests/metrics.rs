//! The EMF documents of real calls, checked against the table of `docs/metrics.md` (SPEC §12):
//! a tool call, a degraded search, a rate-limit refusal and a breaker trip, each through the
//! whole in-process gateway with the production EMF recorder (`kosha_runtime::emf`)
//! as the global recorder, flushed into a buffer as Lambda flushes after an invocation. Every
//! document must name only catalogued metrics, with exactly the table's dimensions and unit,
//! in namespace `Kosha`; each phase's values are checked too. One test: the recorder is global.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kosha_auth::Role;
use kosha_runtime::emf::Emf;
use mcp_gateway::backends::Backend;
use serde_json::{Value, json};
use tower::ServiceExt;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use common::{config, gateway_with, json_body, token, tools_call};

/// One row of the docs table.
#[derive(Debug)]
struct Row {
    unit: String,
    dimensions: BTreeSet<String>,
}

/// The rows of `docs/metrics.md`'s table, by metric name.
fn docs_table() -> BTreeMap<String, Row> {
    let docs = include_str!("../../../docs/metrics.md");
    let mut rows = BTreeMap::new();
    for line in docs.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`').to_owned();
        let dimensions = cells[4]
            .split(',')
            .map(|d| d.trim().trim_matches('`').to_owned())
            .filter(|d| !d.is_empty() && d != "—")
            .collect();
        rows.insert(
            name,
            Row {
                unit: cells[3].to_owned(),
                dimensions,
            },
        );
    }
    assert!(
        rows.len() >= 12,
        "the table has SPEC §12's metrics: {rows:?}"
    );
    rows
}

/// A flushed EMF document: its dimension values and its metric values.
#[derive(Debug)]
struct Doc {
    dims: BTreeMap<String, String>,
    values: BTreeMap<String, Value>,
}

/// Flushes `collector` and parses every document, checking each against the table.
fn flush(collector: &Emf, table: &BTreeMap<String, Row>) -> Vec<Doc> {
    let mut out = Vec::new();
    collector.flush(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut docs = Vec::new();
    for line in text.lines() {
        let doc: Value = serde_json::from_str(line).expect("one JSON document per line");
        let cw = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(cw["Namespace"], "Kosha", "{line}");
        let dim_names: BTreeSet<String> = cw["Dimensions"][0]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().to_owned())
            .collect();
        let mut values = BTreeMap::new();
        for m in cw["Metrics"].as_array().unwrap() {
            let name = m["Name"].as_str().unwrap();
            let row = table
                .get(name)
                .unwrap_or_else(|| panic!("{name} is not in docs/metrics.md: {line}"));
            assert_eq!(row.dimensions, dim_names, "dimensions of {name}: {line}");
            let unit = m.get("Unit").and_then(Value::as_str).unwrap_or("None");
            assert_eq!(row.unit, unit, "unit of {name}: {line}");
            values.insert(name.to_owned(), doc[name].clone());
        }
        let dims = dim_names
            .iter()
            .map(|d| (d.clone(), doc[d].as_str().unwrap().to_owned()))
            .collect();
        docs.push(Doc { dims, values });
    }
    docs
}

/// The value of `metric` in the document whose dimensions are exactly `dims`.
fn value<'a>(docs: &'a [Doc], metric: &str, dims: &[(&str, &str)]) -> Option<&'a Value> {
    let want: BTreeMap<String, String> = dims
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    docs.iter()
        .find(|d| d.dims == want && d.values.contains_key(metric))
        .and_then(|d| d.values.get(metric))
}

fn count(docs: &[Doc], metric: &str, dims: &[(&str, &str)]) -> f64 {
    value(docs, metric, dims)
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

/// `rate_limit{decision, bucket="client"}`: the default key (SPEC §6, §12).
fn client_bucket(docs: &[Doc], decision: &str) -> f64 {
    count(
        docs,
        "rate_limit",
        &[("decision", decision), ("bucket", "client")],
    )
}

async fn call(app: &axum::Router, client: &str, name: &str, args: Value) -> Value {
    let resp = app
        .clone()
        .oneshot(tools_call(1, &token(client, &[Role::Agent]), name, args))
        .await
        .unwrap();
    json_body(resp).await
}

#[tokio::test]
async fn emf_documents_of_real_calls_match_the_docs_table() {
    let collector = Emf::new("Kosha")
        .install()
        .expect("the only recorder of this test binary");
    kosha_runtime::metrics::describe();
    let table = docs_table();

    let core = MockServer::start().await;
    let txn = json!({"transaction": {"transaction_id": "txn_000001", "account_id": "acc_0001",
        "amount_minor": 1250, "currency": "EUR", "merchant": "M", "category": "c",
        "status": "booked", "booked_at": "2026-03-04T10:15:00Z"}});
    Mock::given(method("GET"))
        .and(path("/v1/transactions/txn_000001"))
        .respond_with(ResponseTemplate::new(200).set_body_json(txn))
        .mount(&core)
        .await;
    let degraded = json!({"results": [], "degraded": true,
                          "degraded_reason": "embeddings_unavailable"});
    Mock::given(method("POST"))
        .and(path("/v1/knowledge/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(degraded))
        .mount(&core)
        .await;
    // A bucket of one token per client for the refusal; a large one for the rest.
    let tiny = mcp_gateway::http::router(Arc::new(gateway_with(config(&core.uri(), 64), 1.0)));
    let gateway = Arc::new(gateway_with(config(&core.uri(), 64), 10_000.0));
    let app = mcp_gateway::http::router(gateway.clone());
    flush(collector, &table);

    // 1. A real tool call: its duration, the rate-limit decision, the breaker closed.
    let body = call(
        &app,
        "agent-a",
        "get_transaction",
        json!({"transaction_id": "txn_000001"}),
    )
    .await;
    assert_eq!(
        body["result"]["structuredContent"]["transaction"]["transaction_id"],
        "txn_000001"
    );
    let docs = flush(collector, &table);
    let durations = value(
        &docs,
        "tool_duration_ms",
        &[("tool", "get_transaction"), ("outcome", "ok")],
    )
    .and_then(Value::as_array)
    .expect("one duration for the call");
    assert_eq!(durations.len(), 1);
    assert!(durations[0].as_f64().unwrap() >= 0.0);
    assert_eq!(client_bucket(&docs, "allowed"), 1.0);
    assert_eq!(
        count(&docs, "breaker_state", &[("dependency", "core-api")]),
        0.0
    );
    let emf_bytes: usize = {
        // The EMF bytes one Lambda invocation of a tool call writes (docs/benchmarks.md).
        call(
            &app,
            "agent-a",
            "get_transaction",
            json!({"transaction_id": "txn_000001"}),
        )
        .await;
        let mut out = Vec::new();
        collector.flush(&mut out).unwrap();
        println!(
            "EMF per tool-call invocation: {} lines, {} bytes",
            out.iter().filter(|b| **b == b'\n').count(),
            out.len()
        );
        out.len()
    };
    assert!(emf_bytes < 2_000, "{emf_bytes} bytes of EMF per invocation");

    // 2. A degraded search (SPEC §10), counted by the dispatch.
    let body = call(
        &app,
        "agent-a",
        "search_knowledge_base",
        json!({"query": "chargeback"}),
    )
    .await;
    assert_eq!(body["result"]["structuredContent"]["degraded"], true);
    let docs = flush(collector, &table);
    assert_eq!(
        count(
            &docs,
            "degraded",
            &[
                ("tool", "search_knowledge_base"),
                ("reason", "embeddings_unavailable")
            ]
        ),
        1.0
    );

    // 3. A rate-limit refusal: the second call of a one-token bucket.
    for _ in 0..2 {
        call(&tiny, "agent-b", "get_service_health", json!({})).await;
    }
    let docs = flush(collector, &table);
    assert_eq!(client_bucket(&docs, "limited"), 1.0);
    assert_eq!(client_bucket(&docs, "allowed"), 1.0);
    let refused = value(
        &docs,
        "tool_duration_ms",
        &[("tool", "get_service_health"), ("outcome", "rate_limited")],
    )
    .and_then(Value::as_array)
    .expect("the refusal's duration");
    assert_eq!(refused.len(), 1);

    // 4. A breaker trip: core-api answers 503 until the breaker opens, then calls are shed.
    core.reset().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&core)
        .await;
    let breaker = gateway.policy(Backend::CoreApiRead).breaker().clone();
    let mut calls = 0;
    while breaker.state().as_str() != "open" {
        calls += 1;
        assert!(
            calls <= 100,
            "the breaker did not open after 100 failing calls"
        );
        let body = call(
            &app,
            "agent-a",
            "get_transaction",
            json!({"transaction_id": "txn_000001"}),
        )
        .await;
        assert_eq!(
            body["result"]["structuredContent"]["error"]["code"],
            "dependency_unavailable"
        );
    }
    call(
        &app,
        "agent-a",
        "get_transaction",
        json!({"transaction_id": "txn_000001"}),
    )
    .await;
    let docs = flush(collector, &table);
    assert_eq!(
        count(&docs, "breaker_state", &[("dependency", "core-api")]),
        2.0
    );
    assert_eq!(count(&docs, "shed", &[("reason", "breaker_open")]), 1.0);
    assert!(count(&docs, "retries", &[("dependency", "core-api")]) >= 1.0);
    let failed = value(
        &docs,
        "tool_duration_ms",
        &[
            ("tool", "get_transaction"),
            ("outcome", "dependency_unavailable"),
        ],
    )
    .and_then(Value::as_array)
    .expect("durations of the failed calls");
    assert_eq!(failed.len(), calls + 1);

    // 5. A burst between two flushes (issue #30: at ~160 calls/s, 31 % of the durations were
    //    lost past 100 values per flush): every value is in the output, at most 100 per
    //    document (EMF's limit for one metric's array).
    let burst =
        metrics::histogram!("tool_duration_ms", "tool" => "get_transaction", "outcome" => "ok");
    for i in 0..1_000u32 {
        burst.record(f64::from(i));
    }
    let docs = flush(collector, &table);
    let arrays: Vec<&Vec<Value>> = docs
        .iter()
        .filter(|d| {
            d.dims.get("tool").map(String::as_str) == Some("get_transaction")
                && d.dims.get("outcome").map(String::as_str) == Some("ok")
        })
        .filter_map(|d| d.values.get("tool_duration_ms").and_then(Value::as_array))
        .collect();
    assert!(
        arrays.iter().all(|a| a.len() <= 100),
        "at most 100 values a document"
    );
    let written: Vec<f64> = arrays
        .iter()
        .flat_map(|a| a.iter().map(|v| v.as_f64().unwrap()))
        .collect();
    println!(
        "burst: 1000 values recorded, {} written in {} documents",
        written.len(),
        arrays.len()
    );
    assert_eq!(written.len(), 1_000);
    assert_eq!(
        written,
        (0..1_000u32).map(f64::from).collect::<Vec<_>>(),
        "every value, in order"
    );
}
