//! The subcommands. To add one: a module beside `token`, a variant in [`Command`], an arm in
//! [`run`]. Shared helpers: `duration` (`12h`, `30m`, `3600s`).

pub mod duration;
pub mod token;

use clap::{Parser, Subcommand};

/// A command failed; printed as one line on stderr, exit status 1.
pub type CommandError = Box<dyn std::error::Error + Send + Sync>;

/// kosha-ops: operate and test a Kosha deployment (SPEC §11).
#[derive(Debug, Parser)]
#[command(name = "kosha-ops", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Local dev signing key and access tokens.
    #[command(subcommand)]
    Token(token::TokenCommand),
}

/// Runs the parsed command.
pub async fn run(cli: Cli) -> Result<(), CommandError> {
    match cli.command {
        Command::Token(command) => token::run(command),
    }
}
