//! Breaker overrides against the emulator: force-open, clear, expiry, malformed items, errors.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers
mod common;

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use common::{LogSink, fresh_table, sdk_config};
use kosha_resilience::overrides::OverrideSource;
use kosha_state::{
    Clock, DynamoOverrides, ManualClock, OverrideSettings, StateError, StateTable, SystemClock,
};

/// Short intervals so the test runs in real time against real I/O (the paused clock cannot
/// be used with a real socket); the 5 s / 60 s defaults are covered on the paused clock in the
/// unit tests, and against the emulator on a wall clock moved by hand.
fn fast() -> OverrideSettings {
    OverrideSettings {
        refresh_every: Duration::from_millis(200),
        keep_on_error: Duration::from_millis(1_500),
        read_timeout: Duration::from_secs(2),
        fresh_wait: Duration::from_millis(100),
    }
}

/// Polls `current` until `want` holds or 3 s pass; returns whether it held.
async fn eventually(src: &DynamoOverrides, dep: &str, want: bool) -> bool {
    for _ in 0..60 {
        if src.current(dep).is_some() == want {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn force_open_then_clear_show_up_after_a_refresh() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let src = DynamoOverrides::new(table.clone(), fast(), Arc::new(SystemClock));
    src.refresh_now().await.unwrap();
    assert_eq!(src.current("core-api"), None);

    let now = SystemClock.now_s();
    let set = table
        .force_open_breaker("core-api", "db failover", "alice", None, now)
        .await
        .unwrap();
    assert!(eventually(&src, "core-api", true).await);
    assert_eq!(src.current("core-api"), Some(set.forced));
    assert_eq!(src.current("openai"), None);

    assert!(table.clear_breaker("core-api").await.unwrap());
    assert!(
        !table.clear_breaker("core-api").await.unwrap(),
        "already gone"
    );
    assert!(eventually(&src, "core-api", false).await);
}

#[tokio::test]
async fn expired_and_unknown_overrides() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let now = SystemClock.now_s();
    table
        .force_open_breaker(
            "openai",
            "old",
            "bob",
            Some(Duration::from_secs(60)),
            now - 120,
        )
        .await
        .unwrap();
    table
        .force_open_breaker(
            "postgres",
            "fresh",
            "bob",
            Some(Duration::from_secs(600)),
            now,
        )
        .await
        .unwrap();
    let src = DynamoOverrides::new(table.clone(), fast(), Arc::new(SystemClock));
    src.refresh_now().await.unwrap();
    assert_eq!(src.current("openai"), None, "expired");
    let pg = src.current("postgres").unwrap();
    assert_eq!(pg.expires_at, Some(now + 600));
    assert!(matches!(
        table
            .force_open_breaker("redis", "x", "bob", None, now)
            .await,
        Err(StateError::UnknownDependency(_))
    ));
}

#[tokio::test]
async fn malformed_items_are_absent_and_logged() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let put = |dep: &str, attrs: Vec<(&str, AttributeValue)>| {
        let mut p = table
            .client()
            .put_item()
            .table_name(table.name())
            .item("pk", AttributeValue::S(format!("breaker#{dep}")));
        for (k, v) in attrs {
            p = p.item(k, v);
        }
        p.send()
    };
    let s = |v: &str| AttributeValue::S(v.into());
    let n = |v: &str| AttributeValue::N(v.into());
    // Missing state; set_at of the wrong type; a state other than forced_open.
    put(
        "core-api",
        vec![("reason", s("r")), ("set_by", s("a")), ("set_at", n("1"))],
    )
    .await
    .unwrap();
    put(
        "openai",
        vec![
            ("state", s("forced_open")),
            ("reason", s("r")),
            ("set_by", s("a")),
            ("set_at", s("yesterday")),
        ],
    )
    .await
    .unwrap();
    put(
        "postgres",
        vec![
            ("state", s("closed")),
            ("reason", s("r")),
            ("set_by", s("a")),
            ("set_at", n("1")),
        ],
    )
    .await
    .unwrap();
    put(
        "screening-sim",
        vec![
            ("state", s("forced_open")),
            ("reason", s("ok")),
            ("set_by", s("a")),
            ("set_at", n("1")),
        ],
    )
    .await
    .unwrap();

    let logs = LogSink::default();
    let _guard = logs.capture();
    let src = DynamoOverrides::new(table.clone(), fast(), Arc::new(SystemClock));
    src.refresh_now().await.unwrap();
    for dep in ["core-api", "openai", "postgres"] {
        assert_eq!(src.current(dep), None, "{dep}");
    }
    assert!(
        src.current("screening-sim").is_some(),
        "well-formed neighbour still read"
    );
    let text = logs.text();
    assert_eq!(
        text.matches("breaker_override_malformed").count(),
        3,
        "{text}"
    );
    assert!(text.contains("state missing"), "{text}");
    assert!(text.contains("set_at missing or not an integer"), "{text}");
    assert!(text.contains("state is not forced_open"), "{text}");
}

/// The snapshot's age is the larger of tokio's clock and the wall clock, so the SPEC §8
/// defaults (a read every 5 s, a value kept 60 s through failed reads) are tested on a wall
/// clock moved by hand, with no sleep.
#[tokio::test]
async fn read_errors_keep_the_last_value_then_ignore_it() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let clock = Arc::new(ManualClock::new(SystemClock.now_ms()));
    table
        .force_open_breaker("core-api", "incident", "carol", None, clock.now_s())
        .await
        .unwrap();
    let src = DynamoOverrides::new(table.clone(), OverrideSettings::default(), clock.clone());
    src.refresh_now().await.unwrap();
    assert!(src.current("core-api").is_some());

    // The table disappears: every read now fails.
    table
        .client()
        .delete_table()
        .table_name(table.name())
        .send()
        .await
        .unwrap();
    let broken = StateTable::new(table.client().clone(), table.name()).unwrap();
    assert!(broken.read_breakers().await.is_err());
    clock.advance_ms(6_000);
    assert!(src.refresh_now().await.is_err(), "the next read fails");
    assert!(
        src.current("core-api").is_some(),
        "kept after a failed read"
    );
    clock.advance_ms(53_000); // 59 s after the last successful read
    assert!(
        src.current("core-api").is_some(),
        "kept within keep_on_error"
    );
    clock.advance_ms(2_000);
    assert_eq!(src.current("core-api"), None, "ignored after keep_on_error");
}
