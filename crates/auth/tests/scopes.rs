//! Roles from resource-server scopes (SPEC §5, issue #31): a Cognito client-credentials token
//! carries `scope` and no `cognito:groups`; `<prefix>/agent` and `<prefix>/operator` grant
//! the roles, a token naming neither a known group nor such a scope is 403 (`NoRole`).

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use kosha_auth::dev::MintClaims;
use kosha_auth::jwks::CacheTiming;
use kosha_auth::{AuthError, Principal, Role, Verifier};

/// A client-credentials token for CLIENT with `scopes`, signed with `keys()`.
fn machine_token(scopes: &[&str]) -> String {
    let claims = MintClaims::client_credentials(ISSUER, CLIENT, scopes)
        .to_json(now())
        .unwrap();
    sign(&claims)
}

async fn verify(verifier: &Verifier, token: &str) -> Result<Principal, AuthError> {
    verifier.verify(Some(&bearer(token))).await
}

#[tokio::test]
async fn agent_scope_alone_gives_the_agent_role() {
    let (verifier, _) = serving_verifier();
    let principal = verify(&verifier, &machine_token(&["kosha/agent"]))
        .await
        .unwrap();
    assert_eq!(principal.roles, vec![Role::Agent]);
    assert_eq!(principal.client_id, CLIENT);
    assert_eq!(principal.username, None);
    assert_eq!(principal.scopes, vec!["kosha/agent".to_owned()]);
}

#[tokio::test]
async fn operator_scope_alone_gives_the_operator_role() {
    let (verifier, _) = serving_verifier();
    let principal = verify(&verifier, &machine_token(&["kosha/operator"]))
        .await
        .unwrap();
    assert_eq!(principal.roles, vec![Role::Operator]);
}

#[tokio::test]
async fn both_scopes_give_both_roles_and_other_scopes_are_ignored() {
    let (verifier, _) = serving_verifier();
    let token = machine_token(&["kosha/mcp", "kosha/operator", "other/agent", "kosha/agent"]);
    let principal = verify(&verifier, &token).await.unwrap();
    assert_eq!(principal.roles, vec![Role::Agent, Role::Operator]);
}

#[tokio::test]
async fn a_scope_naming_no_role_and_no_groups_is_no_role() {
    let (verifier, _) = serving_verifier();
    for scopes in [&["kosha/mcp"][..], &["kosha/Agent", "agent"], &[]] {
        let result = verify(&verifier, &machine_token(scopes)).await;
        assert_eq!(result, Err(AuthError::NoRole), "{scopes:?}");
        assert_eq!(AuthError::NoRole.status(), http::StatusCode::FORBIDDEN);
    }
}

#[tokio::test]
async fn groups_and_scopes_add_up() {
    let (verifier, _) = serving_verifier();
    let mut claims = claims(); // group agent
    claims["scope"] = serde_json::json!("kosha/operator");
    let principal = verify(&verifier, &sign(&claims)).await.unwrap();
    assert_eq!(principal.roles, vec![Role::Agent, Role::Operator]);
}

#[tokio::test]
async fn the_prefix_is_the_configured_one() {
    let config = config().with_scope_prefix("acme").unwrap();
    let fake = FakeJwks::serving(&keys().jwks_json);
    let verifier = Verifier::with_fetcher(config, fake, CacheTiming::default());
    let principal = verify(&verifier, &machine_token(&["acme/operator"]))
        .await
        .unwrap();
    assert_eq!(principal.roles, vec![Role::Operator]);
    // The default prefix's scopes mean nothing under another one.
    let result = verify(&verifier, &machine_token(&["kosha/agent"])).await;
    assert_eq!(result, Err(AuthError::NoRole));
}

#[tokio::test]
async fn a_remembered_scope_token_keeps_its_roles() {
    let (verifier, fake) = serving_verifier();
    let token = machine_token(&["kosha/agent"]);
    let first = verify(&verifier, &token).await.unwrap();
    let again = verify(&verifier, &token).await.unwrap();
    assert_eq!(first, again);
    assert_eq!(fake.calls(), 1);
}
