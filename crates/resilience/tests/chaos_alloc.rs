//! The chaos header parser allocates nothing, whatever it is given (issue 14: "no input makes
//! the parser allocate more than the header's size"; zero is the bound proven here).
//!
//! A counting global allocator (`stats_alloc`, no unsafe code here) wraps the system
//! allocator; this file holds a single test so no other test allocates concurrently, and the
//! counted region spans only the `verify` call, not proptest's input generation.
#![allow(clippy::unwrap_used)]

use std::alloc::System;
use std::cell::Cell;

use kosha_resilience::chaos::{ChaosSpec, Fault, Target, verify};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
const NOW: u64 = 1_800_000_000;

/// Inputs that reach every stage: random bytes, near-valid headers with a byte changed, and
/// valid signed headers (accepted, or refused after the MAC on expiry).
fn inputs() -> impl Strategy<Value = Vec<u8>> {
    let valid = (
        0..4_usize,
        0..4_usize,
        0..=30_000_u32,
        0.0..=1.0_f64,
        0..2_000_u64,
    )
        .prop_map(|(t, f, ms, p, ahead)| {
            ChaosSpec::try_new(
                Target::ALL[t],
                Fault::ALL[f],
                Some(ms),
                p,
                NOW - 500 + ahead,
            )
            .unwrap()
            .sign(KEY)
            .unwrap()
            .into_bytes()
        });
    let tampered =
        (valid.clone(), any::<prop::sample::Index>(), any::<u8>()).prop_map(|(mut h, at, to)| {
            let i = at.index(h.len());
            h[i] = to;
            h
        });
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..12_000),
        "[a-z0-9=;.\\-]{0,1100}".prop_map(String::into_bytes),
        tampered,
        valid,
    ]
}

#[test]
fn verify_never_allocates() {
    // Warm-up outside the counted region.
    let _ = verify(b"target=core-api;sig=00", KEY, NOW);
    let mut runner = TestRunner::new(Config {
        cases: 2_000,
        failure_persistence: None,
        ..Config::default()
    });
    let (accepted, refused) = (Cell::new(0), Cell::new(0));
    runner
        .run(&inputs(), |header| {
            let region = Region::new(GLOBAL);
            let result = std::hint::black_box(verify(&header, KEY, NOW));
            let stats = region.change();
            prop_assert_eq!(
                (
                    stats.allocations,
                    stats.reallocations,
                    stats.bytes_allocated
                ),
                (0, 0, 0),
                "{} bytes in",
                header.len()
            );
            let counter = if result.is_ok() { &accepted } else { &refused };
            counter.set(counter.get() + 1);
            Ok(())
        })
        .unwrap();
    // Both paths were exercised.
    let (accepted, refused) = (accepted.get(), refused.get());
    assert!(accepted > 100 && refused > 100, "{accepted} / {refused}");
}
