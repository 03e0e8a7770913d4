//! Relay throughput (events per second): `KOSHA_RELAY_BENCH_EVENTS` (default 500) pending
//! events drained by one relay, batches of 100 in calls of 10 — once against the emulator
//! (bounded by the emulator's own speed) and once with a publisher that accepts at once
//! (the relay's own cost: claim, serialize, mark, commit on PostgreSQL). Ignored by default
//! (measurements, not checks); run them with the command in docs/benchmarks.md.

use std::time::Duration;

use kosha_contract::events::Event;
use kosha_resilience::deadline::Deadline;
use outbox_relay::publish::{BatchOutcome, Publish, PublishError};
use outbox_relay::relay::Relay;

use crate::common::TestDb;
use crate::harness::{endpoint, insert_events, pending, policy, queue, relay, settings, sqs};

/// Accepts every entry at once.
struct AcceptAll;

impl Publish for AcceptAll {
    async fn send_batch(&self, events: &[&Event]) -> Result<BatchOutcome, PublishError> {
        Ok(BatchOutcome {
            accepted: events.iter().map(|e| e.event_id.clone()).collect(),
            failed: Vec::new(),
        })
    }
}

fn events() -> usize {
    std::env::var("KOSHA_RELAY_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

/// Drains `db` with `relay` and prints the rate under `label`.
async fn measure<P: Publish>(label: &str, relay: &Relay<P>, db: &TestDb, events: usize) {
    let started = tokio::time::Instant::now();
    let mut published = 0;
    while pending(db).await > 0 {
        published += relay
            .run(&Deadline::after(Duration::from_secs(120)))
            .await
            .unwrap()
            .published;
    }
    let elapsed = started.elapsed();
    assert_eq!(published, u64::try_from(events).unwrap());
    println!(
        "relay throughput ({label}): {events} events in {:.2} s = {:.0} events/s",
        elapsed.as_secs_f64(),
        events as f64 / elapsed.as_secs_f64()
    );
}

#[tokio::test]
#[ignore = "a measurement: see docs/benchmarks.md"]
async fn relay_throughput_to_the_emulator() {
    let events = events();
    let db = TestDb::seeded().await;
    let client = sqs(&endpoint()).await;
    let queue_url = queue(&client).await;
    insert_events(&db, events).await;
    let relay = relay(&db, client, &queue_url, settings(100));
    measure("emulator", &relay, &db, events).await;
}

#[tokio::test]
#[ignore = "a measurement: see docs/benchmarks.md"]
async fn relay_throughput_with_an_instant_queue() {
    let events = events();
    let db = TestDb::seeded().await;
    insert_events(&db, events).await;
    let relay = Relay::new(db.pool(), AcceptAll, policy(), settings(100));
    measure("instant queue", &relay, &db, events).await;
}
