//! DynamoDB unreachable: every call fails open and is counted, but the WARN is logged at most
//! once per reason per 60 s, with the number suppressed (SPEC §6, §12). Its own test binary,
//! because the metrics recorder is process-global.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers
mod common;

use std::sync::Arc;

use common::{LogSink, TestRecorder, closed_port};
use kosha_resilience::rate_limit::RateDecision;
use kosha_state::{DynamoRateLimiter, ManualClock, RateLimitSettings, StateTable};

/// The logged fail-open WARN lines.
fn warns(logs: &LogSink) -> Vec<String> {
    logs.text()
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("rate_limit_fail_open"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn fail_open_warns_once_per_minute_and_counts_every_call() {
    let recorder: &'static TestRecorder = Box::leak(Box::default());
    metrics::set_global_recorder(recorder).unwrap();
    let logs = LogSink::default();
    let _capture = logs.capture();

    let sdk = common::sdk_config_at(&format!("http://127.0.0.1:{}", closed_port())).await;
    let table = StateTable::new(aws_sdk_dynamodb::Client::new(&sdk), "kosha-state").unwrap();
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let limiter = DynamoRateLimiter::new(&table, RateLimitSettings::default(), clock.clone());

    for _ in 0..5 {
        assert_eq!(limiter.decide("agent-z").await, RateDecision::FailOpen);
    }
    clock.advance_ms(59_999);
    assert_eq!(limiter.decide("agent-y").await, RateDecision::FailOpen);
    let first = warns(&logs);
    assert_eq!(first.len(), 1, "{first:#?}");
    // A cold instance reads the item before its first write: the read is what fails.
    assert!(first[0].contains("reason=\"read_error\""), "{}", first[0]);
    assert!(first[0].contains("suppressed=0"), "{}", first[0]);

    clock.advance_ms(1);
    assert_eq!(limiter.decide("agent-z").await, RateDecision::FailOpen);
    let second = warns(&logs);
    assert_eq!(second.len(), 2, "{second:#?}");
    assert!(second[1].contains("suppressed=5"), "{}", second[1]);

    // The metric saw every call.
    assert_eq!(
        recorder.get("rate_limit{decision=fail_open,bucket=client}"),
        7
    );
}
