//! kosha-ops against the AWS emulator: exit codes, JSON lines, bootstrap (SPEC §11).
//!
//! Needs `AWS_ENDPOINT_URL` pointing at the emulator (`export AWS_ENDPOINT_URL=$(scripts/moto
//! start)`; scripts/test does it). Each test uses its own table and secret names.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::process::{Command, Output};

use serde_json::Value;

use common::{stderr, stdout};

fn endpoint() -> String {
    let url = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        url.starts_with("http://127.0.0.1:") || url.starts_with("http://localhost:"),
        "AWS_ENDPOINT_URL must point at the local emulator: export AWS_ENDPOINT_URL=$(scripts/moto start)"
    );
    url
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{:016x}", rand::random::<u64>())
}

/// The binary with the emulator's environment, table `table`, secret `secret`.
fn ops(table: &str, secret: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kosha-ops"));
    cmd.env("AWS_ENDPOINT_URL", endpoint())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("KOSHA_STATE_TABLE", table)
        .env("KOSHA_CHAOS_SECRET_ID", secret)
        .env("KOSHA_CONFIRM_SECRET_ID", confirm_secret(secret))
        .env_remove("KOSHA_CHAOS_KEY");
    cmd
}

/// The confirmation secret of a test whose chaos secret is `secret`.
fn confirm_secret(secret: &str) -> String {
    format!("{secret}/confirm")
}

/// The `SecretString` of secret `id` in the emulator.
async fn secret_value(id: &str) -> String {
    aws_sdk_secretsmanager::Client::new(&emulator_sdk().await)
        .get_secret_value()
        .secret_id(id)
        .send()
        .await
        .unwrap()
        .secret_string()
        .unwrap()
        .to_owned()
}

fn run(cmd: &mut Command, args: &[&str]) -> Output {
    cmd.args(args).output().unwrap()
}

/// Exit `code`, nothing on stdout, exactly one line on stderr.
fn assert_refused(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "stderr: {}", stderr(o));
    assert_eq!(stdout(o), "");
    assert_eq!(stderr(o).lines().count(), 1, "one line: {:?}", stderr(o));
}

fn json_lines(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// An SDK config for the emulator, to look at what the CLI wrote.
async fn emulator_sdk() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .load()
        .await
}

fn bootstrap(table: &str, secret: &str) -> String {
    let o = run(&mut ops(table, secret), &["bootstrap"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    stdout(&o)
}

#[tokio::test]
async fn bootstrap_is_idempotent_and_prints_the_stack_env() {
    let (table, secret) = (unique("kosha-ops-test"), unique("kosha/chaos"));
    let first = bootstrap(&table, &secret);
    let confirm_key = secret_value(&confirm_secret(&secret)).await;
    let second = bootstrap(&table, &secret);
    assert_eq!(first, second, "same resources, same key");
    assert_eq!(
        secret_value(&confirm_secret(&secret)).await,
        confirm_key,
        "the confirmation key is kept, not rotated"
    );
    assert_eq!(confirm_key.len(), 64);
    assert!(
        confirm_key
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    assert!(
        !first.contains(&confirm_key),
        "the confirmation key is never printed"
    );
    let vars: std::collections::HashMap<&str, &str> =
        first.lines().filter_map(|l| l.split_once('=')).collect();
    assert_eq!(vars["KOSHA_STATE_TABLE"], table);
    assert_eq!(vars["KOSHA_CHAOS_SECRET_ID"], secret);
    assert_eq!(vars["KOSHA_CONFIRM_SECRET_ID"], confirm_secret(&secret));
    let key = vars["KOSHA_CHAOS_KEY"];
    assert_eq!(key.len(), 64);
    assert!(
        key.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    for k in [
        "KOSHA_EVENTS_QUEUE_URL",
        "KOSHA_EVENTS_DLQ_URL",
        "KOSHA_SCREENING_QUEUE_URL",
        "KOSHA_SCREENING_DLQ_URL",
    ] {
        assert!(vars[k].starts_with("http"), "{k}");
    }
    assert_eq!(first.lines().count(), 8);

    // What was created: TTL on expires_at, redrive after 5 receives.
    let sdk = emulator_sdk().await;
    let ttl = aws_sdk_dynamodb::Client::new(&sdk)
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let ttl = ttl.time_to_live_description().unwrap();
    assert_eq!(ttl.attribute_name(), Some("expires_at"));
    let attrs = aws_sdk_sqs::Client::new(&sdk)
        .get_queue_attributes()
        .queue_url(vars["KOSHA_SCREENING_QUEUE_URL"])
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy)
        .send()
        .await
        .unwrap();
    let redrive =
        &attrs.attributes().unwrap()[&aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy];
    let redrive: Value = serde_json::from_str(redrive).unwrap();
    assert_eq!(
        redrive["maxReceiveCount"].to_string().trim_matches('"'),
        "1000",
        "a 6-hour screening-sim outage sends nothing to the DLQ"
    );
    assert!(
        redrive["deadLetterTargetArn"]
            .as_str()
            .unwrap()
            .ends_with("kosha-screening-requests-dlq")
    );
}

fn chaos_key(bootstrap_stdout: &str) -> String {
    bootstrap_stdout
        .lines()
        .find_map(|l| l.strip_prefix("KOSHA_CHAOS_KEY="))
        .expect("KOSHA_CHAOS_KEY line")
        .to_owned()
}

async fn secrets_client() -> aws_sdk_secretsmanager::Client {
    aws_sdk_secretsmanager::Client::new(&emulator_sdk().await)
}

/// The emulator restarting (a dev stack's `scripts/moto stop; start`, or the e2e fail-open
/// test) loses the secret; bootstrap then recreates it with the key the stack already uses
/// (`KOSHA_CHAOS_KEY` from its stack.env), so stack.env stays right. An existing secret is
/// never rotated.
#[tokio::test]
async fn bootstrap_keeps_the_stacks_chaos_key_when_the_secret_was_lost() {
    let (table, secret) = (unique("kosha-ops-test"), unique("kosha/chaos"));
    let first = chaos_key(&bootstrap(&table, &secret));
    let secrets = secrets_client().await;
    secrets
        .delete_secret()
        .secret_id(&secret)
        .force_delete_without_recovery(true)
        .send()
        .await
        .unwrap();

    let mut cmd = ops(&table, &secret);
    cmd.env("KOSHA_CHAOS_KEY", &first);
    let again = run(&mut cmd, &["bootstrap"]);
    assert_eq!(again.status.code(), Some(0), "stderr: {}", stderr(&again));
    assert_eq!(
        chaos_key(&stdout(&again)),
        first,
        "recreated with the stack's key"
    );
    let stored = secrets
        .get_secret_value()
        .secret_id(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(stored.secret_string(), Some(first.as_str()));

    // A different key in the environment does not rotate the existing secret.
    let other = "ab".repeat(32);
    let mut cmd = ops(&table, &secret);
    cmd.env("KOSHA_CHAOS_KEY", &other);
    let kept = run(&mut cmd, &["bootstrap"]);
    assert_eq!(kept.status.code(), Some(0), "stderr: {}", stderr(&kept));
    assert_eq!(chaos_key(&stdout(&kept)), first);
    let warning = stderr(&kept);
    assert_eq!(warning.lines().count(), 1, "{warning}");
    assert!(warning.contains("KOSHA_CHAOS_KEY"), "{warning}");
    assert!(
        !warning.contains(&other) && !warning.contains(&first),
        "no key in {warning}"
    );

    // A malformed key is refused before anything is created, without echoing it.
    let (table, secret) = (unique("kosha-ops-test"), unique("kosha/chaos"));
    let mut cmd = ops(&table, &secret);
    cmd.env("KOSHA_CHAOS_KEY", "not-hex-secret");
    let o = run(&mut cmd, &["bootstrap"]);
    assert_refused(&o, 2);
    assert!(stderr(&o).contains("KOSHA_CHAOS_KEY"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("not-hex-secret"), "{}", stderr(&o));
}

/// `chaos sign` without `KOSHA_CHAOS_KEY` reads the key from the secret bootstrap made; a
/// secret that does not exist is a failure (exit 1), not a header signed with nothing.
#[test]
fn chaos_sign_reads_the_key_from_secrets_manager() {
    let (table, secret) = (unique("kosha-ops-test"), unique("kosha/chaos"));
    let key = hex::decode(chaos_key(&bootstrap(&table, &secret))).unwrap();
    let args = [
        "chaos", "sign", "--target", "openai", "--fault", "error", "--p", "0.5", "--ttl", "60s",
    ];
    let o = run(&mut ops(&table, &secret), &args);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let line = stdout(&o);
    assert_eq!(line.lines().count(), 1, "{line}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let spec = kosha_resilience::chaos::verify(line.trim_end().as_bytes(), &key, now).unwrap();
    assert_eq!(
        (spec.target().as_str(), spec.fault().as_str(), spec.p()),
        ("openai", "error", 0.5)
    );

    let missing = unique("kosha/no-such-secret");
    let o = run(&mut ops(&table, &missing), &args);
    assert_refused(&o, 1);
    assert!(stderr(&o).contains(&missing), "{}", stderr(&o));
}

#[test]
fn bootstrap_refuses_a_real_endpoint_without_yes() {
    let mut cmd = ops("kosha-state", "kosha/chaos-hmac-key");
    cmd.env(
        "AWS_ENDPOINT_URL",
        "https://dynamodb.us-east-1.amazonaws.com",
    );
    let o = run(&mut cmd, &["bootstrap"]);
    assert_refused(&o, 2);
    assert!(stderr(&o).contains("--yes"), "{}", stderr(&o));

    let mut cmd = ops("kosha-state", "kosha/chaos-hmac-key");
    cmd.env_remove("AWS_ENDPOINT_URL");
    assert_refused(&run(&mut cmd, &["bootstrap"]), 2);
}

#[test]
fn breaker_force_open_list_and_clear() {
    let (table, secret) = (unique("kosha-ops-test"), unique("kosha/chaos"));
    bootstrap(&table, &secret);

    let o = run(
        &mut ops(&table, &secret),
        &[
            "breaker",
            "force-open",
            "core-api",
            "--reason",
            "db failover",
            "--ttl",
            "30m",
            "--operator",
            "alice",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let set = &json_lines(&o)[0];
    assert_eq!(set["set_by"], "alice");

    let mut cmd = ops(&table, &secret);
    cmd.env("USER", "bob");
    let o = run(
        &mut cmd,
        &["breaker", "force-open", "openai", "--reason", "quota"],
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));

    let o = run(&mut ops(&table, &secret), &["breaker", "list"]);
    assert_eq!(o.status.code(), Some(0));
    let items = json_lines(&o);
    assert_eq!(items.len(), 2, "{items:?}");
    let core = &items[0];
    assert_eq!(core["dependency"], "core-api");
    assert_eq!(core["state"], "forced_open");
    assert_eq!(core["reason"], "db failover");
    assert_eq!(core["set_by"], "alice");
    let set_at = core["set_at"].as_i64().unwrap();
    assert_eq!(core["expires_at"].as_i64(), Some(set_at + 1800));
    assert_eq!(items[1]["dependency"], "openai");
    assert_eq!(items[1]["set_by"], "bob");
    assert!(items[1]["expires_at"].is_null());

    let o = run(&mut ops(&table, &secret), &["breaker", "clear", "core-api"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(json_lines(&o)[0]["cleared"], true);
    let o = run(&mut ops(&table, &secret), &["breaker", "list"]);
    let items = json_lines(&o);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["dependency"], "openai");
}

#[test]
fn bad_usage_exits_2_with_one_line() {
    let (table, secret) = (unique("kosha-ops-test"), unique("kosha/chaos"));
    let o = run(
        &mut ops(&table, &secret),
        &["breaker", "force-open", "redis", "--reason", "x"],
    );
    assert_refused(&o, 2);
    assert!(
        stderr(&o).contains("unknown dependency \"redis\""),
        "{}",
        stderr(&o)
    );
    assert_refused(
        &run(&mut ops(&table, &secret), &["breaker", "clear", "mysql"]),
        2,
    );
    assert_refused(
        &run(
            &mut ops(&table, &secret),
            &["breaker", "force-open", "openai"],
        ),
        2,
    );
    assert_refused(
        &run(
            &mut ops(&table, &secret),
            &[
                "breaker",
                "force-open",
                "openai",
                "--reason",
                "x",
                "--ttl",
                "soon",
            ],
        ),
        2,
    );
    assert_refused(
        &run(&mut ops(&table, &secret), &["breaker", "frobnicate"]),
        2,
    );
    // The reason reaches every agent through get_service_health: bounded and printable.
    let long = "x".repeat(501);
    for (reason, ttl) in [("a\u{1}b", "1h"), (long.as_str(), "1h"), ("fine", "31d")] {
        let o = run(
            &mut ops(&table, &secret),
            &[
                "breaker",
                "force-open",
                "openai",
                "--reason",
                reason,
                "--ttl",
                ttl,
            ],
        );
        assert_refused(&o, 2);
    }
}

#[test]
fn a_failing_call_exits_1_with_one_line() {
    // The table does not exist.
    let o = run(
        &mut ops(&unique("kosha-missing"), "x"),
        &["breaker", "list"],
    );
    assert_refused(&o, 1);
}

/// A gateway answering `get_service_health` like the real one (one stateless POST).
async fn fake_gateway(status: u16, answer: Value) -> wiremock::MockServer {
    use wiremock::matchers::{header, method, path};
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(method("POST"))
        .and(path("/mcp"))
        .and(header("authorization", "Bearer op-token"))
        .and(header("mcp-protocol-version", "2025-11-25"))
        .respond_with(wiremock::ResponseTemplate::new(status).set_body_json(answer))
        .mount(&server)
        .await;
    server
}

fn health_answer() -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {
        "status": "degraded",
        "dependencies": {"core-api": {"breaker": "open", "in_flight": 0, "capacity": 64,
                                      "fleet_trips": 1}}}}})
}

#[tokio::test]
async fn status_reports_overrides_with_author_and_expiry_and_the_gateways_breakers() {
    let (table, secret) = (unique("kosha-ops-test"), unique("kosha/chaos"));
    bootstrap(&table, &secret);
    let o = run(&mut ops(&table, &secret), &["status"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert!(stdout(&o).contains("none"), "{}", stdout(&o));

    let forced = run(
        &mut ops(&table, &secret),
        &[
            "breaker",
            "force-open",
            "core-api",
            "--reason",
            "db failover",
            "--ttl",
            "30m",
            "--operator",
            "alice",
        ],
    );
    assert_eq!(forced.status.code(), Some(0), "stderr: {}", stderr(&forced));
    // The action's audit event, on stderr.
    let audit: Value = serde_json::from_str(stderr(&forced).trim()).unwrap();
    assert_eq!(audit["event"], "ops_action");
    assert_eq!(audit["action"], "breaker_force_open");
    assert_eq!(audit["set_by"], "alice");

    // One instance's trip of core-api, 2 s ago (SPEC §8 "Fleet trips").
    let sdk = emulator_sdk().await;
    let state =
        kosha_state::StateTable::new(aws_sdk_dynamodb::Client::new(&sdk), table.clone()).unwrap();
    let now_ms = kosha_state::Clock::now_ms(&kosha_state::SystemClock);
    state
        .record_trip(&kosha_state::TripWrite {
            breaker: "core-api".into(),
            instance: "9f3a0c1d2e4b5a69".into(),
            at_ms: now_ms - 2_000,
            open_for: std::time::Duration::from_secs(15),
            seen: None,
        })
        .await
        .unwrap();

    let gateway = fake_gateway(200, health_answer()).await;
    let mut cmd = ops(&table, &secret);
    cmd.env("KOSHA_OPERATOR_TOKEN", "op-token");
    let o = run(&mut cmd, &["status", "--json", "--gateway", &gateway.uri()]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let report = &json_lines(&o)[0];
    let o0 = &report["overrides"][0];
    assert_eq!(o0["dependency"], "core-api");
    assert_eq!(o0["set_by"], "alice");
    assert_eq!(o0["reason"], "db failover");
    assert_eq!(
        o0["expires_at"].as_i64(),
        Some(o0["set_at"].as_i64().unwrap() + 1800)
    );
    assert_eq!(report["breakers"]["core-api"]["breaker"], "open");
    assert_eq!(report["breakers"]["core-api"]["fleet_trips"], 1);
    assert_eq!(
        report["trips"],
        serde_json::json!([{"breaker": "core-api", "instance": "9f3a0c1d2e4b5a69",
                            "tripped_at_ms": now_ms - 2_000}])
    );
    assert_eq!(report["gateway"], format!("{}/mcp", gateway.uri()));
    let sent = gateway.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&sent[0].body).unwrap();
    assert_eq!(body["method"], "tools/call");
    assert_eq!(body["params"]["name"], "get_service_health");

    // The text report names who, until when, and the breaker.
    let mut cmd = ops(&table, &secret);
    cmd.env("KOSHA_OPERATOR_TOKEN", "op-token");
    let o = run(
        &mut cmd,
        &["status", "--gateway", &format!("{}/mcp", gateway.uri())],
    );
    let text = stdout(&o);
    assert!(text.contains("core-api: forced open by alice"), "{text}");
    assert!(
        text.contains("expires ") && text.contains("reason: db failover"),
        "{text}"
    );
    assert!(
        text.contains("core-api: open, 0 of 64 in flight, 1 fleet trip(s) counted"),
        "{text}"
    );
    assert!(
        text.contains("core-api: tripped by instance 9f3a0c1d2e4b5a69 at "),
        "{text}"
    );
}

#[tokio::test]
async fn status_refuses_without_a_token_and_fails_when_the_gateway_refuses() {
    let (table, secret) = (unique("kosha-ops-test"), unique("kosha/chaos"));
    bootstrap(&table, &secret);
    let mut cmd = ops(&table, &secret);
    cmd.env_remove("KOSHA_OPERATOR_TOKEN");
    assert_refused(
        &run(&mut cmd, &["status", "--gateway", "http://127.0.0.1:9"]),
        2,
    );
    let mut cmd = ops(&table, &secret);
    cmd.env("KOSHA_OPERATOR_TOKEN", "op-token");
    assert_refused(&run(&mut cmd, &["status", "--gateway", "ftp://x"]), 2);

    let refusing = fake_gateway(
        401,
        serde_json::json!({"jsonrpc": "2.0", "id": null,
                           "error": {"code": -32001, "message": "invalid_token"}}),
    )
    .await;
    let mut cmd = ops(&table, &secret);
    cmd.env("KOSHA_OPERATOR_TOKEN", "op-token");
    let o = run(&mut cmd, &["status", "--gateway", &refusing.uri()]);
    assert_refused(&o, 1);
    assert!(stderr(&o).contains("invalid_token"), "{}", stderr(&o));
    // Nothing listening: a failure, not a hang.
    let mut cmd = ops(&table, &secret);
    cmd.env("KOSHA_OPERATOR_TOKEN", "op-token");
    assert_refused(
        &run(&mut cmd, &["status", "--gateway", "http://127.0.0.1:9"]),
        1,
    );
}
