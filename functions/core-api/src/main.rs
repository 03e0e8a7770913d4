//! core-api binary: reads config (and its secrets), then serves (default), migrates, embeds or
//! checks the seed.
//! Everything else lives in the library so tests drive the same code.

use std::process::ExitCode;

use core_api::cli::{self, Command};
use core_api::config::Config;
use core_api::embeddings::ApiKey;

fn main() -> ExitCode {
    kosha_runtime::block_on(async_main())
}

async fn async_main() -> ExitCode {
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
    // Deployed: the URL and the embeddings key live in Secrets Manager (SPEC §4, §13); the
    // URL replaces DATABASE_URL. Read once here, never logged.
    let database_arn = kosha_runtime::config::var(kosha_pg::config::DATABASE_URL_SECRET_ENV);
    let key_arn = config
        .embeddings
        .as_ref()
        .and_then(|e| e.api_key_secret_arn.clone());
    if database_arn.is_some() || key_arn.is_some() {
        let sdk = kosha_runtime::aws::sdk_config().await;
        let client = aws_sdk_secretsmanager::Client::new(&sdk);
        if let Some(arn) = database_arn {
            match kosha_pg::secret_url::fetch(&client, &arn).await {
                Ok(url) => config.database_url = url,
                Err(e) => {
                    eprintln!("core-api: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        if let Some(arn) = key_arn {
            match kosha_pg::secret_url::secret_string(&client, &arn).await {
                Ok(secret) => config.embeddings_api_key = ApiKey::from_secret(&secret),
                Err(e) => {
                    eprintln!("core-api: the embeddings API key: {e}");
                    return ExitCode::FAILURE;
                }
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
