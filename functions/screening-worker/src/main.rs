//! screening-worker binary: read the configuration, build the clients and the policy once,
//! then run under the Lambda runtime (SQS event source) or, locally, the polling loop.
//! Exit codes: 2 for bad configuration, 1 when the runtime fails, each with one log line.
//!
//! Environment: [`screening_worker::config`].

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use kosha_clients::config::{SCREENING_AUTH_ENV, ServiceAuth};
use kosha_clients::screening::ScreeningClient;
use kosha_contract::dependency::Dependency;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::policy::Policy;
use kosha_runtime::config::ConfigError;
use kosha_state::{DynamoOverrides, OverrideSettings, StateTable, SystemClock};
use lambda_runtime::{LambdaEvent, service_fn};
use screening_worker::config::WorkerConfig;
use screening_worker::deps::{POLICY_ENV_PREFIX, PolicySim, SqsQueue};
use screening_worker::handler::Worker;

/// Kept back from Lambda's deadline for the batch's answer (its item failures) to be sent and
/// its spans and metrics flushed: larger than a request's `LAMBDA_RESPONSE_MARGIN` (50 ms).
const BATCH_REPORT_MARGIN: Duration = Duration::from_millis(200);

type RealWorker = Worker<PolicySim, StateTable, SqsQueue>;

fn main() -> ExitCode {
    kosha_runtime::block_on(async_main())
}

async fn async_main() -> ExitCode {
    kosha_runtime::telemetry::init("screening-worker");
    let (worker, sqs) = match build().await {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return ExitCode::from(2);
        }
    };
    if !kosha_runtime::on_lambda() {
        let queue_url = worker.queue.queue_url.clone();
        screening_worker::local::run(&worker, &sqs, &queue_url).await;
        return ExitCode::SUCCESS;
    }
    let worker = Arc::new(worker);
    let handler = service_fn(move |event: LambdaEvent<SqsEvent>| {
        let worker = worker.clone();
        async move {
            let deadline = Deadline::from_lambda_deadline_ms(
                event.context.deadline,
                Duration::from_secs(900),
                BATCH_REPORT_MARGIN,
            );
            let answer = worker.handle_batch(&event.payload.records, &deadline).await;
            // The batch's spans leave before the instance is frozen (SPEC §12).
            kosha_runtime::otlp::flush().await;
            Ok::<SqsBatchResponse, lambda_runtime::Error>(answer)
        }
    });
    // The batch's metrics are written before the instance is frozen, as every function's.
    match lambda_runtime::run(kosha_runtime::flush_metrics(handler)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "lambda runtime failed");
            ExitCode::FAILURE
        }
    }
}

/// The worker and the SQS client its local loop polls with, from the environment.
async fn build() -> Result<(RealWorker, aws_sdk_sqs::Client), ConfigError> {
    let config = WorkerConfig::from_env()?;
    let sdk = kosha_runtime::aws::sdk_config().await;
    let table = StateTable::from_sdk(&sdk, &config.table_name)
        .map_err(|e| ConfigError::new(kosha_state::STATE_TABLE_ENV, e.to_string()))?;
    let overrides = Arc::new(DynamoOverrides::new(
        table.single_attempt(),
        OverrideSettings::default(),
        Arc::new(SystemClock),
    ));
    let policy = Policy::try_new(Dependency::ScreeningSim, config.policy, overrides)
        .map_err(|e| ConfigError::new(POLICY_ENV_PREFIX, e.to_string()))?;
    let http = kosha_runtime::tls::http_client()
        .map_err(|e| ConfigError::new("TLS roots", e.to_string()))?;
    let mut client = ScreeningClient::new(&config.screening.url, http);
    if config.screening.auth == ServiceAuth::Iam {
        client = client.with_signer(kosha_clients::config::iam_signer(&sdk, SCREENING_AUTH_ENV)?);
    }
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let worker = Worker {
        sim: PolicySim { client, policy },
        store: table,
        queue: SqsQueue {
            sqs: sqs.clone(),
            queue_url: config.queue_url,
            dlq_url: config.dlq_url,
        },
    };
    Ok((worker, sqs))
}
