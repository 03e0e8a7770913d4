//! A hung PostgreSQL against the request deadline (SPEC §7): the pool's wait, a connection's
//! creation and a statement on a pooled connection all end by `X-Request-Deadline`, not after
//! the configured 0.5 s wait or 2 s connect timeout. No real database: a local TCP listener
//! that accepts and never speaks, or one that completes the startup and then goes silent.
//! Time is tokio's paused clock, so "by the deadline" is measured exactly and instantly.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use core_api::db::PostgresConfig;
use core_api::db::{self, PgPool, PoolSettings};
use core_api::routes::{AppState, router};
use time::format_description::well_known::Rfc3339;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use crate::common::{Reply, send};

const DEADLINE: Duration = Duration::from_millis(300);

/// How a fake server treats each connection.
#[derive(Clone, Copy)]
enum Fake {
    /// Accepts the TCP connection and never sends a byte.
    Silent,
    /// Answers the startup (AuthenticationOk, ReadyForQuery), then never answers again.
    FreezesAfterStartup,
}

/// A `postgres://` URL served by a fake; connections are held open until the test ends.
async fn fake_postgres(fake: Fake) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            if let Fake::FreezesAfterStartup = fake {
                startup(&mut socket).await;
            }
            held.push(socket);
        }
    });
    format!("postgres://postgres@127.0.0.1:{port}/kosha?sslmode=disable")
}

/// Reads the StartupMessage (no SSLRequest: the URL says `sslmode=disable`) and answers
/// AuthenticationOk and ReadyForQuery (idle).
async fn startup(socket: &mut TcpStream) {
    let len = socket.read_i32().await.unwrap();
    let mut rest = vec![0; usize::try_from(len - 4).unwrap()];
    socket.read_exact(&mut rest).await.unwrap();
    let mut answer = vec![b'R'];
    answer.extend(8_i32.to_be_bytes());
    answer.extend(0_i32.to_be_bytes());
    answer.push(b'Z');
    answer.extend(5_i32.to_be_bytes());
    answer.push(b'I');
    socket.write_all(&answer).await.unwrap();
}

fn request(method: Method, uri: &str, deadline: Option<Duration>) -> Request<Body> {
    let mut builder = Request::builder().method(method.clone()).uri(uri);
    if let Some(ahead) = deadline {
        let at = time::OffsetDateTime::now_utc() + ahead;
        builder = builder.header("x-request-deadline", at.format(&Rfc3339).unwrap());
    }
    if method == Method::POST {
        builder = builder.header(header::CONTENT_TYPE, "application/json");
        return builder
            .body(Body::from(r#"{"query": "chargeback"}"#))
            .unwrap();
    }
    builder.body(Body::empty()).unwrap()
}

/// Every route that reaches PostgreSQL.
fn routes() -> [(Method, &'static str); 4] {
    [
        (Method::GET, "/v1/health"),
        (Method::GET, "/v1/transactions/txn_000001"),
        (Method::GET, "/v1/accounts/acc_0001/transactions"),
        (Method::POST, "/v1/knowledge/search"),
    ]
}

/// Sends `request`, failing the test if no answer comes within 10 s (of paused time).
async fn timed(app: &Router, request: Request<Body>) -> (Reply, Duration) {
    let started = Instant::now();
    let reply = tokio::time::timeout(Duration::from_secs(10), send(app, request))
        .await
        .expect("no answer within 10 s");
    (reply, started.elapsed())
}

fn pool(url: &str, postgres: PostgresConfig) -> PgPool {
    let settings = PoolSettings {
        postgres,
        ..PoolSettings::default()
    };
    db::build_pool(url, &settings).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_silent_postgres_answers_504_by_the_deadline() {
    let url = fake_postgres(Fake::Silent).await;
    let app = router(AppState::new(pool(&url, PostgresConfig::defaults())));
    for (method, uri) in routes() {
        let (reply, took) = timed(&app, request(method, uri, Some(DEADLINE))).await;
        assert_eq!(
            reply.status,
            StatusCode::GATEWAY_TIMEOUT,
            "{uri}: {}",
            reply.body
        );
        assert_eq!(reply.code(), "deadline_exceeded", "{uri}");
        assert!(took <= DEADLINE, "{uri}: answered after {took:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn without_a_deadline_the_connect_timeout_still_bounds_the_wait() {
    let url = fake_postgres(Fake::Silent).await;
    let app = router(AppState::new(pool(&url, PostgresConfig::defaults())));
    let (reply, took) = timed(&app, request(Method::GET, "/v1/health", None)).await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.body
    );
    assert_eq!(reply.code(), "dependency_unavailable");
    assert_eq!(took, kosha_pg::pool::DEFAULT_CONNECT_TIMEOUT);
}

/// The one connection slot is taken by a connect that hangs for its 2 s: the next request
/// waits for the slot until its deadline (504) or, when the deadline is further away than
/// the pool wait, until the pool wait (503 `overloaded`).
#[tokio::test(start_paused = true)]
async fn the_pool_wait_ends_at_the_deadline_or_the_pool_wait() {
    let url = fake_postgres(Fake::Silent).await;
    let postgres = PostgresConfig {
        pool_max: 1,
        ..PostgresConfig::defaults()
    };
    let pool = pool(&url, postgres);
    let hog = pool.clone();
    tokio::spawn(async move { hog.get().await.map(drop) });
    tokio::task::yield_now().await;
    let app = router(AppState::new(pool));
    let uri = "/v1/transactions/txn_000001";

    let (reply, took) = timed(&app, request(Method::GET, uri, Some(DEADLINE))).await;
    assert_eq!(reply.status, StatusCode::GATEWAY_TIMEOUT, "{}", reply.body);
    assert_eq!(reply.code(), "deadline_exceeded");
    assert!(took <= DEADLINE, "answered after {took:?}");

    let (reply, took) = timed(
        &app,
        request(Method::GET, uri, Some(Duration::from_secs(5))),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.body
    );
    assert_eq!(reply.code(), "overloaded");
    assert_eq!(took, postgres.pool_wait);
}

/// PostgreSQL freezes after the pool connected: the statement on the pooled connection is
/// abandoned at the deadline and the connection is dropped, not handed to the next request.
#[tokio::test]
async fn a_postgres_frozen_mid_session_answers_504_by_the_deadline() {
    let url = fake_postgres(Fake::FreezesAfterStartup).await;
    let pool = pool(&url, PostgresConfig::defaults());
    // Connect on the real clock (the fake answers the startup at once), then pause it.
    drop(pool.get().await.expect("startup with the fake"));
    assert_eq!(pool.status().size, 1);
    tokio::time::pause();
    let app = router(AppState::new(pool.clone()));
    let (reply, took) = timed(
        &app,
        request(Method::GET, "/v1/transactions/txn_000001", Some(DEADLINE)),
    )
    .await;
    assert_eq!(reply.status, StatusCode::GATEWAY_TIMEOUT, "{}", reply.body);
    assert_eq!(reply.code(), "deadline_exceeded");
    assert!(took <= DEADLINE, "answered after {took:?}");
    assert_eq!(pool.status().size, 0, "the frozen connection was discarded");
}
