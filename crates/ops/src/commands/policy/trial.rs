//! `kosha-ops policy test FILE --token T --tool N --args JSON [--record JSON] [--now EPOCH_S]
//! [--protocol-version V]`: the decision the gateway would make on one call (SPEC §5a, §11).
//!
//! Prints one JSON line, `{"decision": "allow"|"forbid"|"confirm", "policies": [ids…],
//! "reason": "…", "listed": true|false}`: the deciding policies' ids, the `@reason` a forbid
//! answers (or "not permitted"; forbids only), and whether `tools/list` shows the tool to this
//! caller (the listing rule, `kosha_authz::Policies::may_list`). Exit 0 whatever the decision.
//!
//! The call is put as the gateway puts it:
//! - the principal comes from the token, verified with the gateway's own settings
//!   (`KOSHA_JWT_ISSUER`, `KOSHA_JWKS_URL`, `KOSHA_ALLOWED_CLIENT_IDS`, `KOSHA_JWT_LEEWAY_S`,
//!   `KOSHA_SCOPE_PREFIX`; `kosha_auth::Verifier`), so its roles (from one claim, SPEC §5),
//!   groups, scopes and tags are the gateway's; a token the gateway would refuse is exit 1;
//! - `raise_dispute` without `amount_minor` is decided on the transaction's amount, the
//!   dispute's default (SPEC §4), taken from `--record`;
//! - `--record` (the transaction as the gateway reads it) reaches `context.record` only when
//!   the file's policies for the tool read it, as the gateway reads the transaction only then;
//!   it is required then, and refused for a tool that addresses no transaction;
//! - when those policies read the context, the arguments must fit the tool's input as the
//!   Cedar schema types it ([`schema::check_input`]; the gateway answers `invalid_argument`
//!   before deciding otherwise): exit 2 naming the field. The gateway's other argument checks
//!   (ranges, id formats) are not repeated here.
//! - `--now` is the gateway's clock (`context.now`, `time_of_day`, `weekday`), default the
//!   system clock; `--protocol-version` the request's MCP revision, default `2025-11-25`.

use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use kosha_auth::{AuthError, Principal, Verifier, VerifierConfig};
use kosha_authz::{Ask, Decision, RECORD_TOOLS, Reads, Record};
use serde_json::{Map, Value};

use super::schema;
use crate::exit::Failure;

/// The tool whose `amount_minor` defaults to the transaction's (SPEC §4).
const DISPUTE_TOOL: &str = "raise_dispute";

/// `kosha-ops policy test`
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The policy file (Cedar syntax).
    file: std::path::PathBuf,
    /// The caller's access token, as sent after `Authorization: Bearer`; `-` reads it from
    /// stdin (out of the process list).
    #[arg(long, value_name = "TOKEN", value_parser = parse_token)]
    token: Token,
    /// The tool called (the Cedar action), e.g. raise_dispute.
    #[arg(long, value_name = "NAME", value_parser = parse_tool)]
    tool: String,
    /// The call's arguments, a JSON object, e.g. '{"transaction_id": "txn_000341", "reason":
    /// "charged twice"}'.
    #[arg(long, value_name = "JSON", value_parser = parse_object)]
    args: Map<String, Value>,
    /// The addressed transaction as the gateway reads it: '{"account_id": "acc_0012",
    /// "amount_minor": 81240, "currency": "EUR"}'.
    #[arg(long, value_name = "JSON", value_parser = parse_record)]
    record: Option<Record>,
    /// The gateway's clock, seconds since the Unix epoch (default: now).
    #[arg(long, value_name = "EPOCH_S", allow_negative_numbers = true)]
    now: Option<i64>,
    /// The request's MCP revision (context.protocol_version), YYYY-MM-DD.
    #[arg(long, value_name = "V", default_value = "2025-11-25", value_parser = parse_revision)]
    protocol_version: String,
}

/// A bearer token, or `-` for stdin; never printed (`Debug` says `Token(..)`).
#[derive(Clone)]
enum Token {
    Given(String),
    Stdin,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// The decision's line (SPEC §5a): fields in this order.
#[derive(serde::Serialize)]
struct Line<'a> {
    decision: &'static str,
    policies: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    listed: bool,
}

/// What the gateway decides on: the arguments (a dispute's default amount filled in) and the
/// record when the policies read it.
#[derive(Debug, PartialEq)]
struct Call {
    input: Map<String, Value>,
    record: Option<Record>,
}

/// Decides the call and prints its line.
pub async fn run(args: TestArgs) -> Result<(), Failure> {
    let token = token(&args.token)?;
    let policies = super::load(&args.file)?;
    let reads = policies.reads(&args.tool);
    let call = prepare(reads, &args.tool, args.args, args.record)?;
    if reads.any() {
        schema::check_input(&args.tool, &call.input)
            .map_err(|why| Failure::Usage(format!("--args: {why}")))?;
    }
    let principal = principal(&token).await?;
    let now_s = args.now.unwrap_or_else(system_now_s);
    let ask = Ask {
        principal: &principal,
        tool: &args.tool,
        input: &call.input,
        record: call.record.as_ref(),
        protocol_version: &args.protocol_version,
        now_s,
    };
    let decision = policies.decide(&ask);
    let listed = policies.may_list(&principal, &args.tool, &args.protocol_version);
    println!("{}", line(&decision, listed)?);
    Ok(())
}

/// The call as the gateway puts it to the policies whose reads are `reads`.
///
/// # Errors
/// [`Failure::Usage`]: a `--record` for a tool that addresses no transaction; none where the
/// policies read `context.record`, or where a dispute without `amount_minor` needs its default
/// (SPEC §4) and the policies read the context.
fn prepare(
    reads: Reads,
    tool: &str,
    mut input: Map<String, Value>,
    record: Option<Record>,
) -> Result<Call, Failure> {
    let addresses = RECORD_TOOLS.contains(&tool);
    if record.is_some() && !addresses {
        return Err(Failure::Usage(format!(
            "--record: {tool} addresses no transaction (only {} do)",
            RECORD_TOOLS.join(", ")
        )));
    }
    if tool == DISPUTE_TOOL && input.get("amount_minor").is_none_or(Value::is_null) {
        match &record {
            Some(r) => {
                input.insert("amount_minor".to_owned(), Value::from(r.amount_minor));
            }
            None if reads.any() => {
                return Err(Failure::Usage(format!(
                    "{DISPUTE_TOOL} without amount_minor is decided on the transaction's \
                     amount (SPEC §4): give --record, or amount_minor in --args"
                )));
            }
            None => {}
        }
    }
    if reads.record && addresses && record.is_none() {
        return Err(Failure::Usage(format!(
            "the policies for {tool} read context.record: give --record, the transaction as \
             the gateway reads it"
        )));
    }
    Ok(Call {
        input,
        record: record.filter(|_| reads.record),
    })
}

/// The principal the gateway would see for `token`.
///
/// # Errors
/// [`Failure::Usage`] when the gateway's token settings are missing or invalid;
/// [`Failure::Failed`] when the gateway would refuse the token (401 or 403), with the reason.
async fn principal(token: &str) -> Result<Principal, Failure> {
    let config = VerifierConfig::from_lookup(kosha_runtime::config::var)
        .map_err(|e| Failure::Usage(format!("the gateway's token settings: {e}")))?;
    let http = kosha_runtime::tls::http_client()
        .map_err(|e| Failure::Failed(format!("HTTP client: {e}")))?;
    Verifier::new(config, http)
        .verify(Some(&format!("Bearer {token}")))
        .await
        .map_err(|e| Failure::Failed(refused(e)))
}

/// Why the gateway would refuse a token, and what to check (SPEC §5).
fn refused(error: AuthError) -> String {
    let why = match error {
        AuthError::Missing | AuthError::InvalidToken => {
            "401 invalid_token: check its signature, issuer, expiry and client id against \
             KOSHA_JWKS_URL, KOSHA_JWT_ISSUER and KOSHA_ALLOWED_CLIENT_IDS"
        }
        AuthError::InsufficientScope => {
            "403 insufficient_scope: a machine client's token whose scopes grant no role \
             under KOSHA_SCOPE_PREFIX"
        }
        AuthError::NoRole => "403: a user in neither the group agent nor operator",
    };
    format!("the gateway refuses this token before any policy ({why})")
}

/// The token text: the argument, or stdin for `-`; a leading `Bearer ` is dropped.
fn token(given: &Token) -> Result<String, Failure> {
    let text = match given {
        Token::Given(text) => text.clone(),
        Token::Stdin => std::io::read_to_string(std::io::stdin())
            .map_err(|e| Failure::Failed(format!("reading the token from stdin: {e}")))?,
    };
    let text = text.trim();
    let text = match text.split_once(char::is_whitespace) {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
        None if text.eq_ignore_ascii_case("bearer") => "",
        _ => text,
    };
    if text.is_empty() {
        return Err(Failure::Usage("--token is empty".to_owned()));
    }
    Ok(text.to_owned())
}

/// The decision's JSON line ([`Line`]).
fn line(decision: &Decision, listed: bool) -> Result<String, Failure> {
    let reason = match decision {
        Decision::Forbid { reason, .. } => Some(reason.as_str()),
        Decision::Allow { .. } | Decision::Confirm { .. } => None,
    };
    let line = Line {
        decision: decision.as_str(),
        policies: decision.policies(),
        reason,
        listed,
    };
    serde_json::to_string(&line).map_err(|e| Failure::Failed(format!("the decision's line: {e}")))
}

fn system_now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn parse_token(text: &str) -> Result<Token, String> {
    Ok(match text {
        "-" => Token::Stdin,
        _ => Token::Given(text.to_owned()),
    })
}

fn parse_tool(name: &str) -> Result<String, String> {
    if schema::is_tool(name) {
        return Ok(name.to_owned());
    }
    let tools: Vec<&str> = schema::tools().collect();
    Err(format!("not a tool; the tools are {}", tools.join(", ")))
}

fn parse_object(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("expected a JSON object".to_owned()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// `--record` as JSON: exactly `account_id` (string), `amount_minor` (integer) and `currency`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordJson {
    account_id: String,
    amount_minor: i64,
    currency: String,
}

fn parse_record(text: &str) -> Result<Record, String> {
    let r: RecordJson = serde_json::from_str(text).map_err(|e| {
        format!(
            "expected {{\"account_id\": string, \"amount_minor\": integer, \"currency\": \
             string}}: {e}"
        )
    })?;
    Ok(Record {
        account_id: r.account_id,
        amount_minor: r.amount_minor,
        currency: r.currency,
    })
}

/// A revision is a date, `YYYY-MM-DD` (MCP's versioning).
fn parse_revision(text: &str) -> Result<String, String> {
    let shaped = text.len() == 10
        && text.char_indices().all(|(i, c)| match i {
            4 | 7 => c == '-',
            _ => c.is_ascii_digit(),
        });
    if shaped {
        Ok(text.to_owned())
    } else {
        Err("an MCP revision is a date, YYYY-MM-DD (e.g. 2025-11-25)".to_owned())
    }
}

#[cfg(test)]
mod tests;
