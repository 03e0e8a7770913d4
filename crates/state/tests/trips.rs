//! Fleet trips against the emulator (SPEC §8 "Fleet trips", #27): instances writing the same
//! `trip#<breaker>` item at once lose no entry, old entries are dropped, and a second instance
//! counts the first one's trip through the real read.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{fresh_table, sdk_config};
use kosha_resilience::fleet::FleetSignal;
use kosha_state::{
    DynamoOverrides, ManualClock, OverrideSettings, StateTable, TripItem, TripWrite,
};

const OPEN: Duration = Duration::from_secs(15);
const NOW_MS: i64 = 1_800_000_000_000;

fn write(instance: &str, at_ms: i64, seen: Option<TripItem>) -> TripWrite {
    TripWrite {
        breaker: "core-api".into(),
        instance: instance.into(),
        at_ms,
        open_for: OPEN,
        seen,
    }
}

async fn item(table: &StateTable) -> TripItem {
    let trips = table.read_trips().await.unwrap();
    let (breaker, item) = trips.into_iter().next().expect("trip#core-api present");
    assert_eq!(breaker, "core-api");
    item
}

#[tokio::test]
async fn instances_tripping_at_once_on_the_same_stale_read_lose_no_entry() {
    let table = fresh_table(&sdk_config().await).await;
    // Eight instances, none of which has seen the item yet: every first write is a create
    // conditioned on its absence, so all but one lose the race and write again.
    let writes: Vec<_> = (0..8)
        .map(|i| {
            let table = table.clone();
            tokio::spawn(async move {
                table
                    .record_trip(&write(&format!("i{i}"), NOW_MS + i, None))
                    .await
            })
        })
        .collect();
    let mut total = 0;
    for w in writes {
        let n = w.await.unwrap();
        total += n.unwrap_or_else(|e| panic!("a write failed: {e}"));
    }
    let got = item(&table).await;
    assert_eq!(got.instances.len(), 8, "{got:?}");
    for i in 0..8 {
        assert_eq!(got.instances[&format!("i{i}")], NOW_MS + i);
    }
    assert!(total >= 8, "at least one write each ({total})");
    assert_eq!(got.expires_at, Some((NOW_MS + 7 + 15_000 + 999) / 1000));
}

#[tokio::test]
async fn a_trip_drops_entries_older_than_the_open_duration_but_never_a_renewed_one() {
    let table = fresh_table(&sdk_config().await).await;
    let t0 = NOW_MS;
    assert_eq!(table.record_trip(&write("a", t0, None)).await.unwrap(), 1);
    let seen = item(&table).await;
    assert_eq!(
        table
            .record_trip(&write("b", t0 + 1, Some(seen.clone())))
            .await
            .unwrap(),
        1,
        "one write when nothing raced"
    );
    // 20 s later "c" trips on the read it made before "a" tripped again: "a"'s renewed entry
    // must survive "c" dropping what it saw as old.
    let stale = item(&table).await;
    let later = t0 + 20_000;
    table
        .record_trip(&write("a", later, Some(stale.clone())))
        .await
        .unwrap();
    let n = table
        .record_trip(&write("c", later + 5, Some(stale)))
        .await
        .unwrap();
    assert_eq!(n, 2, "the condition on a's old value failed once");
    let got = item(&table).await;
    assert_eq!(got.instances.get("a"), Some(&later), "{got:?}");
    assert_eq!(got.instances.get("c"), Some(&(later + 5)));
    assert_eq!(got.instances.get("b"), None, "b is 20 s old: dropped");
}

#[tokio::test]
async fn a_second_instance_counts_the_first_ones_trip_from_the_shared_read() {
    let table = fresh_table(&sdk_config().await).await;
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let settings = OverrideSettings {
        refresh_every: Duration::from_millis(100),
        ..OverrideSettings::default()
    };
    let trips = &kosha_contract::breaker::Breaker::NAMES;
    let one = DynamoOverrides::with_trips(
        Arc::new(table.clone()),
        settings,
        clock.clone(),
        trips,
        "one",
    );
    let two = DynamoOverrides::with_trips(
        Arc::new(table.clone()),
        settings,
        clock.clone(),
        trips,
        "two",
    );
    one.refresh_now().await.unwrap();
    one.record_trip("core-api", OPEN);
    two.record_trip("core-api", OPEN);
    let mut counted = 0;
    for _ in 0..40 {
        one.refresh_now().await.unwrap();
        counted = one.count_after("core-api", NOW_MS - 1);
        if counted == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(counted, 2, "both trips read back, its own included");
    assert_eq!(
        one.count_after("core-api", NOW_MS),
        0,
        "none later than NOW_MS"
    );
    assert_eq!(one.count_after("screening-sim", 0), 0);
    clock.advance_ms(16_000);
    one.refresh_now().await.unwrap();
    assert_eq!(
        one.count_after("core-api", NOW_MS - 1),
        0,
        "the item expired with its newest entry"
    );
}
