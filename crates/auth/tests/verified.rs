//! Verified tokens are remembered (issue 16): the same token again skips the signature check,
//! but never its key's presence in the JWKS (expiry: the unit tests of `verified`).

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use kosha_auth::AuthError;

/// A JWKS that names `keys().kid` but holds `other_keys()`' public key: every signature made
/// with `keys()` fails against it.
fn substituted_jwks() -> String {
    other_keys()
        .jwks_json
        .replace(&other_keys().kid, &keys().kid)
}

/// Lets the background JWKS refresh that a stale look-up starts complete.
async fn refresh_after_staleness(verifier: &kosha_auth::Verifier, token: &str) {
    tokio::time::advance(Duration::from_secs(11 * 60)).await;
    let _ = verifier.verify(Some(token)).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
}

#[tokio::test(start_paused = true)]
async fn a_remembered_token_is_not_verified_again_but_a_new_one_is() {
    let (verifier, fake) = serving_verifier();
    let remembered = bearer(&valid_token());
    let principal = verifier.verify(Some(&remembered)).await.unwrap();
    // The key under the same kid changes: a signature check now fails for every token.
    fake.set_body(&substituted_jwks());
    refresh_after_staleness(&verifier, &remembered).await;
    assert_eq!(fake.calls(), 2, "the JWKS was fetched again");

    assert_eq!(verifier.verify(Some(&remembered)).await, Ok(principal));
    let mut other = claims();
    other["jti"] = "another-token".into();
    assert_eq!(
        verifier.verify(Some(&bearer(&sign(&other)))).await,
        Err(AuthError::InvalidToken),
        "a token not seen before is verified against the current key"
    );
}

#[tokio::test(start_paused = true)]
async fn a_remembered_token_is_refused_once_its_key_leaves_the_jwks() {
    let (verifier, fake) = serving_verifier();
    let token = bearer(&valid_token());
    assert!(verifier.verify(Some(&token)).await.is_ok());
    fake.set_body(&other_keys().jwks_json);
    refresh_after_staleness(&verifier, &token).await;
    assert_eq!(
        verifier.verify(Some(&token)).await,
        Err(AuthError::InvalidToken)
    );
}
