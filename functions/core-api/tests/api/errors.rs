//! Error shapes that are not specific to one route: unknown routes, wrong methods, a database
//! that is down or saturated, and statement timeouts.

use kosha_contract::error::ErrorCode;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use core_api::db::PostgresConfig;
use core_api::db::{self, DbError, PoolSettings, fulltext, queries};
use core_api::error::ApiError;
use core_api::routes::{AppState, router};

use crate::common::{TestDb, get, post_json, send};

#[tokio::test]
async fn health_is_ok_with_postgres_up() {
    let db = TestDb::seeded().await;
    let reply = get(&db.app(), "/v1/health").await;
    assert_eq!(reply.status, StatusCode::OK);
    // No embedder in this app (tests/api/hybrid.rs checks the configured one).
    assert_eq!(
        reply.body,
        serde_json::json!({"status": "ok", "embedder": null})
    );
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json_errors() {
    let db = TestDb::seeded().await;
    let app = db.app();
    for uri in [
        "/",
        "/v1/nothing",
        "/v1/transactions",
        "/v1/health/",
        "/v1/transactions/txn_000001/x",
    ] {
        let reply = get(&app, uri).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(reply.code(), "not_found", "{uri}");
    }
    let reply = post_json(&app, "/v1/health", &serde_json::json!({})).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(reply.code(), "invalid_argument");
    let reply = get(&app, "/v1/knowledge/search").await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn principal_header_is_accepted_whatever_its_content() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let long = "p".repeat(1000);
    let principals: [&[u8]; 4] = [b"agent-client-1", b"caf\xe9", b"a b;c", long.as_bytes()];
    for principal in principals {
        let request = Request::get("/v1/transactions/txn_000002")
            .header("x-kosha-principal", principal)
            .body(Body::empty())
            .unwrap();
        assert_eq!(send(&app, request).await.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn postgres_down_is_dependency_unavailable() {
    // Nothing listens on port 1; the pool is built lazily so the router still starts.
    let pool = db::build_pool(
        "postgres://postgres@127.0.0.1:1/kosha",
        &PoolSettings::default(),
    )
    .expect("pool");
    let app = router(AppState::new(pool));
    for uri in [
        "/v1/health",
        "/v1/transactions/txn_000001",
        "/v1/accounts/acc_0001/transactions",
    ] {
        let reply = get(&app, uri).await;
        assert_eq!(
            reply.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{uri}: {}",
            reply.body
        );
        assert_eq!(reply.code(), "dependency_unavailable");
        assert_eq!(reply.body["error"]["dependency"], "postgres");
        assert!(reply.body["error"]["retry_after_s"].as_u64().is_some());
        assert!(reply.headers.contains_key(header::RETRY_AFTER));
        assert!(
            !reply.message().contains("127.0.0.1"),
            "no internals: {}",
            reply.body
        );
    }
    // Bad input is still refused before touching the database.
    get(&app, "/v1/transactions/nope")
        .await
        .assert_invalid("transaction_id");
}

#[tokio::test]
async fn a_saturated_pool_is_overloaded() {
    let db = TestDb::seeded().await;
    let settings = PoolSettings {
        postgres: PostgresConfig {
            pool_max: 1,
            pool_wait: Duration::from_millis(100),
            ..PostgresConfig::defaults()
        },
        ..PoolSettings::default()
    };
    let pool = db.pool_with(&settings);
    let held = pool.get().await.expect("first connection");
    let reply = get(&router(AppState::new(pool.clone())), "/v1/health").await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.body
    );
    assert_eq!(reply.code(), "overloaded");
    drop(held);
    let reply = get(&router(AppState::new(pool)), "/v1/health").await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn statement_timeout_is_deadline_exceeded() {
    let db = TestDb::seeded().await;
    let settings = PoolSettings {
        postgres: PostgresConfig {
            statement_timeout: Duration::from_millis(50),
            ..PostgresConfig::defaults()
        },
        ..PoolSettings::default()
    };
    let pool = db.pool_with(&settings);
    let client = pool.get().await.expect("connection");
    let err = client
        .query_one("SELECT pg_sleep(1)", &[])
        .await
        .unwrap_err();
    let err = DbError::from(err);
    assert!(matches!(err, DbError::StatementTimeout), "{err:?}");
    assert_eq!(ApiError::from(err), ApiError::DeadlineExceeded);
    drop(client);
    // The pool keeps working after a cancelled statement.
    let budget = core_api::deadline::Budget {
        deadline: None,
        postgres: settings.postgres,
        chaos: Default::default(),
    };
    queries::ping(&pool, &budget).await.expect("ping");
}

fn with_deadline(uri: &str, deadline: &str) -> Request<Body> {
    Request::get(uri)
        .header("x-request-deadline", deadline)
        .body(Body::empty())
        .unwrap()
}

fn deadline_in(offset: time::Duration) -> String {
    (time::OffsetDateTime::now_utc() + offset)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

#[tokio::test]
async fn request_deadline_header_is_enforced() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let uri = "/v1/transactions/txn_000003";
    let ok = send(
        &app,
        with_deadline(uri, &deadline_in(time::Duration::seconds(5))),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    // Far ahead is clamped, not refused.
    let far = send(&app, with_deadline(uri, "2099-01-01T00:00:00Z")).await;
    assert_eq!(far.status, StatusCode::OK);
    let past = send(
        &app,
        with_deadline(uri, &deadline_in(time::Duration::seconds(-1))),
    )
    .await;
    assert_eq!(past.status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(past.code(), "deadline_exceeded");
    // Less left than the 100 ms margin: refused before the statement is sent.
    let tight = send(
        &app,
        with_deadline(uri, &deadline_in(time::Duration::milliseconds(60))),
    )
    .await;
    assert_eq!(tight.status, StatusCode::GATEWAY_TIMEOUT, "{}", tight.body);
    send(&app, with_deadline(uri, "soon"))
        .await
        .assert_invalid("X-Request-Deadline");
}

/// PostgreSQL data exceptions (SQLSTATE class 22) are caused by a value, never a reason for
/// a 500: each maps to 400 `invalid_argument` without SQL or driver text in the message.
#[tokio::test]
async fn data_exceptions_are_invalid_argument_not_internal() {
    let db = TestDb::seeded().await;
    let client = db.client().await;
    client
        .batch_execute("CREATE TEMP TABLE short_text (v varchar(1))")
        .await
        .unwrap();
    let cases: [(&str, &str); 7] = [
        ("22021", "SELECT $1::text"),
        ("22P02", "SELECT $1::text::int"),
        ("22001", "INSERT INTO short_text VALUES ($1)"),
        ("22003", "SELECT $1::text::int"),
        ("22007", "SELECT $1::text::timestamptz"),
        ("22008", "SELECT $1::text::timestamptz"),
        ("22012", "SELECT 1 / $1::text::int"),
    ];
    let inputs = [
        "a\u{0}b",
        "seven",
        "toolong",
        "99999999999",
        "soon",
        "2026-13-45",
        "0",
    ];
    for ((state, sql), input) in cases.into_iter().zip(inputs) {
        let err = client.query(sql, &[&input]).await.unwrap_err();
        assert_eq!(err.code().map(|c| c.code()), Some(state), "{sql}: {err}");
        let api = ApiError::from(DbError::from(err));
        let (status, code) = api.status_and_code();
        assert_eq!(
            (status, code),
            (StatusCode::BAD_REQUEST, ErrorCode::InvalidArgument),
            "{state}: {api:?}"
        );
        let message = api.to_string();
        assert!(
            !message.contains("SELECT") && !message.contains("UTF8") && !message.contains(state),
            "{state}: no internals: {message}"
        );
    }
}

/// A NUL that slips past validation into a query still comes back 400, not 500.
#[tokio::test]
async fn nul_reaching_postgres_is_invalid_argument() {
    let db = TestDb::seeded().await;
    let budget = core_api::deadline::Budget {
        deadline: None,
        postgres: PostgresConfig::defaults(),
        chaos: Default::default(),
    };
    let err = fulltext::search_articles(&db.pool(), &budget, "charge\u{0}back", 50, 5, None)
        .await
        .unwrap_err();
    assert_eq!(
        ApiError::from(err).status_and_code(),
        (StatusCode::BAD_REQUEST, ErrorCode::InvalidArgument)
    );
}

/// `%00` in any path segment or query parameter is refused as 400 before PostgreSQL sees it.
#[tokio::test]
async fn nul_in_paths_and_query_strings_is_invalid_argument() {
    let db = TestDb::seeded().await;
    let app = db.app();
    for uri in [
        "/v1/transactions/txn_00000%00",
        "/v1/transactions/%00",
        "/v1/accounts/acc_0001%00/transactions",
        "/v1/accounts/acc_0001/transactions?cursor=%00",
        "/v1/accounts/acc_0001/transactions?from=%00",
        "/v1/accounts/acc_0001/transactions?to=2026-01-01T00:00:00Z%00",
        "/v1/accounts/acc_0001/transactions?limit=5%00",
        "/v1/accounts/acc_0001/transactions?%00=1",
    ] {
        let reply = get(&app, uri).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{uri}: {}",
            reply.body
        );
        assert_eq!(reply.code(), "invalid_argument", "{uri}");
    }
}
