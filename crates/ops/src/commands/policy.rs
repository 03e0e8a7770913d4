//! `kosha-ops policy check|test`: try a Cedar policy file before deploying it (SPEC §5a, §11).
//!
//! - `check FILE` loads the file as the gateway loads `KOSHA_POLICY_FILE` (parse, `@id`s,
//!   validation against the schema in strict mode, `kosha_authz::Policies::parse`) and prints
//!   `ok: N policies (id, …)`; a file the gateway would refuse to start with is exit 1 with the
//!   gateway's one-line reason, `FILE: policy <id> at line <n>: <what>` ([`check`]).
//! - `test FILE --token T --tool N --args JSON [--record JSON] [--now EPOCH_S]
//!   [--protocol-version V]` prints the decision of one call as one JSON line
//!   ([`trial`]).
//!
//! Exit 0 on success (whatever the decision), 1 when the file or the token would be refused,
//! 2 on bad usage (SPEC §11).

mod check;
mod schema;
mod trial;

use std::path::Path;

use clap::Subcommand;
use kosha_authz::Policies;

use crate::exit::Failure;

/// `kosha-ops policy …`
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Parse and validate a policy file as the gateway does at start.
    Check(check::CheckArgs),
    /// Print the decision of one call under a policy file, as one JSON line.
    Test(Box<trial::TestArgs>),
}

/// Runs a `policy` subcommand.
pub async fn run(command: PolicyCommand) -> Result<(), Failure> {
    match command {
        PolicyCommand::Check(args) => check::run(&args),
        PolicyCommand::Test(args) => trial::run(*args).await,
    }
}

/// The policy set in `path`, loaded as the gateway loads `KOSHA_POLICY_FILE`.
///
/// # Errors
/// [`Failure::Failed`] when the file cannot be read, or does not parse or validate: `FILE:`
/// and the [`kosha_authz::LoadError`] (`policy <id> at line <n>: <what>`).
fn load(path: &Path) -> Result<Policies, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Failed(format!("cannot read {}: {e}", path.display())))?;
    Policies::parse(&text).map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))
}
