//! `kosha-ops status [--json] [--gateway URL]` (SPEC §11): what an operator checks first.
//!
//! - **Overrides in force**, read from the state table (`KOSHA_STATE_TABLE`, consistent read):
//!   dependency, reason, who set them, when, and when they expire (expired items are left
//!   out, as the gateways do; malformed ones are warned about on stderr).
//! - **Fleet trips in force** (SPEC §8 "Fleet trips", §11), read in the same way: per breaker
//!   (`core-api`, `core-api-writes`, `screening-sim`), each instance's trip (its id is the
//!   author) still within the open duration. The open duration is the item's own: its
//!   `expires_at` is its newest trip plus the open duration, so no gateway setting is needed
//!   here. Expired items are left out.
//! - **Breakers**, with `--gateway URL` (the gateway's base URL or its `/mcp` endpoint) and an
//!   operator token in `KOSHA_OPERATOR_TOKEN`: each dependency's breaker as the answering
//!   instance sees it, from one `tools/call get_service_health` (MCP 2025-11-25, stateless
//!   Streamable HTTP: one POST, JSON answer; the gateway needs no `initialize` first). That call
//!   reads the overrides first when the instance's last read is over 5 s old (SPEC §8), so it
//!   shows what a protected call there would decide now. Another instance may see otherwise:
//!   breakers are per instance, overrides fleet-wide.
//!
//! Output: a short text report, or with `--json` one object
//! `{"overrides": [{dependency, state, reason, set_by, set_at, expires_at}],
//! "trips": [{breaker, instance, tripped_at_ms}], "gateway": URL|null,
//! "breakers": {dependency: {breaker, in_flight, capacity, override?, fleet_trips?}}|null}`.
//! Exit 0 on success; 2 for bad usage (`--gateway` without a token, a URL that is not
//! http(s)); 1 when the state table or the gateway cannot be read, or the gateway refuses.

use std::time::Duration;

use clap::Args;
use kosha_state::{BreakerItem, Clock, StateTable, SystemClock, TripItem};
use serde_json::{Map, Value, json};

use super::breaker::item_json;
use crate::exit::Failure;

/// The protocol revision the request declares (the gateway serves it statelessly).
const PROTOCOL_VERSION: &str = "2025-11-25";

/// Bound on the whole gateway request.
const GATEWAY_TIMEOUT: Duration = Duration::from_secs(10);

/// `kosha-ops status`
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    json: bool,
    /// Also ask this gateway for its breakers (base URL or `…/mcp`); needs
    /// KOSHA_OPERATOR_TOKEN.
    #[arg(long)]
    gateway: Option<String>,
}

/// Runs `status`.
pub async fn run(args: StatusArgs) -> Result<(), Failure> {
    let gateway = match &args.gateway {
        Some(url) => Some(Gateway::from_args(url)?),
        None => None,
    };
    let sdk = kosha_runtime::aws::sdk_config().await;
    let table = StateTable::from_env(&sdk).map_err(|e| Failure::Usage(e.to_string()))?;
    let now_s = SystemClock.now_s();
    let found = table
        .read_breakers()
        .await
        .map_err(|e| Failure::Failed(format!("cannot read the state table: {e}")))?;
    let mut overrides = Vec::new();
    for (dependency, parsed) in found {
        match parsed {
            Ok(item) if item.is_expired(now_s) => {}
            Ok(item) => overrides.push(item),
            Err(why) => eprintln!(
                "kosha-ops: warning: breaker#{dependency} is malformed ({why}); gateways ignore it"
            ),
        }
    }
    let trips = table
        .read_trips()
        .await
        .map_err(|e| Failure::Failed(format!("cannot read the state table: {e}")))?;
    let trips = in_force(&trips, SystemClock.now_ms());
    let breakers = match &gateway {
        Some(g) => Some(g.service_health().await?),
        None => None,
    };
    let report = Report {
        overrides,
        trips,
        gateway: gateway.as_ref().map(|g| g.url.clone()),
        breakers,
        now_s,
    };
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    Ok(())
}

/// The gateway to ask, and the operator's token.
struct Gateway {
    url: String,
    token: String,
}

impl Gateway {
    fn from_args(url: &str) -> Result<Self, Failure> {
        let parsed =
            url::Url::parse(url).map_err(|e| Failure::Usage(format!("--gateway {url:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Failure::Usage(format!(
                "--gateway {url:?}: expected an http(s) URL"
            )));
        }
        let token = std::env::var("KOSHA_OPERATOR_TOKEN")
            .ok()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Failure::Usage("--gateway needs an operator token in KOSHA_OPERATOR_TOKEN".into())
            })?;
        let base = url.trim_end_matches('/');
        let url = if base.ends_with("/mcp") {
            base.to_owned()
        } else {
            format!("{base}/mcp")
        };
        Ok(Self { url, token })
    }

    /// `tools/call get_service_health`: its `dependencies` object.
    async fn service_health(&self) -> Result<Value, Failure> {
        let failed = |why: String| Failure::Failed(format!("gateway {}: {why}", self.url));
        let http = kosha_runtime::tls::http_client().map_err(|e| failed(e.to_string()))?;
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "get_service_health", "arguments": {}}});
        let resp = http
            .post(&self.url)
            .timeout(GATEWAY_TIMEOUT)
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .json(&body)
            .send()
            .await
            .map_err(|e| failed(format!("unreachable ({e})")))?;
        let status = resp.status();
        let answer: Value = resp
            .json()
            .await
            .map_err(|_| failed(format!("HTTP {status}, not a JSON-RPC answer")))?;
        if let Some(error) = answer.get("error") {
            let message = error["message"].as_str().unwrap_or("error");
            return Err(failed(format!("HTTP {status}: {message}")));
        }
        let content = &answer["result"]["structuredContent"];
        if answer["result"]["isError"] == true {
            let code = content["error"]["code"].as_str().unwrap_or("error");
            return Err(failed(format!("get_service_health failed: {code}")));
        }
        match content.get("dependencies") {
            Some(deps @ Value::Object(_)) => Ok(deps.clone()),
            _ => Err(failed(format!(
                "HTTP {status}: no dependencies in the answer"
            ))),
        }
    }
}

/// One instance's trip in force: breaker, instance id, epoch ms.
#[derive(Debug, PartialEq, Eq)]
struct Trip {
    breaker: String,
    instance: String,
    at_ms: i64,
}

/// The trips within their open duration at `now_ms`, newest first per breaker. An item's open
/// duration is `expires_at` less its newest trip (the write sets it so, rounded up to the
/// second); an expired item has none in force.
fn in_force(items: &[(String, TripItem)], now_ms: i64) -> Vec<Trip> {
    let mut trips = Vec::new();
    for (breaker, item) in items {
        let (Some(exp), Some(&newest)) = (item.expires_at, item.instances.values().max()) else {
            continue;
        };
        let open_ms = exp.saturating_mul(1000).saturating_sub(newest);
        let mut found: Vec<Trip> = item
            .instances
            .iter()
            .filter(|&(_, &at)| {
                at > now_ms.saturating_sub(open_ms) && !item.is_expired(now_ms / 1000)
            })
            .map(|(instance, &at_ms)| Trip {
                breaker: breaker.clone(),
                instance: instance.clone(),
                at_ms,
            })
            .collect();
        found.sort_by(|a, b| b.at_ms.cmp(&a.at_ms).then(a.instance.cmp(&b.instance)));
        trips.extend(found);
    }
    trips
}

/// What `status` prints.
struct Report {
    overrides: Vec<BreakerItem>,
    trips: Vec<Trip>,
    gateway: Option<String>,
    breakers: Option<Value>,
    now_s: i64,
}

impl Report {
    fn to_json(&self) -> Value {
        let overrides: Vec<Value> = self.overrides.iter().map(item_json).collect();
        let trips: Vec<Value> = self
            .trips
            .iter()
            .map(
                |t| json!({"breaker": t.breaker, "instance": t.instance, "tripped_at_ms": t.at_ms}),
            )
            .collect();
        json!({"overrides": overrides, "trips": trips, "gateway": self.gateway,
               "breakers": self.breakers})
    }

    fn to_text(&self) -> String {
        let mut out = String::from("overrides in force (state table):\n");
        if self.overrides.is_empty() {
            out.push_str("  none\n");
        }
        for item in &self.overrides {
            let f = &item.forced;
            let until = match f.expires_at {
                Some(exp) => format!("expires {} (in {})", rfc3339(exp), left(exp - self.now_s)),
                None => "until cleared".to_owned(),
            };
            out.push_str(&format!(
                "  {}: forced open by {} at {}, {}; reason: {}\n",
                item.dependency,
                f.set_by,
                rfc3339(f.set_at),
                until,
                f.reason
            ));
        }
        out.push_str("fleet trips in force (state table):\n");
        if self.trips.is_empty() {
            out.push_str("  none\n");
        }
        for t in &self.trips {
            let ago = (self.now_s * 1000 - t.at_ms).max(0) / 1000;
            out.push_str(&format!(
                "  {}: tripped by instance {} at {} ({} ago)\n",
                t.breaker,
                t.instance,
                rfc3339(t.at_ms.div_euclid(1000)),
                left(ago)
            ));
        }
        if let (Some(url), Some(Value::Object(deps))) = (&self.gateway, &self.breakers) {
            out.push_str(&format!(
                "breakers (as the instance behind {url} sees them):\n"
            ));
            for (name, d) in deps {
                out.push_str(&format!("  {name}: {}\n", breaker_line(d)));
            }
        }
        out
    }
}

fn breaker_line(d: &Value) -> String {
    let empty = Map::new();
    let d = d.as_object().unwrap_or(&empty);
    let num = |k: &str| d.get(k).and_then(Value::as_u64).unwrap_or(0);
    let fleet = d
        .get("fleet_trips")
        .and_then(Value::as_u64)
        .map(|n| format!(", {n} fleet trip(s) counted"))
        .unwrap_or_default();
    format!(
        "{}, {} of {} in flight{fleet}",
        d.get("breaker")
            .and_then(Value::as_str)
            .unwrap_or("unknown"),
        num("in_flight"),
        num("capacity")
    )
}

/// Epoch seconds as RFC 3339 UTC (the raw number when out of range).
fn rfc3339(epoch_s: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(epoch_s)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| epoch_s.to_string())
}

/// `1h 5m`, `4m 10s`, `30s`.
fn left(seconds: i64) -> String {
    let s = seconds.max(0);
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m {sec}s"),
        (h, m, _) => format!("{h}h {m}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::{Trip, TripItem, in_force, left};

    #[test]
    fn trips_in_force_are_those_within_the_items_own_open_duration() {
        let now = 1_800_000_020_000;
        // Newest trip at now − 5 s, open 15 s: expires_at = now + 10 s.
        let item = TripItem {
            instances: [
                ("a".to_owned(), now - 5_000),
                ("b".to_owned(), now - 14_000),
                ("old".to_owned(), now - 16_000),
            ]
            .into(),
            expires_at: Some((now + 10_000) / 1000),
        };
        let expired = TripItem {
            instances: [("x".to_owned(), now - 20_000)].into(),
            expires_at: Some((now - 5_000) / 1000),
        };
        let got = in_force(
            &[
                ("core-api".to_owned(), item),
                ("screening-sim".to_owned(), expired),
            ],
            now,
        );
        let trip = |instance: &str, at_ms| Trip {
            breaker: "core-api".to_owned(),
            instance: instance.to_owned(),
            at_ms,
        };
        assert_eq!(got, [trip("a", now - 5_000), trip("b", now - 14_000)]);
    }

    #[test]
    fn time_left_reads_at_a_glance() {
        assert_eq!(left(30), "30s");
        assert_eq!(left(250), "4m 10s");
        assert_eq!(left(3900), "1h 5m");
        assert_eq!(left(-5), "0s");
    }
}
