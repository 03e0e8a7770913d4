//! The gateway's shared state, built once per process (outside the handler, so a warm Lambda
//! instance reuses clients, pools and breaker state).

use std::collections::BTreeMap;
use std::sync::Arc;

use kosha_auth::Verifier;
use kosha_resilience::config::{Dependency, PolicyConfig};
use kosha_resilience::overrides::OverrideSource;
use kosha_resilience::policy::Policy;
use kosha_resilience::rate_limit::RateLimiter;

use crate::backends::core_api::CoreApi;
use crate::backends::sigv4::SigV4Signer;
use crate::config::GatewayConfig;
use crate::tools::get_service_health::{DependencyHealth, OverrideInfo};
use crate::tools::{self, ToolSpec};

/// Everything a request needs: config, dependency clients and their policies, the tools.
pub struct Gateway {
    /// Validated configuration.
    pub config: GatewayConfig,
    /// core-api client.
    pub core_api: CoreApi,
    /// Every tool served, in `tools/list` order.
    pub tools: Vec<ToolSpec>,
    /// Access-token verifier (JWKS cache shared by all requests).
    pub verifier: Verifier,
    /// The resilience policy for core-api reads (seed 004 §1).
    pub core_api_read: Policy,
    /// Per-client token bucket for `tools/call` (SPEC §6).
    pub rate_limiter: Arc<dyn RateLimiter>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("config", &self.config)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Builds the state from `config`; backends are called over `http` (the process's shared
    /// client), tokens are checked by `verifier`, breakers read forced-open overrides from
    /// `overrides`, `tools/call` takes tokens from `rate_limiter`.
    ///
    /// # Errors
    /// The policy's [`kosha_resilience::config::ConfigError`] when a `KOSHA_POLICY_*` setting
    /// is invalid.
    pub fn new(
        config: GatewayConfig,
        http: reqwest::Client,
        verifier: Verifier,
        overrides: Arc<dyn OverrideSource>,
        rate_limiter: Arc<dyn RateLimiter>,
    ) -> Result<Self, kosha_resilience::config::ConfigError> {
        let core_api = CoreApi::new(&config.core_api_url, http);
        let read = PolicyConfig::from_lookup(Dependency::CoreApiRead, kosha_runtime::config::var)?;
        let core_api_read = Policy::try_new(Dependency::CoreApiRead.name(), read, overrides)?;
        Ok(Self {
            config,
            core_api,
            tools: tools::registry(),
            verifier,
            core_api_read,
            rate_limiter,
        })
    }

    /// The same gateway, signing its core-api requests with `signer`
    /// (`KOSHA_CORE_API_AUTH=iam`).
    #[must_use]
    pub fn with_core_api_signer(mut self, signer: Arc<SigV4Signer>) -> Self {
        self.core_api = self.core_api.with_signer(signer);
        self
    }

    /// The tool named `name`, if served.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.tool.name == name)
    }

    /// This instance's view of each dependency, for `get_service_health`.
    pub fn dependency_health(&self) -> BTreeMap<String, DependencyHealth> {
        [&self.core_api_read]
            .into_iter()
            .map(|policy| {
                let h = policy.health();
                let health = DependencyHealth {
                    breaker: h.state.as_str().to_owned(),
                    in_flight: u32::try_from(h.in_flight).unwrap_or(u32::MAX),
                    capacity: u32::try_from(h.capacity).unwrap_or(u32::MAX),
                    forced_open: h.forced.map(|f| OverrideInfo {
                        state: "forced_open".to_owned(),
                        reason: f.reason,
                        set_by: f.set_by,
                        set_at: f.set_at,
                        expires_at: f.expires_at,
                    }),
                };
                (h.dependency, health)
            })
            .collect()
    }
}
