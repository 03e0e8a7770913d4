//! Test harness: a throwaway database per test (`kosha_test_<pid>_<n>_<nanos>`), migrated and
//! seeded, dropped (best effort, `WITH (FORCE)`) when the guard goes out of scope. PostgreSQL
//! must be running; `KOSHA_TEST_DATABASE_ADMIN_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`) names a database we may create others from.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use core_api::db::{self, PgPool, PoolSettings, migrate};
use core_api::routes::{AppState, router};
use http_body_util::BodyExt;
use serde_json::Value;
use tokio_postgres::NoTls;
use tower::ServiceExt;

const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A migrated and seeded database that is dropped with the guard.
pub struct TestDb {
    pub name: String,
    pub url: String,
    admin_url: String,
}

pub fn admin_url() -> String {
    std::env::var("KOSHA_TEST_DATABASE_ADMIN_URL").unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_owned())
}

/// `url` with its database name replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let base = base.rsplit_once('/').map_or(base, |(head, _)| head);
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

async fn admin_client(admin_url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(admin_url, NoTls)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "PostgreSQL is not reachable through KOSHA_TEST_DATABASE_ADMIN_URL ({e}); \
             start it (scripts/dev up) or point the variable at a running server"
            )
        });
    tokio::spawn(connection);
    client
}

impl TestDb {
    /// Creates an empty database (no migrations).
    pub async fn empty() -> Self {
        let admin_url = admin_url();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            "kosha_test_{}_{}_{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let admin = admin_client(&admin_url).await;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("cannot create test database {name}: {e}"));
        let url = with_database(&admin_url, &name);
        Self {
            name,
            url,
            admin_url,
        }
    }

    /// Creates a database, then migrates and seeds it.
    pub async fn seeded() -> Self {
        let db = Self::empty().await;
        let mut client = db.client().await;
        migrate::migrate_and_seed(&mut client)
            .await
            .expect("migrate and seed");
        db
    }

    /// A direct connection to this database.
    pub async fn client(&self) -> tokio_postgres::Client {
        migrate::connect(&self.url)
            .await
            .expect("connect to test database")
    }

    /// A pool with the production defaults.
    pub fn pool(&self) -> PgPool {
        self.pool_with(&PoolSettings::default())
    }

    pub fn pool_with(&self, settings: &PoolSettings) -> PgPool {
        db::build_pool(&self.url, settings).expect("pool")
    }

    /// The router over a fresh pool.
    pub fn app(&self) -> Router {
        router(AppState::new(self.pool()))
    }

    /// `md5` over every seeded table's rows in id order.
    pub async fn checksum(&self) -> String {
        let client = self.client().await;
        let row = client
            .query_one(
                "SELECT md5(
                    (SELECT string_agg(a::text, '|' ORDER BY account_id) FROM core.accounts a) ||
                    (SELECT string_agg(t::text, '|' ORDER BY transaction_id) FROM core.transactions t) ||
                    (SELECT string_agg(k::text, '|' ORDER BY article_id) FROM kb.articles k))",
                &[],
            )
            .await
            .expect("checksum");
        row.get(0)
    }

    /// Number of accounts: proof that no injected `DROP TABLE` ran.
    pub async fn account_count(&self) -> i64 {
        let client = self.client().await;
        client
            .query_one("SELECT count(*) FROM core.accounts", &[])
            .await
            .expect("count")
            .get(0)
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        // Drop runs inside the test's runtime: use a separate thread and runtime.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                if let Ok((client, connection)) = tokio_postgres::connect(&admin_url, NoTls).await {
                    tokio::spawn(connection);
                    let _ = client
                        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .await;
                }
            });
        })
        .join();
    }
}

/// A response: status, headers, JSON body (`Value::Null` when the body is not JSON).
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Reply {
    /// The error code of an error body.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("<none>")
    }

    /// The error message of an error body.
    pub fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("<none>")
    }

    /// Asserts a 400 `invalid_argument` whose message names `field`.
    #[track_caller]
    pub fn assert_invalid(&self, field: &str) {
        assert_eq!(self.status, StatusCode::BAD_REQUEST, "{}", self.body);
        assert_eq!(self.code(), "invalid_argument", "{}", self.body);
        assert!(
            self.message().contains(field),
            "message should name {field}: {}",
            self.body
        );
    }
}

pub async fn send(app: &Router, request: Request<Body>) -> Reply {
    let response = app.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
    }
}

pub async fn get(app: &Router, uri: &str) -> Reply {
    send(app, Request::get(uri).body(Body::empty()).expect("request")).await
}

pub async fn post_json(app: &Router, uri: &str, body: &Value) -> Reply {
    post_raw(app, uri, Some("application/json"), body.to_string()).await
}

pub async fn post_raw(app: &Router, uri: &str, content_type: Option<&str>, body: String) -> Reply {
    let mut builder = Request::builder().method(Method::POST).uri(uri);
    if let Some(ct) = content_type {
        builder = builder.header(header::CONTENT_TYPE, ct);
    }
    send(app, builder.body(Body::from(body)).expect("request")).await
}

/// Percent-encodes every byte that is not unreserved (RFC 3986 §2.3).
pub fn encode(raw: &str) -> String {
    raw.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Strings with SQL and LIKE metacharacters.
pub const NASTY: &[&str] = &[
    "'; DROP TABLE core.accounts; --",
    "%",
    "_",
    "\\",
    "'",
    "\"",
    "' OR '1'='1",
    "txn_00000%",
    "acc_000_",
    "!&|:*()<->",
];
