//! `screen_entity` and `get_screening_result` in process (SPEC §4, §10; issue 12): a
//! synchronous answer is stored and read back; screening-sim down defers (item + queue
//! message) and, once the breaker is open, answers in well under 200 ms; when recording fails
//! too — DynamoDB unreachable, or the queue refusing the message — the answer is
//! `dependency_unavailable` and nothing is left half-recorded; malformed ids are
//! `invalid_argument`, unknown ones `not_found`.
//!
//! The tests that record use the AWS emulator (`AWS_ENDPOINT_URL`, started by scripts/test);
//! screening-sim is a wiremock fake or a closed port.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use common::{agent_call, config, gateway_with, gateway_with_overrides, json_body, tool_error};
use kosha_resilience::overrides::{ForcedOpen, StaticOverrides};
use kosha_state::StateTable;
use mcp_gateway::backends::screening::Screenings;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A port nothing listens on (connections are refused at once).
const CLOSED: &str = "http://127.0.0.1:9";

fn emulator() -> String {
    let url = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        url.starts_with("http://127.0.0.1:") || url.starts_with("http://localhost:"),
        "AWS_ENDPOINT_URL must name the local emulator (export AWS_ENDPOINT_URL=$(scripts/moto start)); got {url:?}"
    );
    url
}

fn clients(endpoint: &str) -> (aws_sdk_dynamodb::Client, aws_sdk_sqs::Client) {
    let creds = Credentials::new("test", "test", None, None, "gateway-tests");
    let ddb = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(creds.clone())
        .build();
    let sqs = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .credentials_provider(creds)
        .build();
    (
        aws_sdk_dynamodb::Client::from_conf(ddb),
        aws_sdk_sqs::Client::from_conf(sqs),
    )
}

/// A fresh table and queue in the emulator.
async fn recorded() -> (StateTable, aws_sdk_sqs::Client, String) {
    let (ddb, sqs) = clients(&emulator());
    let name = format!("gw-screening-{:016x}", rand::random::<u64>());
    let table = StateTable::new(ddb, &name).unwrap();
    table.create_if_missing().await.unwrap();
    let queue = sqs.create_queue().queue_name(&name).send().await.unwrap();
    (table, sqs, queue.queue_url().unwrap().to_owned())
}

fn app(sim_url: &str, screenings: Screenings) -> axum::Router {
    let mut cfg = config("http://127.0.0.1:9", 64);
    cfg.screening.url = sim_url.to_owned();
    let gateway = gateway_with(cfg, 10_000.0).with_screenings(screenings);
    mcp_gateway::http::router(Arc::new(gateway))
}

async fn structured(app: &axum::Router, name: &str, args: Value) -> Value {
    json_body(agent_call(app, 1, name, args).await).await
}

async fn screening_items(table: &StateTable) -> usize {
    let out = table
        .client()
        .scan()
        .table_name(table.name())
        .send()
        .await
        .unwrap();
    out.items()
        .iter()
        .filter(|i| {
            i.get("pk")
                .and_then(|v| v.as_s().ok())
                .is_some_and(|pk| pk.starts_with("screening#"))
        })
        .count()
}

#[tokio::test]
async fn a_synchronous_answer_is_stored_and_read_back() {
    let sim = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/screen"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "status": "potential_match",
            "matches": [{"list_entry_id": "wl_00042", "name": "Viktor Petrov", "score": 0.93}]
        })))
        .mount(&sim)
        .await;
    let (table, sqs, queue) = recorded().await;
    let app = app(&sim.uri(), Screenings::new(table, sqs, Some(queue)));
    let body = structured(
        &app,
        "screen_entity",
        json!({"name": "Petrov, Viktor", "country": "RU"}),
    )
    .await;
    let out = &body["result"]["structuredContent"];
    assert_eq!(out["status"], "potential_match", "{body}");
    assert_eq!(out["matches"][0]["list_entry_id"], "wl_00042");
    assert!(out.get("retry_after_s").is_none());
    let id = out["screening_id"].as_str().unwrap().to_owned();
    assert!(kosha_contract::ids::SCREENING.matches(&id), "{id}");

    let read = structured(&app, "get_screening_result", json!({"screening_id": id})).await;
    let got = &read["result"]["structuredContent"];
    assert_eq!(got["status"], "potential_match", "{read}");
    assert_eq!(got["matches"], out["matches"]);

    // Issue #30: another client gets the answer an unknown id gets (SPEC §4).
    let other = common::token("agent-b", &[kosha_auth::Role::Agent]);
    let resp = tower::ServiceExt::oneshot(
        app.clone(),
        common::tools_call(
            2,
            &other,
            "get_screening_result",
            json!({"screening_id": id}),
        ),
    )
    .await
    .unwrap();
    let body = json_body(resp).await;
    assert_eq!(tool_error(&body)["code"], "not_found", "{body}");
}

/// A `clear` screening of a new id, as stored without an owner.
fn clear_screening() -> kosha_state::screening::ScreeningItem {
    let id = format!("scr_{}", ulid::Ulid::new());
    let request = kosha_contract::screening::ScreenRequest {
        name: "Hiroshi Tanaka".into(),
        country: None,
        date_of_birth: None,
    };
    let done = kosha_state::screening::ScreeningState::Done(
        serde_json::from_value(json!({"status": "clear", "matches": []})).unwrap(),
    );
    kosha_state::screening::ScreeningItem::new(id, request, done, 1_900_000_000)
}

/// Issue #30: a screening stored before owners were recorded (no `client_id`) is nobody's.
#[tokio::test]
async fn a_screening_without_an_owner_is_not_found() {
    let (table, sqs, queue) = recorded().await;
    let item = clear_screening();
    let id = item.id.clone();
    table.put_screening(&item).await.unwrap();
    let app = app(CLOSED, Screenings::new(table, sqs, Some(queue)));
    let read = structured(&app, "get_screening_result", json!({"screening_id": id})).await;
    assert_eq!(tool_error(&read)["code"], "not_found", "{read}");
}

/// `name(args)` with the bearer `token`; the JSON-RPC answer.
async fn structured_as(app: &axum::Router, token: &str, name: &str, args: Value) -> Value {
    let request = common::tools_call(2, token, name, args);
    json_body(
        tower::ServiceExt::oneshot(app.clone(), request)
            .await
            .unwrap(),
    )
    .await
}

/// Issue 44: each user of one app client reads their own screening; the other gets
/// `not_found`.
#[tokio::test]
async fn a_screening_is_read_by_the_user_who_asked_for_it_only() {
    let sim = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/screen"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"status": "clear", "matches": []})),
        )
        .mount(&sim)
        .await;
    let (table, sqs, queue) = recorded().await;
    let app = app(&sim.uri(), Screenings::new(table, sqs, Some(queue)));
    let (alice, bob) = (
        common::user_token("agent-b", "sub-alice"),
        common::user_token("agent-b", "sub-bob"),
    );
    let mut ids = Vec::new();
    for token in [&alice, &bob] {
        let screened =
            structured_as(&app, token, "screen_entity", json!({"name": "Jane Roe"})).await;
        let id = screened["result"]["structuredContent"]["screening_id"].clone();
        assert!(id.is_string(), "{screened}");
        ids.push(id);
    }
    for (reader, own, other) in [(&alice, &ids[0], &ids[1]), (&bob, &ids[1], &ids[0])] {
        let read = structured_as(
            &app,
            reader,
            "get_screening_result",
            json!({"screening_id": own}),
        )
        .await;
        assert_eq!(
            read["result"]["structuredContent"]["status"], "clear",
            "{read}"
        );
        let read = structured_as(
            &app,
            reader,
            "get_screening_result",
            json!({"screening_id": other}),
        )
        .await;
        assert_eq!(tool_error(&read)["code"], "not_found", "{read}");
    }
}

/// Issue 44: a screening stored before users were recorded (a `client_id`, no `user`) is its
/// client's own: its machine client reads it, a user of that client does not.
#[tokio::test]
async fn a_screening_without_a_user_is_its_clients_own() {
    let (table, sqs, queue) = recorded().await;
    let item = clear_screening().owned_by(Some("agent-b"), None);
    let id = item.id.clone();
    table.put_screening(&item).await.unwrap();
    let app = app(CLOSED, Screenings::new(table, sqs, Some(queue)));
    let machine = common::machine_token("agent-b", &["kosha/agent"]);
    let args = json!({"screening_id": id});
    let read = structured_as(&app, &machine, "get_screening_result", args.clone()).await;
    assert_eq!(
        read["result"]["structuredContent"]["status"], "clear",
        "{read}"
    );
    let user = common::user_token("agent-b", "sub-alice");
    let read = structured_as(&app, &user, "get_screening_result", args).await;
    assert_eq!(tool_error(&read)["code"], "not_found", "{read}");
}

#[tokio::test]
async fn sim_down_defers_fast_once_the_breaker_is_open_and_the_item_is_pending() {
    let (table, sqs, queue) = recorded().await;
    // The gateway's own way: its SQS client built from the SDK config on the first deferral.
    let sdk = kosha_runtime::aws::sdk_config().await;
    let app = app(
        CLOSED,
        Screenings::from_sdk(table.clone(), &sdk, Some(queue.clone())),
    );
    let mut ids = Vec::new();
    let mut last_ms = u128::MAX;
    for i in 0..8 {
        let started = tokio::time::Instant::now();
        let body = structured(
            &app,
            "screen_entity",
            json!({"name": format!("Jane Example {i}")}),
        )
        .await;
        last_ms = started.elapsed().as_millis();
        let out = &body["result"]["structuredContent"];
        assert_eq!(out["status"], "deferred", "{body}");
        assert!(out["retry_after_s"].as_u64().unwrap() >= 5);
        assert_eq!(out["matches"], json!([]));
        ids.push(out["screening_id"].as_str().unwrap().to_owned());
    }
    eprintln!("deferral with the breaker open: {last_ms} ms");
    assert!(
        last_ms < 200,
        "a deferral with the breaker open took {last_ms} ms"
    );
    // Every deferral is a pending item and a message naming it.
    assert_eq!(screening_items(&table).await, ids.len());
    let pending = structured(
        &app,
        "get_screening_result",
        json!({"screening_id": ids[0]}),
    )
    .await;
    let got = &pending["result"]["structuredContent"];
    assert_eq!(got["status"], "pending", "{pending}");
    assert_eq!(got["retry_after_s"], 5);
    let mut queued = Vec::new();
    while queued.len() < ids.len() {
        let out = sqs
            .receive_message()
            .queue_url(&queue)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap();
        let batch = out.messages();
        assert!(
            !batch.is_empty(),
            "only {} of {} queued",
            queued.len(),
            ids.len()
        );
        for m in batch {
            let v: Value = serde_json::from_str(m.body().unwrap()).unwrap();
            queued.push(v["screening_id"].as_str().unwrap().to_owned());
        }
    }
    queued.sort();
    ids.sort();
    assert_eq!(queued, ids);
}

#[tokio::test]
async fn a_forced_open_override_defers_without_calling_the_sim() {
    let sim = MockServer::start().await;
    let (table, sqs, queue) = recorded().await;
    let overrides = StaticOverrides::default();
    overrides.force_open(
        "screening-sim",
        ForcedOpen {
            reason: "vendor maintenance".into(),
            set_by: "ops".into(),
            set_at: 0,
            expires_at: None,
        },
    );
    let mut cfg = config("http://127.0.0.1:9", 64);
    cfg.screening.url = sim.uri();
    let gateway = gateway_with_overrides(cfg, 10_000.0, Arc::new(overrides))
        .with_screenings(Screenings::new(table.clone(), sqs, Some(queue)));
    let app = mcp_gateway::http::router(Arc::new(gateway));
    let body = structured(&app, "screen_entity", json!({"name": "Jane Example"})).await;
    let out = &body["result"]["structuredContent"];
    assert_eq!(out["status"], "deferred", "{body}");
    assert_eq!(
        out["retry_after_s"], 5,
        "no expiry: the override is re-read every 5 s"
    );
    assert_eq!(screening_items(&table).await, 1);
    assert!(
        sim.received_requests().await.unwrap().is_empty(),
        "breaker#screening-sim honoured"
    );
}

#[tokio::test]
async fn dynamodb_down_while_the_sim_is_down_is_dependency_unavailable() {
    let (ddb, sqs) = clients(CLOSED);
    let table = StateTable::new(ddb, "kosha-state")
        .unwrap()
        .single_attempt();
    let app = app(
        CLOSED,
        Screenings::new(table, sqs, Some(format!("{CLOSED}/000/q"))),
    );
    let started = tokio::time::Instant::now();
    let body = structured(&app, "screen_entity", json!({"name": "Jane Example"})).await;
    let e = tool_error(&body);
    assert_eq!(e["code"], "dependency_unavailable", "{body}");
    assert_eq!(e["dependency"], "screening-sim");
    assert!(e["retry_after_s"].as_u64().unwrap() >= 5);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "within the 5 s budget"
    );
    let read = structured(
        &app,
        "get_screening_result",
        json!({"screening_id": "scr_01JDX6Q0Z8K2M3N4P5Q6R7S8T9"}),
    )
    .await;
    assert_eq!(
        tool_error(&read)["code"],
        "dependency_unavailable",
        "{read}"
    );
}

#[tokio::test]
async fn a_queue_that_refuses_the_message_leaves_no_item_behind() {
    let (table, sqs, queue) = recorded().await;
    let missing = format!("{}-missing", queue);
    let app = app(CLOSED, Screenings::new(table.clone(), sqs, Some(missing)));
    let body = structured(&app, "screen_entity", json!({"name": "Jane Example"})).await;
    let e = tool_error(&body);
    assert_eq!(e["code"], "dependency_unavailable", "{body}");
    assert_eq!(
        screening_items(&table).await,
        0,
        "the pending item was undone"
    );
}

#[tokio::test]
async fn screening_ids_are_checked_and_unknown_ones_are_not_found() {
    let (table, sqs, queue) = recorded().await;
    let app = app(CLOSED, Screenings::new(table, sqs, Some(queue)));
    for bad in [
        json!("scr_1"),
        json!("scr_01jdx6q0z8k2m3n4p5q6r7s8t9"),
        json!("scr_01JDX6Q0Z8K2M3N4P5Q6R7S8TI"),
        json!("scr_81JDX6Q0Z8K2M3N4P5Q6R7S8T9"),
        json!("dsp_01JDX6Q0Z8K2M3N4P5Q6R7S8T9"),
        json!("scr_01JDX6Q0Z8K2M3N4P5Q6R7S8T9 "),
        json!(""),
        json!(42),
    ] {
        let body = structured(&app, "get_screening_result", json!({"screening_id": bad})).await;
        let e = tool_error(&body);
        assert_eq!(e["code"], "invalid_argument", "{bad}: {body}");
        assert!(
            e["message"].as_str().unwrap().contains("screening_id"),
            "{body}"
        );
    }
    let body = structured(
        &app,
        "get_screening_result",
        json!({"screening_id": "scr_01JDX6Q0Z8K2M3N4P5Q6R7S8T9"}),
    )
    .await;
    assert_eq!(tool_error(&body)["code"], "not_found", "{body}");
}

#[tokio::test]
async fn screen_entity_arguments_are_checked_before_any_call() {
    let app = app(
        CLOSED,
        Screenings::new(
            StateTable::new(clients(CLOSED).0, "kosha-state").unwrap(),
            clients(CLOSED).1,
            None,
        ),
    );
    for (args, field) in [
        (json!({"name": ""}), "name"),
        (json!({"name": "x".repeat(201)}), "name"),
        (json!({"name": "   "}), "name"),
        (json!({"name": "John\u{0}Smith"}), "name"),
        (json!({"name": "John Smith", "country": "GBR"}), "country"),
        (
            json!({"name": "John Smith", "date_of_birth": "2023-02-30"}),
            "date_of_birth",
        ),
        (json!({"name": "John Smith", "nickname": "JS"}), "nickname"),
    ] {
        let body = structured(&app, "screen_entity", args.clone()).await;
        let e = tool_error(&body);
        assert_eq!(e["code"], "invalid_argument", "{args}: {body}");
        assert!(
            e["message"].as_str().unwrap().contains(field),
            "{args}: {body}"
        );
    }
}

/// A DynamoDB that accepts connections and never answers (issue #30); the listener lives as
/// long as the returned task.
async fn hung_dynamodb() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (url, task)
}

/// Issue #30: with DynamoDB hanging, a synchronous screening waited on its store for its
/// whole 5 s budget, and `get_screening_result` for its whole 3 s.
#[tokio::test]
async fn a_hanging_dynamodb_costs_a_screening_its_bounded_store_wait_only() {
    let sim = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/screen"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "status": "clear",
            "matches": []
        })))
        .mount(&sim)
        .await;
    let (hung, _task) = hung_dynamodb().await;
    let (ddb, sqs) = clients(&hung);
    let table = StateTable::new(ddb, "kosha-state").unwrap();
    let app = app(
        &sim.uri(),
        Screenings::new(table, sqs, Some(format!("{hung}/000/q"))),
    );
    let started = tokio::time::Instant::now();
    let body = structured(&app, "screen_entity", json!({"name": "Hiroshi Tanaka"})).await;
    let took = started.elapsed();
    let out = &body["result"]["structuredContent"];
    assert_eq!(out["status"], "clear", "{body}");
    let id = out["screening_id"].as_str().unwrap().to_owned();
    assert!(kosha_contract::ids::SCREENING.matches(&id), "{id}");
    assert!(
        took < Duration::from_millis(1_000),
        "answered after {took:?}; the store waits 100 ms"
    );

    let started = tokio::time::Instant::now();
    let read = structured(&app, "get_screening_result", json!({"screening_id": id})).await;
    let took = started.elapsed();
    let error = tool_error(&read);
    assert_eq!(error["code"], "dependency_unavailable", "{read}");
    assert!(error["retry_after_s"].as_u64().is_some(), "{read}");
    assert!(
        took < Duration::from_millis(2_000),
        "answered after {took:?}; the budget is 3 s"
    );
}
