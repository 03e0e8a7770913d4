//! The DynamoDB token bucket against the emulator (issue 4: concurrency, round trips, expiry).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers
mod common;

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use common::{fresh_table, sdk_config, unique};
use kosha_resilience::rate_limit::{Bucket, BucketConfig, RateDecision};
use kosha_state::test_support::{CallCounter, counted_dynamo};
use kosha_state::{
    BucketKey, DynamoRateLimiter, ManualClock, RateLimitSettings, StateTable, SystemClock,
};
use tokio::time::Instant;

/// Generous per-call bound: the emulator shares two cores with builds. One token per write
/// (`lease_max_tokens` 1): the path a call without a lease takes, which these tests pin;
/// [`leased`] is the SPEC §6 default.
fn settings() -> RateLimitSettings {
    RateLimitSettings {
        call_timeout: Duration::from_secs(3),
        lease_max_tokens: 1,
        ..RateLimitSettings::default()
    }
}

/// [`settings`] with the default leases (5 s, at most capacity / 4 tokens).
fn leased() -> RateLimitSettings {
    RateLimitSettings {
        lease_max_tokens: RateLimitSettings::default().lease_max_tokens,
        ..settings()
    }
}

/// How many of `decisions` are `want`.
fn count(decisions: &[RateDecision], want: &RateDecision) -> usize {
    decisions.iter().filter(|d| *d == want).count()
}

async fn item(
    table: &StateTable,
    client: &str,
) -> std::collections::HashMap<String, AttributeValue> {
    item_at(table, BucketKey::client(client)).await
}

async fn item_at(
    table: &StateTable,
    key: BucketKey,
) -> std::collections::HashMap<String, AttributeValue> {
    table
        .client()
        .get_item()
        .table_name(table.name())
        .key("pk", AttributeValue::S(key.into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_eight_tasks_stay_within_the_bucket() {
    two_instances_race(settings()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_taking_leases_stay_within_the_bucket() {
    two_instances_race(leased()).await;
}

/// Two limiter instances on one item, four tasks each calling every 20 ms for 50 calls: no
/// more admitted than capacity + rate × elapsed (+1 for the clock's granularity), none
/// failed open.
async fn two_instances_race(settings: RateLimitSettings) {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let counter = CallCounter::default();
    let instances: Vec<Arc<DynamoRateLimiter>> = (0..2)
        .map(|_| {
            let t = StateTable::new(counted_dynamo(&sdk, &counter), table.name()).unwrap();
            Arc::new(DynamoRateLimiter::new(&t, settings, Arc::new(SystemClock)))
        })
        .collect();

    let start = Instant::now();
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let limiter = Arc::clone(&instances[i % 2]);
            tokio::spawn(async move {
                let mut decisions = Vec::new();
                for _ in 0..50 {
                    decisions.push(limiter.decide("agent-a").await);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                decisions
            })
        })
        .collect();
    let mut decisions = Vec::new();
    for t in tasks {
        decisions.extend(t.await.unwrap());
    }
    let elapsed = start.elapsed().as_secs_f64();

    let allowed = count(&decisions, &RateDecision::Allowed);
    let fail_open = count(&decisions, &RateDecision::FailOpen);
    let limited: Vec<u64> = decisions
        .iter()
        .filter_map(|d| match d {
            RateDecision::Limited { retry_after_s } => Some(*retry_after_s),
            _ => None,
        })
        .collect();
    let bound = 20.0 + elapsed + 1.0;
    let calls = counter.get();
    println!(
        "400 calls in {elapsed:.2}s: allowed {allowed}, limited {}, fail_open {fail_open}, \
         bound {bound:.1}, DynamoDB requests {calls}",
        limited.len()
    );
    assert_eq!(fail_open, 0, "the emulator was up");
    assert!(
        allowed >= 20,
        "a fresh bucket admits its capacity: {allowed}"
    );
    assert!((allowed as f64) <= bound, "admitted {allowed} > {bound:.1}");
    assert_eq!(allowed + limited.len(), 400);
    assert!(limited.iter().all(|r| *r >= 1));
}

/// A fresh table, a limiter whose DynamoDB requests `counter` counts, its clock, and
/// `other`: another instance on the same table and clock, not counted.
struct Counted {
    table: StateTable,
    counter: CallCounter,
    clock: Arc<ManualClock>,
    limiter: DynamoRateLimiter,
    other: DynamoRateLimiter,
}

async fn counted() -> Counted {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let counter = CallCounter::default();
    let t = StateTable::new(counted_dynamo(&sdk, &counter), table.name()).unwrap();
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let limiter = DynamoRateLimiter::new(&t, settings(), clock.clone());
    let other = DynamoRateLimiter::new(&table, settings(), clock.clone());
    Counted {
        table,
        counter,
        clock,
        limiter,
        other,
    }
}

#[tokio::test]
async fn steady_state_costs_one_request_per_admitted_call_and_none_per_denial() {
    let Counted {
        table,
        counter,
        clock,
        limiter,
        other,
    } = counted().await;

    // Cold instance, item exists already (written by "another instance").
    assert_eq!(other.decide("agent-b").await, RateDecision::Allowed);
    assert_eq!(limiter.decide("agent-b").await, RateDecision::Allowed);
    assert_eq!(
        counter.get(),
        2,
        "cold: one read of the existing item, then one write"
    );

    let before = counter.get();
    for _ in 0..18 {
        clock.advance_ms(5);
        assert_eq!(limiter.decide("agent-b").await, RateDecision::Allowed);
    }
    assert_eq!(
        counter.get() - before,
        18,
        "one round trip per admitted call"
    );

    let before = counter.get();
    for _ in 0..10 {
        assert!(matches!(
            limiter.decide("agent-b").await,
            RateDecision::Limited { retry_after_s: 1 }
        ));
    }
    assert_eq!(
        counter.get() - before,
        0,
        "denials decided from the cached item"
    );

    clock.advance_ms(1_000);
    assert_eq!(limiter.decide("agent-b").await, RateDecision::Allowed);
    let stored = item(&table, "agent-b").await;
    let expires: i64 = stored["expires_at"].as_n().unwrap().parse().unwrap();
    assert_eq!(expires, clock_now_s(&clock) + 3600);
}

#[tokio::test]
async fn a_stale_cache_of_a_full_bucket_writes_once_and_exactly() {
    // The emulator evaluates the widened condition (`updated_at = :seen OR (tokens >= :full
    // AND updated_at <= :quiet)`) as DynamoDB does: after another instance's write 10 s ago
    // (capacity 20 at 1/s, so full again), a stale cache costs one round trip, and the item
    // is exactly the full bucket less this call's token.
    let Counted {
        table,
        counter,
        clock,
        limiter,
        other,
    } = counted().await;
    assert_eq!(limiter.decide("agent-f").await, RateDecision::Allowed);
    clock.advance_ms(10_000);
    assert_eq!(other.decide("agent-f").await, RateDecision::Allowed);
    clock.advance_ms(10_000);
    let before = counter.get();
    assert_eq!(limiter.decide("agent-f").await, RateDecision::Allowed);
    assert_eq!(counter.get() - before, 1, "one write over a stale cache");
    let stored = item(&table, "agent-f").await;
    assert_eq!(
        stored["tokens"].as_n().unwrap().parse::<f64>().unwrap(),
        19.0
    );
    let updated: i64 = stored["updated_at"].as_n().unwrap().parse().unwrap();
    assert_eq!(updated, 1_800_000_020_000);

    // Not provably full (the other instance wrote 1 s ago): the stale write fails first.
    clock.advance_ms(1_000);
    assert_eq!(other.decide("agent-f").await, RateDecision::Allowed);
    clock.advance_ms(1_000);
    let before = counter.get();
    assert_eq!(limiter.decide("agent-f").await, RateDecision::Allowed);
    assert_eq!(
        counter.get() - before,
        2,
        "a failed condition, then the write"
    );
}

fn clock_now_s(clock: &ManualClock) -> i64 {
    use kosha_state::Clock;
    clock.now_s()
}

#[tokio::test]
async fn an_item_past_expires_at_is_a_fresh_bucket() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let now_ms: i64 = 1_800_000_000_000;
    // Empty bucket, written "now", but already expired: counts as full.
    table
        .client()
        .put_item()
        .table_name(table.name())
        .item("pk", AttributeValue::S(BucketKey::client("agent-c").into()))
        .item("tokens", AttributeValue::N("0".into()))
        .item("updated_at", AttributeValue::N(now_ms.to_string()))
        .item(
            "expires_at",
            AttributeValue::N((now_ms / 1000 - 1).to_string()),
        )
        .send()
        .await
        .unwrap();
    let limiter = DynamoRateLimiter::new(&table, settings(), Arc::new(ManualClock::new(now_ms)));
    assert_eq!(limiter.decide("agent-c").await, RateDecision::Allowed);
    let tokens: f64 = item(&table, "agent-c").await["tokens"]
        .as_n()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(tokens, 19.0);
}

#[tokio::test]
async fn a_malformed_item_is_overwritten_not_fatal() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    table
        .client()
        .put_item()
        .table_name(table.name())
        .item("pk", AttributeValue::S(BucketKey::client("agent-d").into()))
        .item("tokens", AttributeValue::S("lots".into()))
        .send()
        .await
        .unwrap();
    let limiter = DynamoRateLimiter::new(
        &table,
        settings(),
        Arc::new(ManualClock::new(1_800_000_000_000)),
    );
    assert_eq!(limiter.decide("agent-d").await, RateDecision::Allowed);
    assert_eq!(limiter.decide("agent-d").await, RateDecision::Allowed);
    let tokens: f64 = item(&table, "agent-d").await["tokens"]
        .as_n()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(tokens, 18.0);
}

#[tokio::test]
async fn capacity_and_rate_are_configurable() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let s = RateLimitSettings {
        bucket: BucketConfig::try_new(2.0, 0.25).unwrap(),
        ..settings()
    };
    let limiter = DynamoRateLimiter::new(&table, s, clock.clone());
    let client = unique("agent");
    assert_eq!(limiter.decide(&client).await, RateDecision::Allowed);
    assert_eq!(limiter.decide(&client).await, RateDecision::Allowed);
    assert_eq!(
        limiter.decide(&client).await,
        RateDecision::Limited { retry_after_s: 4 }
    );
    clock.advance_ms(4_001);
    assert_eq!(limiter.decide(&client).await, RateDecision::Allowed);
}

#[tokio::test]
async fn a_call_admitted_after_lost_races_is_still_charged() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let one_try = RateLimitSettings {
        max_tries: 1,
        ..settings()
    };
    let a = DynamoRateLimiter::new(&table, one_try, clock.clone());
    let b = DynamoRateLimiter::new(&table, one_try, clock.clone());
    // Both cold: each reads, then writes (a creates the item at T0 with 19, b writes 18 at
    // T0 + 1 over what it read).
    assert_eq!(a.decide("agent-e").await, RateDecision::Allowed);
    assert_eq!(b.decide("agent-e").await, RateDecision::Allowed);
    // Half a second on, a's cached item (its own write) is stale and a has seen no other
    // write, so it writes without reading: its only try loses, and it admits and charges
    // atomically. A write would have refilled (18.5 − 1 at T0 + 500); the charge takes the
    // stored tokens down by one and moves `updated_at` on by 1 ms.
    clock.advance_ms(500);
    assert_eq!(a.decide("agent-e").await, RateDecision::Allowed);
    let stored = item(&table, "agent-e").await;
    let tokens: f64 = stored["tokens"].as_n().unwrap().parse().unwrap();
    let updated: i64 = stored["updated_at"].as_n().unwrap().parse().unwrap();
    assert_eq!(tokens, 17.0);
    assert_eq!(updated, 1_800_000_000_002);
    // a's cache now holds the charged item: its next call is one clean write over it.
    assert_eq!(a.decide("agent-e").await, RateDecision::Allowed);
    let stored = item(&table, "agent-e").await;
    let tokens: f64 = stored["tokens"].as_n().unwrap().parse().unwrap();
    let updated: i64 = stored["updated_at"].as_n().unwrap().parse().unwrap();
    assert!((tokens - 16.498).abs() < 1e-6, "{tokens}");
    assert_eq!(updated, 1_800_000_000_500);
}

#[tokio::test]
async fn the_charge_after_lost_races_never_overdraws() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let now_ms: i64 = 1_800_000_000_000;
    let one_try = RateLimitSettings {
        max_tries: 1,
        ..settings()
    };
    // The instance caches the item it creates (19 tokens at T0 − 1 ms).
    let limiter = DynamoRateLimiter::new(&table, one_try, Arc::new(ManualClock::new(now_ms - 1)));
    assert_eq!(limiter.decide("agent-f").await, RateDecision::Allowed);
    // Another writer leaves half a token at T0.
    table
        .client()
        .put_item()
        .table_name(table.name())
        .item("pk", AttributeValue::S(BucketKey::client("agent-f").into()))
        .item("tokens", AttributeValue::N("0.5".into()))
        .item("updated_at", AttributeValue::N(now_ms.to_string()))
        .item(
            "expires_at",
            AttributeValue::N((now_ms / 1000 + 3600).to_string()),
        )
        .send()
        .await
        .unwrap();
    // The cached item says 19 tokens: the one write over it loses; the charge finds half a
    // token: refused, nothing taken.
    assert_eq!(
        limiter.decide("agent-f").await,
        RateDecision::Limited { retry_after_s: 1 }
    );
    let tokens: f64 = item(&table, "agent-f").await["tokens"]
        .as_n()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(tokens, 0.5, "nothing taken");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clients_concurrent_burst_is_never_admitted_past_its_bucket() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    // 300 calls at once queue for one client's turn far longer than the 600 ms turn wait
    // (each write is a round trip to the emulator); capacity 200 leaves tokens to spare, so
    // refusals come from the turn wait, not from an empty bucket.
    let s = RateLimitSettings {
        bucket: BucketConfig::try_new(200.0, 1.0).unwrap(),
        call_timeout: Duration::from_millis(300),
        ..settings()
    };
    let limiter = Arc::new(DynamoRateLimiter::new(&table, s, Arc::new(SystemClock)));
    let client = unique("agent");
    let start = Instant::now();
    let tasks: Vec<_> = (0..300)
        .map(|_| {
            let limiter = Arc::clone(&limiter);
            let client = client.clone();
            tokio::spawn(async move { limiter.decide(&client).await })
        })
        .collect();
    let mut decisions = Vec::new();
    for t in tasks {
        decisions.push(t.await.unwrap());
    }
    let elapsed = start.elapsed().as_secs_f64();
    let allowed = count(&decisions, &RateDecision::Allowed);
    let fail_open = count(&decisions, &RateDecision::FailOpen);
    let tokens: f64 = item(&table, &client).await["tokens"]
        .as_n()
        .unwrap()
        .parse()
        .unwrap();
    println!(
        "300 calls in {elapsed:.2}s: allowed {allowed}, fail_open {fail_open}, tokens {tokens}"
    );
    assert_eq!(fail_open, 0, "the emulator was up: {decisions:?}");
    assert!(allowed >= 1);
    assert!(
        (allowed as f64) <= 200.0 + elapsed,
        "admitted {allowed} in {elapsed:.2}s"
    );
    // Every admission was charged: the bucket holds what the admissions left.
    assert!(tokens <= 200.0 - allowed as f64 + elapsed, "{tokens}");
    assert!(elapsed < 10.0, "no call hangs: {elapsed:.2}s");
}

/// Writes per admitted call for one caller at one call per `gap_ms` (on a shared manual
/// clock), its calls sent round-robin to `instances` limiters with the default leases: the
/// DynamoDB requests counted, against the emulator. Returns (admitted, requests).
async fn paced_caller(instances: usize, calls: usize, gap_ms: i64) -> (usize, usize) {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let counter = CallCounter::default();
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let limiters: Vec<DynamoRateLimiter> = (0..instances)
        .map(|_| {
            let t = StateTable::new(counted_dynamo(&sdk, &counter), table.name()).unwrap();
            DynamoRateLimiter::new(&t, leased(), clock.clone())
        })
        .collect();
    let client = unique("agent-paced");
    let mut admitted = 0;
    for i in 0..calls {
        match limiters[i % instances].decide(&client).await {
            RateDecision::Allowed => admitted += 1,
            RateDecision::Limited { .. } => {}
            RateDecision::FailOpen => panic!("the emulator was up"),
        }
        clock.advance_ms(gap_ms);
    }
    (admitted, counter.get())
}

#[tokio::test]
async fn one_caller_at_one_call_a_second_writes_at_most_once_per_four_calls() {
    let (admitted, requests) = paced_caller(1, 120, 1_000).await;
    let per_call = requests as f64 / admitted as f64;
    println!(
        "1 instance, 1 call/s: {admitted} admitted, {requests} DynamoDB requests, {per_call:.3} per call"
    );
    assert_eq!(
        admitted, 120,
        "1 call/s never empties a bucket refilling at 1/s"
    );
    assert!(per_call <= 0.25, "{per_call:.3} writes per admitted call");
}

#[tokio::test]
async fn one_caller_over_two_instances_is_never_over_admitted() {
    // Two calls a second alternating between two instances: twice the refill rate, so the
    // bucket empties; admissions stay within capacity + rate × elapsed.
    let (admitted, requests) = paced_caller(2, 120, 500).await;
    println!("2 instances, 2 calls/s: {admitted} admitted, {requests} DynamoDB requests");
    let bound = 20.0 + 60.0;
    assert!(admitted as f64 <= bound, "admitted {admitted} > {bound}");
    assert!(admitted >= 60, "the refill alone admits 60: {admitted}");
}

/// Issue 44 (SPEC §6, §8): keyed by user, each person behind one app client has a bucket of
/// their own, `rl#u#<sub>`, leased and exact across instances like a client's; a client id
/// that looks like a user's key (`u#alice`) names neither alice's bucket nor another's.
#[tokio::test]
async fn a_users_bucket_is_their_own_across_instances_and_no_client_id_names_it() {
    let sdk = sdk_config().await;
    let table = fresh_table(&sdk).await;
    let settings = RateLimitSettings {
        bucket: BucketConfig::try_new(3.0, 0.001).unwrap(),
        ..leased()
    };
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let [a, b] = [0, 1].map(|_| DynamoRateLimiter::new(&table, settings, clock.clone()));
    let (alice, bob) = (Bucket::user("alice"), Bucket::user("bob"));
    let mut first = vec![];
    for limiter in [&a, &b, &a, &b] {
        first.push(limiter.spend(alice, 1).await);
    }
    assert_eq!(count(&first, &RateDecision::Allowed), 3, "{first:?}");
    assert!(
        matches!(first[3], RateDecision::Limited { .. }),
        "{first:?}"
    );
    // Alice's bucket is spent on both instances; bob's and the client's are full.
    for limiter in [&a, &b] {
        assert!(!limiter.spend(alice, 1).await.admits());
        assert_eq!(limiter.spend(bob, 1).await, RateDecision::Allowed);
        assert_eq!(
            limiter.spend(Bucket::client("u#alice"), 1).await,
            RateDecision::Allowed
        );
        assert_eq!(limiter.decide("alice").await, RateDecision::Allowed);
    }
    let tokens = |item: std::collections::HashMap<String, AttributeValue>| {
        item["tokens"].as_n().unwrap().parse::<f64>().unwrap()
    };
    assert!(tokens(item_at(&table, BucketKey::user("alice")).await) < 1.0);
    assert!(tokens(item_at(&table, BucketKey::user("bob")).await) <= 2.0);
    assert!(tokens(item_at(&table, BucketKey::client("u#alice")).await) <= 2.0);
    assert_eq!(BucketKey::client("u#alice").as_str(), "rl#u%23alice");
}
