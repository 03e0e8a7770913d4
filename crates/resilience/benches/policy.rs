//! Overhead of the policy stack around a ready future (issue 3 "Speed"), with failsafe-rs's
//! breaker and tower's `ConcurrencyLimit` measured in the same run as references.
//!
//! Run: `cargo bench -p kosha-resilience --bench policy -- --warm-up-time 1 --measurement-time 3`.
//! Futures are polled once with a no-op waker inside a tokio runtime context, so the figures
//! are the policies' own cost, not an executor's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::future::{Future, ready};
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use failsafe::CircuitBreaker as _;
use kosha_resilience::breaker::{Breaker, Outcome};
use kosha_resilience::classify::ErrorClass;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::overrides::NoOverrides;
use kosha_resilience::policy::Policy;
use kosha_resilience::retry::Idempotency;
use tower::{Service, ServiceExt};

/// Polls `fut` once; every future benchmarked here is ready on the first poll.
fn poll_once<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("benchmarked future was not ready"),
    }
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _context = rt.enter();

    let config = common::core_api_read();
    let breaker = Breaker::try_new("core-api", config.breaker, Arc::new(NoOverrides)).unwrap();
    c.bench_function("kosha/breaker_closed_acquire_record", |b| {
        b.iter(|| {
            let permit = black_box(&breaker).try_acquire().unwrap();
            permit.record(black_box(Outcome::Success));
        })
    });

    let policy = Policy::try_new(
        kosha_contract::dependency::Dependency::CoreApi,
        config,
        Arc::new(NoOverrides),
    )
    .unwrap();
    let deadline = Deadline::after(Duration::from_secs(3_600));
    c.bench_function("kosha/policy_full_stack_ready", |b| {
        b.iter(|| {
            let call = black_box(&policy).call(&deadline, Idempotency::Idempotent, |attempt| {
                ready(Ok::<u32, ErrorClass>(attempt.number))
            });
            black_box(poll_once(call).unwrap())
        })
    });

    let failsafe = failsafe::Config::new().build();
    c.bench_function("reference/failsafe_breaker_call", |b| {
        b.iter(|| black_box(failsafe.call(|| Ok::<u32, ()>(black_box(1))).unwrap()))
    });

    let mut limited = tower::limit::ConcurrencyLimit::new(
        tower::service_fn(|x: u32| ready(Ok::<u32, Infallible>(x))),
        32,
    );
    c.bench_function("reference/tower_concurrency_limit_ready", |b| {
        b.iter(|| {
            let svc = poll_once(limited.ready()).unwrap();
            black_box(poll_once(svc.call(black_box(1))).unwrap())
        })
    });
}

criterion_group!(policy, benches);
criterion_main!(policy);
