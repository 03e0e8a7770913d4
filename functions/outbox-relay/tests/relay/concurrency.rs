//! Two relays at once over 200 pending events: every event is published, none by both.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kosha_contract::events::Event;
use kosha_resilience::deadline::Deadline;
use outbox_relay::publish::{BatchOutcome, Publish, PublishError, Sqs};
use outbox_relay::relay::Relay;
use parking_lot::Mutex;

use crate::common::TestDb;
use crate::harness::{
    count, drain, endpoint, insert_events, pending, policy, queue, settings, sqs,
};

/// SQS, remembering every event id this relay sent.
struct Recording {
    inner: Sqs,
    sent: Arc<Mutex<Vec<String>>>,
}

impl Publish for Recording {
    async fn send_batch(&self, events: &[&Event]) -> Result<BatchOutcome, PublishError> {
        self.sent
            .lock()
            .extend(events.iter().map(|e| e.event_id.clone()));
        self.inner.send_batch(events).await
    }
}

async fn drain_with(relay: &Relay<Recording>, db: &TestDb) {
    // A run stops when it claims less than a batch, which may only mean that the other
    // relay holds the rest: go on until the outbox is empty.
    let limit = tokio::time::Instant::now() + Duration::from_secs(60);
    while pending(db).await > 0 {
        assert!(tokio::time::Instant::now() < limit, "relays did not drain");
        relay
            .run(&Deadline::after(Duration::from_secs(30)))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn two_relays_at_once_publish_every_event_and_none_twice() {
    let db = TestDb::seeded().await;
    let client = sqs(&endpoint()).await;
    let queue_url = queue(&client).await;
    let written = insert_events(&db, 200).await;

    let (sent_a, sent_b) = (Arc::default(), Arc::default());
    let relay = |sent: &Arc<Mutex<Vec<String>>>| {
        Relay::new(
            db.pool(),
            Recording {
                inner: Sqs::new(client.clone(), &queue_url),
                sent: sent.clone(),
            },
            policy(),
            settings(10),
        )
    };
    let (a, b) = (relay(&sent_a), relay(&sent_b));
    tokio::join!(drain_with(&a, &db), drain_with(&b, &db));

    let (sent_a, sent_b) = (sent_a.lock().clone(), sent_b.lock().clone());
    println!(
        "relay a sent {}, relay b sent {}",
        sent_a.len(),
        sent_b.len()
    );
    let set_a: BTreeSet<_> = sent_a.iter().collect();
    let set_b: BTreeSet<_> = sent_b.iter().collect();
    assert_eq!(set_a.len(), sent_a.len(), "relay a sent an event twice");
    assert_eq!(set_b.len(), sent_b.len(), "relay b sent an event twice");
    assert!(
        set_a.is_disjoint(&set_b),
        "an event was published by both relays"
    );
    assert_eq!(set_a.len() + set_b.len(), 200);

    let arrived = drain(&client, &queue_url).await;
    let c = count("two relays over 200 events", &written, &arrived);
    assert_eq!((c.lost, c.duplicates, c.strangers), (0, 0, 0), "{c:?}");
}
