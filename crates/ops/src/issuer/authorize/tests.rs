use super::*;

const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

fn query(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut all = params(&[
        ("response_type", "code"),
        ("client_id", PUBLIC_CLIENT_ID),
        ("redirect_uri", "http://localhost:6274/oauth/callback"),
        ("state", "s"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
    ]);
    for (name, value) in extra {
        all.retain(|(n, _)| n != name);
        if !value.is_empty() {
            all.push(((*name).to_owned(), (*value).to_owned()));
        }
    }
    all
}

fn redirected_error(refusal: Refusal) -> String {
    let Refusal::Redirect(url) = refusal else {
        panic!("not a redirect: {refusal:?}");
    };
    assert!(url.query_pairs().any(|(n, v)| n == "state" && v == "s"));
    url.query_pairs()
        .find(|(n, _)| n == "error")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

#[test]
fn no_scope_asked_grants_every_scope_of_the_client() {
    let request = AuthorizationRequest::parse(&query(&[])).unwrap();
    assert_eq!(request.scopes, PUBLIC_SCOPES);
    let request = AuthorizationRequest::parse(&query(&[("scope", "kosha/operator")])).unwrap();
    assert_eq!(request.scopes, ["kosha/operator"]);
}

#[test]
fn an_unknown_client_or_a_redirect_off_loopback_is_refused_on_the_page() {
    for extra in [
        [("client_id", "other")],
        [("redirect_uri", "https://evil.example/cb")],
        [("redirect_uri", "http://127.0.0.1:9/cb#frag")],
        [("redirect_uri", "")],
    ] {
        let refusal = AuthorizationRequest::parse(&query(&extra)).unwrap_err();
        assert!(
            matches!(refusal, Refusal::Page(_)),
            "{extra:?}: {refusal:?}"
        );
    }
}

#[test]
fn pkce_s256_is_required() {
    for extra in [
        [("code_challenge_method", "plain")],
        [("code_challenge_method", "")],
        [("code_challenge", "")],
        [("code_challenge", "short")],
    ] {
        let refusal = AuthorizationRequest::parse(&query(&extra)).unwrap_err();
        assert_eq!(redirected_error(refusal), "invalid_request", "{extra:?}");
    }
}

#[test]
fn other_refusals_go_back_to_the_redirect_uri() {
    let refusal = AuthorizationRequest::parse(&query(&[("response_type", "token")])).unwrap_err();
    assert_eq!(redirected_error(refusal), "unsupported_response_type");
    let refusal =
        AuthorizationRequest::parse(&query(&[("scope", "openid kosha/admin")])).unwrap_err();
    assert_eq!(redirected_error(refusal), "invalid_scope");
}

#[test]
fn a_code_is_bound_to_its_verifier_and_redirect_uri_and_used_once() {
    let codes = Codes::default();
    let request = AuthorizationRequest::parse(&query(&[])).unwrap();
    let user = DEV_USERS[0];
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let redirect = "http://localhost:6274/oauth/callback";
    let code = codes.issue(request.clone(), user);
    assert_eq!(
        codes.redeem(
            &code,
            PUBLIC_CLIENT_ID,
            redirect,
            &verifier.replace('d', "x")
        ),
        Err(TokenError::InvalidGrant)
    );
    // The failed redemption spent it.
    assert_eq!(
        codes.redeem(&code, PUBLIC_CLIENT_ID, redirect, verifier),
        Err(TokenError::InvalidGrant)
    );
    let code = codes.issue(request, user);
    let login = codes
        .redeem(&code, PUBLIC_CLIENT_ID, redirect, verifier)
        .unwrap();
    assert_eq!(login.user, user);
    assert_eq!(login.scopes, PUBLIC_SCOPES);
}

#[tokio::test(start_paused = true)]
async fn a_code_expires_after_five_minutes() {
    let codes = Codes::default();
    let request = AuthorizationRequest::parse(&query(&[])).unwrap();
    let code = codes.issue(request, DEV_USERS[0]);
    tokio::time::advance(CODE_TTL).await;
    assert_eq!(
        codes.redeem(
            &code,
            PUBLIC_CLIENT_ID,
            "http://localhost:6274/oauth/callback",
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        ),
        Err(TokenError::InvalidGrant)
    );
}
