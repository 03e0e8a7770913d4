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
    let (status, _, body) = send(
        &f.issuer,
        get("/kosha-dev/.well-known/openid-configuration"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
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
        serde_json::json!(["client_secret_basic", "client_secret_post"])
    );
    // Cognito serves no RFC 8414 document; neither does this issuer.
    let (status, _, _) = send(
        &f.issuer,
        get("/.well-known/oauth-authorization-server/kosha-dev"),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
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
            "grant_type=client_credentials&scope=kosha/agent+kosha/operator",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["token_type"], "Bearer");
    assert_eq!(answer["expires_in"], 600);
    let token = answer["access_token"].as_str().unwrap();

    let jwks_url = format!("file://{}", f.dir.join(dev::JWKS_FILE).display());
    let config =
        kosha_auth::VerifierConfig::new(f.issuer.issuer(), Some(&jwks_url), ["m2m-agent"], None)
            .unwrap();
    let verifier = kosha_auth::Verifier::new(config, kosha_runtime::tls::http_client().unwrap());
    let principal = verifier
        .verify(Some(&format!("Bearer {token}")))
        .await
        .unwrap();
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
    for bad in ["ftp://x/p", "http://x/p?q=1", "not a url"] {
        assert!(make(bad, 1).is_err(), "{bad}");
    }
    assert!(make("http://127.0.0.1:1/p", 0).is_err());
}
