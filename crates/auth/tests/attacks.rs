//! The attack matrix of issue 5: each case its own test. Every rejection is a 401/403-class
//! `AuthError`, never a panic.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use kosha_auth::{AuthError, MAX_TOKEN_BYTES, Role};

async fn verify_with_serving(
    header: Option<&str>,
) -> (Result<kosha_auth::Principal, AuthError>, usize) {
    let (verifier, fake) = serving_verifier();
    let result = verifier.verify(header).await;
    (result, fake.calls())
}

#[tokio::test]
async fn valid_agent_token_gives_a_principal() {
    let (result, _) = verify_with_serving(Some(&bearer(&valid_token()))).await;
    let principal = result.unwrap();
    assert_eq!(principal.client_id, CLIENT);
    assert_eq!(principal.subject, CLIENT);
    assert_eq!(principal.roles, vec![Role::Agent]);
    assert_eq!(
        principal.scopes,
        vec!["openid".to_owned(), "kosha/agent".to_owned()]
    );
}

#[tokio::test]
async fn both_groups_give_both_roles_and_unknown_groups_are_ignored() {
    let mut claims = claims();
    claims["cognito:groups"] = serde_json::json!(["admins", "operator", "agent"]);
    let (result, _) = verify_with_serving(Some(&bearer(&sign(&claims)))).await;
    assert_eq!(result.unwrap().roles, vec![Role::Agent, Role::Operator]);
}

#[tokio::test]
async fn no_header_is_missing() {
    let (result, calls) = verify_with_serving(None).await;
    assert_eq!(result, Err(AuthError::Missing));
    assert_eq!(calls, 0);
}

#[tokio::test]
async fn non_bearer_scheme_is_missing() {
    let (result, calls) = verify_with_serving(Some("Basic YWdlbnQ6c2VjcmV0")).await;
    assert_eq!(result, Err(AuthError::Missing));
    assert_eq!(calls, 0);
}

#[tokio::test]
async fn lower_case_bearer_scheme_is_accepted() {
    let (result, _) = verify_with_serving(Some(&format!("bearer {}", valid_token()))).await;
    assert!(result.is_ok());
}

#[tokio::test]
async fn garbage_is_invalid_token() {
    for garbage in [
        "Bearer garbage",
        "Bearer a.b.c",
        "Bearer ....",
        "Bearer \u{1F600}.x.y",
        "Bearer ",
    ] {
        let (result, _) = verify_with_serving(Some(garbage)).await;
        assert_eq!(result, Err(AuthError::InvalidToken), "{garbage:?}");
    }
}

#[tokio::test]
async fn alg_none_is_refused_before_key_lookup() {
    let header = b64(format!(r#"{{"alg":"none","kid":"{}"}}"#, keys().kid).as_bytes());
    let payload = b64(claims().to_string().as_bytes());
    for token in [
        format!("{header}.{payload}."),
        format!("{header}.{payload}.AAAA"),
    ] {
        let (result, calls) = verify_with_serving(Some(&bearer(&token))).await;
        assert_eq!(result, Err(AuthError::InvalidToken));
        assert_eq!(calls, 0, "a key was looked up for alg none");
    }
}

#[tokio::test]
async fn hs256_with_the_public_key_as_secret_is_refused_before_key_lookup() {
    // Key confusion: an attacker HMACs with the (public) RSA key material, hoping the verifier
    // uses the RSA key as an HMAC secret.
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(keys().kid.clone());
    for secret in [keys().jwks_json.as_bytes(), keys().kid.as_bytes()] {
        let key = EncodingKey::from_secret(secret).unwrap();
        let token = jsonwebtoken::encode(&header, &claims(), &key).unwrap();
        let (result, calls) = verify_with_serving(Some(&bearer(&token))).await;
        assert_eq!(result, Err(AuthError::InvalidToken));
        assert_eq!(calls, 0, "a key was looked up for HS256");
    }
}

#[tokio::test]
async fn other_rsa_algorithms_are_refused() {
    let mut header = Header::new(Algorithm::PS256);
    header.kid = Some(keys().kid.clone());
    let key = EncodingKey::from_rsa_pem(keys().private_pem.as_bytes()).unwrap();
    let token = jsonwebtoken::encode(&header, &claims(), &key).unwrap();
    let (result, calls) = verify_with_serving(Some(&bearer(&token))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
    assert_eq!(calls, 0);
}

#[tokio::test]
async fn expired_token_is_refused() {
    let mut claims = claims();
    claims["exp"] = (now() - 3600).into();
    let (result, _) = verify_with_serving(Some(&bearer(&sign(&claims)))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}

#[tokio::test]
async fn expiry_within_the_leeway_is_accepted() {
    let mut claims = claims();
    claims["exp"] = (now() - 20).into();
    let (result, _) = verify_with_serving(Some(&bearer(&sign(&claims)))).await;
    assert!(result.is_ok());
}

#[tokio::test]
async fn token_without_exp_is_refused() {
    let mut claims = claims();
    claims.as_object_mut().unwrap().remove("exp");
    let (result, _) = verify_with_serving(Some(&bearer(&sign(&claims)))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}

#[tokio::test]
async fn nbf_in_the_future_is_refused() {
    let mut claims = claims();
    claims["nbf"] = (now() + 3600).into();
    let (result, _) = verify_with_serving(Some(&bearer(&sign(&claims)))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}

#[tokio::test]
async fn wrong_issuer_is_refused() {
    let mut claims = claims();
    claims["iss"] = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Other".into();
    let (result, _) = verify_with_serving(Some(&bearer(&sign(&claims)))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}

#[tokio::test]
async fn id_token_is_refused() {
    let mut claims = claims();
    claims["token_use"] = "id".into();
    let (result, _) = verify_with_serving(Some(&bearer(&sign(&claims)))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}

#[tokio::test]
async fn client_not_allowed_is_refused() {
    let mut claims = claims();
    claims["client_id"] = "someone-else".into();
    let (result, _) = verify_with_serving(Some(&bearer(&sign(&claims)))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}

#[tokio::test]
async fn altered_claims_under_a_valid_signature_are_refused() {
    let token = valid_token();
    let parts: Vec<&str> = token.split('.').collect();
    let mut claims = claims();
    claims["cognito:groups"] = serde_json::json!(["agent", "operator"]);
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        b64(claims.to_string().as_bytes()),
        parts[2]
    );
    let (result, _) = verify_with_serving(Some(&bearer(&forged))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}

#[tokio::test]
async fn signature_by_another_key_under_our_kid_is_refused() {
    let token =
        kosha_auth::dev::sign_claims(&other_keys().private_pem, &keys().kid, &claims()).unwrap();
    let (result, _) = verify_with_serving(Some(&bearer(&token))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}

#[tokio::test]
async fn missing_groups_is_no_role() {
    let mut claims = claims();
    claims.as_object_mut().unwrap().remove("cognito:groups");
    let (result, _) = verify_with_serving(Some(&bearer(&sign(&claims)))).await;
    assert_eq!(result, Err(AuthError::NoRole));
}

#[tokio::test]
async fn only_unknown_groups_is_no_role() {
    let mut claims = claims();
    claims["cognito:groups"] = serde_json::json!(["admins", "Agent"]);
    let (result, _) = verify_with_serving(Some(&bearer(&sign(&claims)))).await;
    assert_eq!(result, Err(AuthError::NoRole));
}

#[tokio::test]
async fn oversized_token_is_refused_before_parsing() {
    let mut claims = claims();
    claims["pad"] = "x".repeat(MAX_TOKEN_BYTES).into();
    let token = sign(&claims);
    assert!(token.len() > MAX_TOKEN_BYTES);
    let (result, calls) = verify_with_serving(Some(&bearer(&token))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
    assert_eq!(calls, 0, "an oversized token reached key lookup");
}

#[tokio::test]
async fn token_without_kid_is_refused() {
    let key = EncodingKey::from_rsa_pem(keys().private_pem.as_bytes()).unwrap();
    let token = jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims(), &key).unwrap();
    let (result, calls) = verify_with_serving(Some(&bearer(&token))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
    assert_eq!(calls, 0);
}

#[tokio::test(start_paused = true)]
async fn jwks_down_with_warm_cache_still_accepts() {
    let (verifier, fake) = serving_verifier();
    let token = bearer(&valid_token());
    assert!(verifier.verify(Some(&token)).await.is_ok());
    fake.set_down();
    tokio::time::advance(Duration::from_secs(30 * 60)).await;
    assert!(verifier.verify(Some(&token)).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn jwks_down_with_cold_cache_is_invalid_token() {
    let fake = FakeJwks::down();
    let verifier = verifier(fake.clone());
    let result = verifier.verify(Some(&bearer(&valid_token()))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
    assert_eq!(fake.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn jwks_serving_non_json_is_invalid_token() {
    let fake = FakeJwks::serving("<html>503</html>");
    let result = verifier(fake).verify(Some(&bearer(&valid_token()))).await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}

fn headers(values: &[&[u8]]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for value in values {
        map.append(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_bytes(value).unwrap(),
        );
    }
    map
}

#[tokio::test]
async fn verify_headers_reads_one_authorization_header() {
    let (verifier, _) = serving_verifier();
    let token = bearer(&valid_token());
    assert!(
        verifier
            .verify_headers(&headers(&[token.as_bytes()]))
            .await
            .is_ok()
    );
    assert_eq!(
        verifier.verify_headers(&headers(&[])).await,
        Err(AuthError::Missing)
    );
}

#[tokio::test]
async fn verify_headers_refuses_two_authorization_headers() {
    let (verifier, _) = serving_verifier();
    let token = bearer(&valid_token());
    let result = verifier
        .verify_headers(&headers(&[token.as_bytes(), token.as_bytes()]))
        .await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}

#[tokio::test]
async fn verify_headers_refuses_non_ascii_values() {
    let (verifier, _) = serving_verifier();
    let result = verifier
        .verify_headers(&headers(&[b"Bearer \xff.\xfe.\xfd"]))
        .await;
    assert_eq!(result, Err(AuthError::InvalidToken));
}
