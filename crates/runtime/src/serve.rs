//! One router, two modes (SPEC §1): under the Lambda Runtime API when `AWS_LAMBDA_RUNTIME_API`
//! is set, otherwise the plain HTTP/1.1 and h2c server of [`crate::server`] on `KOSHA_LISTEN`
//! (default `127.0.0.1:8080`), with its timeouts, connection cap and drain.
//! [`serve_with_tasks`] also answers Lambda task events (`{"task": "migrate"}`): how
//! `scripts/deploy` runs maintenance inside the VPC with the same binary. [`block_on`] picks
//! the tokio runtime for the mode.

use std::future::Future;
use std::process::ExitCode;

use axum::Router;
use lambda_http::request::LambdaRequest;
use lambda_http::tower::ServiceExt as _;
use lambda_http::{LambdaEvent, service_fn};
use serde_json::value::RawValue;

/// Why a function could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `KOSHA_LISTEN` is not a socket address or cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address from `KOSHA_LISTEN`.
        addr: String,
        /// The bind error.
        source: std::io::Error,
    },
    /// The local server failed while running.
    #[error("local server failed: {0}")]
    Local(std::io::Error),
    /// A server setting (`KOSHA_HEADER_READ_TIMEOUT_MS`, …) does not parse.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The Lambda runtime loop failed.
    #[error("lambda runtime failed: {0}")]
    Lambda(String),
}

/// The variable Lambda sets for its Runtime API; its presence is what "on Lambda" means.
pub const LAMBDA_RUNTIME_API_ENV: &str = "AWS_LAMBDA_RUNTIME_API";

/// Whether this process runs under the Lambda Runtime API (`AWS_LAMBDA_RUNTIME_API` set).
pub fn on_lambda() -> bool {
    std::env::var_os(LAMBDA_RUNTIME_API_ENV).is_some()
}

/// Runs a binary's `main` future on the tokio runtime its mode wants, and returns its exit
/// code; every function binary starts here instead of `#[tokio::main]`.
///
/// - On Lambda: tokio's current-thread runtime. An instance handles one event at a time and a
///   256 MB function gets a fraction of one vCPU (SAM template), so worker threads would add
///   only thread start-up at init and cross-thread wake-ups inside every invocation (each
///   HTTP client's connection task, each spawned task), never parallelism. Blocking work
///   still goes to `spawn_blocking`'s pool.
/// - Otherwise (the plain server): the multi-thread runtime, one worker per CPU
///   (`TOKIO_WORKER_THREADS` overrides, read by tokio), for concurrent connections.
///
/// Exit code 1, with one line on stderr, when the runtime cannot be built (the OS refused its
/// threads or its I/O driver).
pub fn block_on<F: Future<Output = ExitCode>>(main: F) -> ExitCode {
    let built = if on_lambda() {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    };
    match built {
        Ok(runtime) => runtime.block_on(main),
        Err(e) => {
            eprintln!("cannot start the tokio runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Serves `router` until shutdown (SIGTERM/ctrl-c locally, then a drain; the runtime's
/// lifetime on Lambda).
///
/// # Errors
/// [`ServeError`] when a server setting is bad, the listener cannot be bound or the runtime
/// loop fails.
pub async fn serve(router: Router) -> Result<(), ServeError> {
    if on_lambda() {
        tracing::info!(mode = "lambda", "serving");
        let handler = flush_metrics(lambda_http::Adapter::from(flushing(router)));
        return lambda_http::lambda_runtime::run(handler)
            .await
            .map_err(|e| ServeError::Lambda(e.to_string()));
    }
    serve_local(router).await
}

/// A task event: `{"task": "<name>"}` (anything else in the object is ignored).
#[derive(serde::Deserialize)]
struct TaskEvent {
    task: String,
}

/// [`serve`], and on Lambda also task events: an invocation whose payload is a JSON object
/// with a string `task` (`{"task": "migrate"}`, as `aws lambda invoke` sends it) runs
/// `tasks(name)` and answers its JSON, or fails the invocation with its message; every other
/// payload is an HTTP event for `router` (Function URL, API Gateway, ALB), as with [`serve`].
/// Locally there are no task events (the binary's subcommands run the same tasks).
///
/// # Errors
/// [`ServeError`] when the listener cannot be bound or the runtime loop fails.
pub async fn serve_with_tasks<F, Fut>(router: Router, tasks: F) -> Result<(), ServeError>
where
    F: Fn(String) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<serde_json::Value, String>> + Send + 'static,
{
    if !on_lambda() {
        return serve_local(router).await;
    }
    tracing::info!(mode = "lambda", tasks = true, "serving");
    let handler = service_fn(move |event: LambdaEvent<Box<RawValue>>| {
        handle_event(router.clone(), tasks.clone(), event)
    });
    lambda_http::lambda_runtime::run(flush_metrics(handler))
        .await
        .map_err(|e| ServeError::Lambda(e.to_string()))
}

/// One Lambda invocation of [`serve_with_tasks`]: a task event runs `tasks`, anything else is
/// an HTTP event for `router`; answers the JSON the runtime sends back, once the finished
/// spans are exported ([`crate::otlp::flush`]).
///
/// # Errors
/// The task's message, or a payload that is neither a task nor an HTTP event.
pub async fn handle_event<F, Fut>(
    router: Router,
    tasks: F,
    event: LambdaEvent<Box<RawValue>>,
) -> Result<serde_json::Value, lambda_http::Error>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<serde_json::Value, String>>,
{
    let LambdaEvent { payload, context } = event;
    let answer = async {
        if let Ok(TaskEvent { task }) = serde_json::from_str::<TaskEvent>(payload.get()) {
            let shown: String = task.chars().take(64).collect();
            tracing::info!(task = %shown, "task event");
            return tasks(task).await.map_err(lambda_http::Error::from);
        }
        let request: LambdaRequest = serde_json::from_str(payload.get())?;
        let adapter = lambda_http::Adapter::from(router);
        let response = adapter.oneshot(LambdaEvent::new(request, context)).await?;
        Ok(serde_json::to_value(response)?)
    }
    .await;
    // The invocation's spans leave before the instance is frozen (SPEC §12).
    crate::otlp::flush().await;
    answer
}

/// `router` answering each request only once the finished spans are exported
/// ([`crate::otlp::flush`], a bounded wait): Lambda freezes the instance as soon as the
/// answer is returned (SPEC §12). `router` itself when nothing is exported.
pub fn flushing(router: Router) -> Router {
    if !crate::otlp::enabled() {
        return router;
    }
    router.layer(axum::middleware::map_response(
        |response: axum::response::Response| async move {
            crate::otlp::flush().await;
            response
        },
    ))
}

/// The Lambda handler `service` with the invocation's metrics written when it ends: its
/// request id set as property [`crate::telemetry::REQUEST_ID_PROPERTY`], then the EMF documents
/// flushed to stdout once the handler has answered and before the runtime sends the answer
/// (Lambda may freeze the instance right after). `service` alone when [`crate::telemetry::init`]
/// installed no recorder. Every Lambda loop of Kosha runs its handler through this.
pub fn flush_metrics<A, S>(
    service: S,
) -> impl lambda_http::Service<LambdaEvent<A>, Response = S::Response, Error = S::Error>
where
    S: lambda_http::Service<LambdaEvent<A>>,
{
    metrics_per_invocation(
        service,
        crate::telemetry::metrics_collector(),
        std::io::stdout,
    )
}

/// [`flush_metrics`] with recorder `emf` and output `out`.
fn metrics_per_invocation<A, S, W: std::io::Write>(
    service: S,
    emf: Option<&'static crate::emf::Emf>,
    out: impl Fn() -> W + Clone,
) -> impl lambda_http::Service<LambdaEvent<A>, Response = S::Response, Error = S::Error>
where
    S: lambda_http::Service<LambdaEvent<A>>,
{
    service
        .map_request(move |event: LambdaEvent<A>| {
            if let Some(emf) = emf {
                let id = event.context.request_id.clone();
                emf.set_property(crate::telemetry::REQUEST_ID_PROPERTY, id);
            }
            event
        })
        .map_result(move |answer| {
            if let Some(emf) = emf
                && let Err(e) = emf.flush(out())
            {
                tracing::warn!(error = %e, "metrics flush failed");
            }
            answer
        })
}

/// The plain HTTP/1.1 server on `KOSHA_LISTEN`.
async fn serve_local(router: Router) -> Result<(), ServeError> {
    let settings = crate::server::ServerConfig::from_env()?;
    let addr = crate::config::string_or("KOSHA_LISTEN", "127.0.0.1:8080");
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let local = listener.local_addr().map_err(ServeError::Local)?;
    tracing::info!(mode = "local", addr = %local, "serving");
    let served = crate::server::run(listener, router, settings, shutdown_signal())
        .await
        .map_err(ServeError::Local);
    if let Some(emf) = crate::telemetry::metrics_collector() {
        let _ = emf.flush(std::io::stdout());
    }
    served
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

#[cfg(test)]
mod tests {
    use axum::routing::get;
    use lambda_http::{Context, Service as _};
    use serde_json::{Value, json};

    use super::*;

    fn event(payload: &Value) -> LambdaEvent<Box<RawValue>> {
        let raw = RawValue::from_string(payload.to_string()).unwrap();
        LambdaEvent::new(raw, Context::default())
    }

    async fn task(name: String) -> Result<Value, String> {
        match name.as_str() {
            "migrate" => Ok(json!({"task": name, "result": "done"})),
            _ => Err(format!("unknown task {name:?}")),
        }
    }

    fn router() -> Router {
        Router::new().route("/v1/health", get(|| async { "ok" }))
    }

    #[tokio::test]
    async fn a_task_event_runs_the_task_and_its_error_fails_the_invocation() {
        let out = handle_event(router(), task, event(&json!({"task": "migrate"})))
            .await
            .unwrap();
        assert_eq!(out, json!({"task": "migrate", "result": "done"}));
        let err = handle_event(router(), task, event(&json!({"task": "drop"})))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("unknown task"), "{err}");
    }

    #[tokio::test]
    async fn a_function_url_event_goes_to_the_router() {
        let url_event = json!({
            "version": "2.0", "routeKey": "$default", "rawPath": "/v1/health",
            "rawQueryString": "", "headers": {"host": "x.lambda-url.us-east-1.on.aws"},
            "requestContext": {
                "accountId": "123456789012", "apiId": "x",
                "domainName": "x.lambda-url.us-east-1.on.aws", "domainPrefix": "x",
                "requestId": "r1", "routeKey": "$default", "stage": "$default",
                "time": "01/Dec/2026:07:00:00 +0000", "timeEpoch": 1_796_108_400_000_i64,
                "http": {"method": "GET", "path": "/v1/health", "protocol": "HTTP/1.1",
                         "sourceIp": "127.0.0.1", "userAgent": "test"}
            },
            "isBase64Encoded": false
        });
        let out = handle_event(router(), task, event(&url_event))
            .await
            .unwrap();
        assert_eq!(out["statusCode"], 200, "{out}");
        assert_eq!(out["body"], "ok", "{out}");
        assert!(
            handle_event(router(), task, event(&json!({"hello": 1})))
                .await
                .is_err()
        );
    }

    /// An invocation's metrics are written when its handler has answered, named by its
    /// request id.
    #[tokio::test]
    async fn an_invocations_metrics_are_flushed_with_its_request_id_when_it_answers() {
        let emf: &'static crate::emf::Emf = Box::leak(Box::new(crate::emf::Emf::new("Kosha")));
        let out = crate::telemetry::SharedBuffer::default();
        let sink = out.clone();
        let written = out.clone();
        let handler = service_fn(move |_: LambdaEvent<Value>| {
            let written = written.clone();
            async move {
                metrics::with_local_recorder(emf, || metrics::counter!("retries").increment(2));
                assert!(written.text().is_empty(), "nothing before the answer");
                Ok::<_, lambda_http::Error>("done")
            }
        });
        let mut service = metrics_per_invocation(handler, Some(emf), move || sink.clone());
        let mut context = Context::default();
        context.request_id = "req-1".to_owned();
        let answer = service
            .ready()
            .await
            .unwrap()
            .call(LambdaEvent::new(json!({}), context))
            .await
            .unwrap();
        assert_eq!(answer, "done");
        let text = out.text();
        let doc: Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(doc["RequestId"], "req-1", "{text}");
        assert_eq!(doc["retries"], 2, "{text}");
    }
}
