//! The authorization-code grant with PKCE of the local issuer (issue 44, SPEC §5), as a
//! Cognito user pool serves it to a public app client (RFC 6749 §4.1, RFC 7636, RFC 8252 §7.3).
//!
//! - The one client is [`PUBLIC_CLIENT_ID`] (`kosha-dev-mcp`), pre-registered as Cognito
//!   requires (no dynamic registration): no secret, any loopback redirect URI (`http` on
//!   `127.0.0.1`, `[::1]` or `localhost`, any port and path, no fragment), the scopes of
//!   [`PUBLIC_SCOPES`].
//! - [`AuthorizationRequest::parse`] checks a request: an unknown client or a redirect URI
//!   that is not loopback is answered on the page itself (never redirected, RFC 6749
//!   §4.1.2.1); else `response_type=code`, a `code_challenge` with `code_challenge_method=S256`
//!   (`plain` is refused) and a `scope` whose every entry the client may have (none asked:
//!   all of them) or the error goes back to the redirect URI (`invalid_request`,
//!   `unsupported_response_type`, `invalid_scope`) with the `state`.
//! - The login page lists the dev users ([`DEV_USERS`]); choosing one issues a code
//!   ([`Codes::issue`]): single use, valid 5 minutes as Cognito's, bound to the client, the
//!   redirect URI, the challenge, the user and the granted scopes.
//! - [`Codes::redeem`] at the token endpoint: the code, the same `redirect_uri` and
//!   `client_id`, and a `code_verifier` whose SHA-256 is the challenge (compared in constant
//!   time), or `invalid_grant`. A code is removed on its first redemption, even a failed one.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::time::Instant;
use url::Url;

use super::token::TokenError;
use kosha_auth::Role;

/// The public app client MCP clients use locally (SPEC §5).
pub const PUBLIC_CLIENT_ID: &str = "kosha-dev-mcp";

/// The scopes [`PUBLIC_CLIENT_ID`] may have: OpenID's and the role scopes (under the default
/// prefix `kosha`, the vocabulary of the gateway's `scopes_supported`).
pub const PUBLIC_SCOPES: [&str; 3] = ["openid", "kosha/agent", "kosha/operator"];

/// How long a code may be redeemed (Cognito's authorization codes: 5 minutes).
pub const CODE_TTL: Duration = Duration::from_secs(300);

/// Most codes outstanding at once; the oldest are dropped beyond it.
const MAX_CODES: usize = 1024;

/// A dev user of the login page: `username`, `sub` and groups (SPEC §2's agent, operator and
/// tester).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevUser {
    /// The login name (the token's `username`).
    pub username: &'static str,
    /// The token's `sub`.
    pub sub: &'static str,
    /// The `cognito:groups`.
    pub roles: &'static [Role],
}

/// The users the login page lists.
pub const DEV_USERS: [DevUser; 3] = [
    DevUser {
        username: "agent",
        sub: "kosha-dev-user-agent",
        roles: &[Role::Agent],
    },
    DevUser {
        username: "operator",
        sub: "kosha-dev-user-operator",
        roles: &[Role::Operator],
    },
    DevUser {
        username: "tester",
        sub: "kosha-dev-user-tester",
        roles: &[Role::Agent, Role::Operator],
    },
];

/// The dev user named `username`.
pub fn dev_user(username: &str) -> Option<DevUser> {
    DEV_USERS.into_iter().find(|u| u.username == username)
}

/// A checked authorization request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationRequest {
    /// The loopback URI the code goes to.
    pub redirect_uri: Url,
    /// Echoed to the redirect URI.
    pub state: Option<String>,
    /// The S256 challenge.
    pub code_challenge: String,
    /// The scopes granted: those asked for, or all the client's when none was.
    pub scopes: Vec<String>,
}

/// Why an authorization request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Shown on the page (400): the client or the redirect URI cannot be trusted.
    Page(&'static str),
    /// Sent back to the redirect URI: this URL, with `error`, `error_description`, `state`.
    Redirect(Url),
}

impl AuthorizationRequest {
    /// Checks the query (or form) parameters of an authorization request (module docs).
    pub fn parse(params: &[(String, String)]) -> Result<Self, Refusal> {
        let get = |name: &str| {
            let mut values = params.iter().filter(|(n, _)| n == name);
            match (values.next(), values.next()) {
                (Some((_, v)), None) => Ok(Some(v.as_str())),
                (None, _) => Ok(None),
                (Some(_), Some(_)) => Err(()),
            }
        };
        if get("client_id") != Ok(Some(PUBLIC_CLIENT_ID)) {
            return Err(Refusal::Page("unknown client_id"));
        }
        let redirect_uri = match get("redirect_uri") {
            Ok(Some(uri)) => loopback_uri(uri).ok_or(Refusal::Page(
                "redirect_uri must be an http URL on a loopback host, without a fragment",
            ))?,
            _ => return Err(Refusal::Page("redirect_uri is required")),
        };
        let state = get("state").ok().flatten().map(str::to_owned);
        let refuse = |code: &str, why: &str| {
            let mut url = redirect_uri.clone();
            url.query_pairs_mut()
                .append_pair("error", code)
                .append_pair("error_description", why);
            if let Some(state) = &state {
                url.query_pairs_mut().append_pair("state", state);
            }
            Refusal::Redirect(url)
        };
        let one =
            |name: &str| get(name).map_err(|()| refuse("invalid_request", "a repeated parameter"));
        match one("response_type")? {
            Some("code") => {}
            Some(_) => return Err(refuse("unsupported_response_type", "only code is served")),
            None => return Err(refuse("invalid_request", "response_type is required")),
        }
        let code_challenge = match (one("code_challenge")?, one("code_challenge_method")?) {
            (Some(c), Some("S256")) if is_challenge(c) => c.to_owned(),
            _ => {
                let why = "PKCE is required: code_challenge with code_challenge_method=S256";
                return Err(refuse("invalid_request", why));
            }
        };
        let scopes = granted(one("scope")?).map_err(|()| {
            refuse(
                "invalid_scope",
                "a requested scope is not allowed for this client",
            )
        })?;
        Ok(Self {
            redirect_uri,
            state,
            code_challenge,
            scopes,
        })
    }
}

/// The scopes to grant for `requested`: each must be one of [`PUBLIC_SCOPES`]; none asked
/// grants them all.
fn granted(requested: Option<&str>) -> Result<Vec<String>, ()> {
    let asked: Vec<&str> = requested.unwrap_or("").split_whitespace().collect();
    if asked.iter().any(|s| !PUBLIC_SCOPES.contains(s)) {
        return Err(());
    }
    Ok(PUBLIC_SCOPES
        .iter()
        .filter(|s| asked.is_empty() || asked.contains(s))
        .map(|s| (*s).to_owned())
        .collect())
}

/// `uri` when it is an `http` URL on a loopback host without a fragment (RFC 8252 §7.3).
fn loopback_uri(uri: &str) -> Option<Url> {
    let url = Url::parse(uri).ok()?;
    let loopback = match url.host()? {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    (url.scheme() == "http" && loopback && url.fragment().is_none()).then_some(url)
}

/// An S256 challenge: 43 base64url characters (a SHA-256, RFC 7636 §4.2).
fn is_challenge(value: &str) -> bool {
    value.len() == 43
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// What a redeemed code grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// The user who logged in.
    pub user: DevUser,
    /// The granted scopes.
    pub scopes: Vec<String>,
}

#[derive(Debug)]
struct Pending {
    request: AuthorizationRequest,
    login: Login,
    expires: Instant,
}

/// The codes issued and not yet redeemed.
#[derive(Debug, Default)]
pub struct Codes {
    pending: Mutex<HashMap<String, Pending>>,
}

impl Codes {
    /// A new code for `user`'s login on `request`.
    pub fn issue(&self, request: AuthorizationRequest, user: DevUser) -> String {
        let bytes: [u8; 32] = rand::random();
        let code = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let now = Instant::now();
        let mut pending = self.pending.lock();
        pending.retain(|_, p| p.expires > now);
        if pending.len() >= MAX_CODES
            && let Some(oldest) = pending
                .iter()
                .min_by_key(|(_, p)| p.expires)
                .map(|(c, _)| c.clone())
        {
            pending.remove(&oldest);
        }
        let login = Login {
            user,
            scopes: request.scopes.clone(),
        };
        let expires = now + CODE_TTL;
        pending.insert(
            code.clone(),
            Pending {
                request,
                login,
                expires,
            },
        );
        code
    }

    /// Redeems `code` for `client_id` with `redirect_uri` and `verifier` (module docs).
    pub fn redeem(
        &self,
        code: &str,
        client_id: &str,
        redirect_uri: &str,
        verifier: &str,
    ) -> Result<Login, TokenError> {
        let pending = self
            .pending
            .lock()
            .remove(code)
            .ok_or(TokenError::InvalidGrant)?;
        let challenge = Sha256::digest(verifier.as_bytes());
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(challenge);
        let verified: bool = challenge
            .as_bytes()
            .ct_eq(pending.request.code_challenge.as_bytes())
            .into();
        let fits = pending.expires > Instant::now()
            && client_id == PUBLIC_CLIENT_ID
            && Url::parse(redirect_uri).ok().as_ref() == Some(&pending.request.redirect_uri)
            && is_verifier(verifier)
            && verified;
        fits.then_some(pending.login)
            .ok_or(TokenError::InvalidGrant)
    }
}

/// A code verifier: 43 to 128 unreserved characters (RFC 7636 §4.1).
fn is_verifier(value: &str) -> bool {
    (43..=128).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

#[cfg(test)]
mod tests;
