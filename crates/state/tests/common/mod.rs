//! Shared helpers for the tests against the AWS emulator (the request counter is
//! `kosha_state::test_support`'s, shared with benches/bucket-load).
//!
//! The emulator is started by the test run, not here: `scripts/moto start` prints its URL and
//! `scripts/test` exports it as `AWS_ENDPOINT_URL`. Without it these tests fail at once with
//! a message saying so (they never start or leave behind a process, and they refuse any
//! endpoint that is not on loopback, so they can never touch a real AWS account).
#![allow(dead_code, clippy::unwrap_used)]

pub mod fake_dynamo;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::Credentials;
use kosha_state::StateTable;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use parking_lot::Mutex;

/// The emulator's URL from `AWS_ENDPOINT_URL`; panics with instructions when unset.
pub fn endpoint() -> String {
    let url = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        !url.is_empty(),
        "AWS_ENDPOINT_URL is not set: start the emulator first, e.g.\n  \
         export AWS_ENDPOINT_URL=$(scripts/moto start)\n(scripts/test does this for you)"
    );
    let host_ok = ["http://127.0.0.1:", "http://localhost:", "http://[::1]:"]
        .iter()
        .any(|p| url.starts_with(p));
    assert!(
        host_ok,
        "refusing a non-loopback AWS_ENDPOINT_URL in tests: {url}"
    );
    url
}

/// SDK config for the emulator at `url` (test credentials, us-east-1).
pub async fn sdk_config_at(url: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(url)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "kosha-tests"))
        .load()
        .await
}

/// SDK config for the emulator.
pub async fn sdk_config() -> SdkConfig {
    sdk_config_at(&endpoint()).await
}

/// A unique name with `prefix`.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{:016x}", rand::random::<u64>())
}

/// A fresh state table with a random name, created in the emulator.
pub async fn fresh_table(sdk: &SdkConfig) -> StateTable {
    let table = StateTable::new(aws_sdk_dynamodb::Client::new(sdk), unique("kosha-test")).unwrap();
    assert!(table.create_if_missing().await.unwrap());
    table
}

/// A log sink for `tracing` output, for asserting on log events.
#[derive(Clone, Default)]
pub struct LogSink(pub Arc<parking_lot::Mutex<Vec<u8>>>);

impl LogSink {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }

    /// Captures this thread's tracing events until the guard drops.
    pub fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let sink = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .finish();
        kosha_runtime::telemetry::capture_default(subscriber)
    }
}

impl std::io::Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A metrics recorder keeping counters by `name{label=value,…}`; install it once per test
/// binary (the recorder is process-global).
#[derive(Default)]
pub struct TestRecorder(Mutex<HashMap<String, Arc<AtomicU64>>>);

impl TestRecorder {
    pub fn get(&self, key: &str) -> u64 {
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
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
