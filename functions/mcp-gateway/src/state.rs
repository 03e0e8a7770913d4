//! The gateway's shared state, built once per process (outside the handler, so a warm Lambda
//! instance reuses clients, pools and breaker state).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

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
    core_api_in_flight: AtomicU32,
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
    /// When the HTTP client cannot be built.
    pub fn new(config: GatewayConfig) -> Result<Self, reqwest::Error> {
        let core_api = CoreApi::new(&config.core_api_url)?;
        Ok(Self {
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
