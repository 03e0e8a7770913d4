//! An in-process stand-in for DynamoDB's token-bucket writes, for tests on tokio's paused
//! clock (the emulator is a network service: on a paused clock every call timeout would fire
//! at once). It keeps `rl#*` items and answers the two writes `DynamoRateLimiter` makes with
//! DynamoDB's semantics:
//! - `PutItem` conditional on `attribute_not_exists(pk)`, on `updated_at = :seen`, or on
//!   nothing, each optionally `OR (tokens >= :full AND updated_at <= :quiet)`; a failed
//!   condition is `ConditionalCheckFailedException` with the item;
//! - `UpdateItem` `tokens = tokens − :need, updated_at = updated_at + :one` conditional on
//!   `tokens >= :need`, returning the new item (or the old one on a failed condition);
//! - `GetItem` of an `rl#*` item (the limiter reads first on a cold or contended cache).
//!
//! Every request is counted by operation, and each answer takes `latency` of tokio's time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::http::{HttpRequest, HttpResponse};
use aws_sdk_dynamodb::config::{
    BehaviorVersion, Credentials, HttpClient, Region, RuntimeComponents, SharedHttpClient,
};
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use kosha_state::{BucketKey, StateTable};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

/// What the fake holds and has been asked.
#[derive(Debug, Default)]
pub struct FakeState {
    /// Items by `pk`, in DynamoDB's JSON (`{"tokens": {"N": "19"}, …}`).
    pub items: HashMap<String, Map<String, Value>>,
    /// `PutItem` requests.
    pub puts: usize,
    /// `UpdateItem` requests.
    pub updates: usize,
    /// `GetItem` requests, by the [`FakeBuckets::named`] name of the stand-in that sent them.
    pub reads_by: HashMap<&'static str, usize>,
    /// `PutItem`s that held on the full-bucket condition alone (a stale or no cached item).
    pub full_writes: usize,
    /// `PutItem`s whose condition failed, by the [`FakeBuckets::named`] name of the
    /// stand-in (the instance) that sent them ("" unnamed).
    pub failed_puts_by: HashMap<&'static str, usize>,
    /// While set, every request is answered 500 (`InternalServerError`), and counted in
    /// `failed_requests` only.
    pub failing: bool,
    /// Requests answered 500 while `failing`.
    pub failed_requests: usize,
    /// While set, every `GetItem` is answered 500 (writes still work), and counted in
    /// `failed_requests` only.
    pub failing_reads: bool,
}

impl FakeState {
    /// `PutItem`s whose condition failed, whoever sent them.
    pub fn failed_puts(&self) -> usize {
        self.failed_puts_by.values().sum()
    }

    /// `GetItem`s, whoever sent them.
    pub fn reads(&self) -> usize {
        self.reads_by.values().sum()
    }
}

/// The full-bucket half of a widened `PutItem` condition.
const FULL: &str = "(tokens >= :full AND updated_at <= :quiet)";

/// The stand-in; clones share state.
#[derive(Debug, Clone, Default)]
pub struct FakeBuckets {
    pub state: Arc<Mutex<FakeState>>,
    pub latency: Duration,
    /// Which instance sends through this stand-in (`FakeState::failed_puts_by`).
    pub name: &'static str,
}

impl FakeBuckets {
    /// A fake answering after `latency`.
    pub fn new(latency: Duration) -> Self {
        Self {
            state: Arc::default(),
            latency,
            name: "",
        }
    }

    /// The same fake (shared state) for the instance `name`.
    pub fn named(&self, name: &'static str) -> Self {
        Self {
            name,
            ..self.clone()
        }
    }

    /// Writes made so far (`PutItem` + `UpdateItem`).
    pub fn writes(&self) -> usize {
        let s = self.state.lock();
        s.puts + s.updates
    }

    /// The stored `tokens` of `rl#<client>`.
    pub fn tokens(&self, client: &str) -> f64 {
        let s = self.state.lock();
        num(&s.items[BucketKey::client(client).as_str()], "tokens")
    }

    /// A state table whose DynamoDB client talks to this fake.
    pub fn table(&self) -> StateTable {
        let conf = aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "kosha-tests"))
            .endpoint_url("http://127.0.0.1:9")
            .http_client(SharedHttpClient::new(self.clone()))
            .build();
        StateTable::new(aws_sdk_dynamodb::Client::from_conf(conf), "kosha-state").unwrap()
    }

    fn answer(&self, target: &str, body: &Value) -> (u16, Value) {
        let mut s = self.state.lock();
        if s.failing || (s.failing_reads && target.ends_with("GetItem")) {
            s.failed_requests += 1;
            return (
                500,
                json!({"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "fake outage"}),
            );
        }
        let values = body["ExpressionAttributeValues"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let condition = body["ConditionExpression"].as_str().unwrap_or("");
        if target.ends_with("PutItem") {
            s.puts += 1;
            let item = body["Item"].as_object().unwrap().clone();
            let pk = item["pk"]["S"].as_str().unwrap().to_owned();
            let current = s.items.get(&pk).cloned();
            // `EXACT` or `EXACT OR (tokens >= :full AND updated_at <= :quiet)`.
            let (exact, full) = match condition.split_once(" OR ") {
                Some((exact, FULL)) => (exact, true),
                Some((_, other)) => panic!("unexpected condition {other}"),
                None => (condition, false),
            };
            let exact_holds = match exact {
                "" => true,
                "attribute_not_exists(pk)" => current.is_none(),
                "updated_at = :seen" => current
                    .as_ref()
                    .is_some_and(|c| num(c, "updated_at") == num(&values, ":seen")),
                other => panic!("unexpected condition {other}"),
            };
            let full_holds = full
                && current.as_ref().is_some_and(|c| {
                    num(c, "tokens") >= num(&values, ":full")
                        && num(c, "updated_at") <= num(&values, ":quiet")
                });
            if full_holds && !exact_holds {
                s.full_writes += 1;
            }
            let holds = exact_holds || full_holds;
            if !holds {
                *s.failed_puts_by.entry(self.name).or_default() += 1;
                return conditional_failure(current);
            }
            s.items.insert(pk, item);
            (200, json!({}))
        } else if target.ends_with("UpdateItem") {
            s.updates += 1;
            let pk = body["Key"]["pk"]["S"].as_str().unwrap().to_owned();
            let current = s.items.get(&pk).cloned();
            let need = num(&values, ":need");
            let Some(mut item) = current.clone().filter(|c| num(c, "tokens") >= need) else {
                return conditional_failure(current);
            };
            let tokens = num(&item, "tokens") - need;
            let updated = num(&item, "updated_at") + num(&values, ":one");
            item.insert("tokens".into(), json!({"N": tokens.to_string()}));
            item.insert(
                "updated_at".into(),
                json!({"N": (updated as i64).to_string()}),
            );
            item.insert("expires_at".into(), values[":exp"].clone());
            s.items.insert(pk, item.clone());
            (200, json!({"Attributes": item}))
        } else if target.ends_with("GetItem") {
            assert_eq!(
                body["ConsistentRead"], true,
                "an eventually consistent read"
            );
            *s.reads_by.entry(self.name).or_default() += 1;
            let pk = body["Key"]["pk"]["S"].as_str().unwrap();
            match s.items.get(pk) {
                Some(item) => (200, json!({"Item": item})),
                None => (200, json!({})),
            }
        } else {
            panic!("unexpected operation {target}")
        }
    }
}

fn num(item: &Map<String, Value>, key: &str) -> f64 {
    item[key]["N"].as_str().unwrap().parse().unwrap()
}

fn conditional_failure(current: Option<Map<String, Value>>) -> (u16, Value) {
    let mut body = json!({
        "__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
        "message": "The conditional request failed",
    });
    if let Some(item) = current {
        body["Item"] = Value::Object(item);
    }
    (400, body)
}

impl HttpConnector for FakeBuckets {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let target = request
            .headers()
            .get("x-amz-target")
            .unwrap_or_default()
            .to_owned();
        let body: Value = serde_json::from_slice(request.body().bytes().unwrap_or(b"{}")).unwrap();
        let (status, answer) = self.answer(&target, &body);
        let latency = self.latency;
        HttpConnectorFuture::new(async move {
            tokio::time::sleep(latency).await;
            let mut resp = HttpResponse::new(
                StatusCode::try_from(status).unwrap(),
                SdkBody::from(answer.to_string()),
            );
            resp.headers_mut()
                .insert("content-type", "application/x-amz-json-1.0");
            Ok(resp)
        })
    }
}

impl HttpClient for FakeBuckets {
    fn http_connector(
        &self,
        _settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(self.clone())
    }
}
