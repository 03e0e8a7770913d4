//! Fleet trips on the paused clock (SPEC §8 "Fleet trips", #27): a real breaker reading a
//! source over a fake table. tokio's clock drives the breaker (open duration, refresh every
//! 5 s); the manual wall clock stamps and ages the trips; [`pass`] moves both.

use std::sync::atomic::Ordering;

use kosha_resilience::breaker::{Breaker, BreakerConfig, BreakerState, Outcome, Rejected};
use kosha_resilience::fleet::FleetTrips;

use super::tests::{Fake, NOW_S, settle};
use super::*;
use crate::ManualClock;

const OPEN: Duration = Duration::from_secs(15);
const ME: &str = "me";

fn config() -> BreakerConfig {
    BreakerConfig {
        window: 10,
        min_calls: 4,
        failure_rate_pct: 50,
        open_duration: OPEN,
        half_open_probes: 3,
        probe_lease: Duration::from_secs(5),
    }
}

struct Instance {
    fake: Arc<Fake>,
    clock: Arc<ManualClock>,
    src: DynamoOverrides,
    breaker: Breaker,
}

fn instance(quorum: usize) -> Instance {
    let fake = Arc::new(Fake::default());
    let clock = Arc::new(ManualClock::new(NOW_S * 1000));
    let src = DynamoOverrides::with_trips(
        fake.clone(),
        OverrideSettings::default(),
        clock.clone(),
        &["core-api"],
        ME,
    );
    let mut breaker = Breaker::try_new("core-api", config(), Arc::new(src.clone())).unwrap();
    breaker.set_fleet(FleetTrips::try_new("core-api", quorum, Arc::new(src.clone())).unwrap());
    Instance {
        fake,
        clock,
        src,
        breaker,
    }
}

impl Instance {
    fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Sets the table's `trip#core-api` entries.
    fn table_trips(&self, entries: &[(&str, i64)]) {
        let item = TripItem {
            instances: entries.iter().map(|(i, t)| ((*i).to_owned(), *t)).collect(),
            expires_at: None,
        };
        self.fake.trips.lock().insert("core-api".into(), item);
    }

    /// Moves both clocks by `d`.
    async fn pass(&self, d: Duration) {
        self.clock
            .advance_ms(i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        tokio::time::advance(d).await;
    }

    /// A fresh read of the table, as the next protected call makes (SPEC §8).
    async fn read(&self) {
        self.pass(Duration::from_secs(5)).await;
        self.src.ensure_fresh().await;
        settle().await;
    }

    fn record(&self, outcome: Outcome) {
        self.breaker.try_acquire().unwrap().record(outcome);
    }

    fn trip_on_own_evidence(&self) {
        for _ in 0..4 {
            self.record(Outcome::Failure);
        }
        assert_eq!(self.breaker.state(), BreakerState::Open);
    }

    /// Open → half-open → three good probes → closed.
    async fn recover(&self) {
        self.pass(OPEN).await;
        for _ in 0..3 {
            self.record(Outcome::Success);
        }
        assert_eq!(self.breaker.state(), BreakerState::Closed);
    }

    fn written(&self) -> usize {
        self.fake.written.lock().len()
    }
}

#[tokio::test(start_paused = true)]
async fn one_other_instances_trip_opens_no_healthy_instance() {
    let me = instance(2);
    me.table_trips(&[("sick", me.now_ms())]);
    me.read().await;
    assert_eq!(me.breaker.state(), BreakerState::Closed);
    assert_eq!(me.breaker.fleet_trips(), Some(1));
    me.record(Outcome::Success);
    assert_eq!(me.written(), 0, "a healthy instance writes nothing");
}

#[tokio::test(start_paused = true)]
async fn a_quorum_of_trips_opens_it_as_an_ordinary_open_closed_by_its_own_probes() {
    let me = instance(2);
    let t = me.now_ms();
    me.table_trips(&[("a", t), ("b", t + 100)]);
    me.read().await;
    match me.breaker.try_acquire() {
        Err(Rejected::Open { retry_after }) => assert_eq!(retry_after, OPEN),
        other => panic!("expected an ordinary open, got {other:?}"),
    }
    assert_eq!(me.written(), 0, "an open from the signal records no trip");
    me.pass(OPEN).await;
    assert_eq!(me.breaker.state(), BreakerState::HalfOpen);
    for _ in 0..3 {
        me.record(Outcome::Success);
    }
    assert_eq!(me.breaker.state(), BreakerState::Closed);
    me.read().await;
    assert_eq!(me.breaker.state(), BreakerState::Closed, "no reopen loop");
}

#[tokio::test(start_paused = true)]
async fn trips_older_than_my_own_close_do_not_reopen_me() {
    let me = instance(2);
    me.trip_on_own_evidence();
    let t = me.now_ms();
    // Others tripped after me and well within the open duration…
    me.table_trips(&[(ME, t), ("a", t + 1_000), ("b", t + 2_000)]);
    me.read().await;
    me.recover().await;
    let closed_at = me.now_ms();
    // …then closed is newer than all of them: still in the table, still young enough, not counted.
    me.table_trips(&[(ME, t), ("a", closed_at - 3_000), ("b", closed_at - 1)]);
    me.read().await;
    assert_eq!(me.breaker.state(), BreakerState::Closed);
    assert_eq!(me.breaker.fleet_trips(), Some(0));
    // One instance trips again after my close: not yet a quorum.
    let again = me.now_ms();
    me.table_trips(&[(ME, t), ("a", again), ("b", closed_at - 1)]);
    me.read().await;
    assert_eq!(me.breaker.state(), BreakerState::Closed);
    // A second one does.
    me.table_trips(&[(ME, t), ("a", again), ("b", again + 1)]);
    me.read().await;
    assert_eq!(me.breaker.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn trips_older_than_the_open_duration_do_not_count() {
    let me = instance(2);
    let t = me.now_ms();
    me.table_trips(&[("a", t - 15_000), ("b", t)]);
    me.read().await;
    assert_eq!(me.breaker.state(), BreakerState::Closed, "a is 20 s old");
    assert_eq!(me.breaker.fleet_trips(), Some(1));
}

#[tokio::test(start_paused = true)]
async fn my_own_trip_counts_toward_the_quorum() {
    let me = instance(2);
    let t = me.now_ms();
    // A breaker that never closed counts every trip within the open duration, its own too.
    me.table_trips(&[(ME, t), ("a", t)]);
    me.read().await;
    assert_eq!(me.breaker.fleet_trips(), Some(2));
    assert_eq!(me.breaker.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn a_quorum_of_three_needs_three_instances() {
    let me = instance(3);
    let t = me.now_ms();
    me.table_trips(&[("a", t), ("b", t)]);
    me.read().await;
    assert_eq!(me.breaker.state(), BreakerState::Closed);
    me.table_trips(&[("a", t), ("b", t), ("c", t)]);
    me.read().await;
    assert_eq!(me.breaker.state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn an_own_open_writes_one_trip_with_what_was_read() {
    let me = instance(2);
    let t = me.now_ms();
    me.table_trips(&[("old", t - 60_000)]);
    me.read().await;
    me.trip_on_own_evidence();
    for _ in 0..3 {
        // Refusals while open write nothing more.
        assert!(me.breaker.try_acquire().is_err());
    }
    settle().await;
    let written = me.fake.written.lock().clone();
    assert_eq!(written.len(), 1, "one write per transition");
    let w = &written[0];
    assert_eq!((w.breaker.as_str(), w.instance.as_str()), ("core-api", ME));
    assert_eq!(w.at_ms, me.now_ms());
    assert_eq!(w.open_for, OPEN);
    assert_eq!(
        w.seen.as_ref().map(|s| s.instances.get("old").copied()),
        Some(Some(t - 60_000)),
        "the write drops what it read as too old"
    );
    // A failed probe is own evidence too: one more write.
    me.pass(OPEN).await;
    me.record(Outcome::Failure);
    settle().await;
    assert_eq!(me.written(), 2);
}

#[tokio::test(start_paused = true)]
async fn trips_are_ignored_once_the_last_read_is_over_60_s_old() {
    let me = instance(2);
    let t = me.now_ms();
    me.table_trips(&[("a", t + 70_000), ("b", t + 70_000)]);
    me.read().await;
    me.fake.fail.store(true, Ordering::SeqCst);
    me.fake.trips.lock().clear();
    me.pass(Duration::from_secs(61)).await;
    assert_eq!(me.breaker.fleet_trips(), Some(0));
}
