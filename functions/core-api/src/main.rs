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
    let mut config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("core-api: {e}");
            return ExitCode::from(2);
        }
    };
    // Deployed: the URL lives in Secrets Manager (SPEC §13); it replaces DATABASE_URL.
    if let Some(arn) = kosha_runtime::config::var("DATABASE_URL_SECRET_ARN") {
        let sdk = kosha_runtime::aws::sdk_config().await;
        let client = aws_sdk_secretsmanager::Client::new(&sdk);
        match core_api::secret_url::fetch(&client, &arn).await {
            Ok(url) => config.database_url = url,
            Err(e) => {
                eprintln!("core-api: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    match cli::run(command, &config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "core-api failed");
            eprintln!("core-api: {e}");
            ExitCode::FAILURE
        }
    }
}
