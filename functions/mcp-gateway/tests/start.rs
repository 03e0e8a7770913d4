//! `Gateway::start` builds no AWS SDK client on the Lambda path (issue 6: a Lambda init that
//! built the SQS and Secrets Manager clients eagerly took 1.8 × as long; docs/benchmarks.md,
//! "Lambda packaging"). Building an SDK client builds the process's SDK HTTP client first,
//! which `kosha_runtime::tls::sdk_http_clients_built` counts; this file is a test binary of
//! its own so that no other test builds one in the same process. It also checks the start-up
//! refusal of a fleet-trip quorum of 1 (SPEC §8).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use mcp_gateway::state::Gateway;

/// What the Lambda runtime puts in the environment, as far as the choice of path goes.
fn on_lambda(key: &str) -> Option<String> {
    let value = match key {
        "AWS_LAMBDA_RUNTIME_API" => "127.0.0.1:9001",
        "AWS_ACCESS_KEY_ID" => "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY" => "secret",
        "AWS_REGION" => "us-east-1",
        _ => return None,
    };
    Some(value.to_owned())
}

#[tokio::test]
async fn start_builds_no_aws_sdk_client_until_one_is_used() {
    let mut config = common::config("http://127.0.0.1:9", 8);
    // Every client the gateway holds is configured: chaos keys, a screening queue.
    config.chaos_enabled = true;
    config.screening.queue_url = Some("http://127.0.0.1:9/000000000000/q".to_owned());
    assert_eq!(kosha_runtime::tls::sdk_http_clients_built(), 0);

    let sdk = kosha_runtime::aws::sdk_config_with(on_lambda).await;
    let gateway = Gateway::start_with(config, &sdk).expect("start");
    let router = mcp_gateway::http::router(std::sync::Arc::new(gateway));
    // A request that reaches no dependency builds nothing either.
    let response = tower::ServiceExt::oneshot(
        router,
        http::Request::get("/healthz")
            .header("host", "localhost")
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        kosha_runtime::tls::sdk_http_clients_built(),
        0,
        "loading the SDK config, Gateway::start or /healthz built an AWS SDK client"
    );

    // The counter sees a client being built (the check above can fail).
    let _sqs = aws_sdk_sqs::Client::new(&sdk);
    assert_eq!(kosha_runtime::tls::sdk_http_clients_built(), 1);
}

/// SPEC §8 "Fleet trips": a quorum of 1 would let one sick instance open the fleet, so the
/// gateway refuses it at start (exit 2, bad configuration) with a line naming the setting.
#[test]
fn a_fleet_trip_quorum_of_1_is_refused_at_start() {
    let (code, text) = common::start_binary_with("KOSHA_FLEET_TRIP_QUORUM", "1");
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("KOSHA_FLEET_TRIP_QUORUM"), "{text}");
    assert!(text.contains("one instance alone"), "{text}");
}

/// A limiter setting out of range is refused naming that variable, once (not under a second
/// "invalid …" prefix for the whole group).
#[test]
fn a_limiter_setting_out_of_range_is_refused_naming_it() {
    let (code, text) = common::start_binary_with("KOSHA_RATE_CALL_TIMEOUT_MS", "0");
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("invalid value for KOSHA_RATE_CALL_TIMEOUT_MS: must be a whole number"),
        "{text}"
    );
    assert_eq!(text.matches("invalid").count(), 1, "{text}");
}

/// SPEC §6 `KOSHA_RATE_KEY` (issue 44): only `client` or `user`; anything else stops the start
/// (exit 2) naming the variable, so a typo never silently keeps one bucket per app client.
#[test]
fn a_rate_key_other_than_client_or_user_is_refused_at_start() {
    let (code, text) = common::start_binary_with("KOSHA_RATE_KEY", "sub");
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("invalid value for KOSHA_RATE_KEY: must be `client` or `user`"),
        "{text}"
    );
}
