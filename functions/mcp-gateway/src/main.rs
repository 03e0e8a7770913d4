//! mcp-gateway binary: build state once, then serve (Lambda or local HTTP, SPEC §1).

use std::process::ExitCode;
use std::sync::Arc;

use mcp_gateway::backends::sigv4::SigV4Signer;
use mcp_gateway::config::{CoreApiAuth, GatewayConfig};
use mcp_gateway::state::Gateway;

#[tokio::main]
async fn main() -> ExitCode {
    kosha_runtime::telemetry::init("mcp-gateway");
    let config = match GatewayConfig::from_env() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "bad configuration");
            return ExitCode::from(2);
        }
    };
    let sdk = kosha_runtime::aws::sdk_config().await;
    // One DynamoDB client, single attempt, for the token bucket and the override reads: both
    // bound each call and fall back (fail open / keep the last value), so retries only cost.
    let table = match kosha_state::StateTable::from_env(&sdk).map(|t| t.single_attempt()) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "bad state table configuration");
            return ExitCode::from(2);
        }
    };
    let limits = match kosha_state::RateLimitSettings::from_env() {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "bad rate-limit configuration");
            return ExitCode::from(2);
        }
    };
    let clock = Arc::new(kosha_state::SystemClock);
    let rate_limiter = Arc::new(kosha_state::DynamoRateLimiter::new(
        &table,
        limits,
        clock.clone(),
    ));
    let overrides =
        kosha_state::DynamoOverrides::new(table, kosha_state::OverrideSettings::default(), clock);
    // Nothing is read from DynamoDB at start-up: the first protected call starts the first
    // override read in the background and the first `tools/call` builds the client (seed 004
    // §4, SPEC §8). Init stays free of network I/O and of building SDK clients (issue 6).

    // One HTTPS client for core-api and the JWKS endpoint: one TLS configuration on
    // compiled-in roots, one connection pool (crates/runtime/src/tls.rs).
    let http = match kosha_runtime::tls::http_client() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the HTTP client");
            return ExitCode::FAILURE;
        }
    };
    let verifier = kosha_auth::Verifier::new(config.auth.clone(), http.clone());
    let signer = match config.core_api_auth {
        CoreApiAuth::None => None,
        CoreApiAuth::Iam => match (sdk.credentials_provider(), sdk.region()) {
            (Some(provider), Some(region)) => {
                Some(Arc::new(SigV4Signer::new(provider, region.as_ref())))
            }
            _ => {
                tracing::error!(
                    "KOSHA_CORE_API_AUTH=iam needs an AWS region and a credentials provider"
                );
                return ExitCode::from(2);
            }
        },
    };
    let gateway = match Gateway::new(config, http, verifier, Arc::new(overrides), rate_limiter) {
        Ok(g) => match signer {
            Some(s) => Arc::new(g.with_core_api_signer(s)),
            None => Arc::new(g),
        },
        Err(e) => {
            // Only a policy setting (KOSHA_POLICY_*) can fail here: bad configuration.
            tracing::error!(error = %e, "bad resilience configuration");
            return ExitCode::from(2);
        }
    };
    match kosha_runtime::serve(mcp_gateway::http::router(gateway)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "server stopped");
            ExitCode::FAILURE
        }
    }
}
