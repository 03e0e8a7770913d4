//! Where core-api and screening-sim are and how requests to them are authenticated, read once
//! from the environment (the gateway reads both, the screening-worker screening-sim's):
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `KOSHA_CORE_API_URL` | `http://127.0.0.1:8081` | core-api's base URL (a path is allowed) |
//! | `KOSHA_CORE_API_AUTH` | `none` | `none` or `iam` (SigV4 for a Function URL, SPEC §13) |
//! | `KOSHA_SCREENING_URL` | `http://127.0.0.1:8082` | screening-sim's base URL |
//! | `KOSHA_SCREENING_AUTH` | `none` | as `KOSHA_CORE_API_AUTH` |
//! | `KOSHA_SCREENING_QUEUE_URL` | unset | the screening queue (SPEC §10) |
//!
//! A bad value is a [`ConfigError`] naming the variable, never its value.

use std::sync::Arc;

use kosha_runtime::aws::SdkConfig;
use kosha_runtime::config::{self, ConfigError};
use kosha_runtime::sigv4::SigV4Signer;

/// `KOSHA_CORE_API_URL`.
pub const CORE_API_URL_ENV: &str = "KOSHA_CORE_API_URL";
/// `KOSHA_CORE_API_AUTH`.
pub const CORE_API_AUTH_ENV: &str = "KOSHA_CORE_API_AUTH";
/// core-api's local address (SPEC §2).
pub const DEFAULT_CORE_API_URL: &str = "http://127.0.0.1:8081";
/// `KOSHA_SCREENING_URL`.
pub const SCREENING_URL_ENV: &str = "KOSHA_SCREENING_URL";
/// `KOSHA_SCREENING_AUTH`.
pub const SCREENING_AUTH_ENV: &str = "KOSHA_SCREENING_AUTH";
/// `KOSHA_SCREENING_QUEUE_URL`.
pub const SCREENING_QUEUE_URL_ENV: &str = "KOSHA_SCREENING_QUEUE_URL";
/// screening-sim's local address (SPEC §2).
pub const DEFAULT_SCREENING_URL: &str = "http://127.0.0.1:8082";

/// How requests to a dependency are authenticated (`KOSHA_CORE_API_AUTH`,
/// `KOSHA_SCREENING_AUTH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServiceAuth {
    /// `none` (default): plain HTTP, the local stack.
    #[default]
    None,
    /// `iam`: every request signed with SigV4 for service `lambda` (the dependency behind a
    /// Function URL with `AuthType: AWS_IAM`; SPEC §13), credentials from the SDK config.
    Iam,
}

impl std::str::FromStr for ServiceAuth {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "none" => Ok(Self::None),
            "iam" => Ok(Self::Iam),
            _ => Err("expected none or iam".to_owned()),
        }
    }
}

/// The SigV4 signer of `sdk`'s credentials and region, for [`ServiceAuth::Iam`].
///
/// # Errors
/// [`ConfigError`] naming `variable` (the auth setting that asked for it) when `sdk` has no
/// region or credentials provider.
pub fn iam_signer(sdk: &SdkConfig, variable: &str) -> Result<Arc<SigV4Signer>, ConfigError> {
    match (sdk.credentials_provider(), sdk.region()) {
        (Some(provider), Some(region)) => Ok(Arc::new(SigV4Signer::new(provider, region.as_ref()))),
        _ => Err(ConfigError::new(
            variable,
            "iam needs an AWS region and a credentials provider",
        )),
    }
}

/// Where core-api is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreApiConfig {
    /// Base URL (`KOSHA_CORE_API_URL`), without a trailing `/`.
    pub url: String,
    /// `KOSHA_CORE_API_AUTH`.
    pub auth: ServiceAuth,
}

impl CoreApiConfig {
    /// Reads `KOSHA_CORE_API_URL` and `KOSHA_CORE_API_AUTH`.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable whose value does not parse.
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            url: service_url_from_env(CORE_API_URL_ENV, DEFAULT_CORE_API_URL)?,
            auth: config::parse_or(CORE_API_AUTH_ENV, ServiceAuth::None)?,
        })
    }
}

/// Where screening-sim and the deferred-screening queue are (SPEC §10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreeningConfig {
    /// screening-sim's base URL (`KOSHA_SCREENING_URL`, default `http://127.0.0.1:8082`).
    pub url: String,
    /// How its requests are authenticated (`KOSHA_SCREENING_AUTH`, default `none`).
    pub auth: ServiceAuth,
    /// The screening queue (`KOSHA_SCREENING_QUEUE_URL`); unset: nothing can be deferred, and
    /// `screen_entity` answers `dependency_unavailable` while screening-sim is down.
    pub queue_url: Option<String>,
}

impl Default for ScreeningConfig {
    fn default() -> Self {
        Self {
            url: DEFAULT_SCREENING_URL.to_owned(),
            auth: ServiceAuth::None,
            queue_url: None,
        }
    }
}

impl ScreeningConfig {
    /// Reads `KOSHA_SCREENING_URL`, `KOSHA_SCREENING_AUTH`, `KOSHA_SCREENING_QUEUE_URL`.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable whose value does not parse.
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            url: service_url_from_env(SCREENING_URL_ENV, DEFAULT_SCREENING_URL)?,
            auth: config::parse_or(SCREENING_AUTH_ENV, ServiceAuth::None)?,
            queue_url: config::var(SCREENING_QUEUE_URL_ENV)
                .map(|u| u.trim().to_owned())
                .filter(|u| !u.is_empty()),
        })
    }
}

fn service_url_from_env(key: &str, default: &str) -> Result<String, ConfigError> {
    parse_service_url(&config::string_or(key, default)).map_err(|e| ConfigError::new(key, e))
}

/// `raw` as a service's base URL without its trailing `/`: `http://` or `https://`, a host,
/// an optional port and path (`http://127.0.0.1:9000/lambda-url/core-api` under the Lambda
/// emulator), no query, fragment or user.
///
/// # Errors
/// A reason naming what is wrong (never echoing the value).
pub fn parse_service_url(raw: &str) -> Result<String, &'static str> {
    parse_http_url(raw, true)
}

/// `raw` as an `http(s)` URL without its trailing `/`; a path only when `allow_path`.
///
/// # Errors
/// A reason naming what is wrong (never echoing the value).
pub fn parse_http_url(raw: &str, allow_path: bool) -> Result<String, &'static str> {
    let trimmed = raw.trim().trim_end_matches('/');
    let uri: http::Uri = trimmed
        .parse()
        .map_err(|_| "expected a URL such as https://mcp.example.com")?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err("must start with https:// (or http://)");
    }
    if uri.authority().is_none_or(|a| a.host().is_empty()) {
        return Err("must name a host");
    }
    let path = uri.path_and_query().map_or("", |pq| pq.as_str());
    if uri.query().is_some() || trimmed.contains('#') || trimmed.contains('@') {
        return Err("must not hold a query, fragment or user");
    }
    if !allow_path && path != "/" && !path.is_empty() {
        return Err("must be scheme and host only: no path, query, fragment or user");
    }
    Ok(trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::{ServiceAuth, parse_service_url};

    #[test]
    fn service_urls_may_have_a_path_but_nothing_else_odd() {
        assert_eq!(
            parse_service_url("https://abc.lambda-url.us-east-1.on.aws/"),
            Ok("https://abc.lambda-url.us-east-1.on.aws".to_owned())
        );
        assert_eq!(
            parse_service_url("http://127.0.0.1:9000/lambda-url/core-api"),
            Ok("http://127.0.0.1:9000/lambda-url/core-api".to_owned())
        );
        for bad in [
            "notaurl",
            "ftp://x",
            "https://core.example.com/?x=1",
            "https://user@core.example.com",
            "https://",
        ] {
            assert!(parse_service_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn auth_accepts_only_none_and_iam() {
        assert_eq!("none".parse::<ServiceAuth>(), Ok(ServiceAuth::None));
        assert_eq!(" iam ".parse::<ServiceAuth>(), Ok(ServiceAuth::Iam));
        for bad in ["IAM", "sigv4", "true", ""] {
            assert!(bad.parse::<ServiceAuth>().is_err(), "{bad}");
        }
    }
}
