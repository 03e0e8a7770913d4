//! DynamoDB unreachable: the rate limiter admits (fail open) and counts it (SPEC §6, §12).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers
//! Its own test binary, because the metrics recorder is process-global.
mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kosha_resilience::rate_limit::RateDecision;
use kosha_state::{DynamoRateLimiter, RateLimitSettings, StateTable, SystemClock};
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use parking_lot::Mutex;

/// Counters by `name{label=value,…}`.
#[derive(Default)]
struct TestRecorder(Mutex<HashMap<String, Arc<AtomicU64>>>);

impl TestRecorder {
    fn get(&self, key: &str) -> u64 {
        self.0
            .lock()
            .get(key)
            .map_or(0, |c| c.load(Ordering::SeqCst))
    }
}

impl Recorder for TestRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        Counter::from_arc(Arc::clone(self.0.lock().entry(name).or_default()))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// A loopback port with nothing listening (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn unreachable_dynamodb_fails_open_and_is_counted() {
    let recorder: &'static TestRecorder = Box::leak(Box::default());
    metrics::set_global_recorder(recorder).unwrap();

    let sdk = common::sdk_config_at(&format!("http://127.0.0.1:{}", closed_port())).await;
    let table = StateTable::new(aws_sdk_dynamodb::Client::new(&sdk), "kosha-state").unwrap();
    let limiter =
        DynamoRateLimiter::new(&table, RateLimitSettings::default(), Arc::new(SystemClock));
    for _ in 0..3 {
        assert_eq!(limiter.decide("agent-z").await, RateDecision::FailOpen);
    }
    assert_eq!(recorder.get("rate_limit{decision=fail_open}"), 3);
    assert_eq!(recorder.get("rate_limit{decision=allowed}"), 0);

    // A hung endpoint (accepts, never answers) hits the 100 ms bound instead.
    let hung = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = hung.local_addr().unwrap().port();
    let sdk = common::sdk_config_at(&format!("http://127.0.0.1:{port}")).await;
    let table = StateTable::new(aws_sdk_dynamodb::Client::new(&sdk), "kosha-state").unwrap();
    let limiter =
        DynamoRateLimiter::new(&table, RateLimitSettings::default(), Arc::new(SystemClock));
    let started = tokio::time::Instant::now();
    assert_eq!(limiter.decide("agent-z").await, RateDecision::FailOpen);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "bounded by the call timeout"
    );
    assert_eq!(recorder.get("rate_limit{decision=fail_open}"), 4);
    drop(hung);
}
