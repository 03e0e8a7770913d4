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

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::{BehaviorVersion, Region};

/// Loads the SDK config (region, credentials, endpoint) from the environment.
pub async fn sdk_config() -> aws_config::SdkConfig {
    let loader =
        aws_config::defaults(BehaviorVersion::latest()).http_client(crate::tls::sdk_http_client());
    match lambda_region(crate::config::var) {
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

/// The region to name directly: `Some` only under the Lambda runtime
/// (`AWS_LAMBDA_RUNTIME_API`) with `AWS_REGION` and an access key pair in the environment.
fn lambda_region(lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    let on_lambda = lookup("AWS_LAMBDA_RUNTIME_API").is_some();
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
