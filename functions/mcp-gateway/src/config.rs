//! Gateway configuration, read and validated once at start-up (SPEC §3, §6).

use kosha_runtime::config::{self, ConfigError};

/// Largest accepted request body (SPEC §3): larger gets 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Everything the gateway reads from its environment.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// core-api base URL (`KOSHA_CORE_API_URL`, default `http://127.0.0.1:8081`).
    pub core_api_url: String,
    /// Accepted `Host` values (`KOSHA_ALLOWED_HOSTS`, comma list; `*.example.com` matches any
    /// subdomain; default the loopback names). Guards against DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` values (`KOSHA_ALLOWED_ORIGINS`, comma list; empty = none allowed).
    /// Requests without `Origin` (non-browser agents) always pass.
    pub allowed_origins: Vec<String>,
    /// In-flight requests per instance above which requests are shed with 503
    /// (`KOSHA_MAX_IN_FLIGHT`, default 64).
    pub max_in_flight: usize,
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
        let max_in_flight = config::parse_or("KOSHA_MAX_IN_FLIGHT", 64usize)?;
        if max_in_flight == 0 {
            return Err(ConfigError::new(
                "KOSHA_MAX_IN_FLIGHT",
                "must be at least 1",
            ));
        }
        Ok(Self {
            core_api_url: config::string_or("KOSHA_CORE_API_URL", "http://127.0.0.1:8081"),
            allowed_hosts,
            allowed_origins: config::list("KOSHA_ALLOWED_ORIGINS"),
            max_in_flight,
        })
    }
}
