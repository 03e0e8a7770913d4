//! SQS down while 50 disputes are raised: nothing is published or lost, the relay's breaker
//! opens, and every event arrives once SQS is back.

use std::time::Duration;

use kosha_resilience::breaker::BreakerState;
use kosha_resilience::deadline::Deadline;
use outbox_relay::relay::Stop;

use crate::common::TestDb;
use crate::harness::{
    count, dead_endpoint, drain, endpoint, pending, queue, raise_disputes, relay, settings, sqs,
};

#[tokio::test]
async fn events_written_while_sqs_is_down_all_arrive_once_it_is_back() {
    let db = TestDb::seeded().await;
    let up = sqs(&endpoint()).await;
    let queue_url = queue(&up).await;
    let down = relay(&db, sqs(&dead_endpoint()).await, &queue_url, settings(100));
    let mut states = Vec::new();
    for round in 0..5 {
        raise_disputes(&db, round * 10..round * 10 + 10).await;
        let report = down
            .run(&Deadline::after(Duration::from_secs(20)))
            .await
            .expect("a run with SQS down still succeeds against the database");
        assert_eq!(report.published, 0, "{report:?}");
        assert!(matches!(report.stop, Stop::Sqs(_)), "{report:?}");
        assert_eq!(
            report.backlog.pending,
            i64::try_from((round + 1) * 10).unwrap()
        );
        assert!(report.backlog.lag_seconds >= 0.0);
        states.push(down.policy().health().state);
    }
    assert_eq!(pending(&db).await, 50);
    assert_eq!(
        states.last(),
        Some(&BreakerState::Open),
        "five failed runs open the relay's SQS breaker: {states:?}"
    );
    // While open, a run fails fast instead of spending its deadline on a dead endpoint.
    let started = tokio::time::Instant::now();
    let report = down
        .run(&Deadline::after(Duration::from_secs(20)))
        .await
        .unwrap();
    assert!(
        matches!(report.stop, Stop::Sqs(ref why) if why.contains("circuit open")),
        "{report:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));

    let written = crate::harness::outbox_ids(&db).await;
    let back = relay(&db, up.clone(), &queue_url, settings(100));
    let report = back
        .run(&Deadline::after(Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(report.published, 50, "{report:?}");
    assert_eq!(report.stop, Stop::Drained);
    assert_eq!(report.backlog.pending, 0);
    assert!(report.backlog.lag_seconds.abs() < f64::EPSILON);

    let arrived = drain(&up, &queue_url).await;
    let c = count("sqs outage (50 disputes)", &written, &arrived);
    assert_eq!((c.lost, c.duplicates, c.strangers), (0, 0, 0), "{c:?}");
    for e in &arrived {
        assert_eq!(e.event_type, "dispute.opened");
        assert!(e.aggregate_id.starts_with("dsp_"), "{e:?}");
        assert_eq!(e.payload["dispute_id"], e.aggregate_id.as_str());
        assert_eq!(e.payload["status"], "open");
        assert!(e.occurred_at.ends_with('Z'), "{e:?}");
    }
}
