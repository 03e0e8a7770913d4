//! `kosha-ops issuer serve`: the local stack's token issuer (issues #31, 44; `crate::issuer`
//! says what it serves: both grants, the login page of the public client `kosha-dev-mcp`). `scripts/dev up` starts it; `scripts/dev status` lists it.
//!
//! - `--listen ADDR` (`KOSHA_LISTEN`, how the stack starts every process): loopback only.
//! - `--issuer URL` (`KOSHA_JWT_ISSUER`): the tokens' `iss`; its host and port must be the
//!   listening ones for clients to find it (the stack passes both).
//! - `--key PEM` (`KOSHA_DEV_SIGNING_KEY`, default `.dev/dev-signing-key.pem`): the dev key;
//!   the key set served is the `jwks.json` beside it (`kosha-ops token keygen` writes both).
//! - `--clients FILE` (`KOSHA_ISSUER_CLIENTS`): the app clients (`crate::issuer::clients`).
//! - `--ttl` (default 1h, Cognito's default access-token validity).
//!
//! Runs until SIGTERM or SIGINT. Exit 1 with one line when a setting is unusable or the
//! address cannot be bound.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use kosha_auth::dev;

use super::CommandError;
use crate::duration::parse_ttl;
use crate::issuer::{self, Issuer, clients::Clients};

/// `kosha-ops issuer …`
#[derive(Debug, Subcommand)]
pub enum IssuerCommand {
    /// Serve the metadata, the key set, the login page and the token endpoint (client
    /// credentials; authorization code with PKCE for the public client kosha-dev-mcp).
    Serve(ServeArgs),
}

/// `kosha-ops issuer serve`
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (loopback only; the issuer URL's host must be loopback too).
    #[arg(long, env = "KOSHA_LISTEN", default_value = "127.0.0.1:8089")]
    listen: SocketAddr,
    /// The issuer URL: the tokens' `iss`, e.g. http://127.0.0.1:8089/kosha-dev.
    #[arg(long, env = kosha_auth::JWT_ISSUER_ENV)]
    issuer: String,
    /// The dev private key PEM; its jwks.json beside it is the key set served.
    #[arg(
        long,
        env = "KOSHA_DEV_SIGNING_KEY",
        default_value = ".dev/dev-signing-key.pem"
    )]
    key: PathBuf,
    /// The app clients file (client ids, secrets, allowed scopes).
    #[arg(long, env = "KOSHA_ISSUER_CLIENTS")]
    clients: PathBuf,
    /// Access-token lifetime, e.g. 1h, 30m (at most 30d).
    #[arg(long, default_value = "1h", value_parser = parse_ttl)]
    ttl: Duration,
}

/// Runs an `issuer` subcommand.
pub async fn run(command: IssuerCommand) -> Result<(), CommandError> {
    match command {
        IssuerCommand::Serve(args) => serve(args).await,
    }
}

async fn serve(args: ServeArgs) -> Result<(), CommandError> {
    if !args.listen.ip().is_loopback() {
        return Err(format!(
            "--listen {}: the dev issuer listens on loopback only",
            args.listen
        )
        .into());
    }
    let key_pem = dev::read_private_pem(&args.key)
        .map_err(|e| format!("{e} (run `kosha-ops token keygen` first)"))?;
    let jwks_path = args
        .key
        .parent()
        .map(|dir| dir.join(dev::JWKS_FILE))
        .unwrap_or_else(|| PathBuf::from(dev::JWKS_FILE));
    let clients = Clients::read(&args.clients)?;
    let issuer = Issuer::new(&args.issuer, key_pem, jwks_path, clients, args.ttl)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    eprintln!(
        "{}",
        serde_json::json!({"event": "issuer_listening", "listen": args.listen.to_string(), "issuer": issuer.issuer()})
    );
    axum::serve(listener, issuer::router(Arc::new(issuer)))
        .with_graceful_shutdown(stopped())
        .await
        .map_err(|e| format!("issuer: {e}"))?;
    Ok(())
}

/// Resolves on SIGTERM (how `scripts/dev` stops processes) or SIGINT.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
