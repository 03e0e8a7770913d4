use std::collections::HashMap;
use std::time::Duration;

use super::*;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn none(_: &str) -> Option<String> {
    None
}

#[test]
fn defaults_match_seed_004_table() {
    // (dependency, attempt cap, attempts, bulkhead, window, threshold, open)
    let table = [
        (Dependency::CoreApiRead, 2_000, 3, 32, 20, 50, 15_000),
        (Dependency::CoreApiWrite, 4_000, 1, 16, 20, 50, 15_000),
        (Dependency::ScreeningSim, 1_500, 2, 8, 10, 50, 30_000),
        (Dependency::OpenAi, 2_000, 2, 8, 10, 50, 30_000),
    ];
    for (dep, cap, attempts, capacity, window, pct, open) in table {
        let c = PolicyConfig::defaults(dep);
        assert_eq!(c.attempt.cap, ms(cap), "{dep:?}");
        assert_eq!(c.retry.max_attempts, attempts, "{dep:?}");
        assert_eq!(c.bulkhead.capacity, capacity, "{dep:?}");
        assert_eq!(c.breaker.window, window, "{dep:?}");
        assert_eq!(c.breaker.failure_rate_pct, pct, "{dep:?}");
        assert_eq!(c.breaker.open_duration, ms(open), "{dep:?}");
        assert_eq!(c.breaker.half_open_probes, 3);
        assert!(c.validate().is_ok(), "{dep:?}");
        assert_eq!(PolicyConfig::from_lookup(dep, none), Ok(c));
    }
    let pg = PostgresConfig::defaults();
    assert_eq!(
        (pg.statement_timeout, pg.pool_wait, pg.pool_max),
        (ms(3_000), ms(500), 2)
    );
    assert_eq!(PostgresConfig::from_lookup(none), Ok(pg));
}

#[test]
fn environment_overrides_apply_per_dependency() {
    let vars: HashMap<&str, &str> = HashMap::from([
        ("KOSHA_POLICY_CORE_API_READ_ATTEMPT_CAP_MS", "1500"),
        ("KOSHA_POLICY_CORE_API_READ_MAX_ATTEMPTS", " 2 "),
        ("KOSHA_POLICY_CORE_API_READ_BREAKER_OPEN_MS", "5000"),
        ("KOSHA_POLICY_CORE_API_READ_BACKOFF_CAP_MS", "250"),
        ("KOSHA_POLICY_CORE_API_READ_BULKHEAD_WAIT_MS", "0"),
        ("KOSHA_POLICY_OPENAI_BULKHEAD_CAPACITY", "4"),
        ("KOSHA_POLICY_POSTGRES_STATEMENT_TIMEOUT_MS", "1000"),
    ]);
    let lookup = |k: &str| vars.get(k).map(|v| (*v).to_owned());
    let read = PolicyConfig::from_lookup(Dependency::CoreApiRead, lookup).unwrap();
    assert_eq!(read.attempt.cap, ms(1_500));
    assert_eq!(read.retry.max_attempts, 2);
    assert_eq!(read.breaker.open_duration, ms(5_000));
    assert_eq!(read.retry.backoff.cap(), ms(250));
    assert_eq!(read.bulkhead.wait, Duration::ZERO);
    assert_eq!(
        read.bulkhead.capacity, 32,
        "other dependency's override not applied"
    );
    let openai = PolicyConfig::from_lookup(Dependency::OpenAi, lookup).unwrap();
    assert_eq!(openai.bulkhead.capacity, 4);
    assert_eq!(
        PostgresConfig::from_lookup(lookup)
            .unwrap()
            .statement_timeout,
        ms(1_000)
    );
}

#[test]
fn bad_values_are_typed_errors() {
    let one =
        |k: &'static str, v: &'static str| move |name: &str| (name == k).then(|| v.to_owned());
    assert_eq!(
        PolicyConfig::from_lookup(
            Dependency::OpenAi,
            one("KOSHA_POLICY_OPENAI_MAX_ATTEMPTS", "three")
        ),
        Err(ConfigError::Parse {
            var: "KOSHA_POLICY_OPENAI_MAX_ATTEMPTS".into()
        })
    );
    assert!(matches!(
        PolicyConfig::from_lookup(Dependency::OpenAi, one("KOSHA_POLICY_OPENAI_BREAKER_MIN_CALLS", "11")),
        Err(ConfigError::Env { prefix: "KOSHA_POLICY_OPENAI", source }) if matches!(*source, ConfigError::Invalid { field: "breaker.min_calls", .. })
    ));
    assert!(
        PolicyConfig::from_lookup(
            Dependency::OpenAi,
            one("KOSHA_POLICY_OPENAI_BULKHEAD_WAIT_MS", "51")
        )
        .is_err()
    );
    assert!(
        PolicyConfig::from_lookup(
            Dependency::OpenAi,
            one("KOSHA_POLICY_OPENAI_BACKOFF_BASE_MS", "5000")
        )
        .is_err()
    );
    assert!(
        PolicyConfig::from_lookup(
            Dependency::OpenAi,
            one("KOSHA_POLICY_OPENAI_BREAKER_FAILURE_RATE_PCT", "300")
        )
        .is_err()
    );
    assert!(PostgresConfig::from_lookup(one("KOSHA_POLICY_POSTGRES_POOL_MAX", "0")).is_err());
    let err = PolicyConfig::from_lookup(
        Dependency::OpenAi,
        one("KOSHA_POLICY_OPENAI_MAX_ATTEMPTS", "s3cr3t"),
    )
    .unwrap_err();
    assert!(!err.to_string().contains("s3cr3t"), "values are not echoed");
}

#[tokio::test(start_paused = true)]
async fn postgres_statement_timeout_follows_the_deadline() {
    let pg = PostgresConfig::defaults();
    // Seed 004 §2: remaining 6.5 s → min(6.5 s − 100 ms, 3 s) = 3 s.
    assert_eq!(
        pg.statement_timeout_for(&Deadline::after(ms(6_500))),
        Some(ms(3_000))
    );
    assert_eq!(
        pg.statement_timeout_for(&Deadline::after(ms(1_000))),
        Some(ms(900))
    );
    assert_eq!(pg.statement_timeout_for(&Deadline::after(ms(50))), None);
}

#[test]
fn dependency_names_follow_spec_section_8() {
    let names: Vec<_> = Dependency::ALL.iter().map(|d| d.name()).collect();
    assert_eq!(names, ["core-api", "core-api", "screening-sim", "openai"]);
}
