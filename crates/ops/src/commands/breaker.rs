//! `kosha-ops breaker force-open | clear | list`: fleet-wide forced-open overrides
//! (seed 004 §4, SPEC §8, §11).
//!
//! Each writes or reads `breaker#<dependency>` in the state table (`KOSHA_STATE_TABLE`).
//! Every gateway instance decides on the change from its next protected call once 5 s plus one
//! read have passed (SPEC §8). Output is JSON, one object per line:
//! `{"dependency","state":"forced_open","reason","set_by","set_at","expires_at"}` for
//! `force-open` and `list` (`list` omits expired items, as the gateways do, and warns on
//! stderr about malformed ones), `{"dependency","cleared":bool}` for `clear`. `force-open` and
//! `clear` also write the `ops_action` audit event on stderr ([`super::audit`]).

use std::time::Duration;

use clap::{Args, Subcommand};
use kosha_contract::dependency::Dependency;
use kosha_state::{BreakerItem, Clock, StateError, StateTable, SystemClock, is_dependency};
use serde_json::json;

use crate::duration::parse_ttl;
use crate::exit::Failure;

/// `kosha-ops breaker …`
#[derive(Debug, Args)]
pub struct BreakerArgs {
    #[command(subcommand)]
    action: BreakerAction,
}

#[derive(Debug, Subcommand)]
enum BreakerAction {
    /// Force a dependency's breaker open on every instance until cleared or expired.
    ForceOpen {
        /// core-api | screening-sim | openai | postgres
        dependency: String,
        /// Why (shown by get_service_health).
        #[arg(long)]
        reason: String,
        /// Expire after this long, 1s to 30d, e.g. 30m, 2h, 900s (default: until cleared).
        #[arg(long, value_parser = parse_ttl)]
        ttl: Option<Duration>,
        /// Recorded as set_by (default: $USER, else "unknown").
        #[arg(long)]
        operator: Option<String>,
    },
    /// Remove a dependency's override.
    Clear {
        /// core-api | screening-sim | openai | postgres
        dependency: String,
    },
    /// Print the overrides in force, one JSON object per line.
    List,
}

fn check_dependency(dependency: &str) -> Result<(), Failure> {
    if is_dependency(dependency) {
        Ok(())
    } else {
        Err(Failure::Usage(format!(
            "unknown dependency {dependency:?}: expected one of {}",
            Dependency::ALL.map(Dependency::as_str).join(", ")
        )))
    }
}

/// One forced-open override as JSON: `dependency`, `state` (`"forced_open"`), `reason`,
/// `set_by`, `set_at` and `expires_at` (epoch s). The line `breaker force-open` and `list`
/// print (and force-open's audit line holds), and an entry of `status`'s `overrides`.
pub(crate) fn item_json(item: &BreakerItem) -> serde_json::Value {
    json!({
        "dependency": item.dependency,
        "state": "forced_open",
        "reason": item.forced.reason,
        "set_by": item.forced.set_by,
        "set_at": item.forced.set_at,
        "expires_at": item.forced.expires_at,
    })
}

fn default_operator() -> String {
    std::env::var("USER")
        .ok()
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

async fn table() -> Result<StateTable, Failure> {
    let sdk = kosha_runtime::aws::sdk_config().await;
    StateTable::from_env(&sdk).map_err(|e| Failure::Usage(e.to_string()))
}

/// Runs one `breaker` action.
pub async fn run(args: BreakerArgs) -> Result<(), Failure> {
    match args.action {
        BreakerAction::ForceOpen {
            dependency,
            reason,
            ttl,
            operator,
        } => {
            check_dependency(&dependency)?;
            if reason.trim().is_empty() {
                return Err(Failure::Usage("--reason must not be empty".into()));
            }
            let set_by = operator
                .map(|o| o.trim().to_owned())
                .filter(|o| !o.is_empty())
                .unwrap_or_else(default_operator);
            let item = table()
                .await?
                .force_open_breaker(
                    &dependency,
                    reason.trim(),
                    &set_by,
                    ttl,
                    SystemClock.now_s(),
                )
                .await
                .map_err(|e| match e {
                    StateError::InvalidSetting { .. } => Failure::Usage(e.to_string()),
                    e => Failure::Failed(e.to_string()),
                })?;
            super::audit("breaker_force_open", item_json(&item));
            println!("{}", item_json(&item));
        }
        BreakerAction::Clear { dependency } => {
            check_dependency(&dependency)?;
            let cleared = table()
                .await?
                .clear_breaker(&dependency)
                .await
                .map_err(|e| Failure::Failed(e.to_string()))?;
            let outcome = json!({"dependency": dependency, "cleared": cleared});
            super::audit("breaker_clear", outcome.clone());
            println!("{outcome}");
        }
        BreakerAction::List => {
            let now_s = SystemClock.now_s();
            let found = table()
                .await?
                .read_breakers()
                .await
                .map_err(|e| Failure::Failed(e.to_string()))?;
            for (dependency, parsed) in found {
                match parsed {
                    Ok(item) if item.is_expired(now_s) => {}
                    Ok(item) => println!("{}", item_json(&item)),
                    Err(why) => eprintln!(
                        "kosha-ops: warning: breaker#{dependency} is malformed ({why}); gateways ignore it"
                    ),
                }
            }
        }
    }
    Ok(())
}
