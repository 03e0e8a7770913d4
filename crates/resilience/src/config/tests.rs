use std::collections::HashMap;
use std::time::Duration;

use super::*;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn none(_: &str) -> Option<String> {
    None
}

/// Seed 004 §1, OpenAI embeddings: 2 s cap, 2 attempts, bulkhead 8, window 10, open 30 s.
const PROFILE: Profile = Profile {
    attempt_cap: Duration::from_millis(2_000),
    attempt_margin: Duration::from_millis(100),
    max_attempts: 2,
    bulkhead: 8,
    breaker_window: 10,
    open_for: Duration::from_millis(30_000),
};
const PREFIX: &str = "KOSHA_POLICY_OPENAI";

#[test]
fn a_profile_is_completed_with_the_documented_choices() {
    let c = PolicyConfig::from_profile(PROFILE);
    assert_eq!(c.attempt.cap, ms(2_000));
    assert_eq!(c.attempt.margin, ms(100));
    assert_eq!(c.retry.max_attempts, 2);
    assert_eq!(c.retry.min_attempt, ms(100));
    assert_eq!(c.bulkhead.capacity, 8);
    assert_eq!(c.bulkhead.wait, ms(10));
    assert_eq!(c.breaker.window, 10);
    assert_eq!(c.breaker.min_calls, 5);
    assert_eq!(c.breaker.failure_rate_pct, 50);
    assert_eq!(c.breaker.open_duration, ms(30_000));
    assert_eq!(c.breaker.half_open_probes, 3);
    assert_eq!(c.breaker.probe_lease, ms(2_000 * 2 + 1_000));
    assert_eq!((c.budget.cap_tokens, c.budget.min_retries_per_sec), (10, 1));
    assert!(c.validate().is_ok());
    assert_eq!(PolicyConfig::from_lookup(PROFILE, PREFIX, none), Ok(c));
}

#[test]
fn environment_overrides_apply_under_their_prefix_only() {
    let vars: HashMap<&str, &str> = HashMap::from([
        ("KOSHA_POLICY_OPENAI_ATTEMPT_CAP_MS", "1500"),
        ("KOSHA_POLICY_OPENAI_MAX_ATTEMPTS", " 3 "),
        ("KOSHA_POLICY_OPENAI_BREAKER_OPEN_MS", "5000"),
        ("KOSHA_POLICY_OPENAI_BACKOFF_CAP_MS", "250"),
        ("KOSHA_POLICY_OPENAI_BULKHEAD_WAIT_MS", "0"),
        ("KOSHA_POLICY_OTHER_BULKHEAD_CAPACITY", "4"),
    ]);
    let lookup = |k: &str| vars.get(k).map(|v| (*v).to_owned());
    let c = PolicyConfig::from_lookup(PROFILE, PREFIX, lookup).unwrap();
    assert_eq!(c.attempt.cap, ms(1_500));
    assert_eq!(c.retry.max_attempts, 3);
    assert_eq!(c.breaker.open_duration, ms(5_000));
    assert_eq!(c.retry.backoff.cap(), ms(250));
    assert_eq!(c.bulkhead.wait, Duration::ZERO);
    assert_eq!(
        c.bulkhead.capacity, 8,
        "another prefix's override not applied"
    );
}

#[test]
fn bad_values_are_typed_errors() {
    let one =
        |k: &'static str, v: &'static str| move |name: &str| (name == k).then(|| v.to_owned());
    assert_eq!(
        PolicyConfig::from_lookup(
            PROFILE,
            PREFIX,
            one("KOSHA_POLICY_OPENAI_MAX_ATTEMPTS", "three")
        ),
        Err(ConfigError::Parse {
            var: "KOSHA_POLICY_OPENAI_MAX_ATTEMPTS".into()
        })
    );
    assert!(matches!(
        PolicyConfig::from_lookup(PROFILE, PREFIX, one("KOSHA_POLICY_OPENAI_BREAKER_MIN_CALLS", "11")),
        Err(ConfigError::Env { prefix: "KOSHA_POLICY_OPENAI", source }) if matches!(*source, ConfigError::Invalid { field: "breaker.min_calls", .. })
    ));
    for (var, value) in [
        ("KOSHA_POLICY_OPENAI_BULKHEAD_WAIT_MS", "51"),
        ("KOSHA_POLICY_OPENAI_BACKOFF_BASE_MS", "5000"),
        ("KOSHA_POLICY_OPENAI_BREAKER_FAILURE_RATE_PCT", "300"),
        ("KOSHA_POLICY_OPENAI_ATTEMPT_CAP_MS", "0"),
    ] {
        assert!(
            PolicyConfig::from_lookup(PROFILE, PREFIX, one(var, value)).is_err(),
            "{var}={value}"
        );
    }
    let err = PolicyConfig::from_lookup(
        PROFILE,
        PREFIX,
        one("KOSHA_POLICY_OPENAI_MAX_ATTEMPTS", "s3cr3t"),
    )
    .unwrap_err();
    assert!(!err.to_string().contains("s3cr3t"), "values are not echoed");
}
