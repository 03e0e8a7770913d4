//! Behaviour of the composed policy stack (seed 004 §1–§4), on tokio's paused clock.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use kosha_resilience::backoff::Backoff;
use kosha_resilience::breaker::BreakerState;
use kosha_resilience::classify::ErrorClass;
use kosha_resilience::config::PolicyConfig;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::overrides::{ForcedOpen, NoOverrides, StaticOverrides};
use kosha_resilience::policy::{Attempt, Policy, PolicyError};
use kosha_resilience::retry::Idempotency;
use tokio::time::Instant;

type Result<T> = std::result::Result<T, PolicyError<ErrorClass>>;

const I: Idempotency = Idempotency::Idempotent;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn config() -> PolicyConfig {
    let mut c = common::core_api_read();
    c.retry.backoff = Backoff::try_new(ms(1), ms(1)).unwrap();
    c
}

fn policy_with(c: PolicyConfig) -> Policy {
    Policy::try_new(
        kosha_contract::dependency::Dependency::CoreApi,
        c,
        Arc::new(NoOverrides),
    )
    .unwrap()
}

fn policy() -> Policy {
    policy_with(config())
}

fn unavailable() -> ErrorClass {
    ErrorClass::Status {
        status: 503,
        retry_after: None,
    }
}

fn long() -> Deadline {
    Deadline::after(Duration::from_secs(60))
}

/// Fails `n` logical calls with 503s so the breaker opens (window 20, min calls 10).
async fn open_breaker(p: &Policy) {
    for _ in 0..10 {
        let _ = p
            .call(&long(), Idempotency::NonIdempotent, |_| async {
                Err::<(), _>(unavailable())
            })
            .await;
    }
    assert_eq!(p.breaker().state(), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn success_passes_through_and_deposits() {
    let p = policy();
    let r: Result<u8> = p
        .call(&long(), I, |a| async move { Ok(a.number as u8) })
        .await;
    assert_eq!(r.unwrap(), 1);
    assert_eq!(p.budget().earned_milli(), 100);
    let h = p.health();
    assert_eq!(
        (
            h.dependency.as_str(),
            h.state,
            h.in_flight,
            h.capacity,
            h.forced
        ),
        ("core-api", BreakerState::Closed, 0, 32, None)
    );
    assert_eq!(p.breaker().snapshot().calls, 1);
}

#[tokio::test(start_paused = true)]
async fn expired_deadline_calls_nothing() {
    let p = policy();
    let calls = AtomicU32::new(0);
    let d = Deadline::after(ms(150));
    tokio::time::advance(ms(50)).await;
    // 100 ms left = the margin toward core-api is 150 ms: nothing can start.
    let r: Result<()> = p
        .call(&d, I, |_| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .await;
    assert!(matches!(r, Err(PolicyError::DeadlineExceeded)));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn retries_inside_the_breaker_count_once() {
    let p = policy();
    let r: Result<u32> = p
        .call(&long(), I, |a| async move {
            if a.number < 3 {
                Err(unavailable())
            } else {
                Ok(a.number)
            }
        })
        .await;
    // The budget's floor grants one retry, then it is empty: the second 503 is returned.
    assert!(matches!(r, Err(PolicyError::Inner(c)) if c == unavailable()));
    let s = p.breaker().snapshot();
    assert_eq!(s.calls, 1, "one logical call, one outcome");

    // Attempts exhausted on a persistent 503: one failure recorded, max attempts honoured.
    let p = policy();
    for _ in 0..30 {
        p.budget().deposit();
    }
    let attempts = AtomicU32::new(0);
    let r: Result<()> = p
        .call(&long(), I, |_| async {
            attempts.fetch_add(1, Ordering::SeqCst);
            Err(unavailable())
        })
        .await;
    assert!(matches!(r, Err(PolicyError::Inner(c)) if c == unavailable()));
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    let s = p.breaker().snapshot();
    assert_eq!((s.calls, s.failures), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn never_retried_cases_make_one_attempt() {
    let p = policy();
    for _ in 0..30 {
        p.budget().deposit();
    }
    let count = |idem, class: ErrorClass| {
        let p = &p;
        async move {
            let attempts = AtomicU32::new(0);
            let _: Result<()> = p
                .call(&long(), idem, |_| async {
                    attempts.fetch_add(1, Ordering::SeqCst);
                    Err(class)
                })
                .await;
            attempts.load(Ordering::SeqCst)
        }
    };
    assert_eq!(count(Idempotency::NonIdempotent, unavailable()).await, 1);
    assert_eq!(
        count(
            I,
            ErrorClass::Status {
                status: 404,
                retry_after: None
            }
        )
        .await,
        1
    );
    assert_eq!(
        count(
            I,
            ErrorClass::Status {
                status: 500,
                retry_after: None
            }
        )
        .await,
        1
    );
    assert_eq!(count(Idempotency::Keyed, ErrorClass::Connect).await, 3);
    // The 404 was neutral: only the 503, the 500 and the connect failures are in the window.
    assert_eq!(p.breaker().snapshot().failures, 3);
}

// Pitfall 11: the third attempt gets min(remaining − margin, cap), not the cap.
#[tokio::test(start_paused = true)]
async fn third_attempt_gets_the_shrunken_timeout() {
    let p = policy();
    for _ in 0..30 {
        p.budget().deposit();
    }
    let deadline = Deadline::after(ms(4_500));
    let seen = parking_lot::Mutex::new(Vec::new());
    let r: Result<()> = p
        .call(&deadline, I, |a: Attempt| {
            seen.lock()
                .push((a.number, a.timeout, deadline.remaining()));
            std::future::pending()
        })
        .await;
    let seen = seen.into_inner();
    assert_eq!(seen.len(), 3, "{seen:?}");
    for (number, timeout, remaining) in &seen {
        assert_eq!(
            *timeout,
            (*remaining - ms(150)).min(ms(2_000)),
            "attempt {number}"
        );
    }
    assert_eq!(seen[0].1, ms(2_000));
    assert_eq!(seen[1].1, ms(2_000));
    assert!(
        seen[2].1 <= ms(350) && seen[2].1 >= ms(348),
        "{:?}",
        seen[2]
    );
    // The shrunk attempt was cut by our own deadline: DeadlineExceeded, and the breaker holds
    // one failure for the two full-cap timeouts, not more.
    assert!(matches!(r, Err(PolicyError::DeadlineExceeded)));
    assert_eq!(p.breaker().snapshot().failures, 1);
}

#[tokio::test(start_paused = true)]
async fn full_cap_timeout_is_attempt_timeout_and_deadline_skips_retry() {
    let p = policy();
    let start = Instant::now();
    // Attempt 1 gets the full 2 s cap (2.24 s − 150 ms margin > 2 s); then 240 ms remain,
    // short of delay + 150 ms margin + 100 ms minimum attempt: the retry is skipped.
    let d = Deadline::after(ms(2_240));
    let attempts = AtomicU32::new(0);
    let r: Result<()> = p
        .call(&d, I, |_| {
            attempts.fetch_add(1, Ordering::SeqCst);
            std::future::pending()
        })
        .await;
    assert!(matches!(r, Err(PolicyError::AttemptTimeout)), "{r:?}");
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "240 ms left < 150 ms margin + 100 ms"
    );
    assert_eq!(start.elapsed(), ms(2_000));
    assert_eq!(p.breaker().snapshot().failures, 1);
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured() {
    let p = policy();
    let starts = parking_lot::Mutex::new(Vec::new());
    let r: Result<()> = p
        .call(&long(), I, |a| {
            starts.lock().push(Instant::now());
            async move {
                if a.number == 1 {
                    Err(ErrorClass::Status {
                        status: 429,
                        retry_after: Some(ms(700)),
                    })
                } else {
                    Ok(())
                }
            }
        })
        .await;
    assert!(r.is_ok());
    let starts = starts.into_inner();
    assert_eq!(starts[1] - starts[0], ms(700));
    assert_eq!(p.breaker().snapshot().failures, 0, "429 is not a failure");
}

// Pitfall 5: rejections are never retried, never failures, never spend budget.
#[tokio::test(start_paused = true)]
async fn breaker_rejections_are_free() {
    let p = policy();
    open_breaker(&p).await;
    let generation = p.breaker().snapshot().generation;
    let attempts = AtomicU32::new(0);
    for _ in 0..100 {
        let r: Result<()> = p
            .call(&long(), I, |_| async {
                attempts.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .await;
        assert!(
            matches!(r, Err(PolicyError::CircuitOpen { retry_after }) if retry_after == ms(15_000))
        );
    }
    assert_eq!(attempts.load(Ordering::SeqCst), 0);
    assert_eq!(p.breaker().snapshot().generation, generation);
    assert_eq!(p.budget().earned_milli(), 0);
    // The floor token is still there: a retry is still possible after the rejections.
    assert!(p.budget().try_withdraw());
}

#[tokio::test(start_paused = true)]
async fn bulkhead_rejections_are_free() {
    let mut c = config();
    c.bulkhead.capacity = 1;
    c.bulkhead.wait = Duration::ZERO;
    let p = Arc::new(policy_with(c));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let holder = {
        let p = p.clone();
        let rx = parking_lot::Mutex::new(Some(rx));
        tokio::spawn(async move {
            let r: Result<()> = p
                .call(&long(), I, |_| {
                    let rx = rx.lock().take();
                    async move {
                        if let Some(rx) = rx {
                            let _ = rx.await;
                        }
                        Ok(())
                    }
                })
                .await;
            r
        })
    };
    tokio::task::yield_now().await;
    assert_eq!(p.health().in_flight, 1);
    for _ in 0..50 {
        let r: Result<()> = p.call(&long(), I, |_| async { Err(unavailable()) }).await;
        assert!(matches!(r, Err(PolicyError::BulkheadFull)));
    }
    let s = p.breaker().snapshot();
    assert_eq!((s.state, s.calls), (BreakerState::Closed, 0));
    assert_eq!(p.budget().earned_milli(), 0);
    tx.send(()).unwrap();
    assert!(holder.await.unwrap().is_ok());
    assert_eq!(p.health().in_flight, 0);
    assert_eq!(p.budget().earned_milli(), 100);
}

// Pitfall 8 through the stack: under 100 % failure retries stop when the budget is empty.
#[tokio::test(start_paused = true)]
async fn retries_stop_when_the_budget_is_empty() {
    let mut c = config();
    c.breaker.window = 1_000;
    c.breaker.min_calls = 1_000;
    let p = policy_with(c);
    for _ in 0..20 {
        p.budget().deposit(); // 2 tokens
    }
    let attempts = AtomicU32::new(0);
    for _ in 0..50 {
        let _: Result<()> = p
            .call(&long(), I, |_| async {
                attempts.fetch_add(1, Ordering::SeqCst);
                Err(ErrorClass::Connect)
            })
            .await;
    }
    // 50 first attempts + 2 earned + 1 floor (backoff sleeps are ≤ 1 ms: no floor refill).
    assert_eq!(attempts.load(Ordering::SeqCst), 53);
}

// Pitfall 12 through the stack: cancellation and panics return bulkhead and probe slots.
#[tokio::test(start_paused = true)]
async fn cancelled_or_panicking_calls_return_their_permits() {
    let p = Arc::new(policy());
    open_breaker(&p).await;
    tokio::time::advance(ms(15_000)).await;
    let mut tasks = Vec::new();
    for i in 0..3 {
        let p = p.clone();
        tasks.push(tokio::spawn(async move {
            let _: Result<()> = p
                .call(&long(), I, |_| async move {
                    if i == 0 {
                        panic!("probe panicked");
                    }
                    std::future::pending().await
                })
                .await;
        }));
    }
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
    assert_eq!(p.health().in_flight, 2);
    assert_eq!(p.breaker().snapshot().probes_in_flight, 2);
    for t in &tasks[1..] {
        t.abort();
    }
    for (i, t) in tasks.into_iter().enumerate() {
        let e = t.await.unwrap_err();
        assert_eq!(e.is_panic(), i == 0);
    }
    assert_eq!(p.health().in_flight, 0);
    assert_eq!(p.breaker().snapshot().probes_in_flight, 0);
    // All three slots are free again: three successes close the breaker.
    for _ in 0..3 {
        let r: Result<()> = p.call(&long(), I, |_| async { Ok(()) }).await;
        assert!(r.is_ok());
    }
    assert_eq!(p.breaker().state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn forced_open_rejects_until_cleared() {
    let overrides = StaticOverrides::default();
    let p = Policy::try_new(
        kosha_contract::dependency::Dependency::CoreApi,
        config(),
        Arc::new(overrides.clone()),
    )
    .unwrap();
    let forced = ForcedOpen {
        reason: "maintenance".into(),
        set_by: "ops".into(),
        set_at: 0,
        expires_at: None,
    };
    overrides.force_open("core-api", forced.clone());
    let r: Result<()> = p.call(&long(), I, |_| async { Ok(()) }).await;
    assert!(
        matches!(&r, Err(PolicyError::ForcedOpen { forced: f, retry_after: None }) if *f == forced)
    );
    let h = p.health();
    assert_eq!((h.state.as_str(), h.forced), ("forced_open", Some(forced)));
    overrides.clear("core-api");
    let r: Result<()> = p.call(&long(), I, |_| async { Ok(()) }).await;
    assert!(r.is_ok());
    assert_eq!(p.health().state.as_str(), "closed");
}

// The end-to-end story of issue 3 at the policy level: failures open the breaker, calls fail
// fast with retry_after, the dependency comes back, and it closes through half-open.
#[tokio::test(start_paused = true)]
async fn opens_fails_fast_and_recovers_through_half_open() {
    let p = policy();
    open_breaker(&p).await;
    let r: Result<()> = p.call(&long(), I, |_| async { Ok(()) }).await;
    assert_eq!(r.unwrap_err().retry_after(), Some(ms(15_000)));
    tokio::time::advance(ms(15_000)).await;
    assert_eq!(p.breaker().state(), BreakerState::HalfOpen);
    for _ in 0..3 {
        let r: Result<()> = p.call(&long(), I, |_| async { Ok(()) }).await;
        assert!(r.is_ok());
    }
    assert_eq!(p.health().state, BreakerState::Closed);
}

// Shared breaker: core-api reads and writes trip together.
#[tokio::test(start_paused = true)]
async fn reads_and_writes_can_share_one_breaker() {
    let reads = policy();
    let writes =
        Policy::try_with_breaker(common::core_api_write(), reads.breaker().clone()).unwrap();
    open_breaker(&reads).await;
    let r: Result<()> = writes
        .call(&long(), Idempotency::Keyed, |_| async { Ok(()) })
        .await;
    assert!(matches!(r, Err(PolicyError::CircuitOpen { .. })));
    assert_eq!(writes.health().capacity, 16);
}

// Pitfall 13: nothing may rely on a background task (Lambda freezes the process between
// invocations). Building and using a policy spawns none; open → half-open and override
// changes are applied lazily by the next caller.
#[tokio::test(start_paused = true)]
async fn no_background_tasks_transitions_are_lazy() {
    let overrides = StaticOverrides::default();
    let p = Policy::try_new(
        kosha_contract::dependency::Dependency::CoreApi,
        config(),
        Arc::new(overrides.clone()),
    )
    .unwrap();
    open_breaker(&p).await;
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        0
    );
    tokio::time::advance(ms(15_000)).await;
    assert_eq!(p.health().state, BreakerState::HalfOpen, "applied on read");
    overrides.force_open(
        "core-api",
        ForcedOpen {
            reason: "r".into(),
            set_by: "s".into(),
            set_at: 0,
            expires_at: None,
        },
    );
    let r: Result<()> = p.call(&long(), I, |_| async { Ok(()) }).await;
    assert!(
        matches!(r, Err(PolicyError::ForcedOpen { .. })),
        "seen by the very next call"
    );
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        0
    );
}
