//! Shared helpers for the in-process gateway tests: signing keys, tokens, a gateway router over
//! a given core-api URL with a local token bucket, and request builders. No network beyond
//! loopback.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use kosha_auth::dev::{self, MintClaims};
use kosha_auth::jwks::{CacheTiming, StaticJwks};
use kosha_auth::{Role, Verifier, VerifierConfig};
use kosha_resilience::config::PolicyConfig;
use kosha_resilience::overrides::NoOverrides;
use kosha_resilience::rate_limit::{BucketConfig, LocalRateLimiter};
use mcp_gateway::backends::PerBackend;
use mcp_gateway::config::{DEFAULT_BODY_READ_TIMEOUT, GatewayConfig, ServiceAuth};
use mcp_gateway::state::Gateway;
use serde_json::{Value, json};
use tower::ServiceExt;

pub const ISSUER: &str = "https://issuer.test";

fn keys() -> &'static dev::DevKeys {
    static KEYS: OnceLock<dev::DevKeys> = OnceLock::new();
    KEYS.get_or_init(|| dev::generate().expect("keygen"))
}

/// A valid access token for `client_id` with `roles`.
pub fn token(client_id: &str, roles: &[Role]) -> String {
    let k = keys();
    dev::mint(
        &k.private_pem,
        &k.kid,
        &MintClaims::new(ISSUER, client_id, roles),
    )
    .expect("mint")
}

/// The access token of the user `sub` (username `<sub>@example.com`) of the app client
/// `client_id`, in the group `agent` (SPEC §5 "The user").
pub fn user_token(client_id: &str, sub: &str) -> String {
    let k = keys();
    let username = format!("{sub}@example.com");
    let claims = MintClaims::user(ISSUER, client_id, sub, &username, &[Role::Agent]);
    dev::mint(&k.private_pem, &k.kid, &claims).expect("mint")
}

/// A machine client's token of the client-credentials grant for `client_id` with `scopes`
/// (no groups, no `username`; SPEC §5: its roles come from these scopes).
pub fn machine_token(client_id: &str, scopes: &[&str]) -> String {
    let k = keys();
    let claims = MintClaims::client_credentials(ISSUER, client_id, scopes);
    dev::mint(&k.private_pem, &k.kid, &claims).expect("mint")
}

/// An agent token for `agent-a`.
pub fn agent() -> String {
    token("agent-a", &[Role::Agent])
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis(),
    )
    .unwrap_or(0)
}

/// The configuration [`app`] uses: core-api at `core_api_url`, Host `localhost` only.
pub fn config(core_api_url: &str, max_in_flight: usize) -> GatewayConfig {
    GatewayConfig {
        core_api_url: core_api_url.to_owned(),
        core_api_auth: ServiceAuth::None,
        allowed_hosts: vec!["localhost".to_owned()],
        allowed_origins: vec![],
        max_in_flight,
        body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
        auth: verifier_config(),
        public_base_url: None,
        state_table: "kosha-state".to_owned(),
        rate_limit: kosha_state::RateLimitSettings::default(),
        rate_key: mcp_gateway::config::RateKey::Client,
        tool_costs: None,
        policy_file: None,
        policy_now: None,
        principal_rate: kosha_resilience::principal_rate::PrincipalLimiter::bucket(
            kosha_resilience::principal_rate::DEFAULT_RPS,
        )
        .unwrap(),
        chaos_enabled: false,
        chaos_secret_id: "kosha/chaos-hmac-key".to_owned(),
        confirm: mcp_gateway::config::ConfirmSettings::default(),
        screening: mcp_gateway::config::ScreeningConfig::default(),
        fleet_trip_quorum: 0,
        policies: PerBackend::try_new(|b| {
            PolicyConfig::from_lookup(b.profile(), b.env_prefix(), |_| None)
        })
        .unwrap(),
        tail: mcp_gateway::config::TailSettings::default(),
    }
}

fn verifier_config() -> VerifierConfig {
    VerifierConfig::new(ISSUER, None, ["agent-a", "agent-b", "ops"], None).unwrap()
}

/// A gateway router with `config` and a local bucket of `capacity` tokens (refill 0.001/s).
pub fn app_with(config: GatewayConfig, capacity: f64) -> axum::Router {
    mcp_gateway::http::router(Arc::new(gateway_with(config, capacity)))
}

/// The gateway [`app_with`] serves.
pub fn gateway_with(config: GatewayConfig, capacity: f64) -> Gateway {
    gateway_with_overrides(config, capacity, Arc::new(NoOverrides))
}

/// [`gateway_with`], its breakers reading forced-open overrides from `overrides`.
pub fn gateway_with_overrides(
    config: GatewayConfig,
    capacity: f64,
    overrides: Arc<dyn kosha_resilience::overrides::OverrideSource>,
) -> Gateway {
    let limiter = LocalRateLimiter::new(BucketConfig::try_new(capacity, 0.001).unwrap(), now_ms);
    gateway_with_limiter(config, overrides, Arc::new(limiter))
}

/// A gateway with `config`, `overrides` and the rate limiter `limiter`.
pub fn gateway_with_limiter(
    config: GatewayConfig,
    overrides: Arc<dyn kosha_resilience::overrides::OverrideSource>,
    limiter: Arc<dyn kosha_resilience::rate_limit::RateLimiter>,
) -> Gateway {
    try_gateway(config, overrides, limiter).unwrap()
}

/// [`gateway_with_limiter`], or why the state could not be built.
pub fn try_gateway(
    config: GatewayConfig,
    overrides: Arc<dyn kosha_resilience::overrides::OverrideSource>,
    limiter: Arc<dyn kosha_resilience::rate_limit::RateLimiter>,
) -> Result<Gateway, mcp_gateway::state::StartError> {
    let verifier = Verifier::with_fetcher(
        verifier_config(),
        Arc::new(StaticJwks(keys().jwks_json.clone().into_bytes())),
        CacheTiming::default(),
    );
    Gateway::new(
        config,
        kosha_runtime::tls::http_client().unwrap(),
        verifier,
        overrides,
        limiter,
    )
}

/// A gateway whose core-api is `core_api_url`, with a local bucket of `capacity` tokens.
pub fn app(core_api_url: &str, capacity: f64, max_in_flight: usize) -> axum::Router {
    app_with(config(core_api_url, max_in_flight), capacity)
}

/// `POST /mcp` with the headers a conforming client sends, `token` as bearer, `body` as is.
pub fn post(token: &str, body: impl Into<Body>) -> Request<Body> {
    Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("authorization", format!("Bearer {token}"))
        .body(body.into())
        .unwrap()
}

/// A `tools/call` request with numeric `id`.
pub fn tools_call(id: u64, token: &str, name: &str, arguments: Value) -> Request<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}});
    post(token, body.to_string())
}

/// A `tools/list` request with numeric `id`.
pub fn tools_list(id: u64, token: &str) -> Request<Body> {
    post(
        token,
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string(),
    )
}

/// `tools/call name(arguments)` as the agent, through a clone of `app`.
pub async fn agent_call(
    app: &axum::Router,
    id: u64,
    name: &str,
    arguments: Value,
) -> axum::response::Response {
    app.clone()
        .oneshot(tools_call(id, &agent(), name, arguments))
        .await
        .unwrap()
}

/// The response body as bytes.
pub async fn bytes(resp: axum::response::Response) -> bytes::Bytes {
    resp.into_body().collect().await.unwrap().to_bytes()
}

/// The response body as JSON.
pub async fn json_body(resp: axum::response::Response) -> Value {
    serde_json::from_slice(&bytes(resp).await).unwrap()
}

/// The tool error object of a `tools/call` answer (`result.structuredContent.error`).
pub fn tool_error(body: &Value) -> &Value {
    assert_eq!(body["result"]["isError"], true, "{body}");
    &body["result"]["structuredContent"]["error"]
}

/// The gateway binary started with a minimal environment and one more variable `key` =
/// `value`, to its exit: (exit code, stdout + stderr). For the start-up refusals.
pub fn start_binary_with(key: &str, value: &str) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .env_clear()
        .env("KOSHA_JWT_ISSUER", "http://127.0.0.1:9/issuer")
        .env("KOSHA_ALLOWED_CLIENT_IDS", "agent-1")
        .env(key, value)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}
