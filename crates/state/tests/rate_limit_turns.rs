//! One client's concurrent calls in one instance take turns (local mode). A call whose wait
//! for its turn runs out is refused, never admitted past the bucket, unless the client's last
//! DynamoDB call failed (then it fails open, SPEC §6). On tokio's paused clock, with DynamoDB
//! faked in process: every answer takes a fixed (virtual) time, or never comes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aws_sdk_dynamodb::config::http::{HttpRequest, HttpResponse};
use aws_sdk_dynamodb::config::{
    BehaviorVersion, Credentials, HttpClient, Region, RuntimeComponents, SharedHttpClient,
};
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use kosha_resilience::rate_limit::{BucketConfig, RateDecision};
use kosha_state::{Clock, DynamoRateLimiter, RateLimitSettings, StateTable};
use tokio::time::Instant;

/// DynamoDB answering every request with `200 {}` (a successful write, or a read finding no
/// item) after `latency`, or never (`latency` = `None`).
#[derive(Debug, Clone)]
struct FakeDynamo {
    latency: Option<Duration>,
    requests: Arc<AtomicUsize>,
}

impl HttpConnector for FakeDynamo {
    fn call(&self, _request: HttpRequest) -> HttpConnectorFuture {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let latency = self.latency;
        HttpConnectorFuture::new(async move {
            match latency {
                Some(latency) => tokio::time::sleep(latency).await,
                None => std::future::pending::<()>().await,
            }
            Ok(HttpResponse::new(
                StatusCode::try_from(200).unwrap(),
                SdkBody::from("{}"),
            ))
        })
    }
}

impl HttpClient for FakeDynamo {
    fn http_connector(
        &self,
        _settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(self.clone())
    }
}

/// Epoch milliseconds that follow tokio's (paused) clock.
struct TokioClock(Instant);

impl Clock for TokioClock {
    fn now_ms(&self) -> i64 {
        1_800_000_000_000 + self.0.elapsed().as_millis() as i64
    }
}

fn table(fake: &FakeDynamo) -> StateTable {
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "kosha-tests"))
        .endpoint_url("http://127.0.0.1:9")
        .http_client(SharedHttpClient::new(fake.clone()))
        .build();
    StateTable::new(aws_sdk_dynamodb::Client::from_conf(conf), "kosha-state").unwrap()
}

/// Fires `n` concurrent calls for one client at once; their decisions and the time taken.
async fn burst(limiter: &Arc<DynamoRateLimiter>, n: usize) -> (Vec<RateDecision>, Duration) {
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let limiter = Arc::clone(limiter);
            tokio::spawn(async move { limiter.decide("agent-t").await })
        })
        .collect();
    let mut decisions = Vec::new();
    for t in tasks {
        decisions.push(t.await.unwrap());
    }
    (decisions, start.elapsed())
}

fn count(decisions: &[RateDecision], wanted: RateDecision) -> usize {
    decisions.iter().filter(|d| **d == wanted).count()
}

/// One token per write (`lease_max_tokens` 1): every admitted call needs its turn, which is
/// what these tests are about (leases: tests/rate_limit_leases.rs).
fn limiter(fake: &FakeDynamo, bucket: BucketConfig) -> Arc<DynamoRateLimiter> {
    let settings = RateLimitSettings {
        bucket,
        lease_max_tokens: 1,
        ..RateLimitSettings::default()
    };
    Arc::new(DynamoRateLimiter::new(
        &table(fake),
        settings,
        Arc::new(TokioClock(Instant::now())),
    ))
}

#[tokio::test(start_paused = true)]
async fn a_burst_longer_than_the_turn_wait_is_refused_not_admitted() {
    // Writes take 30 ms: in the 200 ms turn wait about 7 of 60 calls get their turn.
    let fake = FakeDynamo {
        latency: Some(Duration::from_millis(30)),
        requests: Arc::default(),
    };
    let limiter = limiter(&fake, BucketConfig::DEFAULT);
    let (decisions, elapsed) = burst(&limiter, 60).await;

    let allowed = count(&decisions, RateDecision::Allowed);
    let contention = count(&decisions, RateDecision::Limited { retry_after_s: 1 });
    assert_eq!(
        count(&decisions, RateDecision::FailOpen),
        0,
        "{decisions:?}"
    );
    assert_eq!(allowed + contention, 60, "{decisions:?}");
    assert!(allowed >= 1, "calls that get their turn are served");
    // Capacity 20 + 1 token/s: the bucket itself would admit 20 here.
    assert!(
        allowed as f64 <= 20.0 + elapsed.as_secs_f64(),
        "admitted {allowed} in {elapsed:?}"
    );
    assert!(
        allowed < 20,
        "the turn wait, not the bucket, refused: {allowed}"
    );
    // One write per admitted call, and the cold instance's read of the item before the first.
    assert_eq!(fake.requests.load(Ordering::SeqCst), allowed + 1);
    assert!(
        elapsed <= Duration::from_millis(300),
        "no call hangs: {elapsed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn once_the_cache_shows_the_bucket_empty_waiters_are_refused_from_it() {
    let fake = FakeDynamo {
        latency: Some(Duration::from_millis(30)),
        requests: Arc::default(),
    };
    let limiter = limiter(&fake, BucketConfig::try_new(3.0, 0.25).unwrap());
    let (decisions, elapsed) = burst(&limiter, 60).await;

    assert_eq!(count(&decisions, RateDecision::Allowed), 3);
    // Refused by the bucket (retry after (1 − ~0) / 0.25 s), not by the turn wait (1 s).
    assert_eq!(
        count(&decisions, RateDecision::Limited { retry_after_s: 4 }),
        57,
        "{decisions:?}"
    );
    assert_eq!(
        fake.requests.load(Ordering::SeqCst),
        1 + 3,
        "the cold instance's read and one write per admitted call: denials cost no write"
    );
    assert!(elapsed < Duration::from_millis(200), "{elapsed:?}");
}

#[tokio::test(start_paused = true)]
async fn waiters_still_fail_open_when_dynamodb_does_not_answer() {
    let fake = FakeDynamo {
        latency: None,
        requests: Arc::default(),
    };
    let limiter = limiter(&fake, BucketConfig::DEFAULT);
    let (decisions, elapsed) = burst(&limiter, 10).await;

    assert_eq!(
        count(&decisions, RateDecision::FailOpen),
        10,
        "{decisions:?}"
    );
    assert!(elapsed <= Duration::from_millis(300), "{elapsed:?}");
}
