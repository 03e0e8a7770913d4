//! No heap allocation on the success path of the full policy stack (issue 3 "Speed").
//!
//! A counting global allocator (`stats_alloc`, no unsafe code here) wraps the system
//! allocator and counts every thread's allocations, so this file is a program of its own
//! (`harness = false` in Cargo.toml): one thread, and no test harness beside it allocating
//! while it measures (libtest's waiting main thread did, on a slow first run).
//! Measured without a metrics recorder; metric handles are registered at construction, so
//! the success path only touches pre-built handles either way.
#![allow(clippy::unwrap_used)]

mod common;

use std::alloc::System;
use std::future::{Future, ready};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use kosha_contract::dependency::Dependency;
use kosha_resilience::adaptive::AdaptiveConfig;
use kosha_resilience::breaker::Outcome;
use kosha_resilience::classify::ErrorClass;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::hedge::HedgeConfig;
use kosha_resilience::overrides::NoOverrides;
use kosha_resilience::policy::Policy;
use kosha_resilience::retry::Idempotency;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn poll_once<F: Future>(fut: F) -> Poll<F::Output> {
    let mut fut = pin!(fut);
    fut.as_mut().poll(&mut Context::from_waker(Waker::noop()))
}

fn main() {
    success_path_does_not_allocate();
    println!("success_path_does_not_allocate ... ok");
}

fn success_path_does_not_allocate() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _context = rt.enter();
    let plain = Policy::try_new(
        Dependency::CoreApi,
        common::core_api_read(),
        Arc::new(NoOverrides),
    )
    .unwrap();
    // With the policies of issue #33 on: hedging (its histogram and budget are fed on every
    // call) and the adaptive limit (fed every attempt's latency).
    let full = Policy::try_new(
        Dependency::CoreApi,
        common::core_api_read(),
        Arc::new(NoOverrides),
    )
    .unwrap()
    .with_hedging(HedgeConfig::DEFAULT)
    .unwrap()
    .with_adaptive_concurrency("core-api", AdaptiveConfig::for_capacity(32))
    .unwrap();
    let deadline = Deadline::after(Duration::from_secs(60));
    for policy in [&plain, &full] {
        let call = || {
            policy.call(&deadline, Idempotency::Idempotent, |a| {
                ready(Ok::<u32, ErrorClass>(a.number))
            })
        };
        // Warm-up: first use of thread-locals and the runtime context.
        assert!(matches!(poll_once(call()), Poll::Ready(Ok(1))));

        let region = Region::new(GLOBAL);
        let mut ok = 0;
        for _ in 0..1_000 {
            ok += usize::from(matches!(poll_once(call()), Poll::Ready(Ok(1))));
            let permit = policy.breaker().try_acquire().unwrap();
            permit.record(Outcome::Success);
        }
        let stats = region.change();
        assert_eq!(ok, 1_000);
        assert_eq!(
            (stats.allocations, stats.reallocations),
            (0, 0),
            "{stats:?}"
        );
    }
}
