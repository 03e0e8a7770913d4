//! mcp-gateway binary: build state once, then serve (Lambda or local HTTP, SPEC §1).

use std::process::ExitCode;
use std::sync::Arc;

use mcp_gateway::config::GatewayConfig;
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
    let gateway = match Gateway::new(config, Arc::new(kosha_resilience::overrides::NoOverrides)) {
        Ok(g) => Arc::new(g),
        Err(e) => {
            tracing::error!(error = %e, "cannot build the gateway");
            return ExitCode::FAILURE;
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
