//! mcp-gateway binary: read the configuration, build the state once, then serve (Lambda or
//! local HTTP, SPEC §1). Exit codes: 0 after a clean stop, 2 for bad configuration, 1 for any
//! other failure, each with one log line.

use std::process::ExitCode;
use std::sync::Arc;

use mcp_gateway::config::GatewayConfig;
use mcp_gateway::state::{Gateway, StartError};

fn main() -> ExitCode {
    kosha_runtime::block_on(async_main())
}

async fn async_main() -> ExitCode {
    kosha_runtime::telemetry::init("mcp-gateway");
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Start(e)) => {
            tracing::error!(error = %e, "cannot start");
            ExitCode::from(e.exit_code())
        }
        Err(Failure::Serve(e)) => {
            tracing::error!(error = %e, "server stopped");
            ExitCode::FAILURE
        }
    }
}

/// Why the process ends with a failure.
enum Failure {
    /// Before serving: configuration or clients.
    Start(StartError),
    /// While serving.
    Serve(kosha_runtime::ServeError),
}

async fn run() -> Result<(), Failure> {
    let config = GatewayConfig::from_env().map_err(|e| Failure::Start(e.into()))?;
    let gateway = Gateway::start(config).await.map_err(Failure::Start)?;
    kosha_runtime::serve(mcp_gateway::http::router(Arc::new(gateway)))
        .await
        .map_err(Failure::Serve)
}
