//! The relay's test harness: SQS clients and queues on the emulator, relays over a test
//! database, outbox rows, and counting what arrived by `event_id`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use aws_config::{BehaviorVersion, Region};
use aws_sdk_sqs::config::Credentials;
use core_api::db::PoolSettings;
use core_api::db::writes::{self, KeyScope, NewDispute};
use core_api::deadline::Budget;
use kosha_contract::events::{EVENT_TYPE_ATTRIBUTE, Event};
use kosha_resilience::config::{PolicyConfig, Profile};
use kosha_resilience::policy::Policy;
use outbox_relay::config::SQS_PROFILE;
use outbox_relay::publish::Sqs;
use outbox_relay::relay::{Relay, Settings};

use crate::common::TestDb;

/// The emulator's URL from `AWS_ENDPOINT_URL` (loopback only).
pub fn endpoint() -> String {
    let url = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        url.starts_with("http://127.0.0.1:") || url.starts_with("http://localhost:"),
        "AWS_ENDPOINT_URL must name the local emulator (export AWS_ENDPOINT_URL=$(scripts/moto start)); got {url:?}"
    );
    url
}

/// An unused loopback port: SQS "down" (connection refused).
pub fn dead_endpoint() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// An SQS client for `url`, without SDK retries (the relay's policy retries).
pub async fn sqs(url: &str) -> aws_sdk_sqs::Client {
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(url)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "relay-tests"))
        .load()
        .await;
    aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&sdk)
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build(),
    )
}

/// A fresh queue on the emulator; its URL.
pub async fn queue(client: &aws_sdk_sqs::Client) -> String {
    let name = format!("relay-test-{:016x}", rand::random::<u64>());
    client
        .create_queue()
        .queue_name(name)
        .send()
        .await
        .expect("create queue on the emulator")
        .queue_url()
        .expect("queue url")
        .to_owned()
}

/// The SQS profile with a short open time, so an outage test sees the breaker open and
/// close within seconds (2 s open).
pub const TEST_PROFILE: Profile = Profile {
    open_for: Duration::from_secs(2),
    ..SQS_PROFILE
};

/// A relay over `db` publishing to `queue_url` through `client`.
pub fn relay(
    db: &TestDb,
    client: aws_sdk_sqs::Client,
    queue_url: &str,
    settings: Settings,
) -> Relay<Sqs> {
    let pool = db.pool_with(&PoolSettings::default());
    Relay::new(pool, Sqs::new(client, queue_url), policy(), settings)
}

/// A policy toward SQS with [`TEST_PROFILE`].
pub fn policy() -> Policy {
    Policy::try_without_overrides(
        outbox_relay::SQS_DEPENDENCY,
        PolicyConfig::from_profile(TEST_PROFILE),
    )
    .unwrap()
}

/// Inserts `n` outbox rows directly (review.requested events); their event ids.
pub async fn insert_events(db: &TestDb, n: usize) -> Vec<String> {
    let ids: Vec<String> = (0..n).map(|_| ulid::Ulid::new().to_string()).collect();
    let aggregates: Vec<String> = ids.iter().map(|id| format!("rev_{id}")).collect();
    let client = db.client().await;
    client
        .execute(
            "INSERT INTO ops.outbox (event_id, aggregate, aggregate_id, event_type, payload)
             SELECT e, 'review', a, 'review.requested', jsonb_build_object('review_id', a)
             FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(e, a, n) ORDER BY n",
            &[&ids, &aggregates],
        )
        .await
        .unwrap();
    ids
}

/// Raises disputes on `txn_000001`… through core-api's write transaction (row, key and
/// outbox event in one transaction); the event ids of the outbox rows written.
pub async fn raise_disputes(db: &TestDb, range: std::ops::Range<usize>) -> Vec<String> {
    let pool = db.pool();
    let budget = Budget {
        deadline: None,
        postgres: core_api::db::PostgresConfig::defaults(),
        chaos: Default::default(),
    };
    for i in range.clone() {
        let txn = format!("txn_{:06}", i + 1);
        let key = format!("outage-{i}");
        let scope = KeyScope {
            principal: "relay-tests",
            user: "relay-tests",
            endpoint: "POST /v1/disputes",
            key: &key,
            request_hash: &"0".repeat(64),
        };
        let new = NewDispute {
            transaction_id: &txn,
            reason: "card not present",
            amount_minor: None,
        };
        let written = writes::raise_dispute(&pool, &budget, &scope, &new)
            .await
            .unwrap();
        assert!(written.is_ok(), "dispute on {txn}: {written:?}");
    }
    outbox_ids(db).await
}

/// Every event id in `ops.outbox`, in id order.
pub async fn outbox_ids(db: &TestDb) -> Vec<String> {
    let client = db.client().await;
    client
        .query("SELECT event_id FROM ops.outbox ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Unpublished rows.
pub async fn pending(db: &TestDb) -> i64 {
    let client = db.client().await;
    client
        .query_one(
            "SELECT count(*) FROM ops.outbox WHERE published_at IS NULL",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

/// Every message on `queue_url` (received with a long visibility timeout, so each is seen
/// once), parsed; checks the `event_type` attribute matches the body's `type`.
pub async fn drain(client: &aws_sdk_sqs::Client, queue_url: &str) -> Vec<Event> {
    let mut events = Vec::new();
    let mut empty = 0;
    while empty < 3 {
        let answer = client
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .visibility_timeout(600)
            .message_attribute_names("All")
            .send()
            .await
            .expect("receive");
        let messages = answer.messages();
        if messages.is_empty() {
            empty += 1;
            continue;
        }
        empty = 0;
        for m in messages {
            let event: Event = serde_json::from_str(m.body().unwrap()).expect("event JSON");
            let attribute = m
                .message_attributes()
                .and_then(|a| a.get(EVENT_TYPE_ATTRIBUTE))
                .and_then(|v| v.string_value())
                .map(str::to_owned);
            assert_eq!(attribute.as_deref(), Some(event.event_type.as_str()));
            events.push(event);
        }
    }
    events
}

/// What arrived compared with what was written, by `event_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    /// Written events that never arrived.
    pub lost: usize,
    /// Arrivals beyond the first of each event.
    pub duplicates: usize,
    /// Arrivals of events nobody wrote.
    pub strangers: usize,
}

/// Counts `arrived` against `written` and prints the figures (the issue asks for them).
pub fn count(label: &str, written: &[String], arrived: &[Event]) -> Count {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for e in arrived {
        *seen.entry(e.event_id.as_str()).or_default() += 1;
    }
    let expected: BTreeSet<&str> = written.iter().map(String::as_str).collect();
    let count = Count {
        lost: expected.iter().filter(|id| !seen.contains_key(*id)).count(),
        duplicates: seen.values().map(|n| n - 1).sum(),
        strangers: seen.keys().filter(|id| !expected.contains(*id)).count(),
    };
    println!(
        "{label}: written {}, arrived {}, lost {}, duplicates {}",
        written.len(),
        arrived.len(),
        count.lost,
        count.duplicates
    );
    count
}

/// Relay settings for tests: batches of `batch`, no minimum run time left.
pub fn settings(batch: i64) -> Settings {
    Settings {
        batch,
        min_batch_time: Duration::ZERO,
        ..Settings::default()
    }
}
