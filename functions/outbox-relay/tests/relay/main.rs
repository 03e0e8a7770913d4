//! outbox-relay against a real PostgreSQL (a throwaway database per test, core-api's harness)
//! and the AWS emulator (`AWS_ENDPOINT_URL`, a queue per test): outages, a killed relay,
//! concurrent relays, refused entries, the sweep and the gauges. Each test counts events by
//! `event_id` and prints `lost` and `duplicates`.
// Test helpers outside #[test] fns: a failed expectation is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../../../core-api/tests/api/common.rs"]
mod common;
mod harness;

mod concurrency;
mod kill;
mod outage;
mod rules;
mod throughput;
