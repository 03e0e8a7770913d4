//! Exit codes and the one-line reason on stderr (SPEC §11).

use std::process::ExitCode;

/// Why a command did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// Bad usage: exit 2.
    Usage(String),
    /// The command was valid but failed: exit 1.
    Failed(String),
}

/// One line, whatever the message held.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Prints the reason (if any) and maps the result to 0, 1 or 2.
pub fn finish(result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(m)) => {
            eprintln!("kosha-ops: {}", one_line(&m));
            ExitCode::from(2)
        }
        Err(Failure::Failed(m)) => {
            eprintln!("kosha-ops: {}", one_line(&m));
            ExitCode::from(1)
        }
    }
}

/// A clap parse error: help and version print as usual (exit 0); anything else becomes one
/// line on stderr and exit 2.
pub fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // Printing can only fail on a closed stdout; nothing better to do then.
            let _ = err.print();
            if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            // The error's first paragraph, e.g. "the following required arguments were not
            // provided:" and the arguments on the lines below it.
            let rendered = err.render().to_string();
            let paragraph: Vec<&str> = rendered
                .lines()
                .skip_while(|l| l.trim().is_empty())
                .take_while(|l| !l.trim().is_empty())
                .collect();
            let reason = paragraph.join(" ");
            let reason = reason.trim_start_matches("error: ");
            let reason = if reason.is_empty() {
                "bad usage"
            } else {
                reason
            };
            eprintln!("kosha-ops: {}", one_line(reason));
            ExitCode::from(2)
        }
    }
}
