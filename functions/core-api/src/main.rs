//! core-api binary: reads config, then serves (default), migrates or checks the seed.
//! Everything else lives in the library so tests drive the same code.

use std::process::ExitCode;

use core_api::cli::{self, Command};
use core_api::config::Config;

#[tokio::main]
async fn main() -> ExitCode {
    kosha_runtime::telemetry::init("core-api");
    let command = match Command::parse(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("core-api: {e}");
            return ExitCode::from(2);
        }
    };
    match cli::run(command, &config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "core-api failed");
            eprintln!("core-api: {e}");
            ExitCode::FAILURE
        }
    }
}
