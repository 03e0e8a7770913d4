//! JWKS cache behaviour on tokio's paused clock (SPEC §5): 10 min fresh, 50 min grace,
//! refresh-ahead without blocking, at most one fetch per 30 s, single-flight.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use kosha_auth::AuthError;
use kosha_auth::dev;
use tokio::task::JoinSet;
use tokio::time::{Instant, advance};

const MIN: Duration = Duration::from_secs(60);

/// A token with the right key under a kid the JWKS does not list (yet).
fn unknown_kid_token() -> String {
    bearer(&dev::sign_claims(&keys().private_pem, "rotated-kid", &claims()).unwrap())
}

/// Lets spawned refresh-ahead tasks run to completion.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(5)).await;
}

async fn flood(
    verifier: &kosha_auth::Verifier,
    token: &str,
    n: usize,
) -> Vec<Result<kosha_auth::Principal, AuthError>> {
    let mut set = JoinSet::new();
    for _ in 0..n {
        let verifier = verifier.clone();
        let token = token.to_owned();
        set.spawn(async move { verifier.verify(Some(&token)).await });
    }
    set.join_all().await
}

#[tokio::test(start_paused = true)]
async fn fresh_keys_are_not_refetched() {
    let (verifier, fake) = serving_verifier();
    let token = bearer(&valid_token());
    for _ in 0..5 {
        assert!(verifier.verify(Some(&token)).await.is_ok());
        advance(MIN).await;
    }
    assert_eq!(fake.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn cold_cache_flood_shares_one_fetch() {
    let (verifier, fake) = serving_verifier();
    let results = flood(&verifier, &bearer(&valid_token()), 50).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(fake.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn unknown_kid_refreshes_at_most_once_per_30s_however_many_requests() {
    let (verifier, fake) = serving_verifier();
    assert!(verifier.verify(Some(&bearer(&valid_token()))).await.is_ok());
    assert_eq!(fake.calls(), 1);
    advance(Duration::from_secs(31)).await;

    let token = unknown_kid_token();
    let results = flood(&verifier, &token, 50).await;
    assert!(results.iter().all(|r| *r == Err(AuthError::InvalidToken)));
    assert_eq!(
        fake.calls(),
        2,
        "50 concurrent unknown kids made more than one fetch"
    );

    advance(Duration::from_secs(20)).await;
    let results = flood(&verifier, &token, 50).await;
    assert!(results.iter().all(|r| *r == Err(AuthError::InvalidToken)));
    assert_eq!(fake.calls(), 2, "a refresh within 30 s of the last");

    advance(Duration::from_secs(11)).await;
    assert_eq!(
        verifier.verify(Some(&token)).await,
        Err(AuthError::InvalidToken)
    );
    assert_eq!(fake.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn unknown_kid_right_after_a_fetch_does_not_refetch() {
    let (verifier, fake) = serving_verifier();
    assert!(verifier.verify(Some(&bearer(&valid_token()))).await.is_ok());
    assert_eq!(
        verifier.verify(Some(&unknown_kid_token())).await,
        Err(AuthError::InvalidToken)
    );
    assert_eq!(fake.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn rotated_key_is_picked_up_by_an_unknown_kid_refresh() {
    let (verifier, fake) = serving_verifier();
    assert!(verifier.verify(Some(&bearer(&valid_token()))).await.is_ok());
    let rotated = other_keys();
    fake.set_body(&rotated.jwks_json);
    advance(Duration::from_secs(31)).await;

    let new_token =
        bearer(&dev::sign_claims(&rotated.private_pem, &rotated.kid, &claims()).unwrap());
    assert!(verifier.verify(Some(&new_token)).await.is_ok());
    assert_eq!(fake.calls(), 2);
    // The old key left the JWKS, so tokens signed with it stop working.
    assert_eq!(
        verifier.verify(Some(&bearer(&valid_token()))).await,
        Err(AuthError::InvalidToken)
    );
}

#[tokio::test(start_paused = true)]
async fn stale_keys_serve_at_once_and_refresh_in_the_background() {
    let fake = FakeJwks::slow(&keys().jwks_json, Duration::from_secs(2));
    let verifier = verifier(fake.clone());
    let token = bearer(&valid_token());
    assert!(verifier.verify(Some(&token)).await.is_ok());
    advance(10 * MIN + Duration::from_secs(1)).await;

    let started = Instant::now();
    assert!(verifier.verify(Some(&token)).await.is_ok());
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "a stale-but-usable request waited for the refresh"
    );
    settle().await;
    assert_eq!(fake.calls(), 2);

    // The refresh made the keys fresh again: no fetch for the next 10 minutes.
    advance(9 * MIN).await;
    assert!(verifier.verify(Some(&token)).await.is_ok());
    settle().await;
    assert_eq!(fake.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn grace_serves_while_the_endpoint_is_down_then_ends_at_60_minutes() {
    let (verifier, fake) = serving_verifier();
    let token = bearer(&valid_token());
    assert!(verifier.verify(Some(&token)).await.is_ok());
    fake.set_down();

    advance(11 * MIN).await;
    assert!(verifier.verify(Some(&token)).await.is_ok());
    settle().await;
    assert_eq!(fake.calls(), 2, "stale keys started a refresh");

    // Requests during the grace do not hammer the down endpoint: one attempt per 30 s.
    for _ in 0..10 {
        assert!(verifier.verify(Some(&token)).await.is_ok());
    }
    settle().await;
    assert_eq!(fake.calls(), 2);

    advance(48 * MIN).await; // 59 min + a few s after the last good fetch
    assert!(verifier.verify(Some(&token)).await.is_ok());

    advance(MIN).await; // past 60 min
    assert_eq!(
        verifier.verify(Some(&token)).await,
        Err(AuthError::InvalidToken)
    );
}

#[tokio::test(start_paused = true)]
async fn keys_come_back_after_an_outage_past_grace() {
    let (verifier, fake) = serving_verifier();
    let token = bearer(&valid_token());
    assert!(verifier.verify(Some(&token)).await.is_ok());
    fake.set_down();
    advance(61 * MIN).await;
    assert_eq!(
        verifier.verify(Some(&token)).await,
        Err(AuthError::InvalidToken)
    );
    fake.set_body(&keys().jwks_json);
    advance(Duration::from_secs(31)).await;
    assert!(verifier.verify(Some(&token)).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn cold_cache_with_endpoint_down_retries_at_most_every_30s() {
    let fake = FakeJwks::down();
    let verifier = verifier(fake.clone());
    let token = bearer(&valid_token());
    for _ in 0..20 {
        assert_eq!(
            verifier.verify(Some(&token)).await,
            Err(AuthError::InvalidToken)
        );
    }
    assert_eq!(fake.calls(), 1);
    fake.set_body(&keys().jwks_json);
    advance(Duration::from_secs(30)).await;
    assert!(verifier.verify(Some(&token)).await.is_ok());
    assert_eq!(fake.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_key_set_without_usable_keys_keeps_the_cached_ones() {
    let (verifier, fake) = serving_verifier();
    let token = bearer(&valid_token());
    assert!(verifier.verify(Some(&token)).await.is_ok());
    fake.set_body(r#"{"keys":[{"kty":"oct","kid":"x","k":"c2VjcmV0"}]}"#);
    advance(11 * MIN).await;
    assert!(verifier.verify(Some(&token)).await.is_ok());
    settle().await;
    assert_eq!(fake.calls(), 2);
    advance(5 * MIN).await;
    assert!(verifier.verify(Some(&token)).await.is_ok());
}
