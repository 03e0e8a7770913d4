//! The worker's handler against fakes, on tokio's paused clock (issue 12): an outage never
//! fails a screening and the first delivery after recovery completes it within 60 s; a
//! request screening-sim refuses is dead-lettered and `failed`; redeliveries change nothing;
//! the redrive count outlasts a 6-hour outage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use kosha_contract::screening::{ScreenRequest, ScreenResponse, ScreenStatus};
use kosha_resilience::deadline::Deadline;
use kosha_state::StateError;
use kosha_state::screening::{Finished, ScreeningItem, ScreeningState};
use parking_lot::Mutex;
use screening_worker::handler::{
    MAX_BACKOFF, MAX_RECEIVE_COUNT, Outcome, Queue, Sim, SimAnswer, Store, Worker, retry_delay,
};
use tokio::time::Instant;

const ID: &str = "scr_01JDX6Q0Z8K2M3N4P5Q6R7S8T9";

/// Down until `recovers_at`; refuses names without letters as invalid.
struct FakeSim {
    recovers_at: Instant,
    calls: AtomicUsize,
}

impl Sim for FakeSim {
    async fn screen(&self, request: &ScreenRequest, _deadline: &Deadline) -> SimAnswer {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if Instant::now() < self.recovers_at {
            return SimAnswer::Unavailable { retry_after: None };
        }
        if !request.name.chars().any(char::is_alphabetic) {
            return SimAnswer::Invalid("name must contain at least one letter".into());
        }
        SimAnswer::Result(ScreenResponse {
            status: ScreenStatus::Clear,
            matches: vec![],
        })
    }
}

#[derive(Default)]
struct FakeStore {
    items: Mutex<HashMap<String, ScreeningItem>>,
    broken: Mutex<bool>,
}

impl FakeStore {
    fn with(name: &str) -> Self {
        let store = Self::default();
        let request = ScreenRequest {
            name: name.into(),
            country: None,
            date_of_birth: None,
        };
        store.items.lock().insert(
            ID.into(),
            ScreeningItem::new(ID.into(), request, ScreeningState::Pending, 0),
        );
        store
    }

    fn state(&self) -> ScreeningState {
        self.items.lock()[ID].state.clone()
    }

    fn fail_if_broken(&self) -> Result<(), StateError> {
        if *self.broken.lock() {
            return Err(StateError::Timeout {
                operation: "GetItem",
            });
        }
        Ok(())
    }
}

impl Store for FakeStore {
    async fn get(&self, id: &str) -> Result<Option<ScreeningItem>, StateError> {
        self.fail_if_broken()?;
        Ok(self.items.lock().get(id).cloned())
    }

    async fn finish(&self, id: &str, outcome: &ScreeningState) -> Result<Finished, StateError> {
        self.fail_if_broken()?;
        let mut items = self.items.lock();
        let Some(item) = items.get_mut(id) else {
            return Ok(Finished::Missing);
        };
        if item.state != ScreeningState::Pending {
            return Ok(Finished::AlreadyFinal);
        }
        item.state = outcome.clone();
        Ok(Finished::Updated)
    }
}

#[derive(Default)]
struct FakeQueue {
    visibility: Mutex<Vec<Duration>>,
    dead: Mutex<Vec<String>>,
}

impl Queue for FakeQueue {
    async fn retry_in(&self, _receipt: &str, after: Duration) -> Result<(), String> {
        self.visibility.lock().push(after);
        Ok(())
    }

    async fn dead_letter(&self, body: &str) -> Result<(), String> {
        self.dead.lock().push(body.to_owned());
        Ok(())
    }
}

fn worker(name: &str, down_for: Duration) -> Worker<FakeSim, FakeStore, FakeQueue> {
    Worker {
        sim: FakeSim {
            recovers_at: Instant::now() + down_for,
            calls: AtomicUsize::new(0),
        },
        store: FakeStore::with(name),
        queue: FakeQueue::default(),
    }
}

fn message(body: &str, receives: u32) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some("m-1".into());
    m.receipt_handle = Some("r-1".into());
    m.body = Some(body.into());
    m.attributes
        .insert("ApproximateReceiveCount".into(), receives.to_string());
    m
}

fn body() -> String {
    format!(r#"{{"screening_id":"{ID}"}}"#)
}

/// Delivers the message as SQS would: again after each visibility change, with the receive
/// count going up, until the handler is done with it. Returns the time of the last delivery
/// and the number of deliveries.
async fn deliver_until_done<S: Sim, T: Store, Q: Queue>(w: &Worker<S, T, Q>) -> (Instant, u32) {
    let mut receives = 1;
    loop {
        let outcome = w
            .handle(
                &message(&body(), receives),
                &Deadline::after(Duration::from_secs(30)),
            )
            .await;
        match outcome {
            Outcome::Retry(after) => {
                assert!(after <= MAX_BACKOFF);
                tokio::time::sleep(after).await;
                receives += 1;
                assert!(receives < MAX_RECEIVE_COUNT, "would reach the DLQ");
            }
            _ => return (Instant::now(), receives),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_ten_minute_outage_fails_nothing_and_completes_within_60_s_of_recovery() {
    let outage = Duration::from_secs(600);
    let w = worker("Jane Example", outage);
    let recovered = Instant::now() + outage;
    let (done_at, receives) = deliver_until_done(&w).await;
    assert!(matches!(w.store.state(), ScreeningState::Done(_)));
    assert!(
        w.queue.dead.lock().is_empty(),
        "an outage never dead-letters"
    );
    assert!(done_at >= recovered);
    assert!(
        done_at - recovered <= Duration::from_secs(60),
        "completed {:?} after recovery",
        done_at - recovered
    );
    // Backoff doubles to the 30 s cap and stays there: 1, 2, 4, 8, 16, 30, 30 …
    let v = w.queue.visibility.lock().clone();
    assert_eq!(&v[..6], &[1, 2, 4, 8, 16, 30].map(Duration::from_secs));
    assert!(v.iter().all(|d| *d <= MAX_BACKOFF));
    assert_eq!(receives as usize, v.len() + 1);
}

#[test]
fn the_redrive_count_outlasts_a_six_hour_outage() {
    let six_hours = Duration::from_secs(6 * 3600);
    let mut elapsed = Duration::ZERO;
    let mut receives = 0;
    while elapsed < six_hours {
        receives += 1;
        elapsed += retry_delay(receives, None);
    }
    assert!(receives < MAX_RECEIVE_COUNT, "{receives} receives in 6 h");
    assert!(receives > 700, "{receives}: the backoff is capped at 30 s");
    assert_eq!(
        retry_delay(3, Some(Duration::from_secs(12))),
        Duration::from_secs(12)
    );
    assert_eq!(retry_delay(40, Some(Duration::from_secs(99))), MAX_BACKOFF);
}

#[tokio::test(start_paused = true)]
async fn a_request_the_sim_refuses_is_dead_lettered_and_failed_with_its_reason() {
    let w = worker("!!!", Duration::ZERO);
    let outcome = w
        .handle(
            &message(&body(), 1),
            &Deadline::after(Duration::from_secs(30)),
        )
        .await;
    assert_eq!(outcome, Outcome::Failed);
    assert_eq!(
        w.store.state(),
        ScreeningState::Failed {
            reason: "name must contain at least one letter".into()
        }
    );
    assert_eq!(*w.queue.dead.lock(), vec![body()]);
    // A redelivery (the DLQ copy replayed, or a duplicate) changes nothing and calls nothing.
    let again = w
        .handle(
            &message(&body(), 2),
            &Deadline::after(Duration::from_secs(30)),
        )
        .await;
    assert_eq!(again, Outcome::Skipped);
    assert_eq!(w.sim.calls.load(Ordering::SeqCst), 1);
    assert_eq!(w.queue.dead.lock().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn redelivered_completed_screenings_change_nothing() {
    let w = worker("Jane Example", Duration::ZERO);
    let d = Deadline::after(Duration::from_secs(30));
    assert_eq!(w.handle(&message(&body(), 1), &d).await, Outcome::Completed);
    let done = w.store.state();
    assert_eq!(w.handle(&message(&body(), 2), &d).await, Outcome::Skipped);
    assert_eq!(w.store.state(), done);
    assert_eq!(w.sim.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn malformed_messages_go_to_the_dlq_and_a_broken_store_retries() {
    let w = worker("Jane Example", Duration::ZERO);
    let d = Deadline::after(Duration::from_secs(30));
    for bad in [
        "not json",
        r#"{"screening_id":"scr_bad"}"#,
        r#"{"id":"x"}"#,
        "",
    ] {
        assert_eq!(
            w.handle(&message(bad, 1), &d).await,
            Outcome::Skipped,
            "{bad}"
        );
    }
    assert_eq!(w.queue.dead.lock().len(), 4);
    assert_eq!(w.sim.calls.load(Ordering::SeqCst), 0);
    *w.store.broken.lock() = true;
    assert!(matches!(
        w.handle(&message(&body(), 1), &d).await,
        Outcome::Retry(_)
    ));
    assert_eq!(w.store.state(), ScreeningState::Pending);
}

#[tokio::test(start_paused = true)]
async fn a_batch_reports_only_its_failures_and_the_lambda_fixture_parses() {
    let event: SqsEvent = serde_json::from_str(include_str!(
        "../../../infra/events/sqs-screening-requests.json"
    ))
    .unwrap();
    assert_eq!(event.records.len(), 2);
    // The fixture's first id is pending and the sim is down: it alone is a failure; the
    // second id is unknown, so there is nothing to complete.
    let w = worker("Jane Example", Duration::from_secs(60));
    let response = w
        .handle_batch(&event.records, &Deadline::after(Duration::from_secs(30)))
        .await;
    let failed: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(failed, [event.records[0].message_id.as_deref().unwrap()]);
}
