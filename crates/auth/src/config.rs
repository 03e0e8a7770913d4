//! Verifier settings, validated once at start-up (SPEC §5).
//!
//! | env | meaning | default |
//! |---|---|---|
//! | `KOSHA_JWT_ISSUER` | expected `iss`, e.g. `https://cognito-idp.<region>.amazonaws.com/<pool id>` | required |
//! | `KOSHA_JWKS_URL` | where the signing keys are | `<issuer>/.well-known/jwks.json` |
//! | `KOSHA_ALLOWED_CLIENT_IDS` | comma list of app client ids accepted in `client_id` | required, non-empty |
//! | `KOSHA_JWT_LEEWAY_S` | clock-skew allowance for `exp`/`nbf`, seconds, 0–60 | 60 |
//! | `KOSHA_SCOPE_PREFIX` | resource-server identifier: scopes `<prefix>/agent` and `<prefix>/operator` grant the roles | `kosha` |
//!
//! JWKS URL schemes: `https://` (production), `http://` only for a loopback host (local
//! tests: a plain-HTTP key set elsewhere could be replaced in transit), and `file:///abs/path`
//! (the dev stack's `.dev/jwks.json`).

use std::path::PathBuf;

use url::Url;

use crate::error::ConfigError;
use crate::principal::{DEFAULT_SCOPE_PREFIX, Role};

/// Largest leeway SPEC §5 allows, seconds.
pub const MAX_LEEWAY_S: u64 = 60;

/// The variable naming the token issuer, whose `iss` every token must carry (SPEC §5); the
/// gateway reads it, and `kosha-ops token mint` and `kosha-ops issuer` sign with it.
pub const JWT_ISSUER_ENV: &str = "KOSHA_JWT_ISSUER";

/// The variable listing the accepted `client_id`s, comma separated (SPEC §5); the gateway
/// reads it, and `kosha-ops token mint` warns about a client id it does not hold.
pub const ALLOWED_CLIENT_IDS_ENV: &str = "KOSHA_ALLOWED_CLIENT_IDS";

/// Where the key set comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// `https://…`, or `http://` on a loopback host.
    Http(Url),
    /// A local file (`file:///…`).
    File(PathBuf),
}

/// Validated settings of a [`crate::Verifier`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierConfig {
    /// Expected `iss`, exactly (no trailing-slash normalisation: Cognito's has none).
    pub issuer: String,
    /// Where the signing keys are.
    pub jwks: JwksSource,
    /// Accepted `client_id` values (Cognito app client ids).
    pub allowed_client_ids: Vec<String>,
    /// Clock-skew allowance for `exp` and `nbf`, seconds (≤ [`MAX_LEEWAY_S`]).
    pub leeway_s: u64,
    /// The resource-server identifier whose scopes `<prefix>/agent` and `<prefix>/operator`
    /// grant the roles (SPEC §5); [`DEFAULT_SCOPE_PREFIX`] unless set with
    /// [`VerifierConfig::with_scope_prefix`].
    pub scope_prefix: String,
}

impl VerifierConfig {
    /// Validates the settings. `jwks_url = None` means `<issuer>/.well-known/jwks.json`;
    /// `leeway_s = None` means 60.
    ///
    /// Errors: an empty issuer or client list, an issuer that is not an absolute http(s) URL, a
    /// JWKS URL with another scheme or plain HTTP to a non-loopback host, a leeway over 60 s.
    pub fn new(
        issuer: &str,
        jwks_url: Option<&str>,
        allowed_client_ids: impl IntoIterator<Item = impl Into<String>>,
        leeway_s: Option<u64>,
    ) -> Result<Self, ConfigError> {
        let issuer = issuer.trim();
        if issuer.is_empty() {
            return Err(ConfigError::Missing(JWT_ISSUER_ENV));
        }
        let issuer_url = Url::parse(issuer).map_err(|e| invalid(JWT_ISSUER_ENV, e))?;
        if !matches!(issuer_url.scheme(), "https" | "http") {
            return Err(invalid(JWT_ISSUER_ENV, "must be an http(s) URL"));
        }
        let jwks_url = match jwks_url.map(str::trim).filter(|u| !u.is_empty()) {
            Some(url) => url.to_owned(),
            None => format!("{}/.well-known/jwks.json", issuer.trim_end_matches('/')),
        };
        let jwks = parse_jwks_url(&jwks_url)?;
        let allowed_client_ids: Vec<String> = allowed_client_ids
            .into_iter()
            .map(Into::into)
            .map(|id: String| id.trim().to_owned())
            .filter(|id| !id.is_empty())
            .collect();
        if allowed_client_ids.is_empty() {
            return Err(ConfigError::Missing(ALLOWED_CLIENT_IDS_ENV));
        }
        let leeway_s = leeway_s.unwrap_or(MAX_LEEWAY_S);
        if leeway_s > MAX_LEEWAY_S {
            return Err(invalid("KOSHA_JWT_LEEWAY_S", "must be at most 60 seconds"));
        }
        Ok(Self {
            issuer: issuer.to_owned(),
            jwks,
            allowed_client_ids,
            leeway_s,
            scope_prefix: DEFAULT_SCOPE_PREFIX.to_owned(),
        })
    }

    /// The same settings with `prefix` as the scope prefix (`KOSHA_SCOPE_PREFIX`), trimmed.
    ///
    /// Errors: an empty prefix, or one holding whitespace (a `scope` claim is a space-separated
    /// list, so such a prefix could never match) or ending in `/` (the scope would be
    /// `<prefix>//agent`).
    pub fn with_scope_prefix(mut self, prefix: &str) -> Result<Self, ConfigError> {
        let prefix = prefix.trim();
        if prefix.is_empty() {
            return Err(invalid("KOSHA_SCOPE_PREFIX", "must not be empty"));
        }
        if prefix.chars().any(char::is_whitespace) {
            return Err(invalid("KOSHA_SCOPE_PREFIX", "must not contain whitespace"));
        }
        if prefix.ends_with('/') {
            return Err(invalid("KOSHA_SCOPE_PREFIX", "must not end in '/'"));
        }
        self.scope_prefix = prefix.to_owned();
        Ok(self)
    }

    /// The scopes that grant roles, `[<prefix>/agent, <prefix>/operator]`: what the
    /// protected-resource metadata advertises in `scopes_supported` (RFC 9728 §2).
    pub fn role_scopes(&self) -> Vec<String> {
        [Role::Agent, Role::Operator]
            .into_iter()
            .map(|role| role.scope(&self.scope_prefix))
            .collect()
    }

    /// The scope a 401 or an `insufficient_scope` 403 tells a client to ask for (SPEC §5): the
    /// one that grants the agent role, `<prefix>/agent`, which the data tools need.
    pub fn challenge_scope(&self) -> String {
        Role::Agent.scope(&self.scope_prefix)
    }

    /// Reads the variables in the module table through `lookup` (e.g.
    /// `|k| std::env::var(k).ok()`); `KOSHA_ALLOWED_CLIENT_IDS` is a comma list.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let issuer = lookup(JWT_ISSUER_ENV).unwrap_or_default();
        let jwks = lookup("KOSHA_JWKS_URL");
        let clients = lookup(ALLOWED_CLIENT_IDS_ENV).unwrap_or_default();
        let leeway = match lookup("KOSHA_JWT_LEEWAY_S").filter(|v| !v.trim().is_empty()) {
            Some(v) => Some(
                v.trim()
                    .parse::<u64>()
                    .map_err(|e| invalid("KOSHA_JWT_LEEWAY_S", e))?,
            ),
            None => None,
        };
        let config = Self::new(&issuer, jwks.as_deref(), clients.split(','), leeway)?;
        match lookup("KOSHA_SCOPE_PREFIX").filter(|v| !v.trim().is_empty()) {
            Some(prefix) => config.with_scope_prefix(&prefix),
            None => Ok(config),
        }
    }
}

fn parse_jwks_url(raw: &str) -> Result<JwksSource, ConfigError> {
    let url = Url::parse(raw).map_err(|e| invalid("KOSHA_JWKS_URL", e))?;
    match url.scheme() {
        "https" => Ok(JwksSource::Http(url)),
        "http" if is_loopback(&url) => Ok(JwksSource::Http(url)),
        "http" => Err(invalid(
            "KOSHA_JWKS_URL",
            "plain http is allowed only on a loopback host",
        )),
        "file" => url
            .to_file_path()
            .map(JwksSource::File)
            .map_err(|()| invalid("KOSHA_JWKS_URL", "file URL must be file:///absolute/path")),
        other => Err(invalid(
            "KOSHA_JWKS_URL",
            format!("unsupported scheme {other:?}"),
        )),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

fn invalid(name: &'static str, reason: impl std::fmt::Display) -> ConfigError {
    ConfigError::Invalid {
        name,
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POOL: &str = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC123";

    #[test]
    fn jwks_defaults_to_the_issuer_well_known() {
        let config = VerifierConfig::new(POOL, None, ["a", " b "], None).unwrap();
        let expected = Url::parse(&format!("{POOL}/.well-known/jwks.json")).unwrap();
        assert_eq!(config.jwks, JwksSource::Http(expected));
        assert_eq!(
            config.allowed_client_ids,
            vec!["a".to_owned(), "b".to_owned()]
        );
        assert_eq!(config.leeway_s, 60);
    }

    #[test]
    fn file_and_loopback_http_are_accepted() {
        let file = VerifierConfig::new(POOL, Some("file:///tmp/jwks.json"), ["a"], Some(0));
        assert_eq!(
            file.unwrap().jwks,
            JwksSource::File(PathBuf::from("/tmp/jwks.json"))
        );
        assert!(VerifierConfig::new(POOL, Some("http://127.0.0.1:9/j"), ["a"], None).is_ok());
        assert!(VerifierConfig::new(POOL, Some("http://localhost/j"), ["a"], None).is_ok());
    }

    #[test]
    fn remote_plain_http_and_other_schemes_are_refused() {
        for url in [
            "http://keys.example.com/jwks.json",
            "ftp://x/y",
            "file://relative/jwks.json",
        ] {
            let err = VerifierConfig::new(POOL, Some(url), ["a"], None).unwrap_err();
            assert!(
                matches!(
                    err,
                    ConfigError::Invalid {
                        name: "KOSHA_JWKS_URL",
                        ..
                    }
                ),
                "{url}"
            );
        }
    }

    #[test]
    fn leeway_over_sixty_seconds_is_refused() {
        let err = VerifierConfig::new(POOL, None, ["a"], Some(61)).unwrap_err();
        assert!(matches!(
            err,
            ConfigError::Invalid {
                name: "KOSHA_JWT_LEEWAY_S",
                ..
            }
        ));
    }

    #[test]
    fn issuer_and_clients_are_required() {
        let none: [&str; 0] = [];
        assert_eq!(
            VerifierConfig::new(" ", None, ["a"], None),
            Err(ConfigError::Missing("KOSHA_JWT_ISSUER"))
        );
        assert_eq!(
            VerifierConfig::new(POOL, None, none, None),
            Err(ConfigError::Missing("KOSHA_ALLOWED_CLIENT_IDS"))
        );
        assert!(VerifierConfig::new("not a url", None, ["a"], None).is_err());
    }

    #[test]
    fn scope_prefix_defaults_to_kosha_and_is_validated() {
        let config = VerifierConfig::new(POOL, None, ["a"], None).unwrap();
        assert_eq!(config.scope_prefix, "kosha");
        assert_eq!(config.role_scopes(), ["kosha/agent", "kosha/operator"]);
        assert_eq!(config.challenge_scope(), "kosha/agent");
        let config = config
            .with_scope_prefix(" https://api.example.com ")
            .unwrap();
        assert_eq!(
            config.role_scopes(),
            [
                "https://api.example.com/agent",
                "https://api.example.com/operator"
            ]
        );
        for bad in ["", "  ", "a b", "kosha/"] {
            let err = config.clone().with_scope_prefix(bad).unwrap_err();
            assert!(
                matches!(
                    err,
                    ConfigError::Invalid {
                        name: "KOSHA_SCOPE_PREFIX",
                        ..
                    }
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn reads_the_environment_names() {
        let config = VerifierConfig::from_lookup(|key| match key {
            "KOSHA_JWT_ISSUER" => Some(POOL.to_owned()),
            "KOSHA_JWKS_URL" => Some("file:///srv/jwks.json".to_owned()),
            "KOSHA_ALLOWED_CLIENT_IDS" => Some("c1,,c2".to_owned()),
            "KOSHA_JWT_LEEWAY_S" => Some("30".to_owned()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            config.allowed_client_ids,
            vec!["c1".to_owned(), "c2".to_owned()]
        );
        assert_eq!(config.leeway_s, 30);
        assert_eq!(
            config.jwks,
            JwksSource::File(PathBuf::from("/srv/jwks.json"))
        );
        assert_eq!(config.scope_prefix, "kosha");
        let config = VerifierConfig::from_lookup(|key| match key {
            "KOSHA_JWT_ISSUER" => Some(POOL.to_owned()),
            "KOSHA_ALLOWED_CLIENT_IDS" => Some("c1".to_owned()),
            "KOSHA_SCOPE_PREFIX" => Some("acme-mcp".to_owned()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.scope_prefix, "acme-mcp");
    }
}
