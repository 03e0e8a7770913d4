use std::time::Duration;

use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::*;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn settings_are_validated() {
    assert!(Backoff::try_new(ms(0), ms(10)).is_err());
    assert!(Backoff::try_new(ms(100), ms(50)).is_err());
    assert!(Backoff::try_new(Duration::from_micros(999), ms(50)).is_err());
    assert!(Backoff::try_new(ms(50), ms(50)).is_ok());
}

#[test]
fn ceiling_doubles_then_caps_and_never_overflows() {
    let b = Backoff::try_new(ms(25), ms(1_000)).unwrap();
    let ceilings: Vec<_> = (1..=7).map(|n| b.ceiling(n)).collect();
    assert_eq!(
        ceilings,
        [
            ms(25),
            ms(50),
            ms(100),
            ms(200),
            ms(400),
            ms(800),
            ms(1_000)
        ]
    );
    assert_eq!(b.ceiling(0), ms(25));
    assert_eq!(b.ceiling(u32::MAX), ms(1_000));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    // Pitfall 7: every delay lies in [0, min(cap, base·2^(n−1))].
    #[test]
    fn delay_within_bounds(base in 1_u64..5_000, extra in 0_u64..60_000, n in 0_u32..200, seed: u64) {
        let b = Backoff::try_new(ms(base), ms(base + extra)).unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        let ceiling = ms(base + extra).min(ms(base.saturating_mul(1 << n.saturating_sub(1).min(40))));
        for _ in 0..32 {
            let d = b.delay_with(n, &mut rng);
            prop_assert!(d <= ceiling, "{d:?} > {ceiling:?}");
        }
    }

    // Statistical check of full jitter: mean ≈ ceiling / 2, and the extremes are reached.
    #[test]
    fn delay_is_uniform_over_the_range(base in 10_u64..2_000, n in 1_u32..6, seed: u64) {
        let b = Backoff::try_new(ms(base), ms(20_000)).unwrap();
        let ceiling = b.ceiling(n).as_millis() as f64;
        let mut rng = StdRng::seed_from_u64(seed);
        let samples = 20_000;
        let (mut sum, mut low, mut high) = (0.0, false, false);
        for _ in 0..samples {
            let d = b.delay_with(n, &mut rng).as_millis() as f64;
            sum += d;
            low |= d < ceiling * 0.05;
            high |= d > ceiling * 0.95;
        }
        let mean = sum / f64::from(samples);
        // Standard error of the mean of U[0, c] is c / sqrt(12 · samples) ≈ 0.002 c; allow 5σ.
        prop_assert!((mean - ceiling / 2.0).abs() <= ceiling * 0.0105, "mean {mean} ceiling {ceiling}");
        prop_assert!(low && high);
    }
}

#[test]
fn delays_are_not_truncated_to_seconds() {
    let b = Backoff::try_new(ms(100), ms(20_000)).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let sub_second = (0..1_000)
        .map(|_| b.delay_with(5, &mut rng))
        .filter(|d| d.subsec_millis() != 0)
        .count();
    assert!(sub_second > 900, "{sub_second}");
    // A small ceiling still yields non-zero delays (a seconds-based jitter would give only 0).
    let small = Backoff::try_new(ms(40), ms(40)).unwrap();
    assert!((0..100).any(|_| small.delay_with(1, &mut rng) > Duration::ZERO));
}
