use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k| map.get(k).cloned()
}

#[test]
fn defaults_and_overrides() {
    let c = HedgeConfig::from_lookup("P", lookup(&[])).unwrap();
    assert_eq!(c, Some(HedgeConfig::DEFAULT));
    let c = HedgeConfig::from_lookup(
        "P",
        lookup(&[("P_HEDGE_PERCENTILE", "990"), ("P_HEDGE_BUDGET_PCT", "2")]),
    )
    .unwrap()
    .unwrap();
    assert_eq!((c.percentile, c.budget_pct), (990, 2));
    assert_eq!(
        HedgeConfig::from_lookup("P", lookup(&[("P_HEDGE_PERCENTILE", "0")])).unwrap(),
        None
    );
    for (var, value) in [
        ("P_HEDGE_PERCENTILE", "1000"),
        ("P_HEDGE_BUDGET_PCT", "0"),
        ("P_HEDGE_BUDGET_PCT", "x"),
        ("P_HEDGE_MIN_SAMPLES", "0"),
    ] {
        let e = HedgeConfig::from_lookup("P", lookup(&[(var, value)])).unwrap_err();
        assert!(e.to_string().contains("P"), "{var}={value}: {e}");
    }
}

#[test]
fn no_delay_before_enough_samples() {
    let h = Hedger::try_new("core-api", HedgeConfig::DEFAULT).unwrap();
    for _ in 0..49 {
        h.record(Duration::from_millis(3));
    }
    assert_eq!(h.delay(), None);
    h.record(Duration::from_millis(3));
    assert!(h.delay().is_some());
}

#[test]
fn the_budget_starts_empty_and_earns_a_hedge_every_twenty_calls_at_five_percent() {
    let h = Hedger::try_new("core-api", HedgeConfig::DEFAULT).unwrap();
    assert!(!h.try_spend(), "no hedge on credit");
    for _ in 0..19 {
        h.on_call();
    }
    assert!(!h.try_spend());
    h.on_call();
    assert!(h.try_spend());
    assert!(!h.try_spend());
}

proptest! {
    /// However calls and hedge wishes interleave, hedges sent never exceed
    /// budget_pct % of the calls made so far (the bucket starts empty).
    #[test]
    fn hedges_stay_within_the_budget_share(
        wishes in proptest::collection::vec(any::<bool>(), 1..3_000),
        pct in 1u32..=50,
    ) {
        let config = HedgeConfig { budget_pct: pct, ..HedgeConfig::DEFAULT };
        let h = Hedger::try_new("core-api", config).unwrap();
        let (mut calls, mut hedges) = (0u64, 0u64);
        for wish in wishes {
            h.on_call();
            calls += 1;
            if wish && h.try_spend() {
                hedges += 1;
            }
            prop_assert!(hedges * 100 <= calls * u64::from(pct), "{} hedges in {} calls", hedges, calls);
        }
    }
}
