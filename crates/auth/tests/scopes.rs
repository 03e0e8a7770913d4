//! Roles from resource-server scopes (SPEC §5, issue #31): a Cognito client-credentials token
//! carries `scope` and no `cognito:groups`; `<prefix>/agent` and `<prefix>/operator` grant
//! the roles, a machine token naming neither is 403 `insufficient_scope`. Never the union
//! (issue 44): a user's token takes its roles from its groups alone, a machine client's from
//! its scopes alone, each mixed token below.

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
async fn a_machine_token_whose_scopes_name_no_role_is_insufficient_scope() {
    let (verifier, _) = serving_verifier();
    for scopes in [&["kosha/mcp"][..], &["kosha/Agent", "agent"], &[]] {
        let result = verify(&verifier, &machine_token(scopes)).await;
        assert_eq!(result, Err(AuthError::InsufficientScope), "{scopes:?}");
        assert_eq!(
            AuthError::InsufficientScope.status(),
            http::StatusCode::FORBIDDEN
        );
    }
}

/// The issue's case: a user in the group `agent` whose token carries `kosha/operator` (an app
/// client lets every user ask for every scope it allows) is an agent, not an operator.
#[tokio::test]
async fn a_user_in_the_agent_group_with_the_operator_scope_is_an_agent_only() {
    let (verifier, _) = serving_verifier();
    let mut claims = claims(); // username, group agent
    claims["scope"] = serde_json::json!("openid kosha/operator");
    let principal = verify(&verifier, &sign(&claims)).await.unwrap();
    assert_eq!(principal.roles, vec![Role::Agent]);
}

#[tokio::test]
async fn a_user_without_a_group_gets_no_role_from_its_scopes() {
    let (verifier, _) = serving_verifier();
    let mut claims = claims();
    claims.as_object_mut().unwrap().remove("cognito:groups");
    claims["scope"] = serde_json::json!("kosha/agent kosha/operator");
    let result = verify(&verifier, &sign(&claims)).await;
    assert_eq!(result, Err(AuthError::NoRole));
}

#[tokio::test]
async fn a_machine_token_with_groups_takes_its_roles_from_its_scopes_alone() {
    let (verifier, _) = serving_verifier();
    let mut claims = MintClaims::client_credentials(ISSUER, CLIENT, &["kosha/agent"])
        .to_json(now())
        .unwrap();
    claims["cognito:groups"] = serde_json::json!(["operator"]);
    let principal = verify(&verifier, &sign(&claims)).await.unwrap();
    assert_eq!(principal.roles, vec![Role::Agent]);
    claims["cognito:groups"] = serde_json::json!(["agent", "operator"]);
    claims["scope"] = serde_json::json!("kosha/mcp");
    let result = verify(&verifier, &sign(&claims)).await;
    assert_eq!(result, Err(AuthError::InsufficientScope));
}

/// No `username` and a `sub` other than the `client_id`: neither a user's token nor a
/// client-credentials one, so neither claim is trusted.
#[tokio::test]
async fn a_token_neither_a_users_nor_a_machines_has_no_role() {
    let (verifier, _) = serving_verifier();
    let mut claims = claims();
    claims.as_object_mut().unwrap().remove("username");
    claims["sub"] = serde_json::json!("5f1c0a52-someone");
    claims["scope"] = serde_json::json!("kosha/agent kosha/operator");
    let result = verify(&verifier, &sign(&claims)).await;
    assert_eq!(result, Err(AuthError::NoRole));
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
    assert_eq!(result, Err(AuthError::InsufficientScope));
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

/// SPEC §5a: a user's every group (not only those that grant a role) and the token's other
/// string claims (a Cognito custom attribute) reach the principal, for the policies; its
/// bookkeeping claims and non-string claims do not.
#[tokio::test]
async fn a_users_groups_and_other_string_claims_reach_the_principal() {
    let (verifier, _) = serving_verifier();
    let mut claims = MintClaims::user(
        ISSUER,
        CLIENT,
        "uuid-1",
        "alice@example.com",
        &[Role::Agent],
    )
    .to_json(now())
    .unwrap();
    claims["cognito:groups"] = serde_json::json!(["agent", "supervisor"]);
    claims["custom:branch"] = serde_json::json!("north");
    claims["custom:level"] = serde_json::json!(3);
    let principal = verify(&verifier, &sign(&claims)).await.unwrap();
    assert_eq!(principal.roles, vec![Role::Agent]);
    assert_eq!(principal.groups, ["agent", "supervisor"]);
    assert_eq!(
        principal.tags.get("custom:branch").map(String::as_str),
        Some("north")
    );
    assert!(!principal.tags.contains_key("custom:level"));
    for bookkeeping in Principal::TAGGED_EXCEPT {
        assert!(!principal.tags.contains_key(bookkeeping), "{bookkeeping}");
    }
}
