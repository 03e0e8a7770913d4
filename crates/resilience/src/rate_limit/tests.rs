use std::sync::atomic::{AtomicI64, Ordering};

use proptest::prelude::*;

use super::*;

const CFG: BucketConfig = BucketConfig::DEFAULT;

#[test]
fn fresh_bucket_grants_and_leaves_capacity_minus_one() {
    let Take::Granted { next, .. } = CFG.take(None, 10_000) else {
        panic!("fresh bucket must grant");
    };
    assert_eq!(next.tokens, 19.0);
    assert_eq!(next.updated_at_ms, 10_000);
}

#[test]
fn twenty_takes_then_denied_with_one_second() {
    let mut state = None;
    for _ in 0..20 {
        match CFG.take(state.as_ref(), 0) {
            Take::Granted { next, .. } => state = Some(next),
            Take::Denied { .. } => panic!("denied before capacity"),
        }
    }
    assert_eq!(
        CFG.take(state.as_ref(), 0),
        Take::Denied { retry_after_s: 1 }
    );
}

#[test]
fn refill_is_lazy_fractional_and_capped() {
    let s = BucketState {
        tokens: 0.0,
        updated_at_ms: 1_000,
    };
    assert_eq!(CFG.refilled(Some(&s), 1_500), 0.5);
    assert_eq!(CFG.refilled(Some(&s), 1_000_000), 20.0);
    // A clock behind the writer's refills nothing and never goes negative.
    assert_eq!(CFG.refilled(Some(&s), 0), 0.0);
}

#[test]
fn retry_after_rounds_up_whole_seconds() {
    let slow = BucketConfig::try_new(5.0, 0.25).unwrap();
    assert_eq!(slow.retry_after_s(0.0), 4);
    assert_eq!(slow.retry_after_s(0.9), 1);
    assert_eq!(CFG.retry_after_s(0.999_999), 1);
    let s = BucketState {
        tokens: 0.2,
        updated_at_ms: 0,
    };
    assert_eq!(slow.take(Some(&s), 0), Take::Denied { retry_after_s: 4 });
}

#[test]
fn same_millisecond_writes_still_change_the_version() {
    let s = BucketState {
        tokens: 5.0,
        updated_at_ms: 2_000,
    };
    let Take::Granted { next, .. } = CFG.take(Some(&s), 2_000) else {
        panic!("must grant");
    };
    assert_eq!(next.updated_at_ms, 2_001);
    let Take::Granted { next, .. } = CFG.take(Some(&s), 1_500) else {
        panic!("must grant");
    };
    assert_eq!(next.updated_at_ms, 2_001);
}

#[test]
fn invalid_settings_are_refused() {
    assert_eq!(
        BucketConfig::try_new(0.5, 1.0),
        Err(InvalidBucket::Capacity)
    );
    assert_eq!(
        BucketConfig::try_new(f64::NAN, 1.0),
        Err(InvalidBucket::Capacity)
    );
    assert_eq!(BucketConfig::try_new(20.0, 0.0), Err(InvalidBucket::Rate));
    assert_eq!(
        BucketConfig::try_new(20.0, f64::INFINITY),
        Err(InvalidBucket::Rate)
    );
}

#[test]
fn expires_one_hour_after_last_use() {
    assert_eq!(bucket_expires_at(1_700_000_000_999), 1_700_003_600);
}

#[test]
fn decision_labels_match_spec() {
    assert_eq!(RateDecision::Allowed.label(), "allowed");
    assert_eq!(
        RateDecision::Limited { retry_after_s: 1 }.label(),
        "limited"
    );
    assert_eq!(RateDecision::FailOpen.label(), "fail_open");
    assert!(RateDecision::FailOpen.admits());
    assert!(!RateDecision::Limited { retry_after_s: 1 }.admits());
}

static NOW: AtomicI64 = AtomicI64::new(0);

fn fake_now() -> i64 {
    NOW.load(Ordering::SeqCst)
}

#[tokio::test]
async fn local_limiter_limits_per_client_and_refills() {
    let limiter = LocalRateLimiter::new(BucketConfig::try_new(2.0, 1.0).unwrap(), fake_now);
    NOW.store(50_000, Ordering::SeqCst);
    assert_eq!(
        limiter.check(Bucket::client("a"), 1).await,
        RateDecision::Allowed
    );
    assert_eq!(
        limiter.check(Bucket::client("a"), 1).await,
        RateDecision::Allowed
    );
    assert_eq!(
        limiter.check(Bucket::client("a"), 1).await,
        RateDecision::Limited { retry_after_s: 1 }
    );
    assert_eq!(
        limiter.check(Bucket::client("b"), 1).await,
        RateDecision::Allowed
    );
    // The second take bumped updated_at to 50_001 (version always moves): one token at 51_001.
    NOW.store(51_001, Ordering::SeqCst);
    assert_eq!(
        limiter.check(Bucket::client("a"), 1).await,
        RateDecision::Allowed
    );
}

#[tokio::test]
async fn a_users_bucket_is_not_the_client_of_the_same_id() {
    let limiter = LocalRateLimiter::new(BucketConfig::try_new(1.0, 0.001).unwrap(), || 0);
    assert_eq!(
        limiter.check(Bucket::client("a"), 1).await,
        RateDecision::Allowed
    );
    assert_eq!(
        limiter.check(Bucket::user("a"), 1).await,
        RateDecision::Allowed
    );
    assert!(!limiter.check(Bucket::user("a"), 1).await.admits());
    assert!(!limiter.check(Bucket::client("a"), 1).await.admits());
}

#[test]
fn a_grant_takes_up_to_the_want_never_more_than_the_bucket_holds() {
    let s = BucketState {
        tokens: 3.7,
        updated_at_ms: 0,
    };
    let Take::Granted { next, granted } = CFG.grant(Some(&s), 0, 1, 5) else {
        panic!("must grant");
    };
    assert_eq!(granted, 3, "whole tokens the bucket holds");
    assert!((next.tokens - 0.7).abs() < 1e-9);
    let Take::Granted { granted, .. } = CFG.grant(Some(&s), 0, 2, 1) else {
        panic!("must grant");
    };
    assert_eq!(granted, 2, "never less than the need");
    let Take::Granted { next, granted } = CFG.grant(None, 7, 1, 5) else {
        panic!("must grant");
    };
    assert_eq!((granted, next.tokens), (5, 15.0));
}

#[test]
fn a_cost_the_bucket_cannot_cover_waits_until_it_can() {
    let s = BucketState {
        tokens: 1.5,
        updated_at_ms: 0,
    };
    assert_eq!(
        CFG.grant(Some(&s), 0, 4, 4),
        Take::Denied { retry_after_s: 3 }
    );
    assert!(matches!(
        CFG.grant(Some(&s), 2_500, 4, 4),
        Take::Granted { granted: 4, .. }
    ));
    assert_eq!(CFG.retry_after_for(0.0, 5), 5);
    assert_eq!(CFG.retry_after_for(4.5, 5), 1);
}

#[tokio::test]
async fn local_limiter_spends_the_cost() {
    let limiter = LocalRateLimiter::new(BucketConfig::try_new(5.0, 1.0).unwrap(), || 0);
    assert_eq!(
        limiter.check(Bucket::client("a"), 3).await,
        RateDecision::Allowed
    );
    assert_eq!(
        limiter.check(Bucket::client("a"), 3).await,
        RateDecision::Limited { retry_after_s: 1 }
    );
    assert_eq!(
        limiter.check(Bucket::client("a"), 2).await,
        RateDecision::Allowed
    );
}

proptest! {
    /// Over any schedule of calls, grants never exceed capacity + rate × elapsed.
    #[test]
    fn grants_bounded_by_capacity_plus_refill(gaps in proptest::collection::vec(0i64..700, 1..300)) {
        let mut state = None;
        let mut now = 0i64;
        let mut granted = 0u64;
        for gap in gaps {
            now += gap;
            match CFG.take(state.as_ref(), now) {
                Take::Granted { next, .. } => {
                    prop_assert!(next.tokens >= 0.0);
                    state = Some(next);
                    granted += 1;
                }
                Take::Denied { retry_after_s } => prop_assert!(retry_after_s >= 1),
            }
        }
        let bound = CFG.capacity() + CFG.per_sec() * now as f64 / 1000.0;
        prop_assert!(granted as f64 <= bound + 1e-9, "granted {granted} > {bound}");
    }

    /// Grants of any size never exceed capacity + rate × elapsed, and each is within bounds.
    #[test]
    fn leases_bounded_by_capacity_plus_refill(steps in proptest::collection::vec((0i64..3_000, 1u32..4, 1u32..8), 1..200)) {
        let mut state = None;
        let mut now = 0i64;
        let mut granted_total = 0u64;
        for (gap, need, want) in steps {
            now += gap;
            match CFG.grant(state.as_ref(), now, need, want) {
                Take::Granted { next, granted } => {
                    prop_assert!(granted >= need && granted <= want.max(need));
                    prop_assert!(next.tokens >= 0.0);
                    state = Some(next);
                    granted_total += u64::from(granted);
                }
                Take::Denied { retry_after_s } => prop_assert!(retry_after_s >= 1),
            }
        }
        let bound = CFG.capacity() + CFG.per_sec() * now as f64 / 1000.0;
        prop_assert!(granted_total as f64 <= bound + 1e-9, "granted {granted_total} > {bound}");
    }

    /// A denial's retry_after is enough: after it, the next take is granted.
    #[test]
    fn retry_after_is_sufficient(tokens in 0.0f64..1.0, rate in 0.05f64..10.0) {
        let cfg = BucketConfig::try_new(20.0, rate).unwrap();
        let s = BucketState { tokens, updated_at_ms: 0 };
        let Take::Denied { retry_after_s } = cfg.take(Some(&s), 0) else {
            return Err(TestCaseError::fail("must deny below one token"));
        };
        let later = retry_after_s as i64 * 1000;
        let granted = matches!(cfg.take(Some(&s), later), Take::Granted { .. });
        prop_assert!(granted, "still denied after retry_after");
    }
}
