//! DynamoDB unreachable: the rate limiter admits (fail open) and counts it (SPEC §6, §12).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers
//! Its own test binary, because the metrics recorder is process-global.
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{TestRecorder, closed_port};
use kosha_resilience::rate_limit::RateDecision;
use kosha_state::{DynamoRateLimiter, RateLimitSettings, StateTable, SystemClock};

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
    assert_eq!(
        recorder.get("rate_limit{decision=fail_open,bucket=client}"),
        3
    );
    assert_eq!(
        recorder.get("rate_limit{decision=allowed,bucket=client}"),
        0
    );

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
    assert_eq!(
        recorder.get("rate_limit{decision=fail_open,bucket=client}"),
        4
    );
    drop(hung);
}
