//! `kosha-ops policy check FILE` (SPEC §5a, §11).

use std::path::PathBuf;

use clap::Args;

use crate::exit::Failure;

/// `kosha-ops policy check`
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The policy file (Cedar syntax), as KOSHA_POLICY_FILE would name it.
    file: PathBuf,
}

/// Loads the file; prints `ok: N policies (id, …)`. An empty set is valid (it denies every
/// call and hides every tool): said on stderr, exit 0.
pub fn run(args: &CheckArgs) -> Result<(), Failure> {
    let ids = super::load(&args.file)?.ids();
    println!("{}", summary(&ids));
    if ids.is_empty() {
        eprintln!("kosha-ops: warning: the file holds no policy: every call is denied");
    }
    Ok(())
}

/// `ok: 2 policies (a, b)`.
fn summary(ids: &[String]) -> String {
    let noun = if ids.len() == 1 { "policy" } else { "policies" };
    format!("ok: {} {noun} ({})", ids.len(), ids.join(", "))
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn the_summary_counts_and_names_the_policies() {
        let ids = ["a".to_owned(), "b".to_owned()];
        assert_eq!(summary(&ids), "ok: 2 policies (a, b)");
        assert_eq!(summary(&ids[..1]), "ok: 1 policy (a)");
        assert_eq!(summary(&[]), "ok: 0 policies ()");
    }
}
