//! Hedged reads through the composed policy (issue #33; seed 002 "Request hedging";
//! ARCHITECTURE.md pitfall 27), on tokio's paused clock.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use kosha_contract::dependency::Dependency;
use kosha_resilience::breaker::BreakerState;
use kosha_resilience::classify::ErrorClass;
use kosha_resilience::config::PolicyConfig;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::hedge::HedgeConfig;
use kosha_resilience::overrides::{ForcedOpen, StaticOverrides};
use kosha_resilience::policy::{Attempt, Policy, PolicyError};
use kosha_resilience::retry::Idempotency;
use tokio::time::Instant;

type Result<T> = std::result::Result<T, PolicyError<ErrorClass>>;

const I: Idempotency = Idempotency::Idempotent;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn hedging(c: PolicyConfig, overrides: StaticOverrides) -> Policy {
    Policy::try_new(Dependency::CoreApi, c, Arc::new(overrides))
        .unwrap()
        .with_hedging(HedgeConfig::DEFAULT)
        .unwrap()
}

fn policy() -> Policy {
    hedging(common::core_api_read(), StaticOverrides::default())
}

fn long() -> Deadline {
    Deadline::after(Duration::from_secs(60))
}

/// `n` calls answering after 5 ms: the histogram's p95 becomes about 5 ms and the hedge
/// budget earns n × 5 % tokens (capped at 10).
async fn warm(p: &Policy, n: u32) {
    for _ in 0..n {
        let r: Result<()> = p
            .call(&long(), I, |_| async {
                tokio::time::sleep(ms(5)).await;
                Ok(())
            })
            .await;
        r.unwrap();
    }
}

/// Marks `dropped` when the future holding it is dropped (cancelled or finished).
struct DropFlag<'a>(&'a AtomicBool);

impl Drop for DropFlag<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_is_hedged_after_p95_and_the_first_answer_wins() {
    let p = policy();
    warm(&p, 200).await;
    let delay = p.hedger().unwrap().delay().unwrap();
    assert!(delay >= ms(5) && delay <= ms(7), "{delay:?}");
    let seen = parking_lot::Mutex::new(Vec::new());
    let started = Instant::now();
    let r: Result<&str> = p
        .call(&long(), I, |a: Attempt| {
            seen.lock().push((a.number, a.hedge));
            async move {
                // The primary is stuck behind a 1 s stall; the hedge answers in 5 ms.
                tokio::time::sleep(if a.hedge { ms(5) } else { ms(1_000) }).await;
                Ok(if a.hedge { "hedge" } else { "primary" })
            }
        })
        .await;
    assert_eq!(r.unwrap(), "hedge");
    // The hedge left at the delay (the paused clock's timers fire on whole milliseconds).
    let took = Instant::now() - started;
    assert!(took >= delay + ms(5) && took <= delay + ms(6), "{took:?}");
    assert_eq!(
        *seen.lock(),
        vec![(1, false), (1, true)],
        "a hedge is not a retry"
    );
}

#[tokio::test(start_paused = true)]
async fn pitfall_27_the_loser_is_cancelled_and_its_bulkhead_slot_released() {
    let p = policy();
    warm(&p, 200).await;
    let primary_dropped = AtomicBool::new(false);
    let r: Result<()> = p
        .call(&long(), I, |a: Attempt| {
            let flag = (!a.hedge).then(|| DropFlag(&primary_dropped));
            async move {
                let _flag = flag;
                tokio::time::sleep(if a.hedge { ms(1) } else { ms(1_500) }).await;
                Ok(())
            }
        })
        .await;
    r.unwrap();
    assert!(
        primary_dropped.load(Ordering::SeqCst),
        "the loser was cancelled"
    );
    assert_eq!(p.health().in_flight, 0, "both bulkhead slots are back");
    // And when the primary wins, the hedge is the one dropped.
    let hedge_dropped = AtomicBool::new(false);
    let r: Result<()> = p
        .call(&long(), I, |a: Attempt| {
            let flag = a.hedge.then(|| DropFlag(&hedge_dropped));
            async move {
                let _flag = flag;
                tokio::time::sleep(if a.hedge { ms(1_000) } else { ms(8) }).await;
                Ok(())
            }
        })
        .await;
    r.unwrap();
    assert!(hedge_dropped.load(Ordering::SeqCst));
    assert_eq!(p.health().in_flight, 0);
}

#[tokio::test(start_paused = true)]
async fn pitfall_27_a_hedge_never_passes_an_open_breaker() {
    let overrides = StaticOverrides::default();
    let p = hedging(common::core_api_read(), overrides.clone());
    warm(&p, 200).await;
    let calls = AtomicU32::new(0);
    let r: Result<()> = p
        .call(&long(), I, |a: Attempt| {
            calls.fetch_add(1, Ordering::SeqCst);
            let overrides = overrides.clone();
            async move {
                if !a.hedge {
                    // While the primary is in flight an operator forces the breaker open.
                    overrides.force_open(
                        "core-api",
                        ForcedOpen {
                            reason: "incident".into(),
                            set_by: "ops".into(),
                            set_at: 0,
                            expires_at: None,
                        },
                    );
                    tokio::time::sleep(ms(300)).await;
                }
                Ok(())
            }
        })
        .await;
    r.unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "no hedge through an open breaker"
    );
    assert_eq!(p.breaker().state(), BreakerState::ForcedOpen);
}

#[tokio::test(start_paused = true)]
async fn pitfall_27_the_breaker_sees_one_outcome_per_logical_call() {
    let mut c = common::core_api_read();
    c.retry.max_attempts = 1;
    let p = hedging(c, StaticOverrides::default());
    warm(&p, 200).await;
    let window_before = p.breaker().snapshot().calls;
    let r: Result<()> = p
        .call(&long(), I, |a: Attempt| async move {
            if a.hedge {
                Err(ErrorClass::Status {
                    status: 503,
                    retry_after: None,
                })
            } else {
                tokio::time::sleep(ms(3_000)).await; // past the 2 s attempt cap
                Ok(())
            }
        })
        .await;
    // Both legs failed: the hedge with a 503, the primary by its timeout; the answered error
    // is the attempt's result, recorded once.
    assert!(
        matches!(
            r,
            Err(PolicyError::Inner(ErrorClass::Status { status: 503, .. }))
        ),
        "{r:?}"
    );
    let snapshot = p.breaker().snapshot();
    assert_eq!(snapshot.calls, (window_before + 1).min(20));
    assert_eq!(snapshot.failures, 1);
}

#[tokio::test(start_paused = true)]
async fn pitfall_27_a_hedge_spends_the_hedge_budget_and_never_the_retry_budget() {
    let p = policy();
    warm(&p, 200).await;
    let (retry_before, hedge_before) = (
        p.budget().earned_milli(),
        p.hedger().unwrap().budget_milli(),
    );
    let r: Result<()> = p
        .call(&long(), I, |a: Attempt| async move {
            tokio::time::sleep(if a.hedge { ms(1) } else { ms(900) }).await;
            Ok(())
        })
        .await;
    r.unwrap();
    // One success deposits 0.1 retry token as always; the hedge took one hedge token (and
    // the call earned 0.05, up to the 10-token cap).
    assert_eq!(p.budget().earned_milli(), (retry_before + 100).min(10_000));
    assert_eq!(
        p.hedger().unwrap().budget_milli(),
        (hedge_before + 50).min(10_000) - 1_000
    );
}

#[tokio::test(start_paused = true)]
async fn no_hedge_before_enough_samples() {
    let p = policy();
    warm(&p, 49).await;
    let calls = AtomicU32::new(0);
    let r: Result<()> = p
        .call(&long(), I, |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(ms(500)).await;
                Ok(())
            }
        })
        .await;
    r.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_hedge_never_starts_past_the_deadline() {
    let p = policy();
    warm(&p, 200).await;
    let calls = AtomicU32::new(0);
    // 250 ms left: the first attempt gets 100 ms (margin 150 ms); at the hedge time less
    // than the 100 ms minimum attempt is left after the margin.
    let deadline = Deadline::after(ms(250));
    let r: Result<()> = p
        .call(&deadline, I, |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(ms(50)).await;
                Ok(())
            }
        })
        .await;
    r.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn writes_and_keyed_calls_are_never_hedged() {
    let p = policy();
    warm(&p, 200).await;
    for idempotency in [Idempotency::NonIdempotent, Idempotency::Keyed] {
        let calls = AtomicU32::new(0);
        let r: Result<()> = p
            .call(&long(), idempotency, |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async {
                    tokio::time::sleep(ms(800)).await;
                    Ok(())
                }
            })
            .await;
        r.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{idempotency:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_full_bulkhead_refuses_the_hedge() {
    let mut c = common::core_api_read();
    c.bulkhead.capacity = 1;
    let p = hedging(c, StaticOverrides::default());
    warm(&p, 200).await;
    let calls = AtomicU32::new(0);
    let r: Result<()> = p
        .call(&long(), I, |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(ms(400)).await;
                Ok(())
            }
        })
        .await;
    r.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn hedges_stay_within_five_percent_of_calls_when_many_are_slow() {
    let p = policy();
    warm(&p, 60).await;
    let (calls, hedges) = (AtomicU32::new(0), AtomicU32::new(0));
    for i in 0..1_000u32 {
        // One call in ten stalls for 1 s: twice what the budget can hedge.
        let stall = if i % 10 == 0 { ms(1_000) } else { ms(5) };
        let r: Result<()> = p
            .call(&long(), I, |a: Attempt| {
                calls.fetch_add(u32::from(!a.hedge), Ordering::SeqCst);
                hedges.fetch_add(u32::from(a.hedge), Ordering::SeqCst);
                async move {
                    tokio::time::sleep(if a.hedge { ms(5) } else { stall }).await;
                    Ok(())
                }
            })
            .await;
        r.unwrap();
    }
    let (calls, hedges) = (calls.load(Ordering::SeqCst), hedges.load(Ordering::SeqCst));
    assert_eq!(calls, 1_000);
    // 1,060 hedgeable calls in all (warm-up included) earn at most 53 hedges.
    assert!(hedges <= 53, "{hedges} hedges");
    assert!(hedges >= 20, "the budget was used: {hedges}");
}
