//! The token endpoint's decision (issues #31, 44): a request → what it is granted, or an OAuth
//! error (RFC 6749 §5.2), as Cognito's `/oauth2/token` answers.
//!
//! - Body `application/x-www-form-urlencoded`, each parameter at most once (RFC 6749 §3.2).
//! - `grant_type=client_credentials` ([`Decided::Machine`], RFC 6749 §4.4) or
//!   `authorization_code` ([`Decided::Code`], redeemed by `super::authorize`); any other is
//!   `unsupported_grant_type`.
//! - Client credentials: client authentication by HTTP Basic (`client_secret_basic`, id and
//!   secret form-encoded before base64, RFC 6749 §2.3.1) or `client_id` + `client_secret` in
//!   the body (`client_secret_post`); both at once, or a body `client_id` naming another client
//!   than Basic's, is `invalid_request`; neither, an unknown id or a wrong secret is
//!   `invalid_client`. `scope` (space-separated, optional): every scope asked for must be one
//!   the client may have, else `invalid_scope` (as Cognito answers); none asked for grants all
//!   the client's scopes; a client with none gets `invalid_scope`.
//! - Authorization code: `code`, `redirect_uri`, `code_verifier` and `client_id` in the body,
//!   no client secret (the public client authenticates by PKCE); a secret sent is
//!   `invalid_client`.
//! - `resource` (RFC 8707, sent by MCP clients) is accepted and does not change the token.

use base64::Engine;
use http::StatusCode;

use super::clients::{AppClient, Clients};

/// Why a token request was refused: the RFC 6749 §5.2 `error` code and its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    /// Malformed request: wrong content type, a repeated or missing parameter, two client
    /// authentications. 400.
    InvalidRequest(&'static str),
    /// No client authentication, an unknown client or a wrong secret. 401.
    InvalidClient,
    /// A `grant_type` other than `client_credentials` and `authorization_code`. 400.
    UnsupportedGrantType,
    /// A requested scope is not allowed for the client (or it has none). 400.
    InvalidScope,
    /// An authorization code that is unknown, used, expired, or redeemed with another client,
    /// redirect URI or verifier. 400.
    InvalidGrant,
}

impl TokenError {
    /// The `error` value (RFC 6749 §5.2).
    pub fn code(self) -> &'static str {
        match self {
            TokenError::InvalidRequest(_) => "invalid_request",
            TokenError::InvalidClient => "invalid_client",
            TokenError::UnsupportedGrantType => "unsupported_grant_type",
            TokenError::InvalidScope => "invalid_scope",
            TokenError::InvalidGrant => "invalid_grant",
        }
    }

    /// A short human-readable reason (`error_description`); never holds request data.
    pub fn description(self) -> &'static str {
        match self {
            TokenError::InvalidRequest(why) => why,
            TokenError::InvalidClient => "client authentication failed",
            TokenError::UnsupportedGrantType => {
                "only client_credentials and authorization_code are served"
            }
            TokenError::InvalidScope => "a requested scope is not allowed for this client",
            TokenError::InvalidGrant => "the code is unknown, used, expired or does not match",
        }
    }

    /// 401 for `invalid_client`, 400 otherwise (RFC 6749 §5.2).
    pub fn status(self) -> StatusCode {
        match self {
            TokenError::InvalidClient => StatusCode::UNAUTHORIZED,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

/// What a client-credentials request is granted.
#[derive(Debug)]
pub struct Grant<'a> {
    /// The authenticated client.
    pub client: &'a AppClient,
    /// The scopes the token carries, in the client's order.
    pub scopes: Vec<String>,
}

/// An authorization-code redemption, for `super::authorize::Codes::redeem`.
#[derive(Debug, PartialEq, Eq)]
pub struct CodeRedemption {
    /// `code`.
    pub code: String,
    /// `client_id`.
    pub client_id: String,
    /// `redirect_uri`.
    pub redirect_uri: String,
    /// `code_verifier`.
    pub code_verifier: String,
}

/// A token request that passed the checks of its grant type.
#[derive(Debug)]
pub enum Decided<'a> {
    /// Client credentials: a machine client and its scopes.
    Machine(Grant<'a>),
    /// Authorization code: what to redeem.
    Code(CodeRedemption),
}

/// Decides a token request from its `Authorization` and `Content-Type` header values and body.
pub fn decide<'a>(
    clients: &'a Clients,
    authorization: Option<&str>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Decided<'a>, TokenError> {
    let form_type = content_type
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| {
            v.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    if !form_type {
        return Err(TokenError::InvalidRequest(
            "the body must be application/x-www-form-urlencoded",
        ));
    }
    let params = Params::parse(body)?;
    match params.get("grant_type") {
        None => Err(TokenError::InvalidRequest("grant_type is required")),
        Some("client_credentials") => {
            client_credentials(clients, authorization, &params).map(Decided::Machine)
        }
        Some("authorization_code") => authorization_code(authorization, &params).map(Decided::Code),
        Some(_) => Err(TokenError::UnsupportedGrantType),
    }
}

fn client_credentials<'a>(
    clients: &'a Clients,
    authorization: Option<&str>,
    params: &Params,
) -> Result<Grant<'a>, TokenError> {
    let (id, secret) = credentials(authorization, params)?;
    let client = clients
        .authenticate(&id, &secret)
        .ok_or(TokenError::InvalidClient)?;
    let requested: Vec<&str> = params
        .get("scope")
        .map(|s| s.split_whitespace().collect())
        .unwrap_or_default();
    if requested
        .iter()
        .any(|s| !client.scopes.iter().any(|c| c == s))
    {
        return Err(TokenError::InvalidScope);
    }
    let scopes: Vec<String> = client
        .scopes
        .iter()
        .filter(|s| requested.is_empty() || requested.contains(&s.as_str()))
        .cloned()
        .collect();
    if scopes.is_empty() {
        return Err(TokenError::InvalidScope);
    }
    Ok(Grant { client, scopes })
}

fn authorization_code(
    authorization: Option<&str>,
    params: &Params,
) -> Result<CodeRedemption, TokenError> {
    if authorization.is_some() || params.get("client_secret").is_some() {
        return Err(TokenError::InvalidClient);
    }
    let required = |name: &'static str, why: &'static str| {
        params
            .get(name)
            .map(str::to_owned)
            .ok_or(TokenError::InvalidRequest(why))
    };
    Ok(CodeRedemption {
        code: required("code", "code is required")?,
        client_id: required("client_id", "client_id is required")
            .map_err(|_| TokenError::InvalidClient)?,
        redirect_uri: required("redirect_uri", "redirect_uri is required")?,
        code_verifier: required("code_verifier", "code_verifier is required")?,
    })
}

/// Form parameters, each name at most once.
struct Params(Vec<(String, String)>);

impl Params {
    fn parse(body: &[u8]) -> Result<Self, TokenError> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (name, value) in url::form_urlencoded::parse(body) {
            if pairs.iter().any(|(n, _)| *n == name) {
                return Err(TokenError::InvalidRequest("a parameter is repeated"));
            }
            pairs.push((name.into_owned(), value.into_owned()));
        }
        Ok(Self(pairs))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The client id and secret, from HTTP Basic or from the body (not both).
fn credentials(
    authorization: Option<&str>,
    params: &Params,
) -> Result<(String, String), TokenError> {
    let posted = match (params.get("client_id"), params.get("client_secret")) {
        (Some(id), Some(secret)) => Some((id.to_owned(), secret.to_owned())),
        _ => None,
    };
    match (authorization, posted) {
        (Some(_), Some(_)) => Err(TokenError::InvalidRequest(
            "use one client authentication method",
        )),
        (Some(header), None) => {
            let (id, secret) = basic(header).ok_or(TokenError::InvalidClient)?;
            match params.get("client_id") {
                Some(named) if named != id => Err(TokenError::InvalidRequest(
                    "client_id names another client than the authentication",
                )),
                _ => Ok((id, secret)),
            }
        }
        (None, Some(pair)) => Ok(pair),
        (None, None) => Err(TokenError::InvalidClient),
    }
}

/// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1, RFC 7617).
fn basic(header: &str) -> Option<(String, String)> {
    let (scheme, encoded) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let unescape = |s: &str| -> String {
        url::form_urlencoded::parse(format!("v={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    Some((unescape(id), unescape(secret)))
}

#[cfg(test)]
mod tests;
