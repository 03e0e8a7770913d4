use proptest::prelude::*;

use super::*;

fn s(v: u64) -> Duration {
    Duration::from_secs(v)
}

#[tokio::test(start_paused = true)]
async fn a_hold_lasts_its_retry_after_and_then_lets_calls_through() {
    let nb = NotBefore::new("screening-sim");
    assert_eq!(nb.remaining(Instant::now()), None);
    assert_eq!(nb.hold(s(10), Instant::now()), s(10));
    tokio::time::advance(s(4)).await;
    assert_eq!(nb.remaining(Instant::now()), Some(s(6)));
    tokio::time::advance(s(6)).await;
    assert_eq!(
        nb.remaining(Instant::now()),
        None,
        "T reached: calls go again"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_capped_at_sixty_seconds() {
    let nb = NotBefore::new("core-api");
    assert_eq!(nb.hold(s(3_600), Instant::now()), MAX_HOLD);
    tokio::time::advance(MAX_HOLD).await;
    assert_eq!(nb.remaining(Instant::now()), None);
}

#[tokio::test(start_paused = true)]
async fn a_shorter_retry_after_never_shortens_a_later_hold() {
    let nb = NotBefore::new("core-api");
    nb.hold(s(30), Instant::now());
    assert_eq!(nb.hold(s(2), Instant::now()), s(30));
    assert_eq!(nb.hold(Duration::ZERO, Instant::now()), s(30));
    assert_eq!(
        nb.hold(s(45), Instant::now()),
        s(45),
        "a later one extends it"
    );
}

#[tokio::test(start_paused = true)]
async fn a_success_before_t_keeps_the_hold_and_the_first_after_t_clears_it() {
    let nb = NotBefore::new("openai");
    nb.hold(s(10), Instant::now());
    // A call started before the 429 answers well at 5 s: the dependency still said 10 s.
    tokio::time::advance(s(5)).await;
    nb.clear_if_passed(Instant::now());
    assert!(nb.is_set());
    assert_eq!(nb.remaining(Instant::now()), Some(s(5)));
    tokio::time::advance(s(5)).await;
    nb.clear_if_passed(Instant::now());
    assert!(!nb.is_set());
}

#[tokio::test(start_paused = true)]
async fn a_hold_set_at_the_holders_creation_instant_still_counts() {
    let nb = NotBefore::new("core-api");
    // The earliest representable T (1 ns after creation) must not read as "no hold".
    nb.hold(Duration::from_nanos(1), Instant::now());
    assert!(nb.is_set());
}

proptest! {
    /// Whatever 429s arrive, the time left is never more than 60 s, and equals the latest
    /// T asked for (capped) less the time passed.
    #[test]
    fn time_left_is_the_latest_capped_hold(
        steps in proptest::collection::vec((0u64..5_000, 0u64..120_000), 1..40),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        rt.block_on(async {
            let nb = NotBefore::new("core-api");
            let start = Instant::now();
            let mut latest: Option<Instant> = None;
            for (advance_ms, retry_ms) in steps {
                tokio::time::advance(Duration::from_millis(advance_ms)).await;
                let now = Instant::now();
                let wait = Duration::from_millis(retry_ms);
                nb.hold(wait, now);
                if !wait.is_zero() {
                    let t = now + wait.min(MAX_HOLD);
                    latest = Some(latest.map_or(t, |l| l.max(t)));
                }
                let left = nb.remaining(now);
                let expected = latest.and_then(|t| (t > now).then(|| t - now));
                prop_assert_eq!(left, expected);
                prop_assert!(left.unwrap_or_default() <= MAX_HOLD);
                prop_assert!(now >= start);
            }
            Ok(())
        })?;
    }
}
