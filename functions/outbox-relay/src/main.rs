//! outbox-relay binary: reads config once, builds the relay, then serves scheduled Lambda
//! invocations (`AWS_LAMBDA_RUNTIME_API` set) or loops every `KOSHA_RELAY_INTERVAL_MS`
//! locally until SIGTERM or ctrl-c. Exit 2 for bad configuration, 1 for other failures.

use std::process::ExitCode;
use std::sync::Arc;

use outbox_relay::config::RelayConfig;
use outbox_relay::{StartError, build, mode};

fn main() -> ExitCode {
    kosha_runtime::block_on(async_main())
}

async fn async_main() -> ExitCode {
    kosha_runtime::telemetry::init("outbox-relay");
    match start().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outbox-relay: {e}");
            ExitCode::from(match e {
                StartError::Config(_) => 2,
                StartError::Database(_) => 1,
            })
        }
    }
}

async fn start() -> Result<(), StartError> {
    let mut config = RelayConfig::from_env()?;
    let sdk = kosha_runtime::aws::sdk_config().await;
    // Deployed: the URL lives in Secrets Manager, like core-api's (SPEC §13).
    if let Some(arn) = kosha_runtime::config::var(kosha_pg::config::DATABASE_URL_SECRET_ENV) {
        let client = aws_sdk_secretsmanager::Client::new(&sdk);
        config.database.url = kosha_pg::secret_url::fetch(&client, &arn)
            .await
            .map_err(|e| StartError::Database(e.to_string()))?;
    }
    let relay = Arc::new(build(&config, &sdk)?);
    if kosha_runtime::on_lambda() {
        return mode::on_lambda(relay, config.run_budget)
            .await
            .map_err(|e| StartError::Database(format!("lambda runtime failed: {e}")));
    }
    tracing::info!(
        interval_ms = config.interval.as_millis(),
        "relaying locally"
    );
    mode::local_loop(&relay, config.interval, config.run_budget, shutdown()).await;
    if let Some(emf) = kosha_runtime::telemetry::metrics_collector() {
        let _ = emf.flush(std::io::stdout());
    }
    Ok(())
}

async fn shutdown() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        () = term => {},
    }
}
