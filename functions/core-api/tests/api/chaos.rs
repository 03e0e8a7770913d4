//! The forwarded chaos header at core-api (SPEC §9, issue 14), against a real PostgreSQL:
//! verified again with the key, honoured only when enabled, and its `postgres` faults applied
//! where every data endpoint starts its transaction — `error` and `reset` as PostgreSQL
//! unavailable, `latency` inside the deadline, `timeout` as a statement PostgreSQL itself
//! cancels on `statement_timeout`.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use core_api::chaos::{Chaos, ChaosVerifier};
use core_api::db::PoolSettings;
use core_api::routes::{AppState, router};
use kosha_resilience::chaos::{ChaosSpec, Fault, Target};
use kosha_resilience::rate_limit::BoxFuture;
use kosha_state::{HmacKey, SecretCache, SecretFetcher, StateError, decode_hmac_key};
use time::format_description::well_known::Rfc3339;
use tokio::time::Instant;

use crate::common::{Reply, TestDb, send};

const KEY_HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const TXN: &str = "/v1/transactions/txn_000001";

/// A key cache that always yields [`KEY_HEX`] (shared with the `openai` tests in `hybrid`).
pub(crate) struct Fixed;
impl SecretFetcher for Fixed {
    fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
        Box::pin(async { Ok(decode_hmac_key(KEY_HEX).unwrap()) })
    }
}

fn app(db: &TestDb, enabled: bool) -> Router {
    router(AppState::new(db.pool()).with_chaos(verifier(enabled)))
}

/// A verifier with the test key.
pub(crate) fn verifier(enabled: bool) -> ChaosVerifier {
    let keys = SecretCache::with_fetcher(Arc::new(Fixed), "test", Duration::from_secs(300));
    ChaosVerifier::new(enabled, Some(keys))
}

/// A header for `target`/`fault` with p = 1, signed with [`KEY_HEX`], valid 300 s.
pub(crate) fn header(target: Target, fault: Fault, ms: Option<u32>) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let spec = ChaosSpec::try_new(target, fault, ms, 1.0, now + 300).unwrap();
    spec.sign(&hex::decode(KEY_HEX).unwrap()).unwrap()
}

/// `X-Request-Deadline` `after` from now.
fn deadline(after: Duration) -> String {
    (time::OffsetDateTime::now_utc() + after)
        .format(&Rfc3339)
        .unwrap()
}

async fn get(app: &Router, chaos: Option<&str>, within: Option<Duration>) -> (Reply, Duration) {
    let mut req = Request::get(TXN);
    if let Some(h) = chaos {
        req = req.header("x-kosha-chaos", h);
    }
    if let Some(d) = within {
        req = req.header("x-request-deadline", deadline(d));
    }
    let started = Instant::now();
    let reply = send(app, req.body(Body::empty()).unwrap()).await;
    (reply, started.elapsed())
}

#[tokio::test]
async fn error_and_reset_faults_answer_postgres_unavailable() {
    let db = TestDb::seeded().await;
    let app = app(&db, true);
    for fault in [Fault::Error, Fault::Reset] {
        let (reply, _) = get(&app, Some(&header(Target::Postgres, fault, None)), None).await;
        assert_eq!(
            reply.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            reply.body
        );
        assert_eq!(reply.code(), "dependency_unavailable");
        assert_eq!(reply.body["error"]["dependency"], "postgres");
        assert!(reply.headers.contains_key("retry-after"));
    }
    // The same request without the header is served.
    assert_eq!(get(&app, None, None).await.0.status, StatusCode::OK);
}

#[tokio::test]
async fn a_timeout_fault_is_cancelled_by_the_statement_timeout() {
    let db = TestDb::seeded().await;
    let app = app(&db, true);
    let h = header(Target::Postgres, Fault::Timeout, None);
    // Deadline 1 s: statement_timeout = 1 s − 100 ms margin; PostgreSQL cancels (57014) and
    // the slow-query path answers 504, well before the deadline.
    let (reply, took) = get(&app, Some(&h), Some(Duration::from_secs(1))).await;
    assert_eq!(reply.status, StatusCode::GATEWAY_TIMEOUT, "{}", reply.body);
    assert_eq!(reply.code(), "deadline_exceeded");
    assert!(
        took >= Duration::from_millis(700),
        "cancelled too early: {took:?}"
    );
    assert!(
        took < Duration::from_millis(1_000),
        "not by the deadline: {took:?}"
    );
    // The cancelled statement left the pooled connections usable.
    for _ in 0..3 {
        assert_eq!(get(&app, None, None).await.0.status, StatusCode::OK);
    }
    // Without a deadline nothing but PostgreSQL ends it: at the statement timeout (500 ms).
    let mut settings = PoolSettings::default();
    settings.postgres.statement_timeout = Duration::from_millis(500);
    let keys = SecretCache::with_fetcher(Arc::new(Fixed), "test", Duration::from_secs(300));
    let short = router(
        AppState::new(db.pool_with(&settings))
            .with_postgres(settings.postgres)
            .with_chaos(ChaosVerifier::new(true, Some(keys))),
    );
    let (reply, took) = get(&short, Some(&h), None).await;
    assert_eq!(reply.status, StatusCode::GATEWAY_TIMEOUT, "{}", reply.body);
    assert!(
        (Duration::from_millis(450)..Duration::from_millis(1_400)).contains(&took),
        "{took:?}"
    );
}

#[tokio::test]
async fn latency_is_spent_inside_the_deadline() {
    let db = TestDb::seeded().await;
    let app = app(&db, true);
    let (reply, took) = get(
        &app,
        Some(&header(Target::Postgres, Fault::Latency, Some(300))),
        Some(Duration::from_secs(3)),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert!(took >= Duration::from_millis(300), "{took:?}");
    // More latency than the deadline leaves: deadline_exceeded by the deadline, not after ms.
    let (reply, took) = get(
        &app,
        Some(&header(Target::Postgres, Fault::Latency, Some(5_000))),
        Some(Duration::from_millis(600)),
    )
    .await;
    assert_eq!(reply.status, StatusCode::GATEWAY_TIMEOUT, "{}", reply.body);
    assert!(took < Duration::from_millis(650), "{took:?}");
}

/// Issue #30: with Secrets Manager accepting connections and never answering, a request
/// carrying a chaos header waited out the key fetch's 2 s cap whatever its own deadline. The
/// store here is a TCP listener that accepts and never answers, reached by the SDK client the
/// production cache uses.
#[tokio::test]
async fn a_hanging_secret_store_never_takes_a_request_past_its_deadline() {
    let db = TestDb::seeded().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let _silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};
    let conf = aws_sdk_secretsmanager::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(kosha_runtime::tls::sdk_http_client())
        .endpoint_url(url)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .build();
    let keys = SecretCache::new(
        aws_sdk_secretsmanager::Client::from_conf(conf),
        "kosha/chaos-hmac-key",
    );
    let app = router(AppState::new(db.pool()).with_chaos(ChaosVerifier::new(true, Some(keys))));
    let h = header(Target::Postgres, Fault::Error, None);
    let budget = Duration::from_millis(500);
    let (reply, took) = get(&app, Some(&h), Some(budget)).await;
    println!(
        "secret store hanging, deadline {budget:?}: {} in {took:?}",
        reply.status
    );
    assert!(took < budget, "answered after its deadline: {took:?}");
    // The key fetch took at most half the budget: the request itself was served, unfaulted.
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // 250 ms without an answer says nothing of the store: the next request asks again, and
    // is bounded the same way.
    let (reply, took) = get(&app, Some(&h), Some(budget)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert!(took < budget, "answered after its deadline: {took:?}");
    // A request with time to spare waits long enough (1.5 s, half its 3 s) to conclude the
    // store is failing; that is remembered (30 s), and the next request does not wait at all.
    let (reply, _) = get(&app, Some(&h), Some(Duration::from_secs(3))).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let (reply, took) = get(&app, Some(&h), Some(budget)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert!(took < Duration::from_millis(150), "{took:?}");
}

#[tokio::test]
async fn unverified_disabled_or_other_target_headers_change_nothing() {
    let db = TestDb::seeded().await;
    let on = app(&db, true);
    let off = app(&db, false);
    let good = header(Target::Postgres, Fault::Error, None);
    let tampered = good.replace("fault=error", "fault=reset");
    let wrong_key = {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        ChaosSpec::try_new(Target::Postgres, Fault::Error, None, 1.0, now + 300)
            .unwrap()
            .sign(b"not the operators' key at all!!")
            .unwrap()
    };
    let openai = header(Target::OpenAi, Fault::Error, None);
    let no_key = router(AppState::new(db.pool()).with_chaos(ChaosVerifier::new(true, None)));
    for (app, h) in [
        (&off, good.as_str()),
        (&no_key, good.as_str()),
        (&on, tampered.as_str()),
        (&on, wrong_key.as_str()),
        (&on, openai.as_str()),
    ] {
        let (reply, _) = get(app, Some(h), None).await;
        assert_eq!(reply.status, StatusCode::OK, "{h}: {}", reply.body);
    }
}

/// The seam for the other targets' clients (the `openai` embeddings client): any handler
/// extracts the request's [`Chaos`] and gets a plan only for its own dependency.
#[tokio::test]
async fn handlers_extract_the_verified_plan_as_one_value() {
    async fn probe(chaos: Chaos) -> String {
        let spec = chaos.spec().map(|s| s.target().as_str()).unwrap_or("none");
        let openai = chaos.faults(Target::OpenAi).is_some();
        format!("{spec} openai={openai}")
    }
    let keys = SecretCache::with_fetcher(Arc::new(Fixed), "test", Duration::from_secs(300));
    let verifier = Arc::new(ChaosVerifier::new(true, Some(keys)));
    let app = Router::new()
        .route("/probe", axum::routing::get(probe))
        .layer(axum::middleware::from_fn_with_state(
            verifier,
            core_api::chaos::honour,
        ));
    let text = |h: Option<String>| {
        let app = app.clone();
        async move {
            let mut req = Request::get("/probe");
            if let Some(h) = h {
                req = req.header("x-kosha-chaos", h);
            }
            let response = tower::ServiceExt::oneshot(app, req.body(Body::empty()).unwrap())
                .await
                .unwrap();
            let bytes = http_body_util::BodyExt::collect(response.into_body())
                .await
                .unwrap()
                .to_bytes();
            String::from_utf8(bytes.to_vec()).unwrap()
        }
    };
    assert_eq!(text(None).await, "none openai=false");
    let openai = header(Target::OpenAi, Fault::Timeout, None);
    assert_eq!(text(Some(openai.clone())).await, "openai openai=true");
    let postgres = header(Target::Postgres, Fault::Error, None);
    assert_eq!(text(Some(postgres)).await, "postgres openai=false");
    let forged = openai.replace("timeout", "reset");
    assert_eq!(text(Some(forged)).await, "none openai=false");
}
