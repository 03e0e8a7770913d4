//! The gateway's shared state, built once per process (outside the handler, so a warm Lambda
//! instance reuses clients, pools and breaker state).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use kosha_auth::Verifier;

use crate::backends::core_api::CoreApi;
use crate::config::GatewayConfig;
use crate::tools::get_service_health::DependencyHealth;
use crate::tools::{self, ToolSpec};

/// Everything a request needs: config, dependency clients, the tool registry.
#[derive(Debug)]
pub struct Gateway {
    /// Validated configuration.
    pub config: GatewayConfig,
    /// core-api client.
    pub core_api: CoreApi,
    /// Every tool served, in `tools/list` order.
    pub tools: Vec<ToolSpec>,
    /// Access-token verifier (JWKS cache shared by all requests).
    pub verifier: Verifier,
    core_api_in_flight: AtomicU32,
}

/// Why the gateway's state could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The HTTP client (TLS backend) failed to initialise.
    #[error("http client: {0}")]
    Http(#[from] reqwest::Error),
    /// The token verifier's configuration is invalid.
    #[error("auth: {0}")]
    Auth(#[from] kosha_auth::ConfigError),
}

/// Holds one in-flight slot for core-api until dropped.
#[derive(Debug)]
pub struct InFlight<'a>(&'a AtomicU32);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Gateway {
    /// Builds the state from `config`.
    ///
    /// # Errors
    /// [`StartError`] when a client cannot be built from the configuration.
    pub fn new(config: GatewayConfig) -> Result<Self, StartError> {
        let core_api = CoreApi::new(&config.core_api_url)?;
        let verifier = Verifier::new(config.auth.clone())?;
        Ok(Self {
            verifier,
            config,
            core_api,
            tools: tools::registry(),
            core_api_in_flight: AtomicU32::new(0),
        })
    }

    /// The tool named `name`, if served.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.tool.name == name)
    }

    /// Counts a core-api call in flight until the guard drops.
    pub fn core_api_in_flight(&self) -> InFlight<'_> {
        self.core_api_in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(&self.core_api_in_flight)
    }

    /// This instance's view of each dependency, for `get_service_health`.
    pub fn dependency_health(&self) -> BTreeMap<String, DependencyHealth> {
        let mut deps = BTreeMap::new();
        deps.insert(
            "core-api".to_owned(),
            DependencyHealth {
                breaker: "closed".to_owned(),
                in_flight: self.core_api_in_flight.load(Ordering::Relaxed),
                capacity: 32,
                forced_open: None,
            },
        );
        deps
    }
}
