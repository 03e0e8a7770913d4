//! Gateway configuration: every setting the gateway reads, read and validated once at
//! start-up into one [`GatewayConfig`] (SPEC §3, §5, §6, §8; seed 004 §1). A bad value is a
//! [`ConfigError`] naming the variable (never its value), and `main` exits 2.

use std::time::Duration;

use kosha_auth::VerifierConfig;
use kosha_resilience::config::PolicyConfig;
use kosha_resilience::hedge::HedgeConfig;
use kosha_resilience::principal_rate::{self, PrincipalLimiter};
use kosha_resilience::rate_limit::BucketConfig;
use kosha_runtime::config::{self, ConfigError};
use kosha_state::{RateLimitSettings, StateTable};

use crate::backends::{Backend, PerBackend};
pub use confirm::{CONFIRM_TTL, CONFIRM_TTL_ENV, ConfirmSettings};
pub use kosha_clients::config::{ScreeningConfig, ServiceAuth};
pub use rate_key::{InvalidRateKey, RATE_KEY_ENV, RateKey};

mod confirm;
mod rate_key;

/// Largest accepted request body (SPEC §3): larger gets 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Default for `KOSHA_BODY_READ_TIMEOUT_MS`: 10 s, ample for 1 MiB on any working link.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Per-tool costs in tokens, `name=cost,…` (SPEC §6).
pub const TOOL_COSTS_ENV: &str = "KOSHA_TOOL_COSTS";

/// The operator's Cedar policy file (SPEC §5a); unset: the built-in set.
pub const POLICY_FILE_ENV: &str = "KOSHA_POLICY_FILE";

/// A fixed `context.now` for the policies (seconds since the Unix epoch), for trying a
/// time-of-day policy (SPEC §5a); unset: the system clock.
pub const POLICY_NOW_ENV: &str = "KOSHA_POLICY_NOW";

/// Turns adaptive bulkhead limits on for every backend (issue #33; default off).
pub const ADAPTIVE_CONCURRENCY_ENV: &str = "KOSHA_ADAPTIVE_CONCURRENCY";

/// Distinct instances whose fleet trips open a breaker (SPEC §8 "Fleet trips"; default 2,
/// 0 turns the signal off, 1 is refused at start).
pub const FLEET_TRIP_QUORUM_ENV: &str = "KOSHA_FLEET_TRIP_QUORUM";

/// `KOSHA_FLEET_TRIP_QUORUM`'s default.
pub const DEFAULT_FLEET_TRIP_QUORUM: usize = 2;

/// The tail-latency and backpressure policies of issue #33 that are switched per gateway.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TailSettings {
    /// Hedging of core-api reads (`get_transaction`, `list_transactions`,
    /// `search_knowledge_base`; never writes, never screening): on by default with
    /// `kosha_resilience::hedge`'s defaults, `KOSHA_POLICY_CORE_API_READ_HEDGE_*` to tune,
    /// `KOSHA_POLICY_CORE_API_READ_HEDGE_PERCENTILE=0` to turn off.
    pub hedge: Option<HedgeConfig>,
    /// Adaptive bulkhead limits for every backend (`KOSHA_ADAPTIVE_CONCURRENCY=true`, default
    /// false: Lambda serves one request per instance and gains nothing; the end-to-end
    /// stacks and the fleet simulator keep fixed sizes).
    pub adaptive_concurrency: bool,
}

impl Default for TailSettings {
    /// Hedging on with its defaults, adaptive limits off.
    fn default() -> Self {
        Self {
            hedge: Some(HedgeConfig::DEFAULT),
            adaptive_concurrency: false,
        }
    }
}

/// Everything the gateway reads from its environment.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// core-api base URL (`KOSHA_CORE_API_URL`, default `http://127.0.0.1:8081`).
    pub core_api_url: String,
    /// How core-api requests are authenticated (`KOSHA_CORE_API_AUTH`: `none` or `iam`,
    /// default `none`).
    pub core_api_auth: ServiceAuth,
    /// Accepted `Host` values (`KOSHA_ALLOWED_HOSTS`, comma list; `*.example.com` matches any
    /// subdomain; default the loopback names). Guards against DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` values (`KOSHA_ALLOWED_ORIGINS`, comma list; empty = none allowed).
    /// Requests without `Origin` (non-browser agents) always pass.
    pub allowed_origins: Vec<String>,
    /// In-flight requests per instance above which requests are shed with 503
    /// (`KOSHA_MAX_IN_FLIGHT`, default 64).
    pub max_in_flight: usize,
    /// How long a request body may take to arrive, whole (`KOSHA_BODY_READ_TIMEOUT_MS`,
    /// default 10 000, at least 1); later gets 408. Read before an in-flight slot is taken.
    pub body_read_timeout: Duration,
    /// Token verification (SPEC §5): `KOSHA_JWT_ISSUER` (required), `KOSHA_JWKS_URL`,
    /// `KOSHA_ALLOWED_CLIENT_IDS`, `KOSHA_JWT_LEEWAY_S`.
    pub auth: VerifierConfig,
    /// The public base URL (`https://mcp.example.com`, no trailing `/`) used in the
    /// protected-resource metadata and `WWW-Authenticate` (`KOSHA_PUBLIC_BASE_URL`: `http(s)`,
    /// a host, no path, query or fragment); when unset, derived per request from `Host`
    /// (https, or http for loopback hosts).
    pub public_base_url: Option<String>,
    /// The state table (`KOSHA_STATE_TABLE`, default `kosha-state`): token buckets and
    /// overrides (SPEC §8).
    pub state_table: String,
    /// The token bucket and its leases (`KOSHA_RATE_CAPACITY`, `KOSHA_RATE_PER_SEC`,
    /// `KOSHA_LEASE_SECONDS`, `KOSHA_LEASE_MAX_TOKENS`; SPEC §6).
    pub rate_limit: RateLimitSettings,
    /// Whose bucket a `tools/call` spends from (`KOSHA_RATE_KEY`: `client`, the default, or
    /// `user`; SPEC §6).
    pub rate_key: RateKey,
    /// Per-tool costs in tokens as given (`KOSHA_TOOL_COSTS=name=cost,…`; SPEC §6; `None`:
    /// unset). Checked against the catalogue and the capacity where the state is built
    /// (`Gateway::new`, with `tools::cost::parse`), so this module needs no tool.
    pub tool_costs: Option<String>,
    /// The operator's Cedar policy set (`KOSHA_POLICY_FILE`, a `.cedar` file in the deployment
    /// package; SPEC §5a); `None`: the built-in set, today's role table. Read, parsed and
    /// validated where the state is built (`Gateway::new`): a file that does not stops the
    /// start, naming the policy and its line.
    pub policy_file: Option<std::path::PathBuf>,
    /// The clock the policies read (`context.now`), fixed (`KOSHA_POLICY_NOW`, seconds since
    /// the Unix epoch) to try a time-of-day policy; `None`: the system clock. For tests and
    /// trials, never for production.
    pub policy_now: Option<i64>,
    /// The in-memory per-principal request limit of every authenticated request
    /// (`KOSHA_PRINCIPAL_RPS`, requests/s, default 50; SPEC §6), as its bucket.
    pub principal_rate: BucketConfig,
    /// Each backend's policy: its seed 004 §1 row with `KOSHA_POLICY_<BACKEND>_*` overrides.
    pub policies: PerBackend<PolicyConfig>,
    /// Hedged reads and adaptive concurrency (issue #33).
    pub tail: TailSettings,
    /// Whether an operator's signed `X-Kosha-Chaos` header may be honoured (`CHAOS_ENABLED`,
    /// default false; SPEC §9).
    pub chaos_enabled: bool,
    /// The Secrets Manager secret holding the chaos HMAC key (`KOSHA_CHAOS_SECRET_ID`, default
    /// `kosha/chaos-hmac-key`).
    pub chaos_secret_id: String,
    /// A person's confirmation: the sealing key's secret and the state's lifetime
    /// (`KOSHA_CONFIRM_SECRET_ID`, `KOSHA_CONFIRM_TTL_S`; SPEC §5b).
    pub confirm: ConfirmSettings,
    /// screening-sim and the screening queue (`KOSHA_SCREENING_*`).
    pub screening: ScreeningConfig,
    /// Fleet trips' quorum (`KOSHA_FLEET_TRIP_QUORUM`, default 2; 0 = off; SPEC §8): a breaker
    /// opens on trips from this many distinct instances ([`parse_fleet_quorum`]).
    pub fleet_trip_quorum: usize,
}

impl GatewayConfig {
    /// Reads the environment.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable whose value does not parse.
    pub fn from_env() -> Result<Self, ConfigError> {
        let mut allowed_hosts = config::list("KOSHA_ALLOWED_HOSTS");
        if allowed_hosts.is_empty() {
            allowed_hosts = ["localhost", "127.0.0.1", "[::1]", "::1"]
                .map(str::to_owned)
                .to_vec();
        }
        let core_api = kosha_clients::config::CoreApiConfig::from_env()?;
        let max_in_flight = config::parse_or("KOSHA_MAX_IN_FLIGHT", 64usize)?;
        if max_in_flight == 0 {
            return Err(ConfigError::new(
                "KOSHA_MAX_IN_FLIGHT",
                "must be at least 1",
            ));
        }
        let body_read_timeout_ms = config::parse_or(
            "KOSHA_BODY_READ_TIMEOUT_MS",
            u64::try_from(DEFAULT_BODY_READ_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
        )?;
        if body_read_timeout_ms == 0 {
            return Err(ConfigError::new(
                "KOSHA_BODY_READ_TIMEOUT_MS",
                "must be at least 1",
            ));
        }
        let public_base_url = config::var("KOSHA_PUBLIC_BASE_URL")
            .map(|u| parse_base_url(&u).map_err(|e| ConfigError::new("KOSHA_PUBLIC_BASE_URL", e)))
            .transpose()?;
        let auth = VerifierConfig::from_lookup(config::var)
            .map_err(|e| ConfigError::new("authentication settings", e.to_string()))?;
        let state_table = StateTable::name_from_env()
            .map_err(|e| ConfigError::new(kosha_state::STATE_TABLE_ENV, e.to_string()))?;
        let rate_limit = RateLimitSettings::from_env().map_err(|e| match e {
            // The variable's own name and reason, not a second "invalid …" prefix.
            kosha_state::StateError::InvalidSetting { name, reason } => {
                ConfigError::new(name, reason)
            }
            other => ConfigError::new("KOSHA_RATE_*/KOSHA_LEASE_*", other.to_string()),
        })?;
        let rate_key = config::parse_or(RATE_KEY_ENV, RateKey::Client)?;
        let tool_costs = config::var(TOOL_COSTS_ENV);
        let policy_file = config::var(POLICY_FILE_ENV).map(std::path::PathBuf::from);
        let policy_now = config::var(POLICY_NOW_ENV)
            .map(|v| {
                v.parse::<i64>().map_err(|_| {
                    ConfigError::new(POLICY_NOW_ENV, "must be seconds since the Unix epoch")
                })
            })
            .transpose()?;
        let principal_rate = PrincipalLimiter::bucket(config::parse_or(
            "KOSHA_PRINCIPAL_RPS",
            principal_rate::DEFAULT_RPS,
        )?)
        .map_err(|e| ConfigError::new("KOSHA_PRINCIPAL_RPS", e.to_string()))?;
        let policies = PerBackend::try_new(|b| {
            PolicyConfig::from_lookup(b.profile(), b.env_prefix(), config::var)
                .map_err(|e| ConfigError::new(b.env_prefix(), e.to_string()))
        })?;
        let tail = TailSettings {
            hedge: HedgeConfig::from_lookup(Backend::CoreApiRead.env_prefix(), config::var)
                .map_err(|e| ConfigError::new(Backend::CoreApiRead.env_prefix(), e.to_string()))?,
            adaptive_concurrency: config::bool_or(ADAPTIVE_CONCURRENCY_ENV, false)?,
        };
        let fleet_trip_quorum = parse_fleet_quorum(config::var(FLEET_TRIP_QUORUM_ENV).as_deref())
            .map_err(|e| ConfigError::new(FLEET_TRIP_QUORUM_ENV, e))?;
        Ok(Self {
            fleet_trip_quorum,
            tail,
            chaos_enabled: config::bool_or("CHAOS_ENABLED", false)?,
            chaos_secret_id: config::string_or(
                kosha_state::CHAOS_SECRET_ENV,
                kosha_state::DEFAULT_CHAOS_SECRET_ID,
            ),
            confirm: ConfirmSettings::from_env()?,
            screening: ScreeningConfig::from_env()?,
            state_table,
            rate_limit,
            rate_key,
            tool_costs,
            policy_file,
            policy_now,
            principal_rate,
            policies,
            auth,
            public_base_url,
            core_api_url: core_api.url,
            core_api_auth: core_api.auth,
            allowed_hosts,
            allowed_origins: config::list("KOSHA_ALLOWED_ORIGINS"),
            max_in_flight,
            body_read_timeout: Duration::from_millis(body_read_timeout_ms),
        })
    }
}

/// The largest `KOSHA_FLEET_TRIP_QUORUM`: Lambda's default concurrency per account and region,
/// so a quorum above it could never be reached and would silently turn the signal off.
pub const MAX_FLEET_TRIP_QUORUM: usize = 1000;

/// `KOSHA_FLEET_TRIP_QUORUM` (SPEC §8): unset or blank → 2; `0` → off; `1` refused, since one
/// instance alone (its own network, its own bug) must never open the fleet; otherwise the
/// number, at most [`MAX_FLEET_TRIP_QUORUM`].
///
/// # Errors
/// A reason (never echoing the value) for anything but 0 or an integer from 2 to
/// [`MAX_FLEET_TRIP_QUORUM`].
pub fn parse_fleet_quorum(raw: Option<&str>) -> Result<usize, &'static str> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(DEFAULT_FLEET_TRIP_QUORUM);
    };
    match raw.parse::<usize>() {
        Ok(1) => Err(
            "must not be 1: one instance alone must never open the fleet's breakers; \
             use 0 (fleet trips off) or at least 2",
        ),
        Ok(n) if n > MAX_FLEET_TRIP_QUORUM => Err(
            "must be at most 1000 (Lambda's default concurrency): a larger quorum is never \
             reached; use 0 to turn fleet trips off",
        ),
        Ok(n) => Ok(n),
        Err(_) => Err("must be an unsigned integer (0 = off, 2 to 1000)"),
    }
}

/// `raw` as a base URL without its trailing `/`: `http://` or `https://`, a host, an optional
/// port, nothing after.
///
/// # Errors
/// A reason naming what is wrong (never echoing the value).
fn parse_base_url(raw: &str) -> Result<String, &'static str> {
    kosha_clients::config::parse_http_url(raw, false)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fleet_quorum_defaults_to_2_turns_off_at_0_and_refuses_1() {
        use super::parse_fleet_quorum as parse;
        assert_eq!(parse(None), Ok(2));
        assert_eq!(parse(Some(" ")), Ok(2));
        assert_eq!(parse(Some("0")), Ok(0));
        assert_eq!(parse(Some("3")), Ok(3));
        let one = parse(Some("1")).unwrap_err();
        assert!(one.contains("one instance alone"), "{one}");
        assert_eq!(parse(Some("1000")), Ok(1000));
        let big = parse(Some("1001")).unwrap_err();
        assert!(big.contains("at most 1000"), "{big}");
        assert!(parse(Some("-1")).is_err());
        assert!(parse(Some("two")).is_err());
    }

    use super::parse_base_url;

    #[test]
    fn public_base_url_is_scheme_and_host_only() {
        assert_eq!(
            parse_base_url("https://mcp.example.com/"),
            Ok("https://mcp.example.com".to_owned())
        );
        assert_eq!(
            parse_base_url("http://127.0.0.1:8080"),
            Ok("http://127.0.0.1:8080".to_owned())
        );
        for bad in [
            "mcp.example.com",
            "ftp://mcp.example.com",
            "https://mcp.example.com/mcp",
            "https://mcp.example.com?x=1",
            "https://mcp.example.com#x",
            "https://user@mcp.example.com",
            "https://",
            "https://exa mple.com",
        ] {
            assert!(parse_base_url(bad).is_err(), "{bad}");
        }
    }
}
