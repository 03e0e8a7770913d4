//! SigV4 signing of core-api requests (`KOSHA_CORE_API_AUTH=iam`, issue 6).
//!
//! 1. The signer, on fixed requests with fixed credentials and a fixed time, produces exactly
//!    the `Authorization` that botocore computes independently
//!    (`tests/fixtures/sigv4_botocore.py` prints the expected values).
//! 2. The core-api client, pointed at a recording server through a base URL ending in `/`
//!    (as the template's Function URL does), sends `/v1/...` (never `//v1/...`) with
//!    `Authorization`, `X-Amz-Date` and `X-Amz-Security-Token`, and the signature verifies
//!    against the request as received — method, path, query, signed headers and body — with
//!    a verifier written here from the SigV4 specification (HMAC-SHA256), not aws-sigv4.
//! 3. Credentials are looked up once and reused until shortly before they expire.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider, future};
use hmac::{Hmac, Mac};
use kosha_clients::core_api::{CallMeta, CoreApi};
use kosha_contract::core_api::{ListTransactionsQuery, SearchRequest};
use kosha_runtime::sigv4::SigV4Signer;
use sha2::{Digest, Sha256};
use wiremock::matchers::{header_exists, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY_ID: &str = "AKIDEXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const TOKEN: &str = "session-token-example";
const BASE: &str = "https://abc123.lambda-url.us-east-1.on.aws";
const TIMEOUT: Duration = Duration::from_secs(1);

/// 2026-01-02T03:04:05Z.
fn fixed_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_767_323_045)
}

fn credentials(expiry: Option<SystemTime>) -> Credentials {
    Credentials::new(KEY_ID, SECRET, Some(TOKEN.to_owned()), expiry, "test")
}

fn signer() -> SigV4Signer {
    SigV4Signer::new(
        SharedCredentialsProvider::new(credentials(None)),
        "us-east-1",
    )
    .with_clock(fixed_time)
}

fn header<'a>(req: &'a reqwest::Request, name: &str) -> &'a str {
    req.headers()
        .get(name)
        .unwrap_or_else(|| panic!("{name} missing"))
        .to_str()
        .unwrap()
}

const SEARCH_BODY: &str = r#"{"query":"chargeback","top_k":3}"#;

fn search_request(body: &str) -> reqwest::Request {
    reqwest::Client::new()
        .post(format!("{BASE}/v1/knowledge/search"))
        .header("content-type", "application/json")
        .header("x-kosha-principal", "kosha-dev-agent")
        .header("x-request-deadline", "2026-01-02T03:04:07.000Z")
        .body(body.to_owned())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_post_is_signed_exactly_as_botocore_signs_it() {
    let mut req = search_request(SEARCH_BODY);
    signer().sign(&mut req, TIMEOUT).await.unwrap();
    assert_eq!(header(&req, "x-amz-date"), "20260102T030405Z");
    assert_eq!(header(&req, "x-amz-security-token"), TOKEN);
    assert_eq!(
        header(&req, "authorization"),
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/us-east-1/lambda/aws4_request, \
         SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-kosha-principal;x-request-deadline, \
         Signature=6566ad9263aa208b7a011288c3464d5bfcd2ce192140f8a9408f7514591d8717"
    );
    assert!(req.headers()["authorization"].is_sensitive());
}

#[tokio::test]
async fn a_get_with_an_encoded_query_is_signed_exactly_as_botocore_signs_it() {
    let query = ListTransactionsQuery {
        limit: Some(5),
        cursor: Some("a+b=".to_owned()),
        from: Some("2026-01-01T00:00:00Z".to_owned()),
        to: None,
    };
    let mut req = reqwest::Client::new()
        .get(format!("{BASE}/v1/accounts/acc_0001/transactions"))
        .query(&query)
        .header("x-kosha-principal", "kosha-dev-agent")
        .build()
        .unwrap();
    signer().sign(&mut req, TIMEOUT).await.unwrap();
    assert_eq!(
        header(&req, "authorization"),
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/us-east-1/lambda/aws4_request, \
         SignedHeaders=host;x-amz-date;x-amz-security-token;x-kosha-principal, \
         Signature=deb30e5a7200306987105764b07b670e347aa9e998607a568d8d1b4c3bca2437"
    );
}

#[tokio::test]
async fn the_signature_covers_the_body() {
    let mut a = search_request(SEARCH_BODY);
    let mut b = search_request(r#"{"query":"chargeback","top_k":4}"#);
    let s = signer();
    s.sign(&mut a, TIMEOUT).await.unwrap();
    s.sign(&mut b, TIMEOUT).await.unwrap();
    assert_ne!(header(&a, "authorization"), header(&b, "authorization"));
    assert_eq!(header(&a, "x-amz-date"), header(&b, "x-amz-date"));
}

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).unwrap();
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// RFC 3986 encoding of SigV4 (unreserved characters kept, everything else `%XX`).
fn uri_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Verifies a received request's SigV4 signature from the specification (AWS "Create a
/// canonical request"): plain ASCII paths only, which is all core-api's routes use.
fn verifies(req: &wiremock::Request, secret: &str) -> bool {
    let auth = req.headers["authorization"].to_str().unwrap();
    let rest = auth.strip_prefix("AWS4-HMAC-SHA256 Credential=").unwrap();
    let (scope_full, rest) = rest.split_once(", SignedHeaders=").unwrap();
    let (signed_headers, signature) = rest.split_once(", Signature=").unwrap();
    let scope = scope_full.split_once('/').unwrap().1;
    let date = req.headers["x-amz-date"].to_str().unwrap();

    let mut query: Vec<(String, String)> = req
        .url
        .query_pairs()
        .map(|(k, v)| (uri_encode(&k), uri_encode(&v)))
        .collect();
    query.sort();
    let query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let headers: String = signed_headers
        .split(';')
        .map(|name| {
            let value = req.headers[name].to_str().unwrap().trim();
            format!("{name}:{value}\n")
        })
        .collect();
    let canonical = format!(
        "{}\n{}\n{query}\n{headers}\n{signed_headers}\n{}",
        req.method,
        req.url.path(),
        hex::encode(Sha256::digest(&req.body))
    );
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    );
    let mut parts = scope.split('/');
    let (day, region, service) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    assert_eq!(service, "lambda");
    let k = hmac(format!("AWS4{secret}").as_bytes(), day);
    let k = hmac(&k, region);
    let k = hmac(&k, service);
    let k = hmac(&k, "aws4_request");
    hex::encode(hmac(&k, &to_sign)) == signature
}

fn meta() -> CallMeta {
    CallMeta {
        principal: Some("kosha-dev-agent".to_owned()),
        user: None,
        deadline_header: Some("2026-01-02T03:04:07.000Z".to_owned()),
        timeout: Duration::from_secs(5),
        chaos: None,
    }
}

#[tokio::test]
async fn the_core_api_client_sends_signed_requests_to_a_url_ending_in_a_slash() {
    let server = MockServer::start().await;
    for m in ["POST", "GET"] {
        Mock::given(method(m))
            .and(header_exists("authorization"))
            .and(header_exists("x-amz-date"))
            .and(header_exists("x-amz-security-token"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "results": [], "degraded": false, "transactions": [], "next_cursor": null
            })))
            .mount(&server)
            .await;
    }
    let client = CoreApi::new(
        &format!("{}/", server.uri()),
        kosha_runtime::tls::http_client().unwrap(),
    )
    .with_signer(Arc::new(signer()));
    let search = SearchRequest {
        query: "chargeback".to_owned(),
        top_k: Some(3),
    };
    client.search(&meta(), &search).await.unwrap();
    let query = ListTransactionsQuery {
        limit: Some(5),
        cursor: Some("a+b=".to_owned()),
        from: Some("2026-01-01T00:00:00Z".to_owned()),
        to: None,
    };
    client
        .list_transactions(&meta(), "acc_0001", &query)
        .await
        .unwrap();

    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].url.path(), "/v1/knowledge/search");
    assert_eq!(received[1].url.path(), "/v1/accounts/acc_0001/transactions");
    for req in &received {
        assert_eq!(req.headers["x-amz-security-token"], TOKEN);
        assert!(verifies(req, SECRET), "{req:?}");
    }
    let mut tampered = received[0].clone();
    tampered.body = br#"{"query":"chargeback","top_k":20}"#.to_vec();
    assert!(
        !verifies(&tampered, SECRET),
        "a changed body must not verify"
    );
    let auth = received[0].headers["authorization"].to_str().unwrap();
    assert!(auth.contains("SignedHeaders=content-type;host;"), "{auth}");
    assert!(auth.contains("x-request-deadline"), "{auth}");
    assert_eq!(received[0].body, SEARCH_BODY.as_bytes());
}

/// A provider that counts lookups and hands out credentials expiring at `expiry`.
#[derive(Debug)]
struct Counting {
    calls: Arc<AtomicUsize>,
    expiry: Option<SystemTime>,
}

impl ProvideCredentials for Counting {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        self.calls.fetch_add(1, Ordering::SeqCst);
        future::ProvideCredentials::ready(Ok(credentials(self.expiry)))
    }
}

async fn lookups_for_two_requests(expiry: Option<SystemTime>) -> usize {
    let calls = Arc::new(AtomicUsize::new(0));
    let provider = Counting {
        calls: calls.clone(),
        expiry,
    };
    let s = SigV4Signer::new(SharedCredentialsProvider::new(provider), "us-east-1")
        .with_clock(fixed_time);
    for _ in 0..2 {
        s.sign(&mut search_request(SEARCH_BODY), TIMEOUT)
            .await
            .unwrap();
    }
    calls.load(Ordering::SeqCst)
}

#[tokio::test]
async fn credentials_are_cached_until_shortly_before_they_expire() {
    assert_eq!(lookups_for_two_requests(None).await, 1);
    let in_an_hour = fixed_time() + Duration::from_secs(3600);
    assert_eq!(lookups_for_two_requests(Some(in_an_hour)).await, 1);
    let in_a_minute = fixed_time() + Duration::from_secs(60);
    assert_eq!(lookups_for_two_requests(Some(in_a_minute)).await, 2);
}

#[derive(Debug)]
struct Never;

impl ProvideCredentials for Never {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::new(std::future::pending())
    }
}

#[tokio::test(start_paused = true)]
async fn a_credentials_lookup_that_hangs_is_bounded_by_the_timeout() {
    let s = SigV4Signer::new(SharedCredentialsProvider::new(Never), "us-east-1");
    let err = s
        .sign(&mut search_request(SEARCH_BODY), TIMEOUT)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(!err.to_string().contains(SECRET));
}
