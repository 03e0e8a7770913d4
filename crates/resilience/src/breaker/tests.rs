use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::*;
use crate::overrides::{NoOverrides, StaticOverrides};

const OPEN: Duration = Duration::from_secs(15);
const LEASE: Duration = Duration::from_secs(5);

fn config() -> BreakerConfig {
    BreakerConfig {
        window: 10,
        min_calls: 4,
        failure_rate_pct: 50,
        open_duration: OPEN,
        half_open_probes: 3,
        probe_lease: LEASE,
    }
}

fn breaker() -> Breaker {
    Breaker::try_new("dep", config(), Arc::new(NoOverrides)).unwrap()
}

fn record(b: &Breaker, outcome: Outcome) {
    b.try_acquire().unwrap().record(outcome);
}

fn trip(b: &Breaker) {
    for _ in 0..4 {
        record(b, Outcome::Failure);
    }
    assert_eq!(b.state(), BreakerState::Open);
}

async fn trip_and_wait(b: &Breaker) {
    trip(b);
    tokio::time::advance(OPEN).await;
    assert_eq!(b.state(), BreakerState::HalfOpen);
}

#[test]
fn settings_are_validated() {
    let bad = |f: fn(&mut BreakerConfig)| {
        let mut c = config();
        f(&mut c);
        Breaker::try_new("dep", c, Arc::new(NoOverrides)).is_err()
    };
    assert!(bad(|c| c.window = 0));
    assert!(bad(|c| c.min_calls = 0));
    assert!(bad(|c| c.min_calls = 11));
    assert!(bad(|c| c.failure_rate_pct = 0));
    assert!(bad(|c| c.failure_rate_pct = 101));
    assert!(bad(|c| c.open_duration = Duration::ZERO));
    assert!(bad(|c| c.half_open_probes = 0));
    assert!(bad(|c| c.probe_lease = Duration::ZERO));
    assert!(!bad(|_| {}));
}

#[tokio::test(start_paused = true)]
async fn opens_at_threshold_only_after_min_calls() {
    let b = breaker();
    for _ in 0..3 {
        record(&b, Outcome::Failure);
    }
    assert_eq!(b.state(), BreakerState::Closed, "3 calls < min_calls 4");
    record(&b, Outcome::Failure);
    assert_eq!(b.state(), BreakerState::Open);

    let b = breaker();
    for o in [
        Outcome::Success,
        Outcome::Success,
        Outcome::Success,
        Outcome::Failure,
        Outcome::Failure,
    ] {
        record(&b, o);
    }
    assert_eq!(b.state(), BreakerState::Closed, "2 of 5 = 40 %");
    record(&b, Outcome::Failure);
    assert_eq!(b.state(), BreakerState::Open, "3 of 6 = 50 %");
}

#[tokio::test(start_paused = true)]
async fn neutral_outcomes_are_not_counted_while_closed() {
    let b = breaker();
    for _ in 0..100 {
        record(&b, Outcome::Neutral);
    }
    let s = b.snapshot();
    assert_eq!((s.state, s.calls, s.failures), (BreakerState::Closed, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn open_rejects_with_retry_after_then_half_opens() {
    let b = breaker();
    trip(&b);
    assert_eq!(
        b.try_acquire().unwrap_err(),
        Rejected::Open { retry_after: OPEN }
    );
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(
        b.try_acquire().unwrap_err(),
        Rejected::Open {
            retry_after: Duration::from_secs(5)
        }
    );
    tokio::time::advance(Duration::from_secs(5)).await;
    assert!(b.try_acquire().unwrap().is_probe());
    assert_eq!(b.state().gauge(), 1.0);
}

#[tokio::test(start_paused = true)]
async fn half_open_admits_k_probes_and_k_successes_close() {
    let b = breaker();
    trip_and_wait(&b).await;
    let probes: Vec<_> = (0..3).map(|_| b.try_acquire().unwrap()).collect();
    assert!(probes.iter().all(CallPermit::is_probe));
    assert!(matches!(b.try_acquire(), Err(Rejected::Open { retry_after }) if retry_after == LEASE));
    let mut probes = probes.into_iter();
    for p in probes.by_ref().take(2) {
        p.record(Outcome::Success);
        assert_eq!(b.state(), BreakerState::HalfOpen);
    }
    // Succeeded slots stay consumed: still no fourth probe.
    assert!(b.try_acquire().is_err());
    probes.next().unwrap().record(Outcome::Success);
    let s = b.snapshot();
    assert_eq!(
        (s.state, s.calls),
        (BreakerState::Closed, 0),
        "fresh window on close"
    );
}

#[tokio::test(start_paused = true)]
async fn any_probe_failure_reopens() {
    let b = breaker();
    trip_and_wait(&b).await;
    let first = b.try_acquire().unwrap();
    let second = b.try_acquire().unwrap();
    first.record(Outcome::Success);
    second.record(Outcome::Failure);
    assert_eq!(
        b.try_acquire().unwrap_err(),
        Rejected::Open { retry_after: OPEN }
    );
}

// Pitfall 3: outcomes of calls started before the breaker opened never move the state.
#[tokio::test(start_paused = true)]
async fn stale_outcomes_do_not_close_or_count() {
    let b = breaker();
    let old: Vec<_> = (0..6).map(|_| b.try_acquire().unwrap()).collect();
    trip_and_wait(&b).await;
    for p in old {
        p.record(Outcome::Success);
    }
    let s = b.snapshot();
    assert_eq!((s.state, s.probes_in_flight), (BreakerState::HalfOpen, 0));
    // Still exactly three probe slots free: stale successes consumed none.
    let probes: Vec<_> = (0..3).map(|_| b.try_acquire().unwrap()).collect();
    assert!(b.try_acquire().is_err());
    drop(probes);

    // And stale failures from an earlier closed generation do not reopen a closed breaker.
    let b = breaker();
    let old: Vec<_> = (0..4).map(|_| b.try_acquire().unwrap()).collect();
    trip_and_wait(&b).await;
    for _ in 0..3 {
        record(&b, Outcome::Success);
    }
    assert_eq!(b.state(), BreakerState::Closed);
    for p in old {
        p.record(Outcome::Failure);
    }
    let s = b.snapshot();
    assert_eq!((s.state, s.failures), (BreakerState::Closed, 0));
}

// Pitfall 2: a probe that never reports loses its slot when its lease expires.
#[tokio::test(start_paused = true)]
async fn lease_expiry_frees_a_wedged_probe() {
    let b = breaker();
    trip_and_wait(&b).await;
    let wedged: Vec<_> = (0..3).map(|_| b.try_acquire().unwrap()).collect();
    tokio::time::advance(LEASE - Duration::from_millis(1)).await;
    assert!(b.try_acquire().is_err());
    tokio::time::advance(Duration::from_millis(1)).await;
    let fresh: Vec<_> = (0..3).map(|_| b.try_acquire().unwrap()).collect();
    assert!(b.try_acquire().is_err());
    // The wedged probes report late: their slots now belong to others, so nothing moves.
    for p in wedged {
        p.record(Outcome::Failure);
    }
    assert_eq!(b.state(), BreakerState::HalfOpen);
    for p in fresh {
        p.record(Outcome::Success);
    }
    assert_eq!(b.state(), BreakerState::Closed);
}

// Pitfall 4 and 12: a neutral outcome or a dropped probe frees its slot.
#[tokio::test(start_paused = true)]
async fn neutral_or_dropped_probe_frees_its_slot() {
    let b = breaker();
    trip_and_wait(&b).await;
    let p1 = b.try_acquire().unwrap();
    let p2 = b.try_acquire().unwrap();
    let _p3 = b.try_acquire().unwrap();
    assert!(b.try_acquire().is_err());
    p1.record(Outcome::Neutral);
    let p4 = b.try_acquire().unwrap();
    assert!(b.try_acquire().is_err());
    drop(p2);
    let _p5 = b.try_acquire().unwrap();
    assert!(b.try_acquire().is_err());
    assert_eq!(b.state(), BreakerState::HalfOpen);
    drop(p4);
}

#[tokio::test(start_paused = true)]
async fn dropped_closed_permit_changes_nothing() {
    let b = breaker();
    for _ in 0..100 {
        drop(b.try_acquire().unwrap());
    }
    let s = b.snapshot();
    assert_eq!(
        (s.state, s.generation, s.calls),
        (BreakerState::Closed, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn forced_open_rejects_and_clearing_closes() {
    let overrides = StaticOverrides::default();
    let b = Breaker::try_new("core-api", config(), Arc::new(overrides.clone())).unwrap();
    trip(&b);
    let forced = ForcedOpen {
        reason: "db failover".into(),
        set_by: "alice".into(),
        set_at: 0,
        expires_at: None,
    };
    overrides.force_open("core-api", forced.clone());
    assert_eq!(
        b.try_acquire().unwrap_err(),
        Rejected::ForcedOpen {
            forced: forced.clone(),
            retry_after: None
        }
    );
    let s = b.snapshot();
    assert_eq!(
        (s.state, s.forced),
        (BreakerState::ForcedOpen, Some(forced))
    );
    assert_eq!(s.state.gauge(), 3.0);
    // Open duration passing changes nothing while forced.
    tokio::time::advance(OPEN * 2).await;
    assert_eq!(b.state(), BreakerState::ForcedOpen);
    overrides.clear("core-api");
    assert_eq!(b.state(), BreakerState::Closed);
    assert!(!b.try_acquire().unwrap().is_probe());
    // Another dependency's override does not touch this breaker.
    overrides.force_open(
        "openai",
        ForcedOpen {
            reason: String::new(),
            set_by: String::new(),
            set_at: 0,
            expires_at: None,
        },
    );
    assert_eq!(b.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn forced_open_retry_after_follows_expiry() {
    let overrides = StaticOverrides::default();
    let b = Breaker::try_new("core-api", config(), Arc::new(overrides.clone())).unwrap();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    overrides.force_open(
        "core-api",
        ForcedOpen {
            reason: "x".into(),
            set_by: "y".into(),
            set_at: now,
            expires_at: Some(now + 600),
        },
    );
    let Err(Rejected::ForcedOpen {
        retry_after: Some(after),
        ..
    }) = b.try_acquire()
    else {
        panic!("expected forced open with expiry");
    };
    assert!((Duration::from_secs(598)..=Duration::from_secs(600)).contains(&after));
}

// Pitfall 6: every transition starts a fresh window.
#[tokio::test(start_paused = true)]
async fn window_is_fresh_after_every_transition() {
    let b = breaker();
    trip_and_wait(&b).await;
    for _ in 0..3 {
        record(&b, Outcome::Success);
    }
    // One failure after closing must not trip on leftovers from before.
    for _ in 0..3 {
        record(&b, Outcome::Success);
    }
    record(&b, Outcome::Failure);
    let s = b.snapshot();
    assert_eq!(
        (s.state, s.calls, s.failures, s.generation),
        (BreakerState::Closed, 4, 1, 3)
    );
}

// Pitfall 1: 1,000 callers racing the open → half-open switch never get more than K probes.
#[test]
fn thousand_racing_callers_get_at_most_k_probes() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = config();
        c.open_duration = Duration::from_millis(2);
        let b = Arc::new(Breaker::try_new("dep", c, Arc::new(NoOverrides)).unwrap());
        for round in 0..10 {
            for _ in 0..4 {
                if let Ok(p) = b.try_acquire() {
                    p.record(Outcome::Failure);
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            let start = Arc::new(tokio::sync::Barrier::new(1_000));
            let done = Arc::new(tokio::sync::Barrier::new(1_000));
            let admitted = Arc::new(AtomicUsize::new(0));
            let tasks: Vec<_> = (0..1_000)
                .map(|_| {
                    let (b, start, done, admitted) =
                        (b.clone(), start.clone(), done.clone(), admitted.clone());
                    tokio::spawn(async move {
                        start.wait().await;
                        let permit = b.try_acquire();
                        if permit.is_ok() {
                            admitted.fetch_add(1, Ordering::SeqCst);
                        }
                        // Hold every permit until all callers have tried.
                        done.wait().await;
                        if let Ok(p) = permit {
                            p.record(Outcome::Failure);
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            assert_eq!(admitted.load(Ordering::SeqCst), 3, "round {round}");
        }
    });
}
