//! screening-sim binary: read the configuration, build the matcher and the chaos knobs once,
//! then serve (Lambda or local HTTP, SPEC §1). Exit codes: 0 after a clean stop, 2 for bad
//! configuration, 1 when serving fails, each with one log line.
//!
//! Environment: `KOSHA_SIM_ADMIN_TOKEN` (at least 16 characters; unset = `/admin/chaos`
//! refuses everyone), `KOSHA_SIM_BASE_LATENCY_MS` (default 4), `KOSHA_STATE_TABLE` (the
//! knobs' table, default `kosha-state`), `KOSHA_LISTEN` (local mode).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use kosha_runtime::config::{self, ConfigError};
use screening_sim::chaos::Chaos;
use screening_sim::http::{AdminToken, Sim};

fn main() -> ExitCode {
    kosha_runtime::block_on(async_main())
}

async fn async_main() -> ExitCode {
    kosha_runtime::telemetry::init("screening-sim");
    let sim = match build().await {
        Ok(sim) => sim,
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return ExitCode::from(2);
        }
    };
    match kosha_runtime::serve(screening_sim::http::router(Arc::new(sim))).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "server stopped");
            ExitCode::FAILURE
        }
    }
}

async fn build() -> Result<Sim, ConfigError> {
    let admin_token = config::var("KOSHA_SIM_ADMIN_TOKEN")
        .map(|t| AdminToken::new(&t).map_err(|e| ConfigError::new("KOSHA_SIM_ADMIN_TOKEN", e)))
        .transpose()?;
    if admin_token.is_none() {
        tracing::warn!("KOSHA_SIM_ADMIN_TOKEN is not set: /admin/chaos refuses every request");
    }
    let base_latency = Duration::from_millis(config::parse_or("KOSHA_SIM_BASE_LATENCY_MS", 4u64)?);
    let table_name = kosha_state::StateTable::name_from_env()
        .map_err(|e| ConfigError::new(kosha_state::STATE_TABLE_ENV, e.to_string()))?;
    let sdk = kosha_runtime::aws::sdk_config().await;
    let table = kosha_state::StateTable::from_sdk(&sdk, &table_name)
        .map_err(|e| ConfigError::new(kosha_state::STATE_TABLE_ENV, e.to_string()))?
        .single_attempt();
    Ok(Sim {
        screener: screening_sim::Screener::bundled(),
        chaos: Chaos::new(Arc::new(table), Arc::new(kosha_state::SystemClock)),
        admin_token,
        base_latency,
    })
}
