//! kosha-ops: the operators' and testers' CLI (SPEC §11).
//!
//! Exit codes: 0 success, 2 bad usage, 1 failure — with a one-line reason on stderr.

mod commands;
mod duration;
mod exit;
mod issuer;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Kosha operator and tester CLI (SPEC §11).
#[derive(Debug, Parser)]
#[command(name = "kosha-ops", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fleet-wide breaker overrides in the state table.
    Breaker(commands::breaker::BreakerArgs),
    /// Signed chaos headers for testers.
    #[command(subcommand)]
    Chaos(commands::chaos::ChaosCommand),
    /// Create the state table, queues and chaos secret (local emulator by default).
    Bootstrap(commands::bootstrap::BootstrapArgs),
    /// Local dev signing key and access tokens.
    #[command(subcommand)]
    Token(commands::token::TokenCommand),
    /// Overrides in force and, with --gateway, each dependency's breaker.
    Status(commands::status::StatusArgs),
    /// The local stack's token issuer (client-credentials grant, dev key).
    #[command(subcommand)]
    Issuer(commands::issuer::IssuerCommand),
    /// Check a Cedar policy file, and try calls against it, before deploying it.
    #[command(subcommand)]
    Policy(commands::policy::PolicyCommand),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return exit::usage_error(&err),
    };
    let result = match cli.command {
        Command::Breaker(args) => commands::breaker::run(args).await,
        Command::Chaos(command) => commands::chaos::run(command).await,
        Command::Bootstrap(args) => commands::bootstrap::run(args).await,
        Command::Status(args) => commands::status::run(args).await,
        Command::Issuer(command) => commands::issuer::run(command)
            .await
            .map_err(|e| exit::Failure::Failed(e.to_string())),
        Command::Policy(command) => commands::policy::run(command).await,
        Command::Token(command) => {
            commands::token::run(command).map_err(|e| exit::Failure::Failed(e.to_string()))
        }
    };
    exit::finish(result)
}
