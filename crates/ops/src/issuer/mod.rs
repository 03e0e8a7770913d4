//! The local stack's token issuer (issues #31, 44; SPEC §5): what a Cognito user pool serves
//! a machine client and a person's MCP client, on loopback, signing with the dev key.
//!
//! With the issuer URL `I` (e.g. `http://127.0.0.1:PORT/kosha-dev`: a path, like Cognito's
//! `https://cognito-idp.<region>.amazonaws.com/<pool id>`), its path `P` and its origin `O`:
//! - `GET I/.well-known/openid-configuration` and `GET O/.well-known/oauth-authorization-server P`
//!   (RFC 8414): the metadata (`metadata`); `issuer` is `I` exactly.
//! - `GET I/.well-known/jwks.json`: the dev key set, read from the key's `jwks.json` on each
//!   request (removing that file is a key-set outage, as `scripts/chaos-demo` makes one); 503
//!   `{"error":"jwks_unavailable"}` when it cannot be read.
//! - `GET O/oauth2/authorize` and `POST O/login`: the authorization-code grant with PKCE for
//!   the public client `kosha-dev-mcp` (`authorize`, `login`).
//! - `POST O/oauth2/token` (`token::decide`): 200 `{"access_token","expires_in",
//!   "token_type":"Bearer","scope"}` with `Cache-Control: no-store`. Client credentials give a
//!   Cognito machine token (`kosha_auth::dev::MintClaims::client_credentials`: `token_use`
//!   `access`, `client_id`, `scope`, no groups); a code gives the user's access token
//!   (`MintClaims::user`: `username`, `cognito:groups`, the granted `scope`). Refusals are RFC
//!   6749 §5.2 `{"error","error_description"}`. Bodies over 16 KiB: 413.
//! - Anything else: 404. Every answer allows a loopback `Origin` (CORS, preflights included),
//!   so a browser client on this machine (the MCP Inspector) can use it.
//!
//! One JSON line per token request goes to stderr (`event`, `outcome`, the authenticated
//! `client_id` and granted `scope`); never a secret, a code or a token.

pub mod authorize;
pub mod clients;
mod login;
mod metadata;
mod token;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use kosha_auth::dev::{self, MintClaims};
use tower_http::cors::{AllowOrigin, CorsLayer};
use url::Url;

use authorize::{Codes, PUBLIC_CLIENT_ID};
use clients::Clients;
use token::{Decided, TokenError};

pub use metadata::{authorization_server, openid_configuration};

/// Largest token request body, bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The path of the token endpoint on the issuer's origin (Cognito's domain serves it there).
pub const TOKEN_PATH: &str = "/oauth2/token";

/// The path of the authorization endpoint (the login page) on the issuer's origin.
pub const AUTHORIZE_PATH: &str = "/oauth2/authorize";

/// Everything the issuer needs; build with [`Issuer::new`].
pub struct Issuer {
    issuer: String,
    origin: String,
    path: String,
    key_pem: String,
    kid: String,
    jwks_path: PathBuf,
    clients: Clients,
    codes: Codes,
    ttl: Duration,
}

impl Issuer {
    /// An issuer at `issuer` (an absolute http(s) URL on a loopback host, without query or
    /// fragment; a trailing `/` is dropped), signing with `key_pem` (the dev key; its `kid` is
    /// derived), serving the key set in `jwks_path`, for `clients`, tokens valid `ttl` (whole
    /// seconds, ≥ 1).
    pub fn new(
        issuer: &str,
        key_pem: String,
        jwks_path: PathBuf,
        clients: Clients,
        ttl: Duration,
    ) -> Result<Self, String> {
        let url = Url::parse(issuer).map_err(|e| format!("issuer {issuer:?}: {e}"))?;
        let loopback = match url.host() {
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        if !matches!(url.scheme(), "http" | "https")
            || !loopback
            || url.query().is_some()
            || url.fragment().is_some()
        {
            return Err(format!(
                "issuer {issuer:?}: must be an http(s) URL on a loopback host without query \
                 or fragment"
            ));
        }
        if ttl.as_secs() == 0 {
            return Err("the token lifetime must be at least 1 s".to_owned());
        }
        let kid = dev::key_id(&key_pem).map_err(|e| e.to_string())?;
        let path = url.path().trim_end_matches('/').to_owned();
        let origin = url.origin().ascii_serialization();
        Ok(Self {
            issuer: format!("{origin}{path}"),
            origin,
            path,
            key_pem,
            kid,
            jwks_path,
            clients,
            codes: Codes::default(),
            ttl,
        })
    }

    /// The issuer identifier: the tokens' `iss` and the document's `issuer`.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }
}

/// The issuer's routes (module docs).
pub fn router(issuer: Arc<Issuer>) -> Router {
    let well_known = format!("{}/.well-known", issuer.path);
    Router::new()
        .route(
            &format!("{well_known}/openid-configuration"),
            get(|State(i): State<Arc<Issuer>>| async move { axum::Json(openid_configuration(&i)) }),
        )
        .route(
            &format!("/.well-known/oauth-authorization-server{}", issuer.path),
            get(|State(i): State<Arc<Issuer>>| async move { axum::Json(authorization_server(&i)) }),
        )
        .route(&format!("{well_known}/jwks.json"), get(jwks))
        .route(AUTHORIZE_PATH, get(login::authorize))
        .route(login::LOGIN_PATH, post(login::login))
        .route(TOKEN_PATH, post(token_endpoint))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(cors())
        .with_state(issuer)
}

/// CORS for browser clients on this machine: any `http` origin on a loopback host, for the
/// metadata, the key set and the token endpoint (a browser preflights its token request).
fn cors() -> CorsLayer {
    let loopback = AllowOrigin::predicate(|origin: &HeaderValue, _| {
        let Some(url) = origin.to_str().ok().and_then(|o| Url::parse(o).ok()) else {
            return false;
        };
        let host = match url.host() {
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        host && url.scheme() == "http"
    });
    CorsLayer::new()
        .allow_origin(loopback)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE, header::ACCEPT])
        .max_age(Duration::from_secs(600))
}

async fn jwks(State(issuer): State<Arc<Issuer>>) -> Response {
    // A small local file: read inline.
    match std::fs::read(&issuer.jwks_path) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(serde_json::json!({"error": "jwks_unavailable"})),
        )
            .into_response(),
    }
}

async fn token_endpoint(
    State(issuer): State<Arc<Issuer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let decided = token::decide(
        &issuer.clients,
        text(header::AUTHORIZATION),
        text(header::CONTENT_TYPE),
        &body,
    );
    let (client_id, roles_user, scopes) = match decided {
        Ok(Decided::Machine(grant)) => (grant.client.client_id.clone(), None, grant.scopes),
        Ok(Decided::Code(code)) => {
            let redeemed = issuer.codes.redeem(
                &code.code,
                &code.client_id,
                &code.redirect_uri,
                &code.code_verifier,
            );
            match redeemed {
                Ok(login) => (PUBLIC_CLIENT_ID.to_owned(), Some(login.user), login.scopes),
                Err(err) => {
                    log_token(err.code(), Some(&code.client_id), None);
                    return refusal(err);
                }
            }
        }
        Err(err) => {
            log_token(err.code(), None, None);
            return refusal(err);
        }
    };
    let scope = scopes.join(" ");
    let mut claims = match roles_user {
        None => {
            let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
            MintClaims::client_credentials(&issuer.issuer, &client_id, &scopes)
        }
        Some(user) => {
            let mut claims = MintClaims::user(
                &issuer.issuer,
                &client_id,
                user.sub,
                user.username,
                user.roles,
            );
            claims.scope = scope.clone();
            claims
        }
    };
    claims.ttl = issuer.ttl;
    let token = match dev::mint(&issuer.key_pem, &issuer.kid, &claims) {
        Ok(token) => token,
        Err(err) => {
            log_token("server_error", Some(&client_id), None);
            eprintln!("kosha-ops issuer: signing failed: {err}");
            return oauth_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "signing failed",
            );
        }
    };
    log_token("issued", Some(&client_id), Some(&scope));
    // `scope` always: RFC 6749 §5.1 requires it when it differs from the request.
    let body = serde_json::json!({
        "access_token": token,
        "expires_in": issuer.ttl.as_secs(),
        "token_type": "Bearer",
        "scope": scope,
    });
    (no_store(), axum::Json(body)).into_response()
}

fn refusal(err: TokenError) -> Response {
    let mut response = oauth_error(err.status(), err.code(), err.description());
    if err == TokenError::InvalidClient {
        // RFC 6749 §5.2: a 401 names the authentication scheme.
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"kosha-dev\""),
        );
    }
    response
}

fn oauth_error(status: StatusCode, code: &str, description: &str) -> Response {
    let body = serde_json::json!({"error": code, "error_description": description});
    (status, no_store(), axum::Json(body)).into_response()
}

/// `Cache-Control: no-store` and `Pragma: no-cache` (RFC 6749 §5.1).
fn no_store() -> [(header::HeaderName, HeaderValue); 2] {
    [
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (header::PRAGMA, HeaderValue::from_static("no-cache")),
    ]
}

fn log_token(outcome: &str, client_id: Option<&str>, scope: Option<&str>) {
    let line = serde_json::json!({
        "event": "token_request",
        "outcome": outcome,
        "client_id": client_id,
        "scope": scope,
    });
    eprintln!("{line}");
}

#[cfg(test)]
mod tests;
