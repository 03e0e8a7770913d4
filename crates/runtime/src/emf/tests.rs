#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use metrics::Unit;
use serde_json::Value;

use super::{Emf, MAX_VALUES};
use crate::telemetry::SharedBuffer as Buffer;

/// Every document `emf` writes in one flush.
fn flush(emf: &Emf) -> Vec<Value> {
    let mut out = Vec::new();
    emf.flush(&mut out).unwrap();
    parse(&out)
}

fn parse(out: &[u8]) -> Vec<Value> {
    std::str::from_utf8(out)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON document per line"))
        .collect()
}

/// The values of histogram `name` over `docs`, in order.
fn values(docs: &[Value], name: &str) -> Vec<f64> {
    docs.iter()
        .filter_map(|d| d[name].as_array())
        .flatten()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

/// Issue #30: `metrics_cloudwatch_embedded` kept 100 values per flush and logged an ERROR line
/// for each one dropped.
#[test]
fn a_burst_of_1000_values_between_flushes_is_written_whole_without_a_log_line() {
    let logs = Buffer::default();
    let sink = logs.clone();
    let subscriber =
        crate::telemetry::subscriber(tracing_subscriber::EnvFilter::new("trace"), move || {
            sink.clone()
        });
    let _guard = crate::telemetry::capture_default(subscriber);
    let emf = Emf::new("Kosha");
    metrics::with_local_recorder(&emf, || {
        metrics::describe_histogram!("tool_duration_ms", Unit::Milliseconds, "wall time");
        for i in 0..1_000u32 {
            metrics::histogram!("tool_duration_ms", "tool" => "ping", "outcome" => "ok")
                .record(f64::from(i));
        }
        metrics::counter!("shed", "reason" => "x").increment(3);
    });
    let docs = flush(&emf);
    let durations: Vec<&Value> = docs
        .iter()
        .filter(|d| d.get("tool_duration_ms").is_some())
        .collect();
    assert_eq!(durations.len(), 10, "{docs:?}");
    for doc in &durations {
        assert!(doc["tool_duration_ms"].as_array().unwrap().len() <= MAX_VALUES);
        assert_eq!(doc["tool"], "ping");
        assert_eq!(doc["outcome"], "ok");
        let directive = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "Kosha");
        assert_eq!(
            directive["Dimensions"][0],
            serde_json::json!(["tool", "outcome"])
        );
        assert_eq!(
            directive["Metrics"],
            serde_json::json!([{"Name": "tool_duration_ms", "Unit": "Milliseconds"}])
        );
    }
    let written = values(&docs, "tool_duration_ms");
    println!("1000 values recorded, {} written", written.len());
    assert_eq!(written, (0..1_000u32).map(f64::from).collect::<Vec<_>>());
    assert_eq!(
        docs.iter().filter(|d| d["shed"] == 3).count(),
        1,
        "{docs:?}"
    );
    let logged = logs.text();
    assert!(logged.is_empty(), "nothing logged: {logged}");
    assert!(flush(&emf).is_empty(), "the next interval starts empty");
}

#[test]
fn a_label_sets_counters_and_gauges_ride_once_beside_its_histograms_first_values() {
    let emf = Emf::new("Kosha");
    emf.set_property("RequestId", "r-1");
    metrics::with_local_recorder(&emf, || {
        metrics::describe_counter!("retries", Unit::Count, "");
        let h = metrics::histogram!("lat", "dependency" => "core-api");
        for i in 0..150u32 {
            h.record(f64::from(i));
        }
        metrics::histogram!("other", "dependency" => "core-api").record_many(1.5, 120);
        metrics::counter!("retries", "dependency" => "core-api").increment(2);
        metrics::gauge!("breaker_state", "dependency" => "core-api").set(2.0);
        metrics::counter!("untouched", "dependency" => "core-api").increment(0);
    });
    let docs = flush(&emf);
    assert_eq!(docs.len(), 2, "{docs:?}");
    let first = &docs[0];
    assert_eq!(first["retries"], 2);
    assert_eq!(first["breaker_state"], 2.0);
    assert_eq!(first["lat"].as_array().unwrap().len(), 100);
    assert_eq!(first["other"].as_array().unwrap().len(), 100);
    assert!(
        first.get("untouched").is_none(),
        "a counter at 0 is left out"
    );
    let names: Vec<&Value> = first["_aws"]["CloudWatchMetrics"][0]["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["Name"])
        .collect();
    assert_eq!(names, ["breaker_state", "lat", "other", "retries"]);
    let retries = &first["_aws"]["CloudWatchMetrics"][0]["Metrics"][3];
    assert_eq!(retries["Unit"], "Count");
    assert!(
        first["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]
            .get("Unit")
            .is_none()
    );
    let second = &docs[1];
    assert!(second.get("retries").is_none() && second.get("breaker_state").is_none());
    assert_eq!(second["lat"].as_array().unwrap().len(), 50);
    assert_eq!(second["other"].as_array().unwrap().len(), 20);
    for doc in &docs {
        assert_eq!(doc["RequestId"], "r-1");
        assert_eq!(doc["dependency"], "core-api");
    }
    // The next flush: the gauge again, nothing else.
    let docs = flush(&emf);
    assert_eq!(docs.len(), 1);
    assert_eq!(
        docs[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"],
        serde_json::json!([{"Name": "breaker_state"}])
    );
}

#[test]
fn a_key_asked_for_as_another_kind_records_nothing() {
    let emf = Emf::new("Kosha");
    metrics::with_local_recorder(&emf, || {
        metrics::counter!("x").increment(1);
        metrics::histogram!("x").record(5.0);
    });
    let docs = flush(&emf);
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["x"], 1);
}

#[tokio::test(start_paused = true)]
async fn flush_every_writes_each_period_and_nothing_before() {
    let emf: &'static Emf = Box::leak(Box::new(Emf::new("Kosha")));
    let out = Buffer::default();
    let sink = out.clone();
    emf.flush_every(Duration::from_millis(1_000), move || sink.clone());
    metrics::with_local_recorder(emf, || {
        for i in 0..150u32 {
            metrics::histogram!("tool_duration_ms").record(f64::from(i));
        }
    });
    tokio::time::sleep(Duration::from_millis(999)).await;
    assert!(out.text().is_empty(), "not before the period");
    tokio::time::sleep(Duration::from_millis(2)).await;
    let docs = parse(out.text().as_bytes());
    assert_eq!(docs.len(), 2);
    assert_eq!(values(&docs, "tool_duration_ms").len(), 150);
    metrics::with_local_recorder(emf, || metrics::histogram!("tool_duration_ms").record(7.0));
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        values(&parse(out.text().as_bytes()), "tool_duration_ms").len(),
        151
    );
}

/// The hot path keeps its vector between flushes: after one interval of 1,000 values, the
/// next interval's 1,000 pushes need no allocation (the capacity is there already).
#[test]
fn the_next_interval_starts_with_the_last_ones_room() {
    let emf = Emf::new("Kosha");
    let h = metrics::with_local_recorder(&emf, || metrics::histogram!("lat"));
    for i in 0..1_000u32 {
        h.record(f64::from(i));
    }
    flush(&emf);
    let handles = emf.handles.read();
    let super::Handle::Histogram(samples) = handles.values().next().unwrap() else {
        panic!("a histogram");
    };
    assert!(samples.0.lock().capacity() >= 1_000);
}
