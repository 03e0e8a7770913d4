//! A dependency's 429 honoured for every call, and the adaptive bulkhead limit, through the
//! composed policy (issue #33; seed 000 "Origin-driven Retry-After backoff"), on tokio's
//! paused clock.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use kosha_contract::dependency::Dependency;
use kosha_resilience::adaptive::AdaptiveConfig;
use kosha_resilience::classify::ErrorClass;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::overrides::NoOverrides;
use kosha_resilience::policy::{Policy, PolicyError};
use kosha_resilience::retry::Idempotency;
use tokio::time::Instant;

type Result<T> = std::result::Result<T, PolicyError<ErrorClass>>;

const I: Idempotency = Idempotency::Idempotent;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn s(v: u64) -> Duration {
    Duration::from_secs(v)
}

fn policy() -> Policy {
    Policy::try_new(
        Dependency::ScreeningSim,
        common::openai(),
        Arc::new(NoOverrides),
    )
    .unwrap()
}

fn status(status: u16, retry_after: Option<Duration>) -> ErrorClass {
    ErrorClass::Status {
        status,
        retry_after,
    }
}

/// A 3 s deadline: too short to wait out a 10 s `Retry-After`, so the 429 is the answer.
fn short() -> Deadline {
    Deadline::after(s(3))
}

#[tokio::test(start_paused = true)]
async fn a_429_with_retry_after_holds_every_call_until_its_time_without_an_attempt() {
    let p = policy();
    let r: Result<()> = p
        .call(&short(), I, |_| async { Err(status(429, Some(s(10)))) })
        .await;
    assert!(matches!(r, Err(PolicyError::Inner(_))), "{r:?}");
    let calls = AtomicU32::new(0);
    for wait in [0, 4, 5] {
        tokio::time::advance(s(wait)).await;
        let started = Instant::now();
        let r: Result<()> = p
            .call(&short(), I, |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Ok(()) }
            })
            .await;
        let Err(PolicyError::NotBefore { retry_after }) = r else {
            panic!("{r:?}");
        };
        assert!(retry_after <= s(10) && retry_after > Duration::ZERO);
        assert_eq!(Instant::now(), started, "refused at once");
    }
    assert_eq!(retry_after_at(&p), Some(s(1)));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "no attempt reached the dependency"
    );
    let snapshot = p.breaker().snapshot();
    assert_eq!(
        (snapshot.calls, snapshot.failures),
        (0, 0),
        "not breaker outcomes"
    );
    assert_eq!(p.health().in_flight, 0);
    assert_eq!(p.budget().earned_milli(), 0, "nothing deposited or spent");
    // At T the dependency is called again; its success clears the hold.
    tokio::time::advance(s(1)).await;
    let r: Result<()> = p
        .call(&short(), I, |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        })
        .await;
    r.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(!p.not_before().is_set());
}

fn retry_after_at(p: &Policy) -> Option<Duration> {
    p.not_before().remaining(Instant::now())
}

#[tokio::test(start_paused = true)]
async fn a_503_with_retry_after_stays_an_ordinary_failure() {
    let p = policy();
    let attempts = AtomicU32::new(0);
    let r: Result<()> = p
        .call(&short(), I, |_| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async { Err(status(503, Some(s(1)))) }
        })
        .await;
    assert!(matches!(r, Err(PolicyError::Inner(_))));
    assert_eq!(attempts.load(Ordering::SeqCst), 2, "retried");
    assert!(!p.not_before().is_set(), "a 503 holds nothing");
    assert_eq!(
        p.breaker().snapshot().failures,
        1,
        "and counts as a failure"
    );
    let r: Result<()> = p.call(&short(), I, |_| async { Ok(()) }).await;
    r.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_429_without_retry_after_holds_nothing() {
    let p = policy();
    let r: Result<()> = p
        .call(&short(), Idempotency::NonIdempotent, |_| async {
            Err(status(429, None))
        })
        .await;
    assert!(r.is_err());
    assert!(!p.not_before().is_set());
}

#[tokio::test(start_paused = true)]
async fn the_hold_is_capped_at_sixty_seconds() {
    let p = policy();
    let _: Result<()> = p
        .call(&short(), I, |_| async { Err(status(429, Some(s(3_600)))) })
        .await;
    assert_eq!(retry_after_at(&p), Some(s(60)));
    tokio::time::advance(s(60)).await;
    let r: Result<()> = p.call(&short(), I, |_| async { Ok(()) }).await;
    r.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_retry_is_not_made_while_another_callers_later_429_holds_the_dependency() {
    let p = Arc::new(policy());
    let attempts = AtomicU32::new(0);
    let other = {
        let p = p.clone();
        async move {
            // Started before any hold; 100 ms in, it is told "not for 10 s".
            let _: Result<()> = p
                .call(&short(), I, |_| async {
                    tokio::time::sleep(ms(100)).await;
                    Err(status(429, Some(s(10))))
                })
                .await;
        }
    };
    let deadline = Deadline::after(s(8));
    let ours = p.call(&deadline, I, |_| {
        attempts.fetch_add(1, Ordering::SeqCst);
        // Our first attempt is told "not for 800 ms"; by then the other hold is in force.
        async {
            tokio::time::sleep(ms(10)).await;
            Err::<(), _>(status(429, Some(ms(800))))
        }
    });
    let ((), r) = tokio::join!(other, ours);
    assert!(matches!(r, Err(PolicyError::Inner(_))), "{r:?}");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn an_adaptive_limit_sheds_the_excess_at_once_when_latency_triples() {
    let mut c = common::core_api_read();
    c.bulkhead.capacity = 16;
    let p = Arc::new(
        Policy::try_new(Dependency::CoreApi, c, Arc::new(NoOverrides))
            .unwrap()
            .with_adaptive_concurrency("core-api", AdaptiveConfig::for_capacity(16))
            .unwrap(),
    );
    let wave = |latency: Duration, n: usize| {
        let p = p.clone();
        async move {
            let calls = (0..n).map(|_| {
                let p = p.clone();
                async move {
                    p.call(&Deadline::after(s(5)), I, |_| async move {
                        tokio::time::sleep(latency).await;
                        Ok::<(), ErrorClass>(())
                    })
                    .await
                }
            });
            futures::future::join_all(calls).await
        }
    };
    for _ in 0..20 {
        let r = wave(ms(10), 16).await;
        assert!(r.iter().all(Result::is_ok));
    }
    assert_eq!(p.health().capacity, 16, "flat latency: the configured size");
    for _ in 0..4 {
        let _ = wave(ms(30), 16).await;
    }
    let limit = p.health().capacity;
    assert!((2..16).contains(&limit), "limit {limit}");
    // A full wave now: the excess is refused at once instead of queueing.
    let started = Instant::now();
    let r = wave(ms(30), 16).await;
    let shed = r
        .iter()
        .filter(|r| matches!(r, Err(PolicyError::BulkheadFull)))
        .count();
    assert!(shed >= 16 - limit, "{shed} shed at limit {limit}");
    assert_eq!(Instant::now() - started, ms(30), "no one waited for a slot");
}

#[tokio::test(start_paused = true)]
async fn an_attempt_timing_out_at_its_cap_lowers_the_adaptive_limit_at_once() {
    let mut c = common::core_api_read();
    c.bulkhead.capacity = 16;
    let p = Policy::try_new(Dependency::CoreApi, c, Arc::new(NoOverrides))
        .unwrap()
        .with_adaptive_concurrency("core-api", AdaptiveConfig::for_capacity(16))
        .unwrap();
    // One attempt that hangs past its cap (2 s): a timeout of the dependency's own, with no
    // latency sample worth the name yet; the limit loses a tenth without waiting for them.
    let r = p
        .call(
            &Deadline::after(s(30)),
            Idempotency::NonIdempotent,
            |_| async { std::future::pending::<std::result::Result<(), ErrorClass>>().await },
        )
        .await;
    assert!(matches!(r, Err(PolicyError::AttemptTimeout)), "{r:?}");
    assert_eq!(p.health().capacity, 14, "16 × 0.9 = 14.4");
    // A deadline that ends first is the caller's, not the dependency's: the limit stays.
    let r = p
        .call(
            &Deadline::after(ms(500)),
            Idempotency::NonIdempotent,
            |_| async { std::future::pending::<std::result::Result<(), ErrorClass>>().await },
        )
        .await;
    assert!(matches!(r, Err(PolicyError::DeadlineExceeded)), "{r:?}");
    assert_eq!(p.health().capacity, 14);
}
