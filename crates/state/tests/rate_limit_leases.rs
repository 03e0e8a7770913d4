//! Leases and per-tool costs (issue 28, SPEC §6) on tokio's paused clock, DynamoDB faked in
//! process ([`common::fake_dynamo`]): how many writes a caller costs, when a lease ends (the
//! wall clock, tokio's clock, a thaw, a wall clock set back), that leased tokens are never
//! handed back, and what a cost does to `retry_after_s`. Races between instances on one item
//! run against the emulator (tests/rate_limit.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::fake_dynamo::FakeBuckets;
use kosha_resilience::rate_limit::{BucketConfig, RateDecision};
use kosha_state::{DynamoRateLimiter, ManualClock, RateLimitSettings};

const T0: i64 = 1_800_000_000_000;

/// Capacity 20, 1 token/s, 5 s leases of at most 5 tokens (the SPEC §6 defaults).
fn limiter(fake: &FakeBuckets, clock: &Arc<ManualClock>) -> DynamoRateLimiter {
    DynamoRateLimiter::new(&fake.table(), RateLimitSettings::default(), clock.clone())
}

/// Moves both clocks on by `ms` (a running instance).
async fn elapse(clock: &ManualClock, ms: u64) {
    clock.advance_ms(i64::try_from(ms).unwrap());
    tokio::time::advance(Duration::from_millis(ms)).await;
}

#[tokio::test(start_paused = true)]
async fn a_caller_at_one_call_a_second_writes_at_most_once_per_four_calls() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = limiter(&fake, &clock);
    for _ in 0..120 {
        assert_eq!(limiter.decide("agent-a").await, RateDecision::Allowed);
        elapse(&clock, 1_000).await;
    }
    let per_call = fake.writes() as f64 / 120.0;
    assert!(per_call <= 0.25, "{} writes for 120 calls", fake.writes());
    // Alone on its item, the instance reads it once, cold, and never again.
    assert_eq!(fake.state.lock().reads(), 1);
    // Leased tokens left the item when granted: the item holds what the grants left.
    assert!(fake.tokens("agent-a") <= 20.0);
}

#[tokio::test(start_paused = true)]
async fn a_rare_caller_takes_one_token_per_write_as_before() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = limiter(&fake, &clock);
    for i in 1..=5 {
        assert_eq!(limiter.decide("agent-r").await, RateDecision::Allowed);
        assert_eq!(fake.writes(), i, "one write per call");
        // g = 1: the item lost exactly one token (the bucket was full before each call).
        assert_eq!(fake.tokens("agent-r"), 19.0);
        elapse(&clock, 60_000).await;
    }
}

/// Builds up a lease: 20 calls a second apart, then calls on until one writes; returns just
/// after that write, so the lease holds what the grant left (4 at this rate).
async fn leased(limiter: &DynamoRateLimiter, fake: &FakeBuckets, clock: &ManualClock) {
    for _ in 0..20 {
        assert_eq!(limiter.decide("agent-l").await, RateDecision::Allowed);
        elapse(clock, 1_000).await;
    }
    for _ in 0..10 {
        let writes = fake.writes();
        assert_eq!(limiter.decide("agent-l").await, RateDecision::Allowed);
        if fake.writes() > writes {
            return;
        }
        elapse(clock, 1_000).await;
    }
    panic!("no write in 10 calls at 1/s");
}

#[tokio::test(start_paused = true)]
async fn a_lease_is_spent_without_writes_and_ends_on_the_wall_clock_after_a_thaw() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = limiter(&fake, &clock);
    leased(&limiter, &fake, &clock).await;
    let writes = fake.writes();
    let stored = fake.tokens("agent-l");
    assert_eq!(limiter.decide("agent-l").await, RateDecision::Allowed);
    assert_eq!(fake.writes(), writes, "spent from the lease");

    // Frozen past the lease's end: the wall clock moved 10 s, tokio's clock not at all
    // (nothing ran). The leftovers are dropped, not spent and not handed back.
    clock.advance_ms(10_000);
    assert_eq!(limiter.decide("agent-l").await, RateDecision::Allowed);
    assert_eq!(fake.writes(), writes + 1, "a thawed instance writes again");
    // The new write refilled from the stored value and took at least one token: the
    // dropped tokens are not in it.
    assert!(
        fake.tokens("agent-l") <= (stored + 10.0).min(20.0) - 1.0,
        "nothing handed back: {stored} -> {}",
        fake.tokens("agent-l")
    );
}

#[tokio::test(start_paused = true)]
async fn a_lease_ends_on_tokios_clock_when_the_wall_clock_is_set_back() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = limiter(&fake, &clock);
    leased(&limiter, &fake, &clock).await;
    let writes = fake.writes();
    // The wall clock jumps back an hour; 5 s pass on tokio's clock.
    clock.advance_ms(-3_600_000);
    tokio::time::advance(Duration::from_secs(5)).await;
    assert_eq!(limiter.decide("agent-l").await, RateDecision::Allowed);
    assert_eq!(fake.writes(), writes + 1, "the lease did not outlive 5 s");
}

#[tokio::test(start_paused = true)]
async fn a_lease_ends_after_its_duration_on_both_clocks() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = limiter(&fake, &clock);
    leased(&limiter, &fake, &clock).await;
    let writes = fake.writes();
    elapse(&clock, 4_900).await;
    assert_eq!(limiter.decide("agent-l").await, RateDecision::Allowed);
    assert_eq!(fake.writes(), writes, "still within 5 s");
    elapse(&clock, 5_000).await;
    assert_eq!(limiter.decide("agent-l").await, RateDecision::Allowed);
    assert_eq!(fake.writes(), writes + 1, "expired: a write");
}

#[tokio::test(start_paused = true)]
async fn a_wall_clock_jumping_ahead_refills_once_and_never_admits_past_the_bucket() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = limiter(&fake, &clock);
    let mut admitted = 0;
    for _ in 0..40 {
        if limiter.decide("agent-j").await == RateDecision::Allowed {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 20, "a full bucket and no time passing");
    // A day ahead: the bucket is full again (capped at 20), no more.
    clock.advance_ms(86_400_000);
    let mut again = 0;
    for _ in 0..40 {
        if limiter.decide("agent-j").await == RateDecision::Allowed {
            again += 1;
        }
    }
    assert_eq!(again, 20);
}

#[tokio::test(start_paused = true)]
async fn a_burst_in_one_instance_is_held_to_the_bucket_and_refusals_cost_no_write() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = Arc::new(limiter(&fake, &clock));
    let tasks: Vec<_> = (0..60)
        .map(|_| {
            let limiter = Arc::clone(&limiter);
            tokio::spawn(async move { limiter.decide("agent-b").await })
        })
        .collect();
    let mut allowed = 0;
    for t in tasks {
        match t.await.unwrap() {
            RateDecision::Allowed => allowed += 1,
            RateDecision::Limited { retry_after_s } => assert!(retry_after_s >= 1),
            RateDecision::FailOpen => panic!("the fake answered"),
        }
    }
    assert!(allowed <= 20, "admitted {allowed} from a bucket of 20");
    assert!(
        fake.writes() < allowed,
        "leases: fewer writes than admissions"
    );
    let writes = fake.writes();
    for _ in 0..20 {
        assert!(!limiter.decide("agent-b").await.admits());
    }
    assert_eq!(
        fake.writes(),
        writes,
        "refused from the cache and the lease"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cold_burst_leases_for_the_calls_queued_behind_the_turn() {
    // 40 calls of one client at once on a cold instance (local mode), each write 60 ms: one
    // write per call would get about 3 of them through the 200 ms turn wait and refuse the
    // rest although the bucket holds 1,000. The first write leases for the queue as well.
    let fake = FakeBuckets::new(Duration::from_millis(60));
    let clock = Arc::new(ManualClock::new(T0));
    let settings = RateLimitSettings {
        bucket: BucketConfig::try_new(1_000.0, 100.0).unwrap(),
        lease_max_tokens: 250,
        ..RateLimitSettings::default()
    };
    let limiter = Arc::new(DynamoRateLimiter::new(
        &fake.table(),
        settings,
        clock.clone(),
    ));
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let limiter = Arc::clone(&limiter);
            tokio::spawn(async move { limiter.decide("agent-q").await })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), RateDecision::Allowed);
    }
    assert!(fake.writes() <= 3, "{} writes for 40 calls", fake.writes());
    // What was leased left the item: nothing was admitted past it.
    assert!(fake.tokens("agent-q") <= 1_000.0 - 40.0);
}

#[tokio::test(start_paused = true)]
async fn a_call_spends_its_cost_and_waits_until_the_bucket_holds_it() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = limiter(&fake, &clock);
    assert_eq!(
        limiter.decide_cost("agent-c", 8).await,
        RateDecision::Allowed
    );
    assert_eq!(
        fake.tokens("agent-c"),
        12.0,
        "a first call takes its cost alone"
    );
    assert_eq!(
        limiter.decide_cost("agent-c", 8).await,
        RateDecision::Allowed
    );
    let writes = fake.writes();
    // 4 left (maybe fewer, leased): 8 are there in at least 4 s at 1 token/s.
    let RateDecision::Limited { retry_after_s } = limiter.decide_cost("agent-c", 8).await else {
        panic!("a cost of 8 from at most 4 tokens");
    };
    assert!(retry_after_s >= 4, "{retry_after_s}");
    assert_eq!(fake.writes(), writes, "refused from the cache");
    // A cheaper call still fits (and, at this client's pace, leases what is left).
    assert_eq!(
        limiter.decide_cost("agent-c", 1).await,
        RateDecision::Allowed
    );
    // 8 tokens refill in a little over 8 s; the lease's leftovers lapse after 5 s.
    elapse(&clock, 9_000).await;
    assert_eq!(
        limiter.decide_cost("agent-c", 8).await,
        RateDecision::Allowed
    );
}

#[tokio::test(start_paused = true)]
async fn a_cost_above_the_lease_bound_is_taken_in_one_write() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let settings = RateLimitSettings {
        bucket: BucketConfig::try_new(20.0, 1.0).unwrap(),
        lease_max_tokens: 2,
        ..RateLimitSettings::default()
    };
    let limiter = DynamoRateLimiter::new(&fake.table(), settings, clock.clone());
    assert_eq!(
        limiter.decide_cost("agent-k", 7).await,
        RateDecision::Allowed
    );
    assert_eq!(fake.writes(), 1);
    assert_eq!(fake.tokens("agent-k"), 13.0);
}

/// `calls` calls of `client`, `gap_ms` apart, alternating between two instances ("a" and
/// "b") on one fake, each asserted admitted; returns the fake.
async fn alternating(client: &str, calls: usize, gap_ms: u64) -> FakeBuckets {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let (a, b) = (
        limiter(&fake.named("a"), &clock),
        limiter(&fake.named("b"), &clock),
    );
    for i in 0..calls {
        let instance = if i % 2 == 0 { &a } else { &b };
        assert_eq!(
            instance.decide(client).await,
            RateDecision::Allowed,
            "call {i}"
        );
        elapse(&clock, gap_ms).await;
    }
    fake
}

#[tokio::test(start_paused = true)]
async fn instances_whose_caches_went_stale_pay_one_write_while_the_bucket_is_full() {
    // One client, calls 10 s apart alternating between two instances: each instance's cached
    // item is the other's write ago, but the bucket (20, 1/s) is full at every call, so the
    // widened condition holds and no call pays a failed write first.
    let fake = alternating("agent-s", 10, 10_000).await;
    // One write per call: a cold instance reads the item before its first write (a
    // conditional create would fail on b's first call, the item existing).
    assert_eq!(fake.writes(), 10, "one write per call");
    assert_eq!(fake.state.lock().reads(), 2, "one read per cold instance");
    assert_eq!(fake.state.lock().failed_puts(), 0);
    // Every call after each instance's first held on the full bucket alone, so neither
    // instance saw the other's writes and none read again.
    assert_eq!(fake.state.lock().full_writes, 8);
    assert_eq!(fake.tokens("agent-s"), 19.0);
}

#[tokio::test(start_paused = true)]
async fn a_stale_cache_of_a_bucket_that_is_not_provably_full_retries_on_the_current_item() {
    // Calls 1 s apart alternating between two instances: each instance's cache refills to
    // full, but the item the other wrote a second or two ago is not provably full (written
    // within the 5 s the guard asks for), so the widened condition fails and the write
    // retries on the item it returned; all 40 calls fit the bucket (20 + 1/s).
    let fake = alternating("agent-t", 40, 1_000).await;
    let s = fake.state.lock();
    assert_eq!(
        s.full_writes, 0,
        "no item here was provably full when written over"
    );
    // Each instance loses once: having seen the other's write, it reads the item before
    // each later write (a read request instead of a failed write), and loses no more.
    assert_eq!(
        s.failed_puts_by.get("a"),
        Some(&1),
        "{:?}",
        s.failed_puts_by
    );
    assert_eq!(
        s.failed_puts_by.get("b"),
        Some(&1),
        "{:?}",
        s.failed_puts_by
    );
    // Every turn read first but the two that lost (each instance's first over a cached
    // item): a turn is one write, and one more when it lost.
    let turns = s.puts + s.updates - s.failed_puts();
    assert_eq!(s.reads(), turns - 2, "{} reads in {turns} turns", s.reads());
    drop(s);
    let left = fake.tokens("agent-t");
    assert!((0.0..=20.0).contains(&left), "{left}");
}

#[tokio::test(start_paused = true)]
async fn an_instance_reads_first_for_30_s_after_it_last_saw_another_instances_write() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    // One token per write: every call takes a turn.
    let a = limiter_with(&fake.named("a"), &clock, ONE_PER_WRITE);
    let b = limiter_with(&fake.named("b"), &clock, ONE_PER_WRITE);
    let reads = |fake: &FakeBuckets| fake.state.lock().reads_by.get("a").copied().unwrap_or(0);
    // A caches its write, B writes over it, and A's next write, a second on, loses (the item
    // B left, 18 tokens, is not provably full) and is retried on what came back.
    assert_eq!(a.decide("agent-c").await, RateDecision::Allowed);
    assert_eq!(b.decide("agent-c").await, RateDecision::Allowed);
    elapse(&clock, 1_000).await;
    let before = reads(&fake);
    assert_eq!(a.decide("agent-c").await, RateDecision::Allowed);
    assert_eq!(reads(&fake), before, "A did not know of B's write");
    assert_eq!(fake.state.lock().failed_puts_by.get("a"), Some(&1));
    // A alone now: 29 s after the loss it still reads first; 31 s after, it no longer does.
    elapse(&clock, 29_000).await;
    assert_eq!(
        counted_call(&a, &fake).await,
        (1, 1),
        "read, then one write"
    );
    elapse(&clock, 2_000).await;
    assert_eq!(counted_call(&a, &fake).await, (0, 1), "one write, no read");
    assert_eq!(fake.state.lock().failed_puts(), 1);
}

/// One admitted call of "agent-c" by instance "a": the reads and writes it made.
async fn counted_call(a: &DynamoRateLimiter, fake: &FakeBuckets) -> (usize, usize) {
    let reads = || fake.state.lock().reads_by.get("a").copied().unwrap_or(0);
    let (r, w) = (reads(), fake.writes());
    assert_eq!(a.decide("agent-c").await, RateDecision::Allowed);
    (reads() - r, fake.writes() - w)
}

/// Capacity 20, 1 token/s, one token per write.
const ONE_PER_WRITE: (f64, f64, u32) = (20.0, 1.0, 1);

/// A limiter on a bucket of `capacity` refilled at `per_sec`, leases of at most `lease_max`.
fn limiter_with(
    fake: &FakeBuckets,
    clock: &Arc<ManualClock>,
    (capacity, per_sec, lease_max): (f64, f64, u32),
) -> DynamoRateLimiter {
    let settings = RateLimitSettings {
        bucket: BucketConfig::try_new(capacity, per_sec).unwrap(),
        lease_max_tokens: lease_max,
        ..RateLimitSettings::default()
    };
    DynamoRateLimiter::new(&fake.table(), settings, clock.clone())
}

/// Capacity 40, 20 tokens/s, leases of at most 10: the fleet simulator's `latency` bucket,
/// which a caller at 10 calls/s spends faster than a lease lasts (50 wanted per 5 s).
const FAST: (f64, f64, u32) = (40.0, 20.0, 10);

/// Capacity 1000 refilled at 0.001 token/s, leases of at most 10: over a test's seconds the
/// item neither refills by a whole token nor fills up, so the tokens debited from it are
/// 1000 less what it stores.
const SLOW_REFILL: (f64, f64, u32) = (1000.0, 0.001, 10);

/// Calls `n` times 100 ms apart; returns how long each call waited on tokio's paused
/// clock, where only the fake's answers (5 ms each) take time.
async fn at_ten_a_second(
    limiter: &DynamoRateLimiter,
    clock: &ManualClock,
    n: usize,
) -> Vec<Duration> {
    let mut waits = Vec::with_capacity(n);
    for _ in 0..n {
        let start = tokio::time::Instant::now();
        assert_eq!(limiter.decide("agent-f").await, RateDecision::Allowed);
        waits.push(start.elapsed());
        elapse(clock, 100).await;
    }
    waits
}

#[tokio::test(start_paused = true)]
async fn a_caller_spending_leases_before_they_end_renews_ahead_and_never_waits() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = limiter_with(&fake, &clock, FAST);
    // Demand is learned: the first calls write (one token, then more per lease).
    at_ten_a_second(&limiter, &clock, 50).await;
    let writes = fake.writes();
    let waits = at_ten_a_second(&limiter, &clock, 300).await;
    assert!(
        waits.iter().all(Duration::is_zero),
        "every call was decided from the lease: {waits:?}"
    );
    // Each renewal grants the bound (10) when the lease is down to 2: one write per 10 calls.
    let per_call = (fake.writes() - writes) as f64 / 300.0;
    assert!(
        (0.09..=0.11).contains(&per_call),
        "{per_call} writes per call"
    );
    // Tokens left the item when granted: 20/s refills what 10/s takes, so it stays high.
    assert!(fake.tokens("agent-f") >= 20.0, "{}", fake.tokens("agent-f"));
}

#[tokio::test(start_paused = true)]
async fn a_renewal_answered_after_a_freeze_past_its_lease_end_is_not_spent() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = limiter_with(&fake, &clock, FAST);
    at_ten_a_second(&limiter, &clock, 50).await;
    // Calls on until one, answered at once from the lease, starts a renewal: its write is
    // sent (the fake counts it) and awaits the fake's answer.
    let mut writes = fake.writes();
    for _ in 0..10 {
        let start = tokio::time::Instant::now();
        assert_eq!(limiter.decide("agent-f").await, RateDecision::Allowed);
        let waited = start.elapsed() > Duration::ZERO;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        if !waited && fake.writes() > writes {
            break;
        }
        elapse(&clock, 100).await;
        writes = fake.writes();
    }
    assert_eq!(fake.writes(), writes + 1, "a renewal is in flight");
    // Frozen past the lease's end (the wall clock moves, tokio's does not), then thawed:
    // the answer arrives and the renewal's tokens, debited from the item, end with the
    // lease it was sent for.
    clock.advance_ms(10_000);
    tokio::time::advance(Duration::from_millis(5)).await;
    assert_eq!(fake.writes(), writes + 1, "the renewal wrote");
    assert_eq!(limiter.decide("agent-f").await, RateDecision::Allowed);
    assert_eq!(
        fake.writes(),
        writes + 2,
        "the next call writes: the renewal's tokens ended"
    );
}

/// Every 100 ms, a call, then (once a renewal it started has sent its write) a second
/// call that spends from the lease while that write is in flight, `n` rounds; returns the
/// calls admitted and the longest any call waited (tokio's paused clock).
async fn spending_during_renewals(
    limiter: &DynamoRateLimiter,
    clock: &ManualClock,
    n: usize,
) -> (usize, Duration) {
    let mut admitted = 0;
    let mut longest = Duration::ZERO;
    for _ in 0..n {
        for second in [false, true] {
            if second {
                for _ in 0..10 {
                    tokio::task::yield_now().await;
                }
            }
            let start = tokio::time::Instant::now();
            admitted += usize::from(limiter.decide("agent-s").await == RateDecision::Allowed);
            longest = longest.max(start.elapsed());
        }
        elapse(clock, 100).await;
    }
    (admitted, longest)
}

/// Asserts that `admitted` calls of "agent-s" on a [`SLOW_REFILL`] bucket each spent a token
/// debited from the item (within half a token), and that at most `held` debited tokens were
/// not spent (what the instances can hold).
fn assert_spent_only_debited(fake: &FakeBuckets, admitted: usize, held: f64) {
    let debited = 1000.0 - fake.tokens("agent-s");
    assert!(
        admitted as f64 <= debited + 0.5,
        "{admitted} admitted, {debited} debited"
    );
    assert!(
        debited <= admitted as f64 + held + 0.5,
        "{admitted} admitted, {debited} debited"
    );
}

#[tokio::test(start_paused = true)]
async fn renewals_spend_only_tokens_debited_from_the_item() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let limiter = limiter_with(&fake, &clock, SLOW_REFILL);
    let (admitted, _) = spending_during_renewals(&limiter, &clock, 200).await;
    assert_eq!(admitted, 400);
    // What one instance holds: the bound plus the renewal threshold.
    assert_spent_only_debited(&fake, admitted, 12.0);
    assert!(
        fake.writes() <= 60,
        "{} writes for 400 calls",
        fake.writes()
    );
}

#[tokio::test(start_paused = true)]
async fn a_renewal_losing_its_race_leaves_the_lease_as_it_was() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let a = limiter_with(&fake.named("a"), &clock, SLOW_REFILL);
    let b = limiter_with(&fake.named("b"), &clock, SLOW_REFILL);
    let (mut admitted, _) = spending_during_renewals(&a, &clock, 20).await;
    // Another instance writes the item now and then, so A's cached item goes stale and its
    // renewals lose their compare-and-set.
    let mut longest = Duration::ZERO;
    for _ in 0..10 {
        admitted += usize::from(b.decide("agent-s").await == RateDecision::Allowed);
        let (more, waited) = spending_during_renewals(&a, &clock, 20).await;
        admitted += more;
        longest = longest.max(waited);
    }
    assert_eq!(admitted, 40 + 10 + 400);
    // A lost a race, in a renewal, and its calls never did: a lost renewal left the lease as
    // it was, so a call found it spent and waited for its own turn, which read the item
    // first (A had seen B's write) and wrote once: two round trips at most.
    assert_eq!(longest, Duration::from_millis(10));
    let s = fake.state.lock();
    assert!(s.failed_puts_by.get("a").copied().unwrap_or(0) > 0);
    assert!(
        s.reads_by.get("a").copied().unwrap_or(0) > 1,
        "A read after its first loss"
    );
    drop(s);
    // Two instances hold at most 12 each.
    assert_spent_only_debited(&fake, admitted, 24.0);
}

/// A caller at 10 calls/s on instance A (leases renewed ahead) whose item instance B writes
/// once: A's next renewal loses, so A is contended from then on.
async fn contended_caller(fake: &FakeBuckets, clock: &Arc<ManualClock>) -> DynamoRateLimiter {
    let a = limiter_with(&fake.named("a"), clock, FAST);
    let b = limiter_with(&fake.named("b"), clock, FAST);
    at_ten_a_second(&a, clock, 50).await;
    assert_eq!(b.decide("agent-f").await, RateDecision::Allowed);
    at_ten_a_second(&a, clock, 30).await;
    assert_eq!(fake.state.lock().failed_puts_by.get("a"), Some(&1));
    a
}

#[tokio::test(start_paused = true)]
async fn a_contended_callers_renewals_read_first_and_no_call_waits() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let a = contended_caller(&fake, &clock).await;
    let (writes, reads) = (fake.writes(), fake.state.lock().reads_by["a"]);
    // Calls 100 ms apart, each followed by a few polls of the renewal it may have started
    // (`tokio::time::advance` alone fires one round trip of it per call: its read, then its
    // write, would end a call later, and the lease's last call would wait for them).
    let mut waits = Vec::new();
    for _ in 0..100 {
        let start = tokio::time::Instant::now();
        assert_eq!(a.decide("agent-f").await, RateDecision::Allowed);
        waits.push(start.elapsed());
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        elapse(&clock, 100).await;
    }
    // Every write was a renewal in the background, each after a read.
    assert!(waits.iter().all(Duration::is_zero), "{waits:?}");
    let renewals = fake.writes() - writes;
    assert!(
        (9..=11).contains(&renewals),
        "{renewals} renewals for 100 calls"
    );
    assert_eq!(fake.state.lock().reads_by["a"] - reads, renewals);
    assert_eq!(fake.state.lock().failed_puts(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_renewal_whose_read_fails_stops_renewals_and_calls_fail_open_when_the_lease_is_spent() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    let a = contended_caller(&fake, &clock).await;
    // Reads fail, writes would still work: the next renewal's read fails, which counts as
    // the client's last DynamoDB call failing, so it writes nothing and none starts again.
    fake.state.lock().failing_reads = true;
    let writes = fake.writes();
    let mut decisions = Vec::new();
    for _ in 0..30 {
        decisions.push(a.decide("agent-f").await);
        elapse(&clock, 100).await;
    }
    assert_eq!(fake.writes(), writes, "nothing written: {decisions:?}");
    let first_open = decisions
        .iter()
        .position(|d| *d == RateDecision::FailOpen)
        .expect("the lease ran out");
    assert!(
        decisions[..first_open]
            .iter()
            .all(|d| *d == RateDecision::Allowed)
    );
    assert!(
        fake.state.lock().failed_requests >= 2,
        "the renewal's read and a call's"
    );
}

#[tokio::test(start_paused = true)]
async fn while_the_store_fails_nothing_is_renewed_and_calls_fail_open_once_the_lease_is_spent() {
    let fake = FakeBuckets::new(Duration::from_millis(5));
    let clock = Arc::new(ManualClock::new(T0));
    // Leases of at most 20 renew at 5 left: after a renewal fails, the calls leaving 4, 3, 2
    // and 1 could each start another.
    let limiter = limiter_with(&fake, &clock, (80.0, 40.0, 20));
    at_ten_a_second(&limiter, &clock, 50).await;
    fake.state.lock().failing = true;
    let mut decisions = Vec::new();
    for _ in 0..30 {
        decisions.push(limiter.decide("agent-f").await);
        elapse(&clock, 100).await;
    }
    let fail_open = decisions
        .iter()
        .filter(|d| **d == RateDecision::FailOpen)
        .count();
    // The lease is spent first, then every call that needs a write fails open.
    assert!(
        (8..=25).contains(&fail_open),
        "{fail_open} of 30 failed open: {decisions:?}"
    );
    assert!(decisions[0] == RateDecision::Allowed);
    // One request per call that failed open, and at most one renewal: the one that found
    // the store failing (none starts while the last call failed).
    let sent = fake.state.lock().failed_requests;
    assert!(
        sent <= fail_open + 1,
        "{sent} requests for {fail_open} calls failing open"
    );
    // The store is back: a call's own write succeeds, and renewals resume.
    fake.state.lock().failing = false;
    at_ten_a_second(&limiter, &clock, 30).await;
    let waits = at_ten_a_second(&limiter, &clock, 100).await;
    assert!(waits.iter().all(Duration::is_zero), "{waits:?}");
}
