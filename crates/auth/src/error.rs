//! Errors of this crate and how the HTTP edge answers them (SPEC §5, RFC 6750 §3, RFC 9728 §5.1).
//!
//! [`AuthError`] has exactly three outcomes a caller must tell apart:
//! - [`AuthError::Missing`]: no credentials at all (no `Authorization` header, or a scheme other
//!   than `Bearer`). 401, `WWW-Authenticate` without an `error` parameter (RFC 6750 §3.1: "the
//!   resource server SHOULD NOT include an error code" when the request lacks authentication).
//! - [`AuthError::InvalidToken`]: a bearer token was sent and was not accepted, whatever the reason
//!   (malformed, oversized, wrong `alg`, unknown `kid`, bad signature, expired, wrong issuer,
//!   wrong `token_use`, client not allowed, JWKS unavailable). 401 with `error="invalid_token"`.
//!   The detailed reason is logged at debug level only, never returned: a client learns nothing
//!   about why a signature failed.
//! - [`AuthError::NoRole`]: the token is valid but carries no role this service knows. 403, with
//!   `error="insufficient_scope"` (RFC 6750 §3.1; MCP authorization, scope challenge).
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
    /// A valid token without a usable role (neither `cognito:groups` `agent`/`operator` nor a
    /// scope `<prefix>/agent`/`<prefix>/operator`): 403.
    #[error("no usable role")]
    NoRole,
}

impl AuthError {
    /// The HTTP status to answer with (SPEC §5): 401, 401, 403.
    pub fn status(&self) -> StatusCode {
        match self {
            AuthError::Missing | AuthError::InvalidToken => StatusCode::UNAUTHORIZED,
            AuthError::NoRole => StatusCode::FORBIDDEN,
        }
    }
}

/// The `WWW-Authenticate` value for `error`, pointing clients at the protected-resource
/// metadata document (RFC 9728 §5.1, MCP authorization "Authorization Server Location").
///
/// `resource_metadata_url` is the absolute URL of `/.well-known/oauth-protected-resource`
/// (see [`resource_metadata_url`]). Shapes:
/// - `Missing`: `Bearer resource_metadata="<url>"`
/// - `InvalidToken`: `Bearer resource_metadata="<url>", error="invalid_token"`
/// - `NoRole`: `Bearer resource_metadata="<url>", error="insufficient_scope"`
///
/// Returns `Some` for every current variant; the `Option` leaves room for outcomes that must
/// not send a challenge. A `"` or `\` in the URL is escaped as a quoted-pair (RFC 9110 §5.6.4).
pub fn www_authenticate(resource_metadata_url: &str, error: &AuthError) -> Option<String> {
    let url = quote(resource_metadata_url);
    let value = match error {
        AuthError::Missing => format!("Bearer resource_metadata=\"{url}\""),
        AuthError::InvalidToken => {
            format!("Bearer resource_metadata=\"{url}\", error=\"invalid_token\"")
        }
        AuthError::NoRole => {
            format!("Bearer resource_metadata=\"{url}\", error=\"insufficient_scope\"")
        }
    };
    Some(value)
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
    fn missing_challenge_has_no_error_code() {
        assert_eq!(
            www_authenticate(URL, &AuthError::Missing).as_deref(),
            Some(
                "Bearer resource_metadata=\"https://kosha.example.com/.well-known/oauth-protected-resource\""
            )
        );
        assert_eq!(AuthError::Missing.status(), StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn invalid_token_challenge_names_the_error() {
        let value = www_authenticate(URL, &AuthError::InvalidToken).unwrap_or_default();
        assert!(value.ends_with(", error=\"invalid_token\""), "{value}");
        assert_eq!(AuthError::InvalidToken.status(), StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn no_role_is_forbidden_with_insufficient_scope() {
        let value = www_authenticate(URL, &AuthError::NoRole).unwrap_or_default();
        assert!(value.ends_with(", error=\"insufficient_scope\""), "{value}");
        assert_eq!(AuthError::NoRole.status(), StatusCode::FORBIDDEN);
    }

    #[test]
    fn quotes_are_escaped() {
        let value = www_authenticate("https://x/\"a\\", &AuthError::Missing).unwrap_or_default();
        assert_eq!(value, "Bearer resource_metadata=\"https://x/\\\"a\\\\\"");
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
