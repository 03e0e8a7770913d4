//! `kosha-ops chaos sign`: a signed `X-Kosha-Chaos` header value for testers (SPEC §9, §11).
//!
//! `chaos sign --target T --fault F [--ms N] [--p P] [--ttl DURATION]` prints one line,
//! `target=T;fault=F[;ms=N];p=P;exp=<now + ttl>;sig=<hex>`, built and signed by
//! `kosha_resilience::chaos` (the verifier's own definition of the format).
//!
//! - `--ms` (0–30000) is required for `--fault latency` and refused for the other faults
//!   (the header would carry it, but it would do nothing); `--p` defaults to 1 and is always
//!   written; `--ttl` defaults to 5m and is at most 900s (SPEC §9's limit on `exp`).
//! - The key: `KOSHA_CHAOS_KEY` (hex, as `bootstrap` prints it for a local stack) when set,
//!   with no AWS call; otherwise the Secrets Manager secret `KOSHA_CHAOS_SECRET_ID` (default
//!   `kosha/chaos-hmac-key`), read like the functions read it (`kosha_state::SecretCache`).
//! - Exit 2 for bad usage (including a malformed `KOSHA_CHAOS_KEY`, named but never echoed),
//!   1 when the secret cannot be read.

use std::time::Duration;

use clap::{Args, Subcommand};
use kosha_resilience::chaos::{ChaosSpec, Fault, InvalidSpec, MAX_AHEAD_S, Target};
use kosha_state::{Clock, HmacKey, SecretCache, SystemClock, decode_hmac_key};

use crate::duration::parse_duration;
use crate::exit::Failure;

/// The local key (`.dev/stack.env`), hex.
const CHAOS_KEY_ENV: &str = "KOSHA_CHAOS_KEY";

/// `kosha-ops chaos …`
#[derive(Debug, Subcommand)]
pub enum ChaosCommand {
    /// Print a signed X-Kosha-Chaos header value.
    Sign(SignArgs),
}

/// `kosha-ops chaos sign`
#[derive(Debug, Args)]
pub struct SignArgs {
    /// core-api | screening-sim | openai | postgres
    #[arg(long, value_parser = parse_target)]
    target: Target,
    /// latency | error | timeout | reset
    #[arg(long, value_parser = parse_fault)]
    fault: Fault,
    /// Added latency in milliseconds, 0–30000 (required for --fault latency only).
    #[arg(long)]
    ms: Option<u32>,
    /// Probability per dependency-call attempt, 0–1.
    #[arg(long, default_value_t = 1.0)]
    p: f64,
    /// Validity from now, e.g. 5m, 900s (at most 900s).
    #[arg(long, default_value = "5m", value_parser = parse_chaos_ttl)]
    ttl: Duration,
}

fn parse_target(name: &str) -> Result<Target, String> {
    Target::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Target::ALL.iter().map(|t| t.as_str()).collect();
        format!("expected one of {}", names.join(", "))
    })
}

fn parse_fault(name: &str) -> Result<Fault, String> {
    Fault::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Fault::ALL.iter().map(|f| f.as_str()).collect();
        format!("expected one of {}", names.join(", "))
    })
}

/// A `--ttl` of 1 s to 900 s (SPEC §9: `exp` at most 900 s ahead).
fn parse_chaos_ttl(text: &str) -> Result<Duration, String> {
    let ttl = parse_duration(text)?;
    if ttl > Duration::from_secs(MAX_AHEAD_S) {
        return Err(format!("{text:?}: ttl must be between 1s and 900s"));
    }
    Ok(ttl)
}

/// Runs a `chaos` subcommand.
pub async fn run(command: ChaosCommand) -> Result<(), Failure> {
    match command {
        ChaosCommand::Sign(args) => sign(&args).await,
    }
}

async fn sign(args: &SignArgs) -> Result<(), Failure> {
    let spec = spec(args, SystemClock.now_s())?;
    let key = key().await?;
    let header = spec
        .sign(key.as_bytes())
        .map_err(|e| Failure::Failed(e.to_string()))?;
    println!("{header}");
    Ok(())
}

/// The header's settings with `exp = now_s + ttl`.
fn spec(args: &SignArgs, now_s: i64) -> Result<ChaosSpec, Failure> {
    if args.ms.is_some() && args.fault != Fault::Latency {
        return Err(Failure::Usage(
            "--ms applies only to --fault latency".to_owned(),
        ));
    }
    let now_s = u64::try_from(now_s)
        .map_err(|_| Failure::Failed("the system clock is before 1970".to_owned()))?;
    let exp = now_s.saturating_add(args.ttl.as_secs());
    ChaosSpec::try_new(args.target, args.fault, args.ms, args.p, exp).map_err(|e| match e {
        InvalidSpec::MissingMs => Failure::Usage("--fault latency requires --ms".to_owned()),
        InvalidSpec::MsOutOfRange => Failure::Usage("--ms must be between 0 and 30000".to_owned()),
        InvalidSpec::POutOfRange => Failure::Usage("--p must be between 0 and 1".to_owned()),
        InvalidSpec::Key => Failure::Failed(e.to_string()),
    })
}

/// `KOSHA_CHAOS_KEY` when set (not blank), else the secret from Secrets Manager.
async fn key() -> Result<HmacKey, Failure> {
    if let Some(hex) = std::env::var(CHAOS_KEY_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        return decode_hmac_key(&hex)
            .map_err(|why| Failure::Usage(format!("{CHAOS_KEY_ENV} is not a chaos key: {why}")));
    }
    let sdk = kosha_runtime::aws::sdk_config().await;
    let cache = SecretCache::from_env(&sdk);
    cache.get().await.map_err(|e| {
        Failure::Failed(format!(
            "cannot read the chaos key from secret {}: {e}",
            cache.secret_id()
        ))
    })
}
