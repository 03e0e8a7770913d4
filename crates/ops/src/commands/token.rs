//! `kosha-ops token keygen|mint`: the local dev signing key and Cognito-shaped access tokens
//! (SPEC §2, §11; local dev signing key only, never a real pool's).
//!
//! - `keygen --out-dir DIR [--force]` writes `DIR/dev-signing-key.pem` and `DIR/jwks.json`.
//!   An existing key is kept (its `jwks.json` rewritten) unless `--force`, so `scripts/dev up`
//!   can run it every time without invalidating tokens. Prints one JSON line:
//!   `{"kid","private_key","jwks"}`.
//! - `mint --role agent|operator [--role …] --client-id ID [--user SUB] [--ttl 12h]` prints
//!   the token on stdout: a Cognito user access token (`username`, so the gateway takes its
//!   roles from its groups alone, SPEC §5) of the user `SUB` (`sub` and `username`; without
//!   `--user`, the user is named after the client) signed in through the app client `ID`, in
//!   the `--role` groups, with `scope` `openid` and those roles' scopes. Key from `--key`/`KOSHA_DEV_SIGNING_KEY` (default `.dev/dev-signing-key.pem`),
//!   issuer from `--issuer`/`KOSHA_JWT_ISSUER` (default `http://127.0.0.1/kosha-dev`).
//!   When `KOSHA_ALLOWED_CLIENT_IDS` is set (the gateway's comma list, SPEC §5) and does not
//!   hold the client id, it still mints (exit 0: tests mint refused tokens on purpose) and
//!   prints one warning line on stderr that the gateway will reject the token.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use kosha_auth::dev::{self, MintClaims};
use kosha_auth::{ALLOWED_CLIENT_IDS_ENV, Role};

use super::CommandError;
use crate::duration::parse_ttl;

/// `kosha-ops token …`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make the dev RSA key pair and its JWKS.
    Keygen(KeygenArgs),
    /// Sign a dev access token and print it.
    Mint(MintArgs),
}

/// `kosha-ops token keygen`
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Directory for dev-signing-key.pem and jwks.json (created if absent).
    #[arg(long, value_name = "DIR", default_value = ".dev")]
    out_dir: PathBuf,
    /// Replace an existing key (tokens signed with it stop verifying).
    #[arg(long)]
    force: bool,
}

/// `kosha-ops token mint`
#[derive(Debug, Args)]
pub struct MintArgs {
    /// Role (Cognito group) to grant; repeat for both.
    #[arg(long = "role", value_enum, required = true)]
    roles: Vec<RoleArg>,
    /// The app client id (`client_id`); the gateway accepts only those in
    /// KOSHA_ALLOWED_CLIENT_IDS (a warning says so when it is set and does not list this one).
    #[arg(long)]
    client_id: String,
    /// The user (`sub` and `username`): the person behind the client (SPEC §5); default the
    /// client id.
    #[arg(long, value_name = "SUB", value_parser = parse_user)]
    user: Option<String>,
    /// Lifetime, e.g. 12h, 30m, 3600s (at most 30d).
    #[arg(long, default_value = "12h", value_parser = parse_ttl)]
    ttl: Duration,
    /// The dev private key PEM.
    #[arg(
        long,
        env = "KOSHA_DEV_SIGNING_KEY",
        default_value = ".dev/dev-signing-key.pem"
    )]
    key: PathBuf,
    /// The `iss` claim; must equal the gateway's KOSHA_JWT_ISSUER.
    #[arg(
        long,
        env = kosha_auth::JWT_ISSUER_ENV,
        default_value = "http://127.0.0.1/kosha-dev"
    )]
    issuer: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RoleArg {
    Agent,
    Operator,
}

impl From<RoleArg> for Role {
    fn from(role: RoleArg) -> Self {
        match role {
            RoleArg::Agent => Role::Agent,
            RoleArg::Operator => Role::Operator,
        }
    }
}

/// Runs a `token` subcommand.
pub fn run(command: TokenCommand) -> Result<(), CommandError> {
    match command {
        TokenCommand::Keygen(args) => keygen(&args),
        TokenCommand::Mint(args) => mint(&args),
    }
}

fn keygen(args: &KeygenArgs) -> Result<(), CommandError> {
    let key_path = args.out_dir.join(dev::PRIVATE_KEY_FILE);
    let keys = if key_path.exists() && !args.force {
        dev::from_private_pem(read_key(&key_path)?)?
    } else {
        dev::generate()?
    };
    let (private_key, jwks) = dev::write_key_files(&args.out_dir, &keys)?;
    let line = serde_json::json!({
        "kid": keys.kid,
        "private_key": private_key.display().to_string(),
        "jwks": jwks.display().to_string(),
    });
    println!("{line}");
    Ok(())
}

fn mint(args: &MintArgs) -> Result<(), CommandError> {
    let pem = read_key(&args.key)?;
    let kid = dev::key_id(&pem).map_err(|e| format!("{}: {e}", args.key.display()))?;
    let mut roles: Vec<Role> = args.roles.iter().map(|&r| r.into()).collect();
    roles.sort_unstable();
    roles.dedup();
    let user = args.user.as_deref().unwrap_or(&args.client_id);
    let mut claims = MintClaims::user(&args.issuer, &args.client_id, user, user, &roles);
    claims.ttl = args.ttl;
    println!("{}", dev::mint(&pem, &kid, &claims)?);
    let allowed = kosha_runtime::config::list(ALLOWED_CLIENT_IDS_ENV);
    if let Some(warning) = not_allowed_warning(&args.client_id, &allowed) {
        eprintln!("kosha-ops: warning: {warning}");
    }
    Ok(())
}

/// A `--user` value: non-empty, at most 128 characters (Cognito's `sub` and usernames are
/// shorter), no whitespace or control characters (it is logged and keyed on, SPEC §5).
fn parse_user(value: &str) -> Result<String, String> {
    let bad = |c: char| c.is_whitespace() || c.is_control();
    if value.is_empty() || value.chars().count() > 128 || value.chars().any(bad) {
        return Err(
            "a user is 1 to 128 characters, without whitespace or control characters".into(),
        );
    }
    Ok(value.to_owned())
}

/// Why the gateway would refuse a token for `client_id`, given `KOSHA_ALLOWED_CLIENT_IDS` read
/// as the gateway reads it (`kosha_runtime::config::list`); an empty list says nothing (the
/// gateway would not start).
fn not_allowed_warning(client_id: &str, listed: &[String]) -> Option<String> {
    if listed.is_empty() || listed.iter().any(|id| id == client_id) {
        return None;
    }
    Some(format!(
        "client id {client_id:?} is not in {ALLOWED_CLIENT_IDS_ENV} ({}); a gateway with this \
         list will reject the token (401)",
        listed.join(",")
    ))
}

fn read_key(path: &Path) -> Result<String, CommandError> {
    dev::read_private_pem(path)
        .map_err(|e| format!("{e} (run `kosha-ops token keygen` first)").into())
}

#[cfg(test)]
mod tests {
    use super::{not_allowed_warning, parse_user};

    #[test]
    fn a_user_is_a_short_printable_token() {
        assert_eq!(parse_user("4f1c-alice").as_deref(), Ok("4f1c-alice"));
        for bad in ["", "a b", "a\u{7}", &"x".repeat(129)] {
            assert!(parse_user(bad).is_err(), "{bad:?}");
        }
    }

    fn list(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn warns_only_for_a_client_id_missing_from_a_non_empty_list() {
        let warning = not_allowed_warning("x", &list(&["a", "b"])).unwrap();
        assert!(
            warning.contains("\"x\"") && warning.contains("(a,b)"),
            "{warning}"
        );
        assert_eq!(not_allowed_warning("b", &list(&["a", "b"])), None);
        assert_eq!(not_allowed_warning("x", &[]), None);
        // Exact match, as the gateway compares.
        assert!(not_allowed_warning("A", &list(&["a"])).is_some());
    }
}
