//! Hybrid search against an OpenAI-shaped fake (wiremock) and a real PostgreSQL: the backfill,
//! RRF answers, every embeddings failure mode ending in a degraded full-text answer (never a
//! 5xx), the `openai` breaker, and the `breaker#openai` / `breaker#postgres` overrides.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use core_api::backfill;
use core_api::embeddings::{Embedder, EmbeddingsConfig, OPENAI_PROFILE};
use core_api::routes::{AppState, router};
use kosha_resilience::chaos::{Fault, Target};
use kosha_resilience::config::{PolicyConfig, Profile};
use kosha_resilience::deadline::Deadline;
use kosha_resilience::overrides::{ForcedOpen, OverrideSource, StaticOverrides};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

use crate::common::{Reply, TestDb, get, post_json, send};

const SEARCH: &str = "/v1/knowledge/search";
const DIMS: usize = 64;
const MODEL: &str = "fake-bag-of-words-64";

/// An OpenAI-shaped embeddings fake: each input becomes a hashed bag of its lower-cased words
/// (plus a constant component, so no vector is zero), `dims` long. Counts the inputs it saw.
struct BagOfWords {
    dims: usize,
    inputs: Arc<AtomicUsize>,
}

fn bag(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0_f32; dims];
    v[0] = 0.05;
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let word = word.to_lowercase();
        let h = word.bytes().fold(2_166_136_261_u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(16_777_619)
        });
        v[1 + (h as usize) % (dims - 1)] += 1.0;
    }
    v
}

impl Respond for BagOfWords {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(body["encoding_format"], "float");
        let inputs: Vec<String> = match &body["input"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().unwrap().to_owned())
                .collect(),
            other => panic!("input {other}"),
        };
        self.inputs.fetch_add(inputs.len(), Ordering::SeqCst);
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": bag(text, self.dims)}))
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({
            "object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}
        }))
    }
}

/// A seeded database, a fake embeddings API and the overrides core-api reads.
struct Stack {
    db: TestDb,
    server: MockServer,
    inputs: Arc<AtomicUsize>,
    overrides: StaticOverrides,
}

impl Stack {
    /// Seeded, with every passage embedded by the fake.
    async fn embedded() -> Self {
        let stack = Self::new().await;
        stack.serve_fake().await;
        let report = backfill::run(
            &mut stack.db.client().await,
            &stack.embedder(OPENAI_PROFILE),
        )
        .await
        .expect("backfill");
        assert!(report.embedded > 100, "{report}");
        stack.server.reset().await;
        stack.inputs.store(0, Ordering::SeqCst);
        stack
    }

    async fn new() -> Self {
        Self {
            db: TestDb::seeded().await,
            server: MockServer::start().await,
            inputs: Arc::new(AtomicUsize::new(0)),
            overrides: StaticOverrides::default(),
        }
    }

    async fn serve_fake(&self) {
        self.serve_fake_for(DIMS).await;
    }

    async fn serve_fake_for(&self, dims: usize) {
        Mock::given(method("POST"))
            .and(path("/v1/embeddings"))
            .respond_with(BagOfWords {
                dims,
                inputs: self.inputs.clone(),
            })
            .mount(&self.server)
            .await;
    }

    async fn serve(&self, template: ResponseTemplate) {
        Mock::given(method("POST"))
            .and(path("/v1/embeddings"))
            .respond_with(template)
            .mount(&self.server)
            .await;
    }

    fn config(&self, model: &str, profile: Profile) -> EmbeddingsConfig {
        EmbeddingsConfig {
            url: format!("{}/v1", self.server.uri()),
            model: model.to_owned(),
            dimensions: u32::try_from(DIMS).unwrap(),
            policy: PolicyConfig::from_profile(profile),
            api_key_secret_arn: None,
        }
    }

    /// A fresh embedder (its own breaker) with `profile`.
    fn embedder(&self, profile: Profile) -> Arc<Embedder> {
        let overrides: Arc<dyn OverrideSource> = Arc::new(self.overrides.clone());
        Arc::new(
            Embedder::new(
                &self.config(MODEL, profile),
                None,
                reqwest::Client::new(),
                overrides,
            )
            .expect("embedder"),
        )
    }

    fn app_with(&self, embedder: Arc<Embedder>) -> Router {
        router(
            AppState::new(self.db.pool())
                .with_overrides(Arc::new(self.overrides.clone()))
                .with_embedder(embedder),
        )
    }

    fn app(&self) -> Router {
        self.app_with(self.embedder(OPENAI_PROFILE))
    }

    async fn requests(&self) -> usize {
        self.server.received_requests().await.map_or(0, |r| r.len())
    }
}

/// `POST /v1/knowledge/search` with `X-Request-Deadline` `budget` ahead.
async fn search_within(app: &Router, query: &str, budget: Duration) -> Reply {
    let request = Request::builder()
        .method(Method::POST)
        .uri(SEARCH)
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-request-deadline", Deadline::after(budget).to_header())
        .body(Body::from(json!({"query": query}).to_string()))
        .unwrap();
    send(app, request).await
}

fn ids(reply: &Reply) -> Vec<String> {
    reply.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["article_id"].as_str().unwrap().to_owned())
        .collect()
}

#[track_caller]
fn assert_degraded(reply: &Reply, case: &str) {
    assert_eq!(reply.status, StatusCode::OK, "{case}: {}", reply.body);
    assert_eq!(reply.body["degraded"], true, "{case}: {}", reply.body);
    assert_eq!(
        reply.body["degraded_reason"], "embeddings_unavailable",
        "{case}"
    );
    assert!(!ids(reply).is_empty(), "{case}: full-text results expected");
}

#[track_caller]
fn assert_hybrid(reply: &Reply, case: &str) {
    assert_eq!(reply.status, StatusCode::OK, "{case}: {}", reply.body);
    assert_eq!(reply.body["degraded"], false, "{case}: {}", reply.body);
    assert!(reply.body.get("degraded_reason").is_none(), "{case}");
}

#[tokio::test]
async fn embed_fills_the_passages_once_and_again_for_another_model() {
    let stack = Stack::new().await;
    stack.serve_fake().await;
    let embedder = stack.embedder(OPENAI_PROFILE);
    let mut client = stack.db.client().await;
    let first = backfill::run(&mut client, &embedder).await.unwrap();
    assert_eq!(first.articles, 40);
    assert_eq!(first.embedded, first.passages);
    assert_eq!((first.kept, first.removed), (0, 0));
    let batches = stack.requests().await;
    assert_eq!(batches, first.passages.div_ceil(backfill::BATCH));
    let stored: i64 = client
        .query_one(
            "SELECT count(*) FROM kb.passages WHERE model = $1 AND dimensions = 64",
            &[&MODEL],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, i64::try_from(first.passages).unwrap());

    let again = backfill::run(&mut client, &embedder).await.unwrap();
    assert_eq!((again.embedded, again.kept), (0, first.passages));
    assert_eq!(stack.requests().await, batches, "nothing to embed: no call");

    // An edited paragraph is re-embedded alone; a removed one is deleted.
    client
        .execute(
            "UPDATE kb.articles SET body = split_part(body, E'\\n\\n', 1) || E'\\n\\nA new paragraph.'
             WHERE article_id = 'kb_001'",
            &[],
        )
        .await
        .unwrap();
    let edited = backfill::run(&mut client, &embedder).await.unwrap();
    assert_eq!(edited.embedded, 1, "{edited}");
    assert!(edited.removed >= 1, "{edited}");

    let other = Embedder::new(
        &stack.config("another-model", OPENAI_PROFILE),
        None,
        reqwest::Client::new(),
        Arc::new(StaticOverrides::default()),
    )
    .unwrap();
    let switched = backfill::run(&mut client, &other).await.unwrap();
    assert_eq!(switched.embedded, switched.passages);
}

#[tokio::test]
async fn hybrid_answers_fuse_both_rankings_per_article() {
    let stack = Stack::embedded().await;
    stack.serve_fake().await;
    let app = stack.app();
    let reply = post_json(&app, SEARCH, &json!({"query": "chargeback", "top_k": 10})).await;
    assert_hybrid(&reply, "chargeback");
    let results = reply.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 10);
    let mut seen = std::collections::HashSet::new();
    for r in results {
        assert!(
            seen.insert(r["article_id"].as_str().unwrap()),
            "one hit per article"
        );
        let score = r["score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&score), "{score}");
        let snippet = r["snippet"].as_str().unwrap();
        assert!(!snippet.is_empty() && !snippet.contains('\n'), "{snippet}");
    }
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // An absolute relevance (issue 45), not a rank-fusion number (at most 2/61 ≈ 0.033).
    assert!(scores[0] > 0.5, "{scores:?}");
    assert_eq!(
        stack.inputs.load(Ordering::SeqCst),
        1,
        "one input: the query"
    );

    // A word no article has: full text finds nothing, the vectors still rank.
    let reply = post_json(&app, SEARCH, &json!({"query": "zzyzx"})).await;
    assert_hybrid(&reply, "unknown word");
    assert_eq!(ids(&reply).len(), 5);
    // …and its best hit scores below the on-topic query's: comparable across queries.
    let unknown_best = reply.body["results"][0]["score"].as_f64().unwrap();
    assert!(
        unknown_best < scores[0] / 2.0,
        "{unknown_best} against {scores:?}"
    );

    let health = get(&app, "/v1/health").await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(
        health.body["embedder"],
        json!({"model": MODEL, "dimensions": 64, "breaker": "closed"})
    );
}

#[tokio::test]
async fn every_embeddings_failure_is_a_degraded_full_text_answer() {
    let stack = Stack::embedded().await;
    let full_text = post_json(
        &router(AppState::new(stack.db.pool())),
        SEARCH,
        &json!({"query": "chargeback"}),
    )
    .await;
    assert_degraded(&full_text, "no embedder configured");

    let short_cap = Profile {
        attempt_cap: Duration::from_millis(300),
        ..OPENAI_PROFILE
    };
    let wrong_dims = json!({"data": [{"index": 0, "embedding": vec![0.1_f32; DIMS - 1]}]});
    let cases: [(&str, ResponseTemplate, usize); 5] = [
        ("500", ResponseTemplate::new(500), 1),
        ("503 retried once", ResponseTemplate::new(503), 2),
        (
            "malformed",
            ResponseTemplate::new(200).set_body_string("{\"data\": 7"),
            1,
        ),
        (
            "wrong dimension",
            ResponseTemplate::new(200).set_body_json(wrong_dims),
            1,
        ),
        (
            "hang past the attempt cap",
            ResponseTemplate::new(200).set_delay(Duration::from_secs(5)),
            2,
        ),
    ];
    for (case, template, calls) in cases {
        stack.server.reset().await;
        stack.serve(template).await;
        let app = stack.app_with(stack.embedder(short_cap));
        let started = Instant::now();
        let reply = search_within(&app, "chargeback", Duration::from_secs(3)).await;
        assert_degraded(&reply, case);
        assert_eq!(
            ids(&reply),
            ids(&full_text),
            "{case}: the full-text ranking"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{case}: {:?}",
            started.elapsed()
        );
        assert_eq!(stack.requests().await, calls, "{case}: attempts");
    }

    // Nothing listening.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let mut config = stack.config(MODEL, OPENAI_PROFILE);
    config.url = format!("http://{closed}/v1");
    let unreachable = Embedder::new(
        &config,
        None,
        reqwest::Client::new(),
        Arc::new(StaticOverrides::default()),
    )
    .unwrap();
    let reply = post_json(
        &stack.app_with(Arc::new(unreachable)),
        SEARCH,
        &json!({"query": "chargeback"}),
    )
    .await;
    assert_degraded(&reply, "connection refused");
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after_when_the_deadline_allows() {
    let stack = Stack::embedded().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&stack.server)
        .await;
    stack.serve_fake().await;
    let started = Instant::now();
    let reply = search_within(&stack.app(), "chargeback", Duration::from_secs(4)).await;
    assert_hybrid(&reply, "429 then 200");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited Retry-After"
    );
    assert_eq!(stack.requests().await, 2);

    // A wait longer than the deadline leaves: no retry, degraded at once.
    stack.server.reset().await;
    stack
        .serve(ResponseTemplate::new(429).insert_header("retry-after", "30"))
        .await;
    let started = Instant::now();
    let reply = search_within(&stack.app(), "chargeback", Duration::from_secs(4)).await;
    assert_degraded(&reply, "429 with a long Retry-After");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(stack.requests().await, 1);
}

// Issue #33: the embeddings API's 429 with Retry-After holds every search on this instance
// until its time: full text at once, without calling the API; the first call after it is
// hybrid again.
#[tokio::test]
async fn a_429_holds_the_embeddings_api_for_every_search_until_its_retry_after() {
    let stack = Stack::embedded().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "2"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&stack.server)
        .await;
    stack.serve_fake().await;
    let app = stack.app();
    let told = Instant::now();
    // 1.5 s leaves no room to wait 2 s: the 429 is the answer, and the hold is set.
    let reply = search_within(&app, "chargeback", Duration::from_millis(1_500)).await;
    // The hold runs from when the 429 arrived: before this instant.
    let answered = Instant::now();
    assert_degraded(&reply, "429 with Retry-After: 2");
    for query in ["refund", "card fraud", "sanctions"] {
        let started = Instant::now();
        let reply = search_within(&app, query, Duration::from_secs(4)).await;
        assert_degraded(&reply, "held by the 429");
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "not waited on"
        );
    }
    assert!(
        told.elapsed() < Duration::from_secs(2),
        "the machine was too slow to check the hold"
    );
    assert_eq!(
        stack.requests().await,
        1,
        "held searches never reached the API"
    );
    tokio::time::sleep(Duration::from_secs(2).saturating_sub(answered.elapsed())).await;
    let reply = search_within(&app, "chargeback", Duration::from_secs(4)).await;
    assert_hybrid(&reply, "after the Retry-After");
    assert_eq!(stack.requests().await, 2);
}

#[tokio::test]
async fn too_little_time_left_skips_the_call() {
    let stack = Stack::embedded().await;
    stack.serve_fake().await;
    let mut config = stack.config(MODEL, OPENAI_PROFILE);
    // The shortest worthwhile attempt raised to 1 s, so 1 s left is too little for the
    // embeddings call and plenty for PostgreSQL.
    config.policy.retry.min_attempt = Duration::from_secs(1);
    let embedder = Embedder::new(
        &config,
        None,
        reqwest::Client::new(),
        Arc::new(StaticOverrides::default()),
    )
    .unwrap();
    let app = stack.app_with(Arc::new(embedder));
    let reply = search_within(&app, "chargeback", Duration::from_secs(1)).await;
    assert_degraded(&reply, "deadline");
    assert_eq!(stack.requests().await, 0);
    let reply = search_within(&app, "chargeback", Duration::from_secs(3)).await;
    assert_hybrid(&reply, "time enough");
}

#[tokio::test]
async fn the_openai_breaker_opens_and_the_override_forces_it() {
    let stack = Stack::embedded().await;
    stack.serve(ResponseTemplate::new(500)).await;
    let embedder = stack.embedder(OPENAI_PROFILE);
    let app = stack.app_with(embedder.clone());
    for _ in 0..6 {
        assert_degraded(
            &post_json(&app, SEARCH, &json!({"query": "fees"})).await,
            "500",
        );
    }
    assert_eq!(embedder.health().state.as_str(), "open");
    let before = stack.requests().await;
    assert_degraded(
        &post_json(&app, SEARCH, &json!({"query": "fees"})).await,
        "open",
    );
    assert_eq!(
        stack.requests().await,
        before,
        "an open breaker sends nothing"
    );
    assert_eq!(
        get(&app, "/v1/health").await.body["embedder"]["breaker"],
        "open"
    );

    // breaker#openai forced (SPEC §8): a healthy API is not called.
    stack.server.reset().await;
    stack.serve_fake().await;
    stack.overrides.force_open("openai", forced(None));
    let app = stack.app();
    let reply = post_json(&app, SEARCH, &json!({"query": "fees"})).await;
    assert_degraded(&reply, "forced open");
    assert_eq!(stack.requests().await, 0);
    stack.overrides.clear("openai");
    assert_hybrid(
        &post_json(&app, SEARCH, &json!({"query": "fees"})).await,
        "cleared",
    );
}

fn forced(expires_at: Option<i64>) -> ForcedOpen {
    ForcedOpen {
        reason: "test".to_owned(),
        set_by: "tester".to_owned(),
        set_at: 0,
        expires_at,
    }
}

#[tokio::test]
async fn breaker_postgres_refuses_data_endpoints_without_a_connection() {
    // A pool that could never connect: an answer that touched it would say retry_after_s 2.
    let pool =
        core_api::db::build_pool("postgres://postgres@127.0.0.1:1/none", &Default::default())
            .unwrap();
    let overrides = StaticOverrides::default();
    let app = router(AppState::new(pool).with_overrides(Arc::new(overrides.clone())));
    assert_eq!(
        get(&app, "/v1/transactions/txn_000001").await.body["error"]["retry_after_s"],
        2,
        "without the override PostgreSQL is tried"
    );
    let now_s = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap();
    overrides.force_open("postgres", forced(Some(now_s + 120)));
    let replies = [
        get(&app, "/v1/transactions/txn_000001").await,
        get(&app, "/v1/accounts/acc_0001/transactions").await,
        post_json(&app, SEARCH, &json!({"query": "fees"})).await,
        post_json(
            &app,
            "/v1/disputes",
            &json!({"transaction_id": "txn_000001", "reason": "x"}),
        )
        .await,
    ];
    for reply in replies {
        assert_eq!(
            reply.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            reply.body
        );
        assert_eq!(reply.code(), "dependency_unavailable");
        assert_eq!(reply.body["error"]["dependency"], "postgres");
        let retry = reply.body["error"]["retry_after_s"].as_u64().unwrap();
        assert!(
            (100..=120).contains(&retry),
            "the override's remaining time: {retry}"
        );
    }
    overrides.force_open("postgres", forced(None));
    let reply = get(&app, "/v1/transactions/txn_000001").await;
    assert_eq!(reply.body["error"]["retry_after_s"], 5);
    assert_eq!(get(&app, "/v1/nope").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn breaker_postgres_from_the_state_table() {
    let url = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        url.starts_with("http://127.0.0.1:") || url.starts_with("http://localhost:"),
        "AWS_ENDPOINT_URL must name the local emulator (scripts/test exports it): {url:?}"
    );
    let sdk = kosha_runtime::aws::sdk_config().await;
    let name = format!("core-api-test-{:016x}", rand::random::<u64>());
    let table = kosha_state::StateTable::from_sdk(&sdk, &name).unwrap();
    table.create_if_missing().await.unwrap();
    table
        .force_open_breaker("postgres", "drill", "tester", None, 0)
        .await
        .unwrap();
    let overrides = kosha_state::DynamoOverrides::new(
        table.clone(),
        kosha_state::OverrideSettings::default(),
        Arc::new(kosha_state::SystemClock),
    );
    let db = TestDb::seeded().await;
    let app = router(AppState::new(db.pool()).with_overrides(Arc::new(overrides)));
    let reply = get(&app, "/v1/transactions/txn_000001").await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.body
    );
    assert_eq!(reply.body["error"]["dependency"], "postgres");
    assert_eq!(get(&app, "/v1/health").await.status, StatusCode::OK);
    table.clear_breaker("postgres").await.unwrap();
    let _ = table
        .client()
        .delete_table()
        .table_name(table.name())
        .send()
        .await;
}

#[tokio::test]
async fn odd_queries_get_results_or_an_empty_list() {
    let stack = Stack::embedded().await;
    stack.serve_fake().await;
    let app = stack.app();
    let queries = [
        "x".to_owned(),
        "fees ".repeat(102) + "ab",
        "the and of to".to_owned(),
        "?!.,;:--".to_owned(),
        "💳🔒😀".to_owned(),
        "карта card カード بطاقة".to_owned(),
        "& | ! ( ) :*".to_owned(),
        "fraud & | !chargeback:* (refund".to_owned(),
    ];
    for query in queries {
        assert!(query.chars().count() <= 512);
        let reply = post_json(&app, SEARCH, &json!({"query": query})).await;
        assert_hybrid(&reply, &query);
        assert!(reply.body["results"].is_array());
    }
}

/// A verified `openai` chaos fault (SPEC §9) is injected inside the embeddings policy: an
/// `error` degrades the search without reaching the API (both attempts fail as a 503 would),
/// and the same app without the header ranks hybrid.
#[tokio::test]
async fn an_openai_chaos_fault_degrades_the_search_inside_the_policy() {
    let stack = Stack::embedded().await;
    stack.serve_fake().await;
    let app = router(
        AppState::new(stack.db.pool())
            .with_overrides(Arc::new(stack.overrides.clone()))
            .with_embedder(stack.embedder(OPENAI_PROFILE))
            .with_chaos(crate::chaos::verifier(true)),
    );
    let with_header = |h: String| {
        Request::builder()
            .method(Method::POST)
            .uri(SEARCH)
            .header(header::CONTENT_TYPE, "application/json")
            .header("x-kosha-chaos", h)
            .body(Body::from(json!({"query": "chargeback"}).to_string()))
            .unwrap()
    };
    let error = crate::chaos::header(Target::OpenAi, Fault::Error, None);
    assert_degraded(&send(&app, with_header(error)).await, "openai error fault");
    assert_eq!(
        stack.requests().await,
        0,
        "the fault stands in for the call"
    );

    // Latency is slept inside the attempt, then the call is made.
    let latency = crate::chaos::header(Target::OpenAi, Fault::Latency, Some(200));
    let started = Instant::now();
    assert_hybrid(
        &send(&app, with_header(latency)).await,
        "openai latency fault",
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_hybrid(
        &post_json(&app, SEARCH, &json!({"query": "chargeback"})).await,
        "no header",
    );
}
