//! kosha-ops: the operators' and testers' CLI (SPEC §11). Commands live in `commands/`.
//! Exit status: 0 success, 2 bad usage (clap), 1 failure with a one-line reason on stderr.

mod commands;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match commands::run(commands::Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kosha-ops: {}", error.to_string().replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}
