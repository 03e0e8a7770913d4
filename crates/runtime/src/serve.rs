//! One router, two modes (SPEC §1): under the Lambda Runtime API when `AWS_LAMBDA_RUNTIME_API`
//! is set, otherwise the plain HTTP/1.1 and h2c server of [`crate::server`] on `KOSHA_LISTEN`
//! (default `127.0.0.1:8080`), with its timeouts, connection cap and drain.

use axum::Router;

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

/// Serves `router` until shutdown (SIGTERM/ctrl-c locally, then a drain; the runtime's
/// lifetime on Lambda).
///
/// # Errors
/// [`ServeError`] when a server setting is bad, the listener cannot be bound or the runtime
/// loop fails.
pub async fn serve(router: Router) -> Result<(), ServeError> {
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        tracing::info!(mode = "lambda", "serving");
        let result = match crate::telemetry::metrics_collector() {
            // Flushes the EMF document after every invocation.
            Some(collector) => {
                metrics_cloudwatch_embedded::lambda::service::run_http(collector, router).await
            }
            None => lambda_http::run(router).await,
        };
        return result.map_err(|e| ServeError::Lambda(e.to_string()));
    }
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
    if let Some(collector) = crate::telemetry::metrics_collector() {
        let _ = collector.flush(crate::telemetry::emf_stdout());
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
