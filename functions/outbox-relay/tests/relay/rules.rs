//! The relay's rules with a fake publisher over a real database: only accepted entries are
//! marked, a failed call marks nothing, the order of claims, the 7-day sweep and the gauges.

use std::collections::BTreeSet;
use std::time::Duration;

use kosha_contract::events::Event;
use kosha_resilience::deadline::Deadline;
use outbox_relay::publish::{BatchOutcome, Publish, PublishError, Refused};
use outbox_relay::relay::{Relay, Settings, Stop};
use parking_lot::Mutex;

use crate::common::TestDb;
use crate::harness::{insert_events, pending, policy, settings};

/// Accepts every entry except those in `refuse`; fails every call when `down`.
#[derive(Default)]
struct Fake {
    refuse: BTreeSet<String>,
    down: bool,
    calls: Mutex<Vec<Vec<String>>>,
}

impl Publish for Fake {
    async fn send_batch(&self, events: &[&Event]) -> Result<BatchOutcome, PublishError> {
        let ids: Vec<String> = events.iter().map(|e| e.event_id.clone()).collect();
        self.calls.lock().push(ids.clone());
        if self.down {
            return Err(PublishError::Status {
                status: 503,
                code: "ServiceUnavailable".into(),
            });
        }
        let (failed, accepted): (Vec<_>, Vec<_>) =
            ids.into_iter().partition(|id| self.refuse.contains(id));
        Ok(BatchOutcome {
            accepted,
            failed: failed
                .into_iter()
                .map(|id| Refused {
                    id,
                    code: "InternalError".into(),
                    sender_fault: false,
                })
                .collect(),
        })
    }
}

fn relay(db: &TestDb, fake: Fake, batch: i64) -> Relay<Fake> {
    Relay::new(db.pool(), fake, policy(), settings(batch))
}

fn deadline() -> Deadline {
    Deadline::after(Duration::from_secs(30))
}

async fn unpublished(db: &TestDb) -> BTreeSet<String> {
    let client = db.client().await;
    client
        .query(
            "SELECT event_id FROM ops.outbox WHERE published_at IS NULL",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[tokio::test]
async fn entries_sqs_refuses_stay_unpublished_and_go_out_on_the_next_run() {
    let db = TestDb::seeded().await;
    let ids = insert_events(&db, 35).await;
    let refuse: BTreeSet<String> = ids.iter().step_by(7).cloned().collect();
    let partial = relay(
        &db,
        Fake {
            refuse: refuse.clone(),
            ..Fake::default()
        },
        100,
    );
    let report = partial.run(&deadline()).await.unwrap();
    assert_eq!(report.stop, Stop::Drained);
    assert_eq!(report.published, 30);
    assert_eq!(report.refused, 5);
    assert_eq!(unpublished(&db).await, refuse);
    // Calls of at most 10, in claim (id) order.
    let calls = partial.into_calls();
    assert_eq!(
        calls.iter().map(Vec::len).collect::<Vec<_>>(),
        [10, 10, 10, 5]
    );
    assert_eq!(calls.concat(), ids);

    let report = relay(&db, Fake::default(), 100)
        .run(&deadline())
        .await
        .unwrap();
    assert_eq!((report.published, report.stop), (5, Stop::Drained));
    assert_eq!(pending(&db).await, 0);
}

#[tokio::test]
async fn a_poison_entry_does_not_hold_up_the_rest_and_a_batch_refused_whole_ends_the_run() {
    let db = TestDb::seeded().await;
    let ids = insert_events(&db, 45).await;
    // The oldest event is refused every time; the others go out in one run of 10-row batches
    // (each batch claims the poison entry again, first, and nine new ones).
    let poison = relay(
        &db,
        Fake {
            refuse: BTreeSet::from([ids[0].clone()]),
            ..Fake::default()
        },
        10,
    );
    let report = poison.run(&deadline()).await.unwrap();
    assert_eq!(report.published, 44, "{report:?}");
    assert_eq!(report.stop, Stop::Drained, "{report:?}");
    assert_eq!(unpublished(&db).await, BTreeSet::from([ids[0].clone()]));
    // Left alone, it is a batch refused whole: the run ends at once, the entry stays.
    let report = poison.run(&deadline()).await.unwrap();
    assert_eq!(
        (report.published, report.refused, report.batches),
        (0, 1, 1),
        "{report:?}"
    );
    assert_eq!(report.stop, Stop::Refused, "{report:?}");
    assert_eq!(report.backlog.pending, 1);
}

#[tokio::test]
async fn a_failed_call_marks_nothing_of_its_entries() {
    let db = TestDb::seeded().await;
    insert_events(&db, 25).await;
    let down = relay(
        &db,
        Fake {
            down: true,
            ..Fake::default()
        },
        100,
    );
    let report = down.run(&deadline()).await.unwrap();
    assert!(
        matches!(report.stop, Stop::Sqs(ref why) if why.contains("503")),
        "{report:?}"
    );
    assert_eq!(report.published, 0);
    assert_eq!(pending(&db).await, 25);
    // One logical call, retried by the policy (at most 3 attempts, as the retry budget
    // allows), then the run stops: the other 15 entries were never sent.
    let calls = down.into_calls();
    assert!((2..=3).contains(&calls.len()), "{calls:?}");
    assert!(calls.iter().all(|c| c.len() == 10));
}

#[tokio::test]
async fn published_events_go_after_seven_days_and_unpublished_ones_never() {
    let db = TestDb::seeded().await;
    insert_events(&db, 30).await;
    let client = db.client().await;
    client
        .batch_execute(
            "UPDATE ops.outbox SET published_at = now() - interval '8 days' WHERE id IN
                 (SELECT id FROM ops.outbox ORDER BY id LIMIT 10);
             UPDATE ops.outbox SET published_at = now() - interval '6 days' WHERE id IN
                 (SELECT id FROM ops.outbox ORDER BY id OFFSET 10 LIMIT 10);
             UPDATE ops.outbox SET created_at = now() - interval '30 days' WHERE id IN
                 (SELECT id FROM ops.outbox ORDER BY id OFFSET 20 LIMIT 1);",
        )
        .await
        .unwrap();
    let fake = Fake {
        down: true,
        ..Fake::default()
    };
    let report = relay(&db, fake, 100).run(&deadline()).await.unwrap();
    assert_eq!(report.swept.events, 10);
    let left: i64 = client
        .query_one("SELECT count(*) FROM ops.outbox", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 20);
    // The 30-day-old unpublished event is kept, and it is the lag.
    assert_eq!(report.backlog.pending, 10);
    assert!(report.backlog.lag_seconds >= 30.0 * 86_400.0, "{report:?}");
}

#[tokio::test]
async fn expired_idempotency_keys_are_swept_and_live_ones_kept() {
    let db = TestDb::seeded().await;
    let client = db.client().await;
    client
        .batch_execute(&format!(
            "INSERT INTO ops.idempotency_keys
                 (principal, user_id, endpoint, key, request_hash, status_code, response, expires_at)
             VALUES ('p', 'p', 'POST /v1/reviews', 'old', '{h}', 201, '{{}}', now() - interval '1 hour'),
                    ('p', 'p', 'POST /v1/reviews', 'live', '{h}', 201, '{{}}', now() + interval '1 hour')",
            h = "a".repeat(64)
        ))
        .await
        .unwrap();
    let report = relay(&db, Fake::default(), 100)
        .run(&deadline())
        .await
        .unwrap();
    assert_eq!(report.swept.keys, 1);
    let keys: Vec<String> = client
        .query("SELECT key FROM ops.idempotency_keys", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(keys, ["live"]);
}

#[tokio::test]
async fn an_expired_deadline_claims_nothing() {
    let db = TestDb::seeded().await;
    insert_events(&db, 5).await;
    let mut s = settings(100);
    s.min_batch_time = Duration::from_secs(5);
    let report = Relay::new(db.pool(), Fake::default(), policy(), s)
        .run(&Deadline::after(Duration::from_secs(1)))
        .await
        .unwrap();
    assert_eq!(
        (report.stop, report.published, report.batches),
        (Stop::Deadline, 0, 0)
    );
    assert_eq!(report.backlog.pending, 5);
}

trait IntoCalls {
    fn into_calls(self) -> Vec<Vec<String>>;
}

impl IntoCalls for Relay<Fake> {
    fn into_calls(self) -> Vec<Vec<String>> {
        self.publisher().calls.lock().clone()
    }
}

#[tokio::test]
async fn an_invocation_runs_until_its_lambda_deadline() {
    let db = TestDb::seeded().await;
    insert_events(&db, 12).await;
    let relay = Relay::new(
        db.pool(),
        Fake::default(),
        policy(),
        Settings {
            min_batch_time: Duration::from_secs(2),
            ..settings(100)
        },
    );
    let now_ms = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    // An invocation with 1 s left (less than a batch needs): nothing is claimed.
    let short = outbox_relay::mode::invocation(&relay, Duration::from_secs(50), now_ms + 1_000)
        .await
        .unwrap();
    assert_eq!(short["published"], 0, "{short}");
    assert_eq!(short["stop"], "Deadline", "{short}");
    assert_eq!(short["pending"], 12);
    // One with a minute left drains the outbox.
    let long = outbox_relay::mode::invocation(&relay, Duration::from_secs(50), now_ms + 60_000)
        .await
        .unwrap();
    assert_eq!(long["published"], 12, "{long}");
    assert_eq!(long["pending"], 0);
}
