//! The real fetchers: a JWKS file written by the dev module, and loopback HTTP.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use kosha_auth::dev;
use kosha_auth::jwks::{FetchError, HttpJwksFetcher, JwksFetcher, MAX_JWKS_BYTES};
use kosha_auth::{Role, Verifier, VerifierConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn temp_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("kosha-auth-{name}-{}", std::process::id()))
}

#[tokio::test]
async fn dev_key_files_verify_a_minted_token_through_a_file_url() {
    let dir = temp_dir("files");
    let (key_path, jwks_path) = dev::write_key_files(&dir, keys()).unwrap();
    let pem = dev::read_private_pem(&key_path).unwrap();
    assert_eq!(dev::key_id(&pem).unwrap(), keys().kid);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let issuer = "http://127.0.0.1/kosha-dev";
    let url = format!("file://{}", jwks_path.display());
    let config = VerifierConfig::new(issuer, Some(&url), ["dev-operator"], None).unwrap();
    let verifier = Verifier::new(config, reqwest::Client::new());
    let claims = dev::MintClaims::new(issuer, "dev-operator", &[Role::Operator]);
    let token = dev::mint(&pem, &keys().kid, &claims).unwrap();
    let principal = verifier.verify(Some(&bearer(&token))).await.unwrap();
    assert_eq!(principal.roles, vec![Role::Operator]);
    assert!(principal.expires_at >= now() + 12 * 3600 - 5);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn minted_token_is_cognito_shaped() {
    let claims = dev::MintClaims::new(ISSUER, CLIENT, &[Role::Agent, Role::Operator]);
    let token = dev::mint(&keys().private_pem, &keys().kid, &claims).unwrap();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);
    assert_eq!(header.kid.as_deref(), Some(keys().kid.as_str()));
    let body: serde_json::Value = jsonwebtoken::dangerous::insecure_decode_claims(&token).unwrap();
    for claim in [
        "sub",
        "iss",
        "client_id",
        "token_use",
        "scope",
        "cognito:groups",
        "exp",
        "iat",
        "auth_time",
        "jti",
        "username",
    ] {
        assert!(body.get(claim).is_some(), "missing {claim}");
    }
    assert_eq!(
        body["cognito:groups"],
        serde_json::json!(["agent", "operator"])
    );
    assert_eq!(
        body["exp"].as_u64().unwrap() - body["iat"].as_u64().unwrap(),
        12 * 3600
    );
}

/// Serves one canned HTTP response per connection.
async fn serve(response: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let _ = socket.write_all(&response).await;
            let _ = socket.shutdown().await;
        }
    });
    format!("http://{addr}/.well-known/jwks.json")
}

fn response(status: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

#[tokio::test]
async fn http_fetcher_verifies_over_loopback() {
    let url = serve(response("200 OK", keys().jwks_json.as_bytes())).await;
    let config = VerifierConfig::new(ISSUER, Some(&url), [CLIENT], None).unwrap();
    let verifier = Verifier::new(config, reqwest::Client::new());
    assert!(verifier.verify(Some(&bearer(&valid_token()))).await.is_ok());
}

#[tokio::test]
async fn http_fetcher_reports_error_statuses() {
    let url = serve(response("503 Service Unavailable", b"{}")).await;
    let fetcher = HttpJwksFetcher::new(url.parse().unwrap(), reqwest::Client::new());
    assert_eq!(
        fetcher.fetch().await,
        Err(FetchError::Unavailable("status 503".into()))
    );
}

#[tokio::test]
async fn http_fetcher_refuses_huge_bodies() {
    let url = serve(response("200 OK", &vec![b' '; MAX_JWKS_BYTES + 1])).await;
    let fetcher = HttpJwksFetcher::new(url.parse().unwrap(), reqwest::Client::new());
    assert_eq!(fetcher.fetch().await, Err(FetchError::TooLarge));
}

#[tokio::test]
async fn http_fetcher_connection_refused_is_an_error_not_a_panic() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let url = format!("http://{addr}/jwks.json");
    let fetcher = HttpJwksFetcher::new(url.parse().unwrap(), reqwest::Client::new());
    let result = tokio::time::timeout(Duration::from_secs(10), fetcher.fetch())
        .await
        .unwrap();
    assert!(matches!(result, Err(FetchError::Unavailable(_))));
}
