use proptest::prelude::*;

use super::*;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn limit(max: usize) -> AdaptiveLimit {
    AdaptiveLimit::try_new("core-api", AdaptiveConfig::for_capacity(max)).unwrap()
}

#[test]
fn flat_latency_keeps_the_configured_size() {
    let l = limit(32);
    for _ in 0..500 {
        l.sample(ms(10), 32);
    }
    assert_eq!(l.limit(), 32);
}

#[test]
fn latency_tripling_under_load_lowers_the_limit_and_it_recovers_after() {
    let l = limit(32);
    for _ in 0..200 {
        l.sample(ms(10), 30);
    }
    for _ in 0..60 {
        l.sample(ms(30), 30);
    }
    let fallen = l.limit();
    assert!(fallen <= 20, "limit {fallen}");
    assert!(fallen >= l.config().floor);
    // Latency back to normal at the lower concurrency: the limit grows back to the maximum.
    for _ in 0..500 {
        l.sample(ms(10), l.limit());
    }
    assert_eq!(l.limit(), 32);
}

#[test]
fn queueing_that_lasts_does_not_become_the_baseline() {
    // A dependency with 4 workers, 10 ms each: with `limit` calls in flight, the answer
    // takes max(1, limit / 4) × 10 ms. It starts unloaded, then the load never lets up.
    let l = limit(32);
    for _ in 0..50 {
        l.sample(ms(10), 2);
    }
    let mut highest_late = 0;
    for i in 0..2_000 {
        let queued = (l.limit() as u64).max(4) * 10 / 4;
        l.sample(ms(queued), l.limit());
        if i >= 500 {
            highest_late = highest_late.max(l.limit());
        }
    }
    // A baseline that learnt the queueing would let the limit climb back to 32 (it did, by
    // the 800th sample, with a symmetric long average).
    assert!(highest_late <= 16, "limit back up to {highest_late}");
}

#[test]
fn each_timed_out_attempt_cuts_a_tenth_down_to_the_floor() {
    let l = limit(32);
    l.dropped();
    assert_eq!(l.limit(), 28, "32 × 0.9 = 28.8");
    for _ in 0..10 {
        l.dropped();
    }
    assert_eq!(l.limit(), 10, "32 × 0.9^11 = 10.04");
    for _ in 0..30 {
        l.dropped();
    }
    assert_eq!(l.limit(), l.config().floor);
    // Answers at the old latency again: it grows back.
    for _ in 0..500 {
        l.sample(ms(10), l.limit());
    }
    assert_eq!(l.limit(), 32);
}

#[test]
fn an_idle_dependency_does_not_grow_the_limit() {
    let l = limit(32);
    for _ in 0..200 {
        l.sample(ms(10), 30);
    }
    for _ in 0..30 {
        l.sample(ms(40), 30);
    }
    let low = l.limit();
    // Fast again but nearly nothing in flight: the traffic, not the limit, is what is small.
    for _ in 0..200 {
        l.sample(ms(1), 1);
    }
    assert_eq!(l.limit(), low);
}

#[test]
fn settings_are_checked() {
    for bad in [
        AdaptiveConfig {
            floor: 0,
            ..AdaptiveConfig::for_capacity(8)
        },
        AdaptiveConfig {
            floor: 9,
            ..AdaptiveConfig::for_capacity(8)
        },
        AdaptiveConfig {
            tolerance: 0.5,
            ..AdaptiveConfig::for_capacity(8)
        },
        AdaptiveConfig {
            tolerance: f64::NAN,
            ..AdaptiveConfig::for_capacity(8)
        },
        AdaptiveConfig {
            long_window: 1,
            ..AdaptiveConfig::for_capacity(8)
        },
    ] {
        assert!(AdaptiveLimit::try_new("x", bad).is_err(), "{bad:?}");
    }
}

proptest! {
    /// Whatever the latencies and load, the limit stays between the floor and the maximum.
    #[test]
    fn the_limit_stays_between_floor_and_max(
        samples in proptest::collection::vec((0u64..5_000_000, 0usize..100), 1..1_000),
        max in 1usize..200,
    ) {
        let l = limit(max);
        let floor = l.config().floor;
        for (micros, in_flight) in samples {
            l.sample(Duration::from_micros(micros), in_flight);
            prop_assert!((floor..=max).contains(&l.limit()), "{} not in {}..={}", l.limit(), floor, max);
        }
    }
}
