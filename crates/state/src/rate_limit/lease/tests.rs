use proptest::prelude::*;

use super::*;

const FIVE_S: Duration = Duration::from_secs(5);

#[tokio::test(start_paused = true)]
async fn a_lease_ends_at_the_first_of_its_two_deadlines() {
    let start = Instant::now();
    let lease = Lease::new(4, 1_000_000, start, FIVE_S).unwrap();
    assert_eq!(
        lease.left(1_004_999, start + Duration::from_millis(4_999)),
        4
    );
    // Either clock past the end ends it: the wall clock (a thaw) or tokio's (a wall
    // clock set back).
    assert_eq!(lease.left(1_005_000, start), 0);
    assert_eq!(lease.left(900_000, start + FIVE_S), 0);
    assert_eq!(lease.spent(3).map(|l| l.tokens), Some(1));
    assert_eq!(lease.spent(4), None);
    assert_eq!(Lease::new(0, 0, start, FIVE_S), None);
}

#[test]
fn a_rare_caller_wants_its_cost_and_a_steady_one_a_lease_durations_worth() {
    let mut d = Demand::default();
    let t0 = 1_800_000_000_000;
    assert_eq!(d.want(1, t0, FIVE_S), 1, "first call");
    d.record(1, t0, FIVE_S);
    assert_eq!(d.want(1, t0 + 60_000, FIVE_S), 1);
    assert_eq!(d.want(3, t0 + 60_000, FIVE_S), 3);

    // One call a second: the want settles at 5 (5.5 expected over 5 s).
    let mut d = Demand::default();
    for s in 0..60 {
        d.record(1, t0 + s * 1000, FIVE_S);
    }
    assert_eq!(d.want(1, t0 + 60_000, FIVE_S), 5);
    // Ten a second: about 50.
    let mut d = Demand::default();
    for i in 0..600 {
        d.record(1, t0 + i * 100, FIVE_S);
    }
    let want = d.want(1, t0 + 60_000, FIVE_S);
    assert!((48..=53).contains(&want), "{want}");
    // A fresh run at ten a second wants about its demand after one second of it (the
    // average alone, 1.8 a second then, would want 10).
    let mut fresh = Demand::default();
    for i in 0..10 {
        fresh.record(1, t0 + i * 100, FIVE_S);
    }
    let want = fresh.want(1, t0 + 1_000, FIVE_S);
    assert!((45..=55).contains(&want), "{want}");
    // Two calls are too few to scale: the average alone (0.4 a second) wants 2.
    let mut pair = Demand::default();
    pair.record(1, t0, FIVE_S);
    pair.record(1, t0 + 100, FIVE_S);
    assert_eq!(pair.want(1, t0 + 100, FIVE_S), 2);
    // Four calls 100 ms apart read as about four a second (over the least span, 1 s).
    let mut four = Demand::default();
    for i in 0..4 {
        four.record(1, t0 + i * 100, FIVE_S);
    }
    assert_eq!(four.want(1, t0 + 300, FIVE_S), 22);
    // Three windows idle: the next spend starts a new run (a rare caller stays at 1).
    assert_eq!(pair.want(1, t0 + 15_100, FIVE_S), 1);
    pair.record(1, t0 + 15_100, FIVE_S);
    assert_eq!(pair.since_ms, Some(t0 + 15_100));
    // A wall clock set back decays nothing and records nothing earlier.
    let at_last = d.want(1, t0 + 59_900, FIVE_S);
    assert_eq!(d.want(1, t0, FIVE_S), at_last);
    d.record(1, t0, FIVE_S);
    assert_eq!(d.at_ms, Some(t0 + 59_900));
}

/// A history of spends: (gap since the previous spend in ms, cost); most gaps short, so runs
/// of spends closer than the least span a rate is read over are common.
fn spends() -> impl Strategy<Value = Vec<(i64, u32)>> {
    let gap = prop_oneof![3 => 0i64..300, 1 => 0i64..20_000];
    proptest::collection::vec((gap, 1u32..=10), 0..24)
}

/// The demand after `history` and the time of its last spend.
fn after(history: &[(i64, u32)], window: Duration) -> (Demand, i64) {
    let mut demand = Demand::default();
    let mut at = 1_800_000_000_000;
    for &(gap, cost) in history {
        at += gap;
        demand.record(cost, at, window);
    }
    (demand, at)
}

proptest! {
    /// Whatever was spent before, a call wants at least its cost, and never more than its
    /// cost plus every token recorded, scaled up by at most 1 + window / 1 s (the least span
    /// a run's rate is read over): no lease grows past what the history shows.
    #[test]
    fn the_want_covers_the_cost_and_no_more_than_the_history_explains(
        history in spends(),
        cost in 1u32..=10,
        later in prop_oneof![0i64..1_000, 0i64..100_000],
        window_ms in 100u64..=60_000,
    ) {
        let window = Duration::from_millis(window_ms);
        let (demand, at) = after(&history, window);
        let want = demand.want(cost, at + later, window);
        let spent: u32 = history.iter().map(|&(_, c)| c).sum();
        let scale = 1.0 + window.as_secs_f64() / (MIN_OBSERVED_MS as f64 / 1000.0);
        let bound = f64::from(cost) + f64::from(spent) * scale;
        prop_assert!(want >= cost, "want {want} < cost {cost}");
        prop_assert!(f64::from(want) <= bound + 1e-6, "want {want} > bound {bound}");
    }

    /// With no spend in between, the want never grows as time passes (the average decays and
    /// the run's scale-up shrinks), and a wall clock set back reads as the last spend's time.
    #[test]
    fn the_want_decays_between_spends_and_ignores_a_clock_set_back(
        history in spends(),
        cost in 1u32..=10,
        first in 0i64..50_000,
        second in 0i64..50_000,
        back in 1i64..3_600_000,
    ) {
        let (demand, at) = after(&history, FIVE_S);
        let sooner = demand.want(cost, at + first, FIVE_S);
        let later = demand.want(cost, at + first + second, FIVE_S);
        prop_assert!(later <= sooner, "{later} after {second} ms > {sooner}");
        prop_assert_eq!(demand.want(cost, at - back, FIVE_S), demand.want(cost, at, FIVE_S));
    }

    /// A client spending `cost` every `period` for twelve windows wants, just before its next
    /// spend, what it spends over one window plus the call: at most that (the average
    /// decayed one period is below the true rate), at least that discounted by one period's
    /// decay.
    #[test]
    fn a_steady_spender_wants_what_it_spends_over_one_window(
        cost in 1u32..=5,
        period in 50i64..=5_000,
        window_ms in 1_000u64..=10_000,
    ) {
        let window = Duration::from_millis(window_ms);
        let tau_ms = window_ms as f64;
        let count = usize::try_from(12 * window_ms as i64 / period + 1).unwrap_or(usize::MAX);
        let history = vec![(period, cost); count];
        let (demand, at) = after(&history, window);
        let want = f64::from(demand.want(cost, at + period - 1, window));
        let per_window = f64::from(cost) * tau_ms / period as f64;
        let decay = (-(period as f64) / tau_ms).exp();
        let low = (per_window * decay + f64::from(cost)).floor();
        // 1e-5: the scale-up left after twelve windows, 1 / (1 − e⁻¹²) − 1.
        let high = (per_window * (1.0 + 1e-5) + f64::from(cost) + 1e-9).floor();
        prop_assert!(
            (low..=high).contains(&want),
            "want {want} outside {low}..={high} ({per_window} a window)"
        );
    }
}
