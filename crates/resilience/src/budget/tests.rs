use std::time::Duration;

use proptest::prelude::*;

use super::*;

fn budget(cap_tokens: u32, min_retries_per_sec: u32) -> RetryBudget {
    RetryBudget::try_new(
        "dep",
        BudgetConfig {
            cap_tokens,
            min_retries_per_sec,
        },
    )
    .unwrap()
}

#[test]
fn settings_are_validated() {
    assert!(
        RetryBudget::try_new(
            "d",
            BudgetConfig {
                cap_tokens: 0,
                min_retries_per_sec: 1
            }
        )
        .is_err()
    );
    assert!(
        RetryBudget::try_new(
            "d",
            BudgetConfig {
                cap_tokens: 10,
                min_retries_per_sec: 0
            }
        )
        .is_ok()
    );
}

// Pitfall 9: ten deposits of 0.1 make exactly one token, with nothing lost to rounding.
#[tokio::test(start_paused = true)]
async fn ten_successes_buy_exactly_one_retry() {
    let b = budget(10, 0);
    for _ in 0..9 {
        b.deposit();
    }
    assert_eq!(b.earned_milli(), 900);
    assert!(!b.try_withdraw());
    b.deposit();
    assert_eq!(b.earned_milli(), 1_000);
    assert!(b.try_withdraw());
    assert!(!b.try_withdraw());
    assert_eq!(b.earned_milli(), 0);
}

#[tokio::test(start_paused = true)]
async fn deposits_are_capped() {
    let b = budget(2, 0);
    for _ in 0..1_000 {
        b.deposit();
    }
    assert_eq!(b.earned_milli(), 2_000);
    assert!(b.try_withdraw() && b.try_withdraw() && !b.try_withdraw());
}

// Pitfall 8: under 100 % failure the budget empties, and successes refill it.
#[tokio::test(start_paused = true)]
async fn empties_under_total_failure_and_refills_on_success() {
    let b = budget(10, 1);
    for _ in 0..1_000 {
        b.deposit();
    }
    // 10 earned + 1 floor, then nothing while no time passes and nothing succeeds.
    let granted = (0..100).filter(|_| b.try_withdraw()).count();
    assert_eq!(granted, 11);
    assert!(!b.try_withdraw());
    for _ in 0..10 {
        b.deposit();
    }
    assert!(b.try_withdraw());
    assert!(!b.try_withdraw());
}

// Pitfall 10: the floor allows min_retries_per_sec at low traffic and recovers after idle.
#[tokio::test(start_paused = true)]
async fn floor_grants_retries_per_second_without_traffic() {
    let b = budget(10, 2);
    assert!(b.try_withdraw() && b.try_withdraw());
    assert!(!b.try_withdraw());
    tokio::time::advance(Duration::from_millis(499)).await;
    assert!(!b.try_withdraw());
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(b.try_withdraw());
    assert!(!b.try_withdraw());
    // Idle for an hour: the floor holds at most one second's worth.
    tokio::time::advance(Duration::from_secs(3_600)).await;
    assert_eq!((0..10).filter(|_| b.try_withdraw()).count(), 2);
}

#[tokio::test(start_paused = true)]
async fn floor_rate_holds_over_a_long_failing_run() {
    let b = budget(10, 1);
    let mut granted = 0;
    // 100 s of constant failure, a retry wanted every 10 ms: 1 initial + 1 per second.
    for _ in 0..10_000 {
        tokio::time::advance(Duration::from_millis(10)).await;
        granted += usize::from(b.try_withdraw());
    }
    assert!((100..=101).contains(&granted), "{granted}");
}

#[tokio::test(start_paused = true)]
async fn floor_keeps_sub_milli_remainders() {
    // 3 retries/s = 3 milli per ms; 1 ms steps must add up without losing fractions.
    let b = budget(10, 3);
    assert!(b.try_withdraw() && b.try_withdraw() && b.try_withdraw());
    let mut granted = 0;
    for _ in 0..10_000 {
        tokio::time::advance(Duration::from_micros(100)).await;
        granted += usize::from(b.try_withdraw());
    }
    assert_eq!(granted, 3, "one second of 100 µs steps at 3/s");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    // Over a long run with no time passing, retries ≤ 10 % of successes + the floor's one
    // initial token; with saturated demand the ratio is held within 1 %.
    #[test]
    fn retry_ratio_is_held(wants in proptest::collection::vec(0_u8..4, 5_000..20_000), saturate: bool) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        rt.block_on(async {
            let b = budget(10, 1);
            let (mut successes, mut granted) = (0_u64, 0_u64);
            for w in &wants {
                b.deposit();
                successes += 1;
                let w = if saturate { w + 1 } else { *w };
                for _ in 0..w {
                    granted += u64::from(b.try_withdraw());
                }
            }
            prop_assert!(granted * 10 <= successes + 10, "granted {granted} of {successes}");
            if saturate {
                let ideal = successes as f64 / 10.0;
                prop_assert!((granted as f64 - ideal).abs() <= ideal * 0.01, "granted {granted} ideal {ideal}");
            }
            Ok(())
        })?;
    }
}
