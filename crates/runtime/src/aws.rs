//! The AWS SDK config, built once per process in `main` and shared by every SDK client.
//!
//! `AWS_ENDPOINT_URL` (read by the SDK itself) points every client at the local emulator;
//! set `AWS_EC2_METADATA_DISABLED=true` beside it so credential lookup never probes IMDS.

/// Loads the default SDK config (region, credentials, endpoint) from the environment.
pub async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await
}
