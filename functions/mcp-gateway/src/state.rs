//! The gateway's shared state, built once per process (outside the handler, so a warm Lambda
//! instance reuses clients, pools and breaker state).
//!
//! [`Gateway::start`] builds it from a [`GatewayConfig`] with the real dependencies (the
//! state table, the JWKS fetcher, SigV4 signing); [`Gateway::new`] takes them as arguments,
//! so tests pass fakes.

use std::sync::Arc;

use kosha_auth::Verifier;
use kosha_resilience::adaptive::AdaptiveConfig;
use kosha_resilience::fleet::{FleetSignal, FleetTrips};
use kosha_resilience::overrides::OverrideSource;
use kosha_resilience::policy::Policy;
use kosha_resilience::rate_limit::RateLimiter;

use crate::backends::screening::Screenings;
use crate::backends::{Backend, PerBackend};
use crate::chaos::ChaosGate;
use crate::config::{GatewayConfig, ServiceAuth, TOOL_COSTS_ENV};
use crate::confirm::Confirmer;
use crate::tools::cost::{self, ToolCosts};
use crate::tools::deps::{Deps, ScreeningRecords};
use kosha_clients::core_api::CoreApi;
use kosha_clients::screening::ScreeningClient;
use kosha_runtime::sigv4::SigV4Signer;

/// `backend`'s policy (seed 004 §1), hedged when it is a hedged read and adaptive when
/// `KOSHA_ADAPTIVE_CONCURRENCY` is on ([`crate::config::TailSettings`], issue #33), sharing
/// its trips as `trip#<health name>` when a fleet signal is given and the quorum is not 0
/// (SPEC §8 "Fleet trips", #27).
fn build_policy(
    backend: Backend,
    config: &GatewayConfig,
    overrides: Arc<dyn OverrideSource>,
    fleet: Option<Arc<dyn FleetSignal>>,
) -> Result<Policy, kosha_resilience::error::ConfigError> {
    let settings = *config.policies.get(backend);
    let mut policy = Policy::try_new(backend.dependency(), settings, overrides)?;
    if let Some(signal) = fleet.filter(|_| config.fleet_trip_quorum > 0) {
        let trips = FleetTrips::try_new(backend.health_name(), config.fleet_trip_quorum, signal)?;
        policy = policy.with_fleet(trips)?;
    }
    if let (true, Some(hedge)) = (backend.hedged(), config.tail.hedge) {
        policy = policy.with_hedging(hedge)?;
    }
    if config.tail.adaptive_concurrency {
        let limit = AdaptiveConfig::for_capacity(settings.bulkhead.capacity);
        policy = policy.with_adaptive_concurrency(backend.health_name(), limit)?;
    }
    Ok(policy)
}

/// Why the gateway could not start; `main` maps each to its exit code
/// ([`StartError::exit_code`]).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting is missing or invalid.
    #[error(transparent)]
    Config(#[from] kosha_runtime::config::ConfigError),
    /// A client could not be built (TLS roots, the HTTP client).
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(String),
}

impl StartError {
    /// 2 for bad configuration (the operator must change a setting), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) => 2,
            Self::HttpClient(_) => 1,
        }
    }
}

/// Everything a request needs: config, dependency clients and their policies.
pub struct Gateway {
    /// Validated configuration.
    pub config: GatewayConfig,
    /// core-api client.
    pub core_api: CoreApi,
    /// screening-sim client.
    pub screening: ScreeningClient,
    /// Screening items and the deferred-screening queue; `None` until
    /// [`Gateway::with_screenings`] (then every screening is answered unrecorded and
    /// nothing can be deferred).
    pub screenings: Option<Screenings>,
    /// Access-token verifier (JWKS cache shared by all requests).
    pub verifier: Verifier,
    /// The token bucket for `tools/call`, per client or per user (SPEC §6).
    pub rate_limiter: Arc<dyn RateLimiter>,
    /// Forced-open overrides (SPEC §8), read by every breaker.
    pub overrides: Arc<dyn OverrideSource>,
    /// Which chaos headers are honoured (SPEC §9).
    pub chaos: ChaosGate,
    /// A person's confirmation of a write (SPEC §5b): the sealing key, the states' TTL.
    pub confirm: Confirmer,
    /// The resilience policy of each backend (seed 004 §1).
    policies: PerBackend<Policy>,
    /// `KOSHA_TOOL_COSTS`, checked against the catalogue and the bucket's capacity.
    tool_costs: ToolCosts,
    /// The operator's policy set (`KOSHA_POLICY_FILE`), validated at start; `None`: the
    /// built-in set, parsed on first use (SPEC §5a, §13).
    authz: Option<Arc<kosha_authz::Policies>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Builds the state from `config`; backends are called over `http` (the process's shared
    /// client), tokens are checked by `verifier`, breakers read forced-open overrides from
    /// `overrides`, `tools/call` takes tokens from `rate_limiter`.
    ///
    /// # Errors
    /// [`StartError::Config`] when a policy in `config` does not validate, or a tool's cost
    /// (`KOSHA_TOOL_COSTS`, a catalogue entry's) is not one the bucket can admit.
    pub fn new(
        config: GatewayConfig,
        http: reqwest::Client,
        verifier: Verifier,
        overrides: Arc<dyn OverrideSource>,
        rate_limiter: Arc<dyn RateLimiter>,
    ) -> Result<Self, StartError> {
        Self::with_fleet(config, http, verifier, overrides, None, rate_limiter)
    }

    /// [`Gateway::new`], each breaker also sharing its trips through `fleet` (SPEC §8 "Fleet
    /// trips") unless `config.fleet_trip_quorum` is 0.
    ///
    /// # Errors
    /// As [`Gateway::new`].
    pub fn with_fleet(
        config: GatewayConfig,
        http: reqwest::Client,
        verifier: Verifier,
        overrides: Arc<dyn OverrideSource>,
        fleet: Option<Arc<dyn FleetSignal>>,
        rate_limiter: Arc<dyn RateLimiter>,
    ) -> Result<Self, StartError> {
        // Checked here, where the catalogue meets the configuration (SPEC §6).
        let tool_costs = cost::parse(
            config.tool_costs.as_deref(),
            &crate::tools::catalogue(),
            config.rate_limit.bucket.capacity(),
        )
        .map_err(|e| kosha_runtime::config::ConfigError::new(TOOL_COSTS_ENV, e))?;
        let authz = config
            .policy_file
            .as_deref()
            .map(load_policies)
            .transpose()?;
        let core_api = CoreApi::new(&config.core_api_url, http.clone());
        let screening = ScreeningClient::new(&config.screening.url, http);
        let chaos = ChaosGate::new(config.chaos_enabled, None);
        let confirm = Self::confirmer(&config, None);
        let policies = PerBackend::try_new(|backend| {
            build_policy(backend, &config, overrides.clone(), fleet.clone()).map_err(|e| {
                kosha_runtime::config::ConfigError::new(backend.env_prefix(), e.to_string())
            })
        })?;
        Ok(Self {
            config,
            core_api,
            screening,
            screenings: None,
            verifier,
            rate_limiter,
            overrides,
            chaos,
            confirm,
            policies,
            tool_costs,
            authz,
        })
    }

    /// The policy set every `tools/list` and `tools/call` asks (SPEC §5a).
    pub fn authz(&self) -> &kosha_authz::Policies {
        match &self.authz {
            Some(policies) => policies,
            None => kosha_authz::Policies::builtin(),
        }
    }

    /// The gateway with its real dependencies: one single-attempt DynamoDB client for the
    /// token bucket and the override reads (both bound each call and fall back, so SDK
    /// retries would only spend the budget), one HTTPS client for core-api and the JWKS
    /// endpoint, SigV4 signing when `KOSHA_CORE_API_AUTH=iam`. Nothing is read from the
    /// network and no AWS SDK client is built here: the first protected call reads the
    /// overrides, the first `tools/call` builds the DynamoDB client, the first deferred
    /// screening the SQS one and the first chaos header or confirmation a Secrets Manager one
    /// (seed 004 §4, SPEC §8; Lambda init stays short, issue 6; tested in tests/start.rs).
    ///
    /// # Errors
    /// [`StartError`].
    pub async fn start(config: GatewayConfig) -> Result<Self, StartError> {
        Self::start_with(config, &kosha_runtime::aws::sdk_config().await)
    }

    /// [`Gateway::start`] on a given SDK config (tests).
    ///
    /// # Errors
    /// [`StartError`].
    pub fn start_with(
        config: GatewayConfig,
        sdk: &kosha_runtime::aws::SdkConfig,
    ) -> Result<Self, StartError> {
        let table = kosha_state::StateTable::from_sdk(sdk, &config.state_table)
            .map_err(|e| {
                kosha_runtime::config::ConfigError::new(kosha_state::STATE_TABLE_ENV, e.to_string())
            })?
            .single_attempt();
        let screenings =
            Screenings::from_sdk(table.clone(), sdk, config.screening.queue_url.clone());
        let clock = Arc::new(kosha_state::SystemClock);
        let rate_limiter = Arc::new(kosha_state::DynamoRateLimiter::new(
            &table,
            config.rate_limit,
            clock.clone(),
        ));
        // The gateway alone reads and writes `trip#*` (SPEC §8), with the overrides' read.
        let trips: &[&str] = if config.fleet_trip_quorum > 0 {
            &kosha_state::TRIP_BREAKERS
        } else {
            &[]
        };
        let overrides = Arc::new(kosha_state::DynamoOverrides::with_trips(
            Arc::new(table),
            kosha_state::OverrideSettings::default(),
            clock,
            trips,
            kosha_state::instance_id(),
        ));
        let fleet: Option<Arc<dyn FleetSignal>> =
            (config.fleet_trip_quorum > 0).then(|| overrides.clone() as Arc<dyn FleetSignal>);
        let http =
            kosha_runtime::tls::http_client().map_err(|e| StartError::HttpClient(e.to_string()))?;
        let verifier = Verifier::new(config.auth.clone(), http.clone());
        let iam = [config.core_api_auth, config.screening.auth].contains(&ServiceAuth::Iam);
        let signer = iam
            .then(|| {
                kosha_clients::config::iam_signer(sdk, "KOSHA_CORE_API_AUTH / KOSHA_SCREENING_AUTH")
            })
            .transpose()?;
        // One Secrets Manager client, built on the first key fetch, for both keys.
        let secrets = kosha_state::SecretsClient::from_sdk(sdk);
        let keys = secrets.cache(config.chaos_secret_id.clone());
        let confirm_keys = secrets.cache(config.confirm.secret_id.clone());
        let (core_api_iam, screening_iam) = (
            config.core_api_auth == ServiceAuth::Iam,
            config.screening.auth == ServiceAuth::Iam,
        );
        let mut gateway = Self::with_fleet(config, http, verifier, overrides, fleet, rate_limiter)?
            .with_chaos_keys(keys)
            .with_confirm_keys(confirm_keys)
            .with_screenings(screenings);
        if let Some(s) = signer {
            if core_api_iam {
                gateway = gateway.with_core_api_signer(s.clone());
            }
            if screening_iam {
                gateway.screening = gateway.screening.with_signer(s);
            }
        }
        Ok(gateway)
    }

    /// The same gateway, recording screenings in `screenings` (issue 12).
    #[must_use]
    pub fn with_screenings(mut self, screenings: Screenings) -> Self {
        self.screenings = Some(screenings);
        self
    }

    /// The same gateway, signing its core-api requests with `signer`
    /// (`KOSHA_CORE_API_AUTH=iam`).
    #[must_use]
    pub fn with_core_api_signer(mut self, signer: Arc<SigV4Signer>) -> Self {
        self.core_api = self.core_api.with_signer(signer);
        self
    }

    /// The same gateway, verifying chaos headers with the key from `keys`.
    #[must_use]
    pub fn with_chaos_keys(mut self, keys: kosha_state::SecretCache) -> Self {
        self.chaos = ChaosGate::new(self.config.chaos_enabled, Some(keys));
        self
    }

    /// The same gateway, sealing confirmation states with the key from `keys` (SPEC §5b).
    #[must_use]
    pub fn with_confirm_keys(mut self, keys: kosha_state::SecretCache) -> Self {
        self.confirm = Self::confirmer(&self.config, Some(keys));
        self
    }

    /// Confirmations with `config`'s TTL on the system clock, keyed from `keys` (`None`: no
    /// key yet, so a call that needs a confirmation is refused, never run unasked).
    fn confirmer(config: &GatewayConfig, keys: Option<kosha_state::SecretCache>) -> Confirmer {
        Confirmer::new(keys, config.confirm.ttl, Arc::new(kosha_state::SystemClock))
    }

    /// The policy of `backend`.
    pub fn policy(&self, backend: Backend) -> &Policy {
        self.policies.get(backend)
    }

    /// The tool costs `KOSHA_TOOL_COSTS` sets (SPEC §6), checked when the state was built.
    pub fn tool_costs(&self) -> &ToolCosts {
        &self.tool_costs
    }

    /// What a tool call may use of this state ([`Deps`]).
    pub fn deps(&self) -> Deps<'_> {
        Deps {
            core_api: &self.core_api,
            screening: &self.screening,
            screenings: self.screenings.as_ref().map(|s| s as &dyn ScreeningRecords),
            policies: &self.policies,
        }
    }
}

/// The policy set in `path`, parsed and validated (SPEC §5a).
///
/// # Errors
/// [`StartError::Config`] naming `KOSHA_POLICY_FILE` and, for a policy that does not parse or
/// validate, its id and line.
fn load_policies(path: &std::path::Path) -> Result<Arc<kosha_authz::Policies>, StartError> {
    let error = |reason: String| {
        StartError::from(kosha_runtime::config::ConfigError::new(
            crate::config::POLICY_FILE_ENV,
            reason,
        ))
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| error(format!("cannot read {}: {e}", path.display())))?;
    let policies = kosha_authz::Policies::parse(&text).map_err(|e| error(e.to_string()))?;
    tracing::info!(
        file = %path.display(),
        policies = policies.ids().len(),
        "policy set loaded"
    );
    Ok(Arc::new(policies))
}
