//! The AWS SDK config, built once per process in `main` and shared by every SDK client.
//!
//! `AWS_ENDPOINT_URL` (read by the SDK itself) points every client at the local emulator;
//! set `AWS_EC2_METADATA_DISABLED=true` beside it so credential lookup never probes IMDS.
//! HTTPS goes through [`crate::tls::sdk_http_client`] (compiled-in roots, no certificate
//! store read at start-up).
//!
//! On Lambda the execution role's credentials and the region are always in the environment
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`; Lambda
//! developer guide, "Defined runtime environment variables"), which is where the SDK's default
//! chains look first. There they are named directly, which skips building the chains (profile
//! files, SSO, web identity, container and IMDS providers): about 1 ms of every cold start
//! (issue 6, docs/benchmarks.md). Elsewhere (local mode, the CLI) the default chains apply.

use std::sync::OnceLock;

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::{BehaviorVersion, Region};

/// The SDK config [`sdk_config`] returns, named for crates that do not depend on aws-config.
pub use aws_config::SdkConfig;

/// Loads the SDK config (region, credentials, endpoint) from the environment.
pub async fn sdk_config() -> aws_config::SdkConfig {
    sdk_config_with(crate::config::var).await
}

/// [`sdk_config`], choosing between the Lambda path and the default chains by `lookup`
/// rather than the process environment (tests: the Lambda path builds no SDK client; the
/// default chains build their providers' clients, STS among them). The SDK still reads the
/// rest of its settings (`AWS_ENDPOINT_URL`, the credentials themselves) from the process
/// environment.
pub async fn sdk_config_with(lookup: impl Fn(&str) -> Option<String>) -> aws_config::SdkConfig {
    let loader =
        aws_config::defaults(BehaviorVersion::latest()).http_client(crate::tls::sdk_http_client());
    match lambda_region(lookup) {
        Some(region) => {
            loader
                .region(Region::new(region))
                .credentials_provider(EnvironmentVariableCredentialsProvider::new())
                .load()
                .await
        }
        None => loader.load().await,
    }
}

/// An AWS SDK client built from its config on first use ([`LazyClient::get`]), for a client
/// a process may never call, or not on its first events.
///
/// Building an SDK client costs about 0.8 ms, and the first one of a process also builds the
/// SDK's HTTP client and parses its roots (about 0.7 ms more, [`crate::tls::sdk_http_client`]);
/// a Lambda init that built two clients eagerly took 1.8 × as long as one that does not
/// (issue 6, docs/benchmarks.md, "Lambda packaging"). Share one behind an `Arc`: the client is built at
/// most once, by the first caller of `get`.
pub struct LazyClient<Cfg, C> {
    config: Cfg,
    build: fn(Cfg) -> C,
    client: OnceLock<C>,
}

impl<Cfg: Clone, C> LazyClient<Cfg, C> {
    /// A client `build(config)` will make on the first [`get`](Self::get), e.g.
    /// `LazyClient::new(aws_sdk_sqs::Config::new(&sdk), aws_sdk_sqs::Client::from_conf)`.
    pub fn new(config: Cfg, build: fn(Cfg) -> C) -> Self {
        Self {
            config,
            build,
            client: OnceLock::new(),
        }
    }

    /// A client already built (from `config`, which it keeps for [`config`](Self::config)).
    pub fn built(config: Cfg, build: fn(Cfg) -> C, client: C) -> Self {
        Self {
            config,
            build,
            client: OnceLock::from(client),
        }
    }

    /// The client, built now if this is the first call.
    pub fn get(&self) -> &C {
        self.client
            .get_or_init(|| (self.build)(self.config.clone()))
    }

    /// The config the client is (or will be) built from.
    pub fn config(&self) -> &Cfg {
        &self.config
    }

    /// Whether the client has been built.
    pub fn is_built(&self) -> bool {
        self.client.get().is_some()
    }
}

impl<Cfg, C> std::fmt::Debug for LazyClient<Cfg, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyClient")
            .field("built", &self.client.get().is_some())
            .finish_non_exhaustive()
    }
}

/// The region to name directly: `Some` only under the Lambda runtime
/// (`AWS_LAMBDA_RUNTIME_API`) with `AWS_REGION` and an access key pair in the environment.
fn lambda_region(lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    let on_lambda = lookup(crate::LAMBDA_RUNTIME_API_ENV).is_some();
    let has_keys =
        lookup("AWS_ACCESS_KEY_ID").is_some() && lookup("AWS_SECRET_ACCESS_KEY").is_some();
    if on_lambda && has_keys {
        lookup("AWS_REGION")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    const LAMBDA: &[(&str, &str)] = &[
        ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_REGION", "eu-west-1"),
    ];

    #[test]
    fn a_lazy_client_is_built_once_on_first_use_from_its_config() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static BUILDS: AtomicUsize = AtomicUsize::new(0);
        fn build(config: String) -> String {
            BUILDS.fetch_add(1, Ordering::SeqCst);
            format!("client of {config}")
        }
        let lazy = LazyClient::new("cfg".to_owned(), build);
        assert!(!lazy.is_built());
        assert_eq!(BUILDS.load(Ordering::SeqCst), 0, "nothing built before use");
        assert_eq!(lazy.get(), "client of cfg");
        assert_eq!(lazy.get(), "client of cfg");
        assert!(lazy.is_built());
        assert_eq!(BUILDS.load(Ordering::SeqCst), 1, "built once");
        assert_eq!(lazy.config(), "cfg");

        let ready = LazyClient::built("cfg".to_owned(), build, "given".to_owned());
        assert!(ready.is_built());
        assert_eq!(ready.get(), "given");
        assert_eq!(
            BUILDS.load(Ordering::SeqCst),
            1,
            "a built client is not rebuilt"
        );
        assert_eq!(format!("{ready:?}"), "LazyClient { built: true, .. }");
    }

    #[test]
    fn on_lambda_with_keys_the_region_is_named_directly() {
        assert_eq!(lambda_region(env(LAMBDA)).as_deref(), Some("eu-west-1"));
    }

    #[test]
    fn anything_missing_keeps_the_default_chains() {
        for missing in [
            "AWS_LAMBDA_RUNTIME_API",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_REGION",
        ] {
            let pairs: Vec<_> = LAMBDA
                .iter()
                .copied()
                .filter(|(k, _)| *k != missing)
                .collect();
            assert_eq!(lambda_region(env(&pairs)), None, "without {missing}");
        }
    }
}
