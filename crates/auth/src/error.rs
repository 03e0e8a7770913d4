//! Errors of this crate and how the HTTP edge answers them (SPEC §5, RFC 6750 §3, RFC 9728 §5.1).
//!
//! [`AuthError`] has exactly four outcomes a caller must tell apart:
//! - [`AuthError::Missing`]: no credentials at all (no `Authorization` header, or a scheme other
//!   than `Bearer`). 401, `WWW-Authenticate` without an `error` parameter (RFC 6750 §3.1: "the
//!   resource server SHOULD NOT include an error code" when the request lacks authentication).
//! - [`AuthError::InvalidToken`]: a bearer token was sent and was not accepted, whatever the reason
//!   (malformed, oversized, wrong `alg`, unknown `kid`, bad signature, expired, wrong issuer,
//!   wrong `token_use`, client not allowed, JWKS unavailable). 401 with `error="invalid_token"`.
//!   The detailed reason is logged at debug level only, never returned: a client learns nothing
//!   about why a signature failed.
//! - [`AuthError::InsufficientScope`]: a valid machine client's token (client-credentials
//!   grant) whose scopes grant no role. 403 with `error="insufficient_scope"` and the scope that
//!   would (RFC 6750 §3.1; MCP 2025-11-25, "Scope Challenge Handling").
//! - [`AuthError::NoRole`]: a valid token of a user without a usable group (or a token of no
//!   known kind). A plain 403: its roles come from groups, so no scope would help it.
//!
//! Every 401 challenge names the scope a data-tool client needs (`scope="<prefix>/agent"`),
//! so a client asks for that one rather than every scope the metadata lists (SPEC §5).
//!
//! No variant carries the token or any part of it, so `Display`/`Debug` are safe to log.

use http::StatusCode;

/// Why a request was not authenticated. See the module docs for the HTTP mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header, or a non-`Bearer` scheme: 401 without an error code.
    #[error("missing bearer token")]
    Missing,
    /// A bearer token was sent but rejected: 401 with `error="invalid_token"`.
    #[error("invalid_token")]
    InvalidToken,
    /// A valid machine client's token whose scopes name neither `<prefix>/agent` nor
    /// `<prefix>/operator`: 403 with `error="insufficient_scope"` and the scope to ask for.
    #[error("insufficient_scope")]
    InsufficientScope,
    /// A valid user's token without the group `agent` or `operator`, or a token that is
    /// neither a user's nor a machine client's: a plain 403, without a challenge.
    #[error("no usable role")]
    NoRole,
}

impl AuthError {
    /// The HTTP status to answer with (SPEC §5): 401, 401, 403, 403.
    pub fn status(&self) -> StatusCode {
        match self {
            AuthError::Missing | AuthError::InvalidToken => StatusCode::UNAUTHORIZED,
            AuthError::InsufficientScope | AuthError::NoRole => StatusCode::FORBIDDEN,
        }
    }

    /// A stable name for logs and audit events: `missing`, `invalid_token`,
    /// `insufficient_scope`, `no_role`.
    pub fn reason(&self) -> &'static str {
        match self {
            AuthError::Missing => "missing",
            AuthError::InvalidToken => "invalid_token",
            AuthError::InsufficientScope => "insufficient_scope",
            AuthError::NoRole => "no_role",
        }
    }
}

/// The `WWW-Authenticate` value for `error`, pointing clients at the protected-resource
/// metadata document (RFC 9728 §5.1, MCP authorization "Authorization Server Location").
///
/// `resource_metadata_url` is the absolute URL of `/.well-known/oauth-protected-resource`
/// (see [`resource_metadata_url`]); `scope` is the scope a client should ask for, the one that
/// grants the agent role (`crate::VerifierConfig::challenge_scope`). Shapes (SPEC §5):
/// - `Missing`: `Bearer resource_metadata="<url>", scope="<scope>"`
/// - `InvalidToken`: `Bearer resource_metadata="<url>", scope="<scope>", error="invalid_token"`
/// - `InsufficientScope`: `Bearer error="insufficient_scope", scope="<scope>",
///   resource_metadata="<url>"` (the order of MCP 2025-11-25's scope challenge)
/// - `NoRole`: `None`, a plain 403.
///
/// A `"` or `\` in a value is escaped as a quoted-pair (RFC 9110 §5.6.4).
pub fn www_authenticate(
    resource_metadata_url: &str,
    scope: &str,
    error: &AuthError,
) -> Option<String> {
    let url = quote(resource_metadata_url);
    let scope = quote(scope);
    match error {
        AuthError::Missing => Some(format!(
            "Bearer resource_metadata=\"{url}\", scope=\"{scope}\""
        )),
        AuthError::InvalidToken => Some(format!(
            "Bearer resource_metadata=\"{url}\", scope=\"{scope}\", error=\"invalid_token\""
        )),
        AuthError::InsufficientScope => Some(format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{url}\""
        )),
        AuthError::NoRole => None,
    }
}

/// `<base>/.well-known/oauth-protected-resource` for a public base URL such as
/// `https://kosha.example.com` (a trailing `/` on `base` is ignored). RFC 9728 §3.
pub fn resource_metadata_url(base: &str) -> String {
    format!(
        "{}/.well-known/oauth-protected-resource",
        base.trim_end_matches('/')
    )
}

fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A setting of [`crate::VerifierConfig`] is unusable; raised at start-up, never per request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A required setting is absent or empty.
    #[error("{0} is required")]
    Missing(&'static str),
    /// A setting has a value this crate cannot use; the message names the setting and the rule.
    #[error("{name}: {reason}")]
    Invalid {
        /// The setting (an environment variable name).
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://kosha.example.com/.well-known/oauth-protected-resource";

    #[test]
    fn missing_challenge_has_no_error_code_and_names_the_scope() {
        assert_eq!(
            www_authenticate(URL, "kosha/agent", &AuthError::Missing).as_deref(),
            Some(
                "Bearer resource_metadata=\"https://kosha.example.com/.well-known/oauth-protected-resource\", scope=\"kosha/agent\""
            )
        );
        assert_eq!(AuthError::Missing.status(), StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn invalid_token_challenge_names_the_error_and_the_scope() {
        let value =
            www_authenticate(URL, "kosha/agent", &AuthError::InvalidToken).unwrap_or_default();
        assert!(
            value.ends_with(", scope=\"kosha/agent\", error=\"invalid_token\""),
            "{value}"
        );
        assert_eq!(AuthError::InvalidToken.status(), StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn insufficient_scope_is_forbidden_with_the_scope_that_would_do() {
        let value =
            www_authenticate(URL, "kosha/agent", &AuthError::InsufficientScope).unwrap_or_default();
        assert_eq!(
            value,
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"kosha/agent\", resource_metadata=\"{URL}\""
            )
        );
        assert_eq!(AuthError::InsufficientScope.status(), StatusCode::FORBIDDEN);
    }

    #[test]
    fn no_role_is_a_plain_forbidden() {
        assert_eq!(
            www_authenticate(URL, "kosha/agent", &AuthError::NoRole),
            None
        );
        assert_eq!(AuthError::NoRole.status(), StatusCode::FORBIDDEN);
    }

    #[test]
    fn quotes_are_escaped() {
        let value =
            www_authenticate("https://x/\"a\\", "s", &AuthError::Missing).unwrap_or_default();
        assert_eq!(
            value,
            "Bearer resource_metadata=\"https://x/\\\"a\\\\\", scope=\"s\""
        );
    }

    #[test]
    fn metadata_url_from_base() {
        assert_eq!(resource_metadata_url("https://kosha.example.com/"), URL);
        assert_eq!(resource_metadata_url("https://kosha.example.com"), URL);
    }

    #[test]
    fn display_is_fixed_text() {
        assert_eq!(AuthError::InvalidToken.to_string(), "invalid_token");
    }
}
