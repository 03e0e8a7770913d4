//! The token endpoint's decision (issue #31): a client-credentials request → the app client and
//! the scopes it is granted, or an OAuth error (RFC 6749 §4.4, §5.2), as Cognito's
//! `/oauth2/token` answers a machine client.
//!
//! - Body `application/x-www-form-urlencoded`, each parameter at most once (RFC 6749 §3.2).
//! - `grant_type=client_credentials`; any other is `unsupported_grant_type`.
//! - Client authentication by HTTP Basic (`client_secret_basic`, id and secret form-encoded
//!   before base64, RFC 6749 §2.3.1) or `client_id` + `client_secret` in the body
//!   (`client_secret_post`); both at once is `invalid_request`, neither, an unknown id or a
//!   wrong secret is `invalid_client`.
//! - `scope` (space-separated, optional): the granted scopes are the client's allowed scopes
//!   that were asked for (those not allowed are left out, as Cognito ignores them); none asked
//!   for grants all the client's scopes; nothing left to grant is `invalid_scope`.
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
    /// A `grant_type` other than `client_credentials`. 400.
    UnsupportedGrantType,
    /// No requested scope is allowed for the client (or it has none). 400.
    InvalidScope,
}

impl TokenError {
    /// The `error` value (RFC 6749 §5.2).
    pub fn code(self) -> &'static str {
        match self {
            TokenError::InvalidRequest(_) => "invalid_request",
            TokenError::InvalidClient => "invalid_client",
            TokenError::UnsupportedGrantType => "unsupported_grant_type",
            TokenError::InvalidScope => "invalid_scope",
        }
    }

    /// A short human-readable reason (`error_description`); never holds request data.
    pub fn description(self) -> &'static str {
        match self {
            TokenError::InvalidRequest(why) => why,
            TokenError::InvalidClient => "client authentication failed",
            TokenError::UnsupportedGrantType => "only grant_type=client_credentials is served",
            TokenError::InvalidScope => "no requested scope is allowed for this client",
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

/// What a successful request is granted.
#[derive(Debug)]
pub struct Grant<'a> {
    /// The authenticated client.
    pub client: &'a AppClient,
    /// The scopes the token carries, in the client's order.
    pub scopes: Vec<String>,
}

/// Decides a token request from its `Authorization` and `Content-Type` header values and body.
pub fn decide<'a>(
    clients: &'a Clients,
    authorization: Option<&str>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Grant<'a>, TokenError> {
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
        None => return Err(TokenError::InvalidRequest("grant_type is required")),
        Some("client_credentials") => {}
        Some(_) => return Err(TokenError::UnsupportedGrantType),
    }
    let (id, secret) = credentials(authorization, &params)?;
    let client = clients
        .authenticate(&id, &secret)
        .ok_or(TokenError::InvalidClient)?;
    let requested: Vec<&str> = params
        .get("scope")
        .map(|s| s.split_whitespace().collect())
        .unwrap_or_default();
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
        (Some(header), None) => basic(header).ok_or(TokenError::InvalidClient),
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
mod tests {
    use super::*;

    const FORM: Option<&str> = Some("application/x-www-form-urlencoded");

    fn clients() -> Clients {
        Clients::parse(
            r#"{"clients": [
                {"client_id": "agent", "client_secret": "s+1", "scopes": ["kosha/agent", "kosha/mcp"]},
                {"client_id": "none", "client_secret": "s2", "scopes": []}
            ]}"#,
        )
        .unwrap()
    }

    fn basic_header(id: &str, secret: &str) -> String {
        let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let raw = format!("{}:{}", enc(id), enc(secret));
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }

    fn granted(result: Result<Grant<'_>, TokenError>) -> Vec<String> {
        result.unwrap().scopes
    }

    #[test]
    fn basic_auth_without_scope_grants_every_allowed_scope() {
        let clients = clients();
        let auth = basic_header("agent", "s+1");
        let grant = decide(
            &clients,
            Some(&auth),
            FORM,
            b"grant_type=client_credentials",
        );
        assert_eq!(granted(grant), ["kosha/agent", "kosha/mcp"]);
    }

    #[test]
    fn posted_credentials_and_a_scope_subset() {
        let clients = clients();
        let body = b"grant_type=client_credentials&client_id=agent&client_secret=s%2B1&scope=kosha%2Fagent";
        let grant = decide(&clients, None, FORM, body);
        assert_eq!(granted(grant), ["kosha/agent"]);
    }

    #[test]
    fn scopes_not_allowed_are_left_out_and_none_left_is_invalid_scope() {
        let clients = clients();
        let auth = basic_header("agent", "s+1");
        let body = b"grant_type=client_credentials&scope=kosha/agent+kosha/operator&resource=http%3A%2F%2Fx%2Fmcp";
        assert_eq!(
            granted(decide(&clients, Some(&auth), FORM, body)),
            ["kosha/agent"]
        );
        let body = b"grant_type=client_credentials&scope=kosha/operator";
        assert_eq!(
            decide(&clients, Some(&auth), FORM, body).unwrap_err(),
            TokenError::InvalidScope
        );
        // A client with no scopes gets no token.
        let auth = basic_header("none", "s2");
        let body = b"grant_type=client_credentials";
        assert_eq!(
            decide(&clients, Some(&auth), FORM, body).unwrap_err(),
            TokenError::InvalidScope
        );
    }

    #[test]
    fn client_authentication_failures_are_invalid_client() {
        let clients = clients();
        let body = b"grant_type=client_credentials";
        for auth in [
            Some(basic_header("agent", "wrong")),
            Some(basic_header("nobody", "s+1")),
            Some("Bearer abc".to_owned()),
            Some("Basic !!!".to_owned()),
            None,
        ] {
            let err = decide(&clients, auth.as_deref(), FORM, body).unwrap_err();
            assert_eq!(err, TokenError::InvalidClient, "{auth:?}");
            assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
        }
    }

    #[test]
    fn malformed_requests_are_refused() {
        let clients = clients();
        let auth = basic_header("agent", "s+1");
        let cases: [(Option<&str>, &[u8], TokenError); 5] = [
            (
                Some("application/json"),
                b"{}",
                TokenError::InvalidRequest("the body must be application/x-www-form-urlencoded"),
            ),
            (
                FORM,
                b"scope=kosha/agent",
                TokenError::InvalidRequest("grant_type is required"),
            ),
            (
                FORM,
                b"grant_type=password",
                TokenError::UnsupportedGrantType,
            ),
            (
                FORM,
                b"grant_type=client_credentials&grant_type=client_credentials",
                TokenError::InvalidRequest("a parameter is repeated"),
            ),
            (
                FORM,
                b"grant_type=client_credentials&client_id=agent&client_secret=s%2B1",
                TokenError::InvalidRequest("use one client authentication method"),
            ),
        ];
        for (content_type, body, want) in cases {
            let err = decide(&clients, Some(&auth), content_type, body).unwrap_err();
            assert_eq!(err, want);
            assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        }
        // The content type's parameters do not matter.
        let form = Some("Application/X-WWW-Form-Urlencoded; charset=UTF-8");
        assert!(
            decide(
                &clients,
                Some(&auth),
                form,
                b"grant_type=client_credentials"
            )
            .is_ok()
        );
    }
}
