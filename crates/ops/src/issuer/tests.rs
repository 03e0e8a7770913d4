//! Tests of the local token issuer's routes (the parent module).

use super::*;
use base64::Engine;
use http_body_util::BodyExt;
use tower::ServiceExt;

const CLIENTS: &str = r#"{"clients": [
    {"client_id": "m2m-agent", "client_secret": "sa", "scopes": ["kosha/agent"]},
    {"client_id": "m2m-ops", "client_secret": "so", "scopes": ["kosha/operator"]}
]}"#;

struct Fixture {
    issuer: Arc<Issuer>,
    keys: dev::DevKeys,
    dir: PathBuf,
}

fn fixture(name: &str) -> Fixture {
    let keys = dev::generate().unwrap();
    let dir = std::env::temp_dir().join(format!("kosha-issuer-{name}-{}", std::process::id()));
    let (_, jwks_path) = dev::write_key_files(&dir, &keys).unwrap();
    let issuer = Issuer::new(
        "http://127.0.0.1:9999/kosha-dev/",
        keys.private_pem.clone(),
        jwks_path,
        Clients::parse(CLIENTS).unwrap(),
        Duration::from_secs(600),
    )
    .unwrap();
    Fixture {
        issuer: Arc::new(issuer),
        keys,
        dir,
    }
}

async fn send(
    issuer: &Arc<Issuer>,
    request: http::Request<String>,
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let response = router(Arc::clone(issuer))
        .oneshot(request.map(axum::body::Body::from))
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, headers, body)
}

/// The principal the gateway's verifier makes of `token`, accepting `client_id`.
async fn verified(f: &Fixture, client_id: &str, token: &str) -> kosha_auth::Principal {
    let jwks_url = format!("file://{}", f.dir.join(dev::JWKS_FILE).display());
    let config =
        kosha_auth::VerifierConfig::new(f.issuer.issuer(), Some(&jwks_url), [client_id], None)
            .unwrap();
    kosha_auth::Verifier::new(config, kosha_runtime::tls::http_client().unwrap())
        .verify(Some(&format!("Bearer {token}")))
        .await
        .unwrap()
}

/// The JSON body of `GET uri`, which must answer 200.
async fn json_ok(issuer: &Arc<Issuer>, uri: &str) -> serde_json::Value {
    let (status, _, body) = send(issuer, get(uri)).await;
    assert_eq!(status, StatusCode::OK, "{uri}");
    serde_json::from_slice(&body).unwrap()
}

fn get(uri: &str) -> http::Request<String> {
    http::Request::get(uri).body(String::new()).unwrap()
}

fn token_request(id: &str, secret: &str, body: &str) -> http::Request<String> {
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
    http::Request::post(TOKEN_PATH)
        .header(header::AUTHORIZATION, format!("Basic {basic}"))
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body.to_owned())
        .unwrap()
}

#[tokio::test]
async fn discovery_names_the_issuer_jwks_and_token_endpoint() {
    let f = fixture("discovery");
    let doc = json_ok(&f.issuer, "/kosha-dev/.well-known/openid-configuration").await;
    assert_eq!(doc["issuer"], "http://127.0.0.1:9999/kosha-dev");
    assert_eq!(
        doc["jwks_uri"],
        "http://127.0.0.1:9999/kosha-dev/.well-known/jwks.json"
    );
    assert_eq!(doc["token_endpoint"], "http://127.0.0.1:9999/oauth2/token");
    assert_eq!(
        doc["id_token_signing_alg_values_supported"],
        serde_json::json!(["RS256"])
    );
    assert_eq!(
        doc["token_endpoint_auth_methods_supported"],
        serde_json::json!(["client_secret_basic", "client_secret_post", "none"])
    );
    // Issue 44: the RFC 8414 document MCP clients try first, with the grants and PKCE.
    let rfc8414 = json_ok(
        &f.issuer,
        "/.well-known/oauth-authorization-server/kosha-dev",
    )
    .await;
    assert_eq!(rfc8414["issuer"], doc["issuer"]);
    assert_eq!(
        rfc8414["grant_types_supported"],
        serde_json::json!(["authorization_code", "client_credentials"])
    );
    assert_eq!(
        rfc8414["code_challenge_methods_supported"],
        serde_json::json!(["S256"])
    );
    assert_eq!(
        rfc8414["authorization_endpoint"],
        "http://127.0.0.1:9999/oauth2/authorize"
    );
}

/// Issue 44: every endpoint either document names is served (nothing advertised is a 404).
#[tokio::test]
async fn every_advertised_endpoint_is_served() {
    let f = fixture("advertised");
    for doc in [
        openid_configuration(&f.issuer),
        authorization_server(&f.issuer),
    ] {
        for (name, value) in doc.as_object().unwrap() {
            let Some(url) = value
                .as_str()
                .filter(|_| name.ends_with("_endpoint") || name == "jwks_uri")
            else {
                continue;
            };
            let path = url.strip_prefix("http://127.0.0.1:9999").unwrap();
            let request = match name.as_str() {
                "token_endpoint" => http::Request::post(path).body(String::new()).unwrap(),
                _ => get(path),
            };
            let (status, _, _) = send(&f.issuer, request).await;
            assert_ne!(status, StatusCode::NOT_FOUND, "{name}: {url}");
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{name}: {url}");
        }
    }
}

#[tokio::test]
async fn a_loopback_origin_gets_cors_and_another_does_not() {
    let f = fixture("cors");
    let preflight = |origin: &str| {
        http::Request::builder()
            .method(http::Method::OPTIONS)
            .uri(TOKEN_PATH)
            .header(header::ORIGIN, origin)
            .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
            .header(header::ACCESS_CONTROL_REQUEST_HEADERS, "content-type")
            .body(String::new())
            .unwrap()
    };
    let (_, headers, _) = send(&f.issuer, preflight("http://localhost:6274")).await;
    assert_eq!(
        headers[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "http://localhost:6274"
    );
    let (_, headers, _) = send(&f.issuer, preflight("https://evil.example")).await;
    assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));
}

#[tokio::test]
async fn jwks_is_the_key_file_and_its_absence_is_503() {
    let f = fixture("jwks");
    let (status, _, body) = send(&f.issuer, get("/kosha-dev/.well-known/jwks.json")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(String::from_utf8(body).unwrap(), f.keys.jwks_json);
    std::fs::remove_file(f.dir.join(dev::JWKS_FILE)).unwrap();
    let (status, _, _) = send(&f.issuer, get("/kosha-dev/.well-known/jwks.json")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn a_token_is_a_cognito_machine_token_the_verifier_accepts() {
    let f = fixture("token");
    let (status, headers, body) = send(
        &f.issuer,
        token_request(
            "m2m-agent",
            "sa",
            "grant_type=client_credentials&scope=kosha/agent",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["token_type"], "Bearer");
    assert_eq!(answer["expires_in"], 600);
    assert_eq!(answer["scope"], "kosha/agent");
    let token = answer["access_token"].as_str().unwrap();

    let principal = verified(&f, "m2m-agent", token).await;
    assert_eq!(principal.client_id, "m2m-agent");
    assert_eq!(principal.roles, vec![kosha_auth::Role::Agent]);
    assert_eq!(principal.scopes, vec!["kosha/agent".to_owned()]);

    // The claims Cognito puts in a client-credentials token, and no groups.
    let payload = token.split('.').nth(1).unwrap();
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["token_use"], "access");
    assert_eq!(claims["sub"], "m2m-agent");
    assert_eq!(claims["iss"], "http://127.0.0.1:9999/kosha-dev");
    assert!(claims.get("cognito:groups").is_none());
}

#[tokio::test]
async fn refusals_are_oauth_errors() {
    let f = fixture("refusals");
    let (status, headers, body) = send(
        &f.issuer,
        token_request("m2m-agent", "wrong", "grant_type=client_credentials"),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers.contains_key(header::WWW_AUTHENTICATE));
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["error"], "invalid_client");

    let (status, _, body) = send(
        &f.issuer,
        token_request(
            "m2m-ops",
            "so",
            "grant_type=client_credentials&scope=kosha/agent",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["error"], "invalid_scope");

    let big = format!(
        "grant_type=client_credentials&x={}",
        "a".repeat(MAX_BODY_BYTES)
    );
    let (status, _, _) = send(&f.issuer, token_request("m2m-ops", "so", &big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[test]
fn issuer_urls_are_checked() {
    let keys = dev::generate().unwrap();
    let make = |url: &str, ttl: u64| {
        Issuer::new(
            url,
            keys.private_pem.clone(),
            PathBuf::from("/nonexistent"),
            Clients::parse(CLIENTS).unwrap(),
            Duration::from_secs(ttl),
        )
    };
    assert_eq!(
        make("http://127.0.0.1:1/p", 1).unwrap().issuer(),
        "http://127.0.0.1:1/p"
    );
    for bad in [
        "ftp://x/p",
        "http://127.0.0.1:1/p?q=1",
        "not a url",
        "http://issuer.example.com/p",
    ] {
        assert!(make(bad, 1).is_err(), "{bad}");
    }
    assert!(make("http://127.0.0.1:1/p", 0).is_err());
}

/// RFC 7636 appendix B's verifier and its S256 challenge.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const REDIRECT: &str = "http://127.0.0.1:33418/callback";

fn query(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

fn authorization(scope: &str) -> Vec<(&'static str, String)> {
    vec![
        ("response_type", "code".to_owned()),
        ("client_id", "kosha-dev-mcp".to_owned()),
        ("redirect_uri", REDIRECT.to_owned()),
        ("state", "st-1".to_owned()),
        ("code_challenge", CHALLENGE.to_owned()),
        ("code_challenge_method", "S256".to_owned()),
        ("scope", scope.to_owned()),
        ("resource", "http://127.0.0.1:9/mcp".to_owned()),
    ]
}

fn form_post(path: &str, body: String) -> http::Request<String> {
    http::Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body)
        .unwrap()
}

/// Logs `username` in on the page and returns the redirect's `code` and `state`.
async fn log_in(issuer: &Arc<Issuer>, scope: &str, username: &str) -> (String, String) {
    let params = authorization(scope);
    let pairs: Vec<(&str, &str)> = params.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let (status, _, page) = send(issuer, get(&format!("{AUTHORIZE_PATH}?{}", query(&pairs)))).await;
    assert_eq!(status, StatusCode::OK);
    let page = String::from_utf8(page).unwrap();
    for user in ["agent", "operator", "tester"] {
        assert!(page.contains(&format!("value=\"{user}\"")), "{page}");
    }
    let mut posted = pairs.clone();
    posted.push(("username", username));
    let (status, headers, _) = send(issuer, form_post("/login", query(&posted))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let location = Url::parse(headers[header::LOCATION].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(REDIRECT), "{location}");
    let get = |name: &str| {
        location
            .query_pairs()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.into_owned())
            .unwrap()
    };
    (get("code"), get("state"))
}

fn redemption(code: &str, verifier: &str) -> http::Request<String> {
    form_post(
        TOKEN_PATH,
        query(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", "kosha-dev-mcp"),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
        ]),
    )
}

#[tokio::test]
async fn a_login_with_pkce_gives_the_users_token_once() {
    let f = fixture("code");
    let (code, state) = log_in(&f.issuer, "openid kosha/agent", "tester").await;
    assert_eq!(state, "st-1");
    let (status, _, body) = send(&f.issuer, redemption(&code, VERIFIER)).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["scope"], "openid kosha/agent");
    let token = answer["access_token"].as_str().unwrap();

    let principal = verified(&f, "kosha-dev-mcp", token).await;
    // The tester's groups give both roles, whatever the scope asked for.
    assert_eq!(
        principal.roles,
        vec![kosha_auth::Role::Agent, kosha_auth::Role::Operator]
    );
    assert_eq!(principal.username.as_deref(), Some("tester"));
    assert_eq!(principal.subject, "kosha-dev-user-tester");

    // A code is redeemed once.
    let (status, _, body) = send(&f.issuer, redemption(&code, VERIFIER)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["error"], "invalid_grant");
}

#[tokio::test]
async fn a_wrong_verifier_or_redirect_uri_is_invalid_grant() {
    let f = fixture("grant");
    let (code, _) = log_in(&f.issuer, "kosha/agent", "agent").await;
    let wrong = VERIFIER.replace('d', "e");
    let (status, _, body) = send(&f.issuer, redemption(&code, &wrong)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&body).contains("invalid_grant"));
    let (code, _) = log_in(&f.issuer, "kosha/agent", "agent").await;
    let other = form_post(
        TOKEN_PATH,
        query(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", "kosha-dev-mcp"),
            ("redirect_uri", "http://127.0.0.1:1/other"),
            ("code_verifier", VERIFIER),
        ]),
    );
    let (status, _, _) = send(&f.issuer, other).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_scope_the_public_client_may_not_have_is_sent_back_as_invalid_scope() {
    let f = fixture("badscope");
    let params = authorization("kosha/agent kosha/admin");
    let pairs: Vec<(&str, &str)> = params.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let (status, headers, _) = send(
        &f.issuer,
        get(&format!("{AUTHORIZE_PATH}?{}", query(&pairs))),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let location = headers[header::LOCATION].to_str().unwrap();
    assert!(
        location.starts_with(REDIRECT) && location.contains("error=invalid_scope"),
        "{location}"
    );
    assert!(location.contains("state=st-1"), "{location}");
}
