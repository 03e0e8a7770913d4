//! Where runs come from: one per scheduled invocation on Lambda ([`on_lambda`]; the
//! EventBridge rule of `infra/template.yaml`, every minute), or a loop every
//! `KOSHA_RELAY_INTERVAL_MS` (2 s) in local mode ([`local_loop`], the stack of `scripts/dev`).

use std::sync::Arc;
use std::time::Duration;

use kosha_resilience::deadline::{Deadline, LAMBDA_RESPONSE_MARGIN};
use lambda_runtime::LambdaEvent;
use serde_json::{Value, json};

use crate::publish::Publish;
use crate::relay::{Relay, RelayError, RunReport};

/// What an invocation answers (visible in the Lambda console and test invokes).
fn summary(report: &RunReport) -> Value {
    json!({
        "published": report.published,
        "refused": report.refused,
        "batches": report.batches,
        "stop": format!("{:?}", report.stop),
        "pending": report.backlog.pending,
        "lag_seconds": report.backlog.lag_seconds,
        "swept": report.swept.events,
    })
}

/// One scheduled invocation whose deadline is `lambda_deadline_ms` (epoch ms,
/// `lambda_runtime::Context::deadline`): a run until `min(now + budget, deadline − 50 ms)`,
/// answered with its summary.
///
/// # Errors
/// [`RelayError`] when the database fails.
pub async fn invocation<P: Publish>(
    relay: &Relay<P>,
    budget: Duration,
    lambda_deadline_ms: u64,
) -> Result<Value, RelayError> {
    let deadline =
        Deadline::from_lambda_deadline_ms(lambda_deadline_ms, budget, LAMBDA_RESPONSE_MARGIN);
    Ok(summary(&relay.run(&deadline).await?))
}

/// Serves scheduled invocations under the Lambda Runtime API: each runs the relay until
/// `min(now + budget, invocation deadline − 50 ms)`. The event itself (EventBridge's
/// scheduled event) carries nothing the relay needs. EMF metrics are flushed after every
/// invocation.
///
/// # Errors
/// The runtime loop's error. A failed run fails its invocation (Lambda's `Errors` metric)
/// and the next schedule tries again.
pub async fn on_lambda<P: Publish + 'static>(
    relay: Arc<Relay<P>>,
    budget: Duration,
) -> Result<(), lambda_runtime::Error> {
    let handler = move |event: LambdaEvent<Value>| {
        let relay = relay.clone();
        async move {
            let answer = invocation(&relay, budget, event.context.deadline).await;
            // The run's spans leave before the instance is frozen (SPEC §12).
            kosha_runtime::otlp::flush().await;
            Ok::<_, lambda_runtime::Error>(answer?)
        }
    };
    let handler = kosha_runtime::flush_metrics(lambda_runtime::service_fn(handler));
    lambda_runtime::run(handler).await
}

/// Runs the relay every `interval` until `stop` resolves (SIGTERM or ctrl-c in `main`). A
/// failed run is logged and the loop goes on: the next run retries.
pub async fn local_loop<P: Publish>(
    relay: &Relay<P>,
    interval: Duration,
    budget: Duration,
    stop: impl std::future::Future<Output = ()>,
) {
    let mut stop = std::pin::pin!(stop);
    loop {
        let run = async {
            if let Err(e) = relay.run(&Deadline::after(budget)).await {
                tracing::error!(error = %e, "outbox relay run failed");
            }
        };
        tokio::select! {
            () = run => {}
            () = &mut stop => return,
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = &mut stop => return,
        }
    }
}
