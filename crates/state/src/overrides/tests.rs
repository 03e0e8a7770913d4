use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::*;
use crate::ManualClock;

/// A fetcher whose answer the test sets; counts reads.
#[derive(Default)]
pub(super) struct Fake {
    pub(super) values: Mutex<OverrideSnapshot>,
    pub(super) trips: Mutex<TripSnapshot>,
    /// Trips written, in order.
    pub(super) written: Mutex<Vec<TripWrite>>,
    pub(super) fail: AtomicBool,
    pub(super) reads: AtomicUsize,
    /// Extra time each read takes, ms (on top of 10 ms).
    pub(super) slow_ms: AtomicU64,
}

impl OverrideFetcher for Fake {
    fn fetch<'a>(&'a self, trips: &'a [String]) -> BoxFuture<'a, Result<Fetched, StateError>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let result = if self.fail.load(Ordering::SeqCst) {
            Err(StateError::Timeout {
                operation: "BatchGetItem",
            })
        } else {
            let all = self.trips.lock();
            Ok(Fetched {
                overrides: self.values.lock().clone(),
                trips: trips
                    .iter()
                    .filter_map(|b| Some((b.clone(), all.get(b)?.clone())))
                    .collect(),
            })
        };
        let took = Duration::from_millis(10 + self.slow_ms.load(Ordering::SeqCst));
        Box::pin(async move {
            tokio::time::sleep(took).await;
            result
        })
    }

    fn write_trip<'a>(&'a self, trip: &'a TripWrite) -> BoxFuture<'a, Result<usize, StateError>> {
        self.written.lock().push(trip.clone());
        Box::pin(std::future::ready(Ok(1)))
    }
}

pub(super) const NOW_S: i64 = 1_800_000_000;

fn forced(expires_at: Option<i64>) -> ForcedOpen {
    ForcedOpen {
        reason: "incident 42".into(),
        set_by: "alice".into(),
        set_at: NOW_S - 10,
        expires_at,
    }
}

fn source() -> (Arc<Fake>, Arc<ManualClock>, DynamoOverrides) {
    let fake = Arc::new(Fake::default());
    let clock = Arc::new(ManualClock::new(NOW_S * 1000));
    let src =
        DynamoOverrides::with_fetcher(fake.clone(), OverrideSettings::default(), clock.clone());
    (fake, clock, src)
}

/// Lets spawned refreshes start (on the current-thread test runtime).
async fn run_spawned() {
    for _ in 0..5 {
        tokio::task::yield_now().await;
    }
}

/// Lets spawned refreshes finish (the fake takes 10 ms).
pub(super) async fn settle() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

#[tokio::test(start_paused = true)]
async fn first_call_spawns_a_read_and_never_blocks() {
    let (fake, _, src) = source();
    fake.values.lock().insert("core-api".into(), forced(None));
    assert_eq!(src.current("core-api"), None, "nothing read yet");
    run_spawned().await;
    assert_eq!(fake.reads.load(Ordering::SeqCst), 1);
    settle().await;
    assert_eq!(src.current("core-api"), Some(forced(None)));
    assert_eq!(src.current("openai"), None);
}

#[tokio::test(start_paused = true)]
async fn reads_at_most_every_five_seconds() {
    let (fake, _, src) = source();
    for _ in 0..100 {
        src.current("core-api");
    }
    settle().await;
    for _ in 0..100 {
        src.current("core-api");
    }
    assert_eq!(fake.reads.load(Ordering::SeqCst), 1);
    tokio::time::advance(Duration::from_millis(4_970)).await;
    src.current("core-api");
    assert_eq!(fake.reads.load(Ordering::SeqCst), 1);
    tokio::time::advance(Duration::from_millis(10)).await;
    src.current("core-api");
    run_spawned().await;
    assert_eq!(fake.reads.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn force_open_and_clear_show_within_five_seconds() {
    let (fake, _, src) = source();
    src.refresh_now().await.unwrap();
    assert_eq!(src.current("core-api"), None);
    fake.values.lock().insert("core-api".into(), forced(None));
    tokio::time::advance(Duration::from_secs(5)).await;
    src.current("core-api");
    settle().await;
    assert_eq!(src.current("core-api"), Some(forced(None)));
    fake.values.lock().clear();
    tokio::time::advance(Duration::from_secs(5)).await;
    src.current("core-api");
    settle().await;
    assert_eq!(src.current("core-api"), None);
}

#[tokio::test(start_paused = true)]
async fn expired_overrides_are_absent() {
    let (fake, clock, src) = source();
    fake.values
        .lock()
        .insert("openai".into(), forced(Some(NOW_S + 30)));
    fake.values
        .lock()
        .insert("postgres".into(), forced(Some(NOW_S)));
    src.refresh_now().await.unwrap();
    assert!(src.current("openai").is_some());
    assert_eq!(
        src.current("postgres"),
        None,
        "expires_at == now is expired"
    );
    clock.advance_ms(30_000);
    assert_eq!(src.current("openai"), None);
}

#[tokio::test(start_paused = true)]
async fn read_errors_keep_the_last_value_sixty_seconds_then_ignore_it() {
    let (fake, _, src) = source();
    fake.values.lock().insert("core-api".into(), forced(None));
    src.refresh_now().await.unwrap();
    fake.fail.store(true, Ordering::SeqCst);
    // Failed reads every 5 s: the value read at t≈0 still serves up to 60 s.
    for _ in 0..11 {
        tokio::time::advance(Duration::from_millis(4_980)).await;
        src.current("core-api");
        settle().await;
        assert!(src.current("core-api").is_some());
    }
    tokio::time::advance(Duration::from_millis(4_900)).await; // t ≈ 59.9 s
    assert!(src.current("core-api").is_some());
    tokio::time::advance(Duration::from_millis(200)).await;
    assert_eq!(src.current("core-api"), None, "ignored past 60 s");
    // A successful read brings it back.
    fake.fail.store(false, Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(5)).await;
    src.current("core-api");
    settle().await;
    assert!(src.current("core-api").is_some());
}

#[tokio::test(start_paused = true)]
async fn a_snapshot_left_ten_minutes_by_a_freeze_is_not_trusted() {
    let (fake, _, src) = source();
    fake.values.lock().insert("core-api".into(), forced(None));
    src.refresh_now().await.unwrap();
    // Frozen for 10 minutes; meanwhile the operator cleared the override.
    fake.values.lock().clear();
    tokio::time::advance(Duration::from_secs(600)).await;
    assert_eq!(
        src.current("core-api"),
        None,
        "a 600 s old value is never used"
    );
    // Set again while frozen: the thawed instance's first protected call reads it first.
    fake.values.lock().insert("core-api".into(), forced(None));
    tokio::time::advance(Duration::from_secs(600)).await;
    src.ensure_fresh().await;
    assert!(src.current("core-api").is_some());
}

#[tokio::test(start_paused = true)]
async fn a_new_instance_reads_the_override_before_its_first_protected_call() {
    let (fake, _, src) = source();
    fake.values.lock().insert("core-api".into(), forced(None));
    // Ten calls arrive at once on a new instance: one read, shared by all.
    let all = futures::future::join_all((0..10).map(|_| async {
        src.ensure_fresh().await;
        src.current("core-api")
    }))
    .await;
    assert!(all.iter().all(Option::is_some), "{all:?}");
    assert_eq!(fake.reads.load(Ordering::SeqCst), 1);
    // A usable read is cached: no wait, no read.
    let before = tokio::time::Instant::now();
    src.ensure_fresh().await;
    assert_eq!(tokio::time::Instant::now(), before);
    assert_eq!(fake.reads.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn with_dynamodb_down_a_new_instance_waits_once_per_refresh_interval_not_per_call() {
    let (fake, _, src) = source();
    fake.fail.store(true, Ordering::SeqCst);
    src.ensure_fresh().await;
    assert_eq!(fake.reads.load(Ordering::SeqCst), 1);
    for _ in 0..20 {
        let before = tokio::time::Instant::now();
        src.ensure_fresh().await;
        assert_eq!(
            tokio::time::Instant::now(),
            before,
            "no wait after a failed try"
        );
    }
    assert_eq!(fake.reads.load(Ordering::SeqCst), 1);
    assert_eq!(
        src.current("core-api"),
        None,
        "no override known: calls go on"
    );
    tokio::time::advance(Duration::from_secs(5)).await;
    fake.fail.store(false, Ordering::SeqCst);
    fake.values.lock().insert("core-api".into(), forced(None));
    src.ensure_fresh().await;
    assert!(
        src.current("core-api").is_some(),
        "the next interval reads again"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cleared_override_stops_refusing_within_one_interval_and_one_read() {
    let (fake, _, src) = source();
    fake.values.lock().insert("core-api".into(), forced(None));
    src.ensure_fresh().await;
    assert!(src.current("core-api").is_some());
    fake.values.lock().clear();
    // Calls every second; the override must be gone 5 s + one read (10 ms) after clearing.
    let mut cleared_after = None;
    for second in 1..=10u64 {
        tokio::time::advance(Duration::from_secs(1)).await;
        src.ensure_fresh().await;
        if src.current("core-api").is_none() {
            cleared_after = Some(second);
            break;
        }
        settle().await;
    }
    let cleared_after = cleared_after.expect("cleared");
    assert!(cleared_after <= 6, "cleared after {cleared_after} s");
}

#[tokio::test(start_paused = true)]
async fn a_hung_read_times_out_and_frees_the_refresh_slot() {
    struct Hang(AtomicUsize);
    impl OverrideFetcher for Hang {
        fn fetch<'a>(&'a self, _: &'a [String]) -> BoxFuture<'a, Result<Fetched, StateError>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(std::future::pending())
        }
        fn write_trip<'a>(&'a self, _: &'a TripWrite) -> BoxFuture<'a, Result<usize, StateError>> {
            Box::pin(std::future::pending())
        }
    }
    let hang = Arc::new(Hang(AtomicUsize::new(0)));
    let src = DynamoOverrides::with_fetcher(
        hang.clone(),
        OverrideSettings::default(),
        Arc::new(ManualClock::new(NOW_S * 1000)),
    );
    src.current("core-api");
    run_spawned().await;
    tokio::time::advance(Duration::from_secs(5)).await;
    run_spawned().await;
    src.current("core-api");
    run_spawned().await;
    assert_eq!(
        hang.0.load(Ordering::SeqCst),
        2,
        "the 1 s read timeout freed the slot"
    );
}

/// What a protected call decides on: `ensure_fresh` (beside the rate-limit write), then the
/// breaker's `current`.
async fn decide(src: &DynamoOverrides) -> bool {
    src.ensure_fresh().await;
    src.current("core-api").is_some()
}

#[tokio::test(start_paused = true)]
async fn an_instance_idle_eight_seconds_reads_a_cleared_override_before_its_next_call() {
    // #26: force open, obeyed, cleared, 8 s idle: the next call was still refused.
    let (fake, _, src) = source();
    fake.values.lock().insert("core-api".into(), forced(None));
    assert!(decide(&src).await, "obeyed");
    fake.values.lock().clear();
    tokio::time::advance(Duration::from_secs(8)).await;
    assert!(
        !decide(&src).await,
        "the first call after the idle time is admitted"
    );
    assert_eq!(fake.reads.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn an_instance_idle_eight_seconds_reads_a_new_override_before_its_next_call() {
    let (fake, _, src) = source();
    assert!(!decide(&src).await);
    fake.values.lock().insert("core-api".into(), forced(None));
    tokio::time::advance(Duration::from_secs(8)).await;
    assert!(
        decide(&src).await,
        "the first call after the idle time is refused"
    );
}

#[tokio::test(start_paused = true)]
async fn a_busy_instance_never_decides_on_a_value_older_than_five_seconds_plus_one_read() {
    let (fake, _, src) = source();
    fake.values.lock().insert("core-api".into(), forced(None));
    assert!(decide(&src).await);
    fake.values.lock().clear();
    let cleared_at = tokio::time::Instant::now();
    // A call every 100 ms: each decision on the old value must come within 5 s + one read.
    loop {
        tokio::time::advance(Duration::from_millis(100)).await;
        if !decide(&src).await {
            break;
        }
        assert!(cleared_at.elapsed() <= Duration::from_millis(5_010));
    }
    assert!(cleared_at.elapsed() <= Duration::from_millis(5_010));
}

#[tokio::test(start_paused = true)]
async fn concurrent_callers_share_one_read() {
    let (fake, _, src) = source();
    assert!(!decide(&src).await);
    fake.values.lock().insert("core-api".into(), forced(None));
    tokio::time::advance(Duration::from_secs(6)).await;
    let all = futures::future::join_all((0..10).map(|_| decide(&src))).await;
    assert!(all.iter().all(|&refused| refused), "{all:?}");
    assert_eq!(fake.reads.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_slow_read_holds_a_recent_value_call_at_most_100_ms_and_the_next_call_waits_on_it() {
    let (fake, _, src) = source();
    fake.values.lock().insert("core-api".into(), forced(None));
    assert!(decide(&src).await);
    fake.values.lock().clear();
    fake.slow_ms.store(240, Ordering::SeqCst); // reads now take 250 ms
    tokio::time::advance(Duration::from_secs(10)).await;
    let before = tokio::time::Instant::now();
    assert!(decide(&src).await, "decided on the held value");
    assert_eq!(before.elapsed(), Duration::from_millis(100));
    // The next call waits on the same read, not a new one.
    assert!(decide(&src).await);
    assert_eq!(before.elapsed(), Duration::from_millis(200));
    assert!(!decide(&src).await, "the read landed: cleared");
    assert_eq!(before.elapsed(), Duration::from_millis(250));
    assert_eq!(fake.reads.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn holding_no_usable_value_a_call_waits_up_to_the_read_timeout() {
    let (fake, _, src) = source();
    fake.values.lock().insert("core-api".into(), forced(None));
    fake.slow_ms.store(690, Ordering::SeqCst); // 700 ms, inside the 1 s bound
    let before = tokio::time::Instant::now();
    assert!(decide(&src).await);
    assert_eq!(before.elapsed(), Duration::from_millis(700));
}

#[tokio::test(start_paused = true)]
async fn a_thawed_instance_whose_wall_clock_jumped_reads_before_deciding() {
    // SIGSTOP/Lambda freeze: the wall clock moved 20 s, tokio's clock did not.
    let (fake, clock, src) = source();
    fake.values.lock().insert("core-api".into(), forced(None));
    assert!(decide(&src).await);
    fake.values.lock().clear();
    clock.advance_ms(20_000);
    assert!(!decide(&src).await, "a fresh read, not the 20 s old value");
    assert_eq!(fake.reads.load(Ordering::SeqCst), 2);
    // Frozen past the 60 s age limit with DynamoDB down: the held value is not used.
    fake.values.lock().insert("core-api".into(), forced(None));
    clock.advance_ms(6_000);
    assert!(decide(&src).await, "read again after 6 s of wall time");
    fake.fail.store(true, Ordering::SeqCst);
    clock.advance_ms(61_000);
    assert!(!decide(&src).await, "a 61 s old value is ignored");
    assert_eq!(fake.reads.load(Ordering::SeqCst), 4);
}

/// Every JSON line an audit subscriber writes.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn an_override_is_audited_when_first_seen_set_again_or_lifted_and_not_on_every_read() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = kosha_runtime::telemetry::capture_default(subscriber);
    let empty = OverrideSnapshot::new();
    let one: OverrideSnapshot = [("core-api".to_owned(), forced(None))].into();
    let mut again = one.clone();
    if let Some(f) = again.get_mut("core-api") {
        f.set_at += 60;
    }
    let expired: OverrideSnapshot = [("openai".to_owned(), forced(Some(NOW_S - 1)))].into();
    audit_changes(&empty, &one, NOW_S); // first seen
    audit_changes(&one, &one, NOW_S); // the same: nothing
    audit_changes(&one, &again, NOW_S); // set again
    audit_changes(&again, &empty, NOW_S); // lifted
    audit_changes(&empty, &expired, NOW_S); // expired: absent
    let text = String::from_utf8(lines.0.lock().clone()).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let states: Vec<&str> = events
        .iter()
        .map(|e| e["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["forced_open", "forced_open", "cleared"], "{text}");
    assert!(
        events
            .iter()
            .all(|e| e["event"] == "breaker_override_observed" && e["audit"] == true)
    );
    assert_eq!(events[0]["set_by"], "alice");
    assert_eq!(events[0]["reason"], "incident 42");
    assert_eq!(events[0]["dependency"], "core-api");
}

/// The fleet simulator (Python) cannot import the constant, so its copy is checked here; the
/// constant is SPEC §8's 5 s.
#[test]
fn the_fleet_simulator_refreshes_as_often_as_the_gateway() {
    let scenarios = include_str!("../../../../benches/fleet/scenarios.py");
    let refresh_s: Vec<f64> = scenarios
        .lines()
        .filter_map(|line| line.strip_prefix("REFRESH_S = "))
        .map(|value| value.trim().parse().unwrap())
        .collect();
    assert_eq!(refresh_s, [OVERRIDE_REFRESH.as_secs_f64()], "REFRESH_S");
    assert_eq!(OVERRIDE_REFRESH, Duration::from_secs(5), "SPEC §8");
}
