//! The relay binary killed (SIGKILL) in the middle of a batch, then restarted: nothing is
//! lost; the killed batch's sent-but-unmarked events arrive twice (at least once, SPEC §4),
//! at most one batch of them.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;

use crate::common::TestDb;
use crate::harness::{count, drain, endpoint, insert_events, pending, queue, sqs};

const EVENTS: usize = 300;
const BATCH: i64 = 100;

fn spawn_relay(db: &TestDb, queue_url: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_outbox-relay"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &db.url)
        .env("KOSHA_EVENTS_QUEUE_URL", queue_url)
        .env("KOSHA_RELAY_BATCH", BATCH.to_string())
        .env("KOSHA_RELAY_INTERVAL_MS", "100")
        .env("AWS_ENDPOINT_URL", endpoint())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the outbox-relay binary")
}

async fn queued(client: &aws_sdk_sqs::Client, queue_url: &str) -> usize {
    let answer = client
        .get_queue_attributes()
        .queue_url(queue_url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .unwrap();
    answer
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::ApproximateNumberOfMessages))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_relay_killed_mid_batch_loses_nothing_after_a_restart() {
    let db = TestDb::seeded().await;
    let client = sqs(&endpoint()).await;
    let queue_url = queue(&client).await;
    let written = insert_events(&db, EVENTS).await;

    let mut first = spawn_relay(&db, &queue_url);
    // Kill it once the first batch is partly sent: some of its 10 calls are on the queue,
    // none of its rows is marked yet.
    let limit = tokio::time::Instant::now() + Duration::from_secs(60);
    while queued(&client, &queue_url).await < 30 {
        assert!(
            tokio::time::Instant::now() < limit,
            "the relay published nothing in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    first.kill().expect("SIGKILL the relay");
    first.wait().unwrap();
    let left = pending(&db).await;
    println!("relay killed with {left} of {EVENTS} events unpublished");
    assert!(left > 0, "the kill came after the relay had finished");

    let mut second = spawn_relay(&db, &queue_url);
    let limit = tokio::time::Instant::now() + Duration::from_secs(60);
    while pending(&db).await > 0 {
        assert!(
            tokio::time::Instant::now() < limit,
            "the restarted relay did not drain the outbox"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    second.kill().unwrap();
    second.wait().unwrap();

    let arrived = drain(&client, &queue_url).await;
    let c = count("relay killed mid-batch", &written, &arrived);
    assert_eq!((c.lost, c.strangers), (0, 0), "{c:?}");
    assert!(
        c.duplicates <= usize::try_from(BATCH).unwrap(),
        "only the killed batch may be sent twice: {c:?}"
    );
}
