//! One router, two modes (SPEC §1): under the Lambda Runtime API when `AWS_LAMBDA_RUNTIME_API`
//! is set, otherwise a plain HTTP/1.1 server on `KOSHA_LISTEN` (default `127.0.0.1:8080`).

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
    /// The Lambda runtime loop failed.
    #[error("lambda runtime failed: {0}")]
    Lambda(String),
}

/// Serves `router` until shutdown (SIGTERM/ctrl-c locally; the runtime's lifetime on Lambda).
///
/// # Errors
/// [`ServeError`] when the listener cannot be bound or the runtime loop fails.
pub async fn serve(router: Router) -> Result<(), ServeError> {
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        tracing::info!(mode = "lambda", "serving");
        // Exported spans leave before the instance is frozen (feature `otlp`).
        #[cfg(feature = "otlp")]
        let router = router.layer(axum::middleware::map_response(
            |response: axum::response::Response| async move {
                // force_flush blocks until the exporter answers: off the async workers.
                let _ = tokio::task::spawn_blocking(crate::otlp::flush).await;
                response
            },
        ));
        let result = match crate::telemetry::metrics_collector() {
            // Flushes the EMF document after every invocation.
            Some(collector) => {
                metrics_cloudwatch_embedded::lambda::service::run_http(collector, router).await
            }
            None => lambda_http::run(router).await,
        };
        return result.map_err(|e| ServeError::Lambda(e.to_string()));
    }
    let addr = crate::config::string_or("KOSHA_LISTEN", "127.0.0.1:8080");
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let local = listener.local_addr().map_err(ServeError::Local)?;
    tracing::info!(mode = "local", addr = %local, "serving");
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(shutdown_signal())
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
