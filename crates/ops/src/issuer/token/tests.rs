use super::*;

const FORM: Option<&str> = Some("application/x-www-form-urlencoded");

fn clients() -> Clients {
    Clients::parse(
        r#"{"clients": [
            {"client_id": "agent", "client_secret": "s+1", "scopes": ["kosha/agent", "kosha/mcp"]},
            {"client_id": "none", "client_secret": "s2", "scopes": []}
        ]}"#,
    )
    .unwrap()
}

fn basic_header(id: &str, secret: &str) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let raw = format!("{}:{}", enc(id), enc(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

fn granted(result: Result<Decided<'_>, TokenError>) -> Vec<String> {
    match result.unwrap() {
        Decided::Machine(grant) => grant.scopes,
        Decided::Code(code) => panic!("not a client-credentials grant: {code:?}"),
    }
}

#[test]
fn basic_auth_without_scope_grants_every_allowed_scope() {
    let clients = clients();
    let auth = basic_header("agent", "s+1");
    let grant = decide(
        &clients,
        Some(&auth),
        FORM,
        b"grant_type=client_credentials",
    );
    assert_eq!(granted(grant), ["kosha/agent", "kosha/mcp"]);
}

#[test]
fn posted_credentials_and_a_scope_subset() {
    let clients = clients();
    let body =
        b"grant_type=client_credentials&client_id=agent&client_secret=s%2B1&scope=kosha%2Fagent";
    let grant = decide(&clients, None, FORM, body);
    assert_eq!(granted(grant), ["kosha/agent"]);
}

#[test]
fn a_scope_not_allowed_is_invalid_scope_and_a_client_without_scopes_gets_none() {
    let clients = clients();
    let auth = basic_header("agent", "s+1");
    let body = b"grant_type=client_credentials&scope=kosha/agent&resource=http%3A%2F%2Fx%2Fmcp";
    assert_eq!(
        granted(decide(&clients, Some(&auth), FORM, body)),
        ["kosha/agent"]
    );
    // Issue 44: one scope too many is refused as Cognito refuses it, not silently dropped.
    for body in [
        &b"grant_type=client_credentials&scope=kosha/agent+kosha/operator"[..],
        b"grant_type=client_credentials&scope=kosha/operator",
    ] {
        assert_eq!(
            decide(&clients, Some(&auth), FORM, body).unwrap_err(),
            TokenError::InvalidScope
        );
    }
    // A client with no scopes gets no token.
    let auth = basic_header("none", "s2");
    let body = b"grant_type=client_credentials";
    assert_eq!(
        decide(&clients, Some(&auth), FORM, body).unwrap_err(),
        TokenError::InvalidScope
    );
}

#[test]
fn basic_auth_as_one_client_naming_another_in_the_body_is_invalid_request() {
    let clients = clients();
    let auth = basic_header("agent", "s+1");
    let body = b"grant_type=client_credentials&client_id=none";
    assert_eq!(
        decide(&clients, Some(&auth), FORM, body).unwrap_err(),
        TokenError::InvalidRequest("client_id names another client than the authentication")
    );
    // Naming the same client is allowed.
    let body = b"grant_type=client_credentials&client_id=agent";
    assert_eq!(
        granted(decide(&clients, Some(&auth), FORM, body)),
        ["kosha/agent", "kosha/mcp"]
    );
}

#[test]
fn an_authorization_code_request_is_checked_for_redemption() {
    let clients = clients();
    let body = b"grant_type=authorization_code&code=c1&client_id=kosha-dev-mcp\
                 &redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&code_verifier=v";
    let Decided::Code(code) = decide(&clients, None, FORM, body).unwrap() else {
        panic!("not a code redemption");
    };
    assert_eq!(
        code,
        CodeRedemption {
            code: "c1".into(),
            client_id: "kosha-dev-mcp".into(),
            redirect_uri: "http://127.0.0.1:9/cb".into(),
            code_verifier: "v".into(),
        }
    );
    // The public client sends no secret; a request without the verifier is malformed.
    let auth = basic_header("agent", "s+1");
    assert_eq!(
        decide(&clients, Some(&auth), FORM, body).unwrap_err(),
        TokenError::InvalidClient
    );
    let body = b"grant_type=authorization_code&code=c1&client_id=kosha-dev-mcp&redirect_uri=x";
    assert_eq!(
        decide(&clients, None, FORM, body).unwrap_err(),
        TokenError::InvalidRequest("code_verifier is required")
    );
}

#[test]
fn client_authentication_failures_are_invalid_client() {
    let clients = clients();
    let body = b"grant_type=client_credentials";
    for auth in [
        Some(basic_header("agent", "wrong")),
        Some(basic_header("nobody", "s+1")),
        Some("Bearer abc".to_owned()),
        Some("Basic !!!".to_owned()),
        None,
    ] {
        let err = decide(&clients, auth.as_deref(), FORM, body).unwrap_err();
        assert_eq!(err, TokenError::InvalidClient, "{auth:?}");
        assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
    }
}

#[test]
fn malformed_requests_are_refused() {
    let clients = clients();
    let auth = basic_header("agent", "s+1");
    let cases: [(Option<&str>, &[u8], TokenError); 5] = [
        (
            Some("application/json"),
            b"{}",
            TokenError::InvalidRequest("the body must be application/x-www-form-urlencoded"),
        ),
        (
            FORM,
            b"scope=kosha/agent",
            TokenError::InvalidRequest("grant_type is required"),
        ),
        (
            FORM,
            b"grant_type=password",
            TokenError::UnsupportedGrantType,
        ),
        (
            FORM,
            b"grant_type=client_credentials&grant_type=client_credentials",
            TokenError::InvalidRequest("a parameter is repeated"),
        ),
        (
            FORM,
            b"grant_type=client_credentials&client_id=agent&client_secret=s%2B1",
            TokenError::InvalidRequest("use one client authentication method"),
        ),
    ];
    for (content_type, body, want) in cases {
        let err = decide(&clients, Some(&auth), content_type, body).unwrap_err();
        assert_eq!(err, want);
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
    }
    // The content type's parameters do not matter.
    let form = Some("Application/X-WWW-Form-Urlencoded; charset=UTF-8");
    assert!(
        decide(
            &clients,
            Some(&auth),
            form,
            b"grant_type=client_credentials"
        )
        .is_ok()
    );
}
