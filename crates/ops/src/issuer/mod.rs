//! The local stack's token issuer (issue #31, SPEC §5): what a Cognito user pool serves a
//! machine client, on loopback, signing with the dev key.
//!
//! With the issuer URL `I` (e.g. `http://127.0.0.1:PORT/kosha-dev`: a path, like Cognito's
//! `https://cognito-idp.<region>.amazonaws.com/<pool id>`) and its origin `O`:
//! - `GET I/.well-known/openid-configuration`: OpenID Connect Discovery 1.0 §4, the fields
//!   Cognito's document has ([`discovery_document`]); `issuer` is `I` exactly.
//! - `GET I/.well-known/jwks.json`: the dev key set, read from the key's `jwks.json` on each
//!   request (removing that file is a key-set outage, as `scripts/chaos-demo` makes one); 503
//!   `{"error":"jwks_unavailable"}` when it cannot be read.
//! - `POST O/oauth2/token`: the client-credentials grant (`token::decide`): 200
//!   `{"access_token","expires_in","token_type":"Bearer"}` with `Cache-Control: no-store`; the
//!   token is a Cognito machine token (`kosha_auth::dev::MintClaims::client_credentials`:
//!   `token_use` `access`, `client_id`, `scope`, no groups). Refusals are RFC 6749 §5.2
//!   `{"error","error_description"}`. Bodies over 16 KiB: 413.
//! - Anything else: 404. The authorization-code endpoints the document names (as Cognito's
//!   does) are not served: the interactive flow is out of scope (docs/clients.md).
//!
//! One JSON line per token request goes to stderr (`event`, `outcome`, the authenticated
//! `client_id` and granted `scope`); never a secret or a token.

pub mod clients;
mod token;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use kosha_auth::dev::{self, MintClaims};
use url::Url;

use clients::Clients;
use token::TokenError;

/// Largest token request body, bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The path of the token endpoint on the issuer's origin (Cognito's domain serves it there).
pub const TOKEN_PATH: &str = "/oauth2/token";

/// Everything the issuer needs; build with [`Issuer::new`].
pub struct Issuer {
    issuer: String,
    origin: String,
    path: String,
    key_pem: String,
    kid: String,
    jwks_path: PathBuf,
    clients: Clients,
    ttl: Duration,
}

impl Issuer {
    /// An issuer at `issuer` (an absolute http(s) URL without query or fragment; a trailing
    /// `/` is dropped), signing with `key_pem` (the dev key; its `kid` is derived), serving the
    /// key set in `jwks_path`, for `clients`, tokens valid `ttl` (whole seconds, ≥ 1).
    pub fn new(
        issuer: &str,
        key_pem: String,
        jwks_path: PathBuf,
        clients: Clients,
        ttl: Duration,
    ) -> Result<Self, String> {
        let url = Url::parse(issuer).map_err(|e| format!("issuer {issuer:?}: {e}"))?;
        if !matches!(url.scheme(), "http" | "https")
            || url.host().is_none()
            || url.query().is_some()
            || url.fragment().is_some()
        {
            return Err(format!(
                "issuer {issuer:?}: must be an http(s) URL without query or fragment"
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
            ttl,
        })
    }

    /// The issuer identifier: the tokens' `iss` and the document's `issuer`.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }
}

/// The OpenID provider metadata, with the fields a Cognito user pool's document has.
pub fn discovery_document(issuer: &Issuer) -> serde_json::Value {
    let o = &issuer.origin;
    serde_json::json!({
        "authorization_endpoint": format!("{o}/oauth2/authorize"),
        "end_session_endpoint": format!("{o}/logout"),
        "id_token_signing_alg_values_supported": ["RS256"],
        "issuer": issuer.issuer,
        "jwks_uri": format!("{}/.well-known/jwks.json", issuer.issuer),
        "response_types_supported": ["code", "token"],
        "revocation_endpoint": format!("{o}/oauth2/revoke"),
        "scopes_supported": ["openid", "email", "phone", "profile"],
        "subject_types_supported": ["public"],
        "token_endpoint": format!("{o}{TOKEN_PATH}"),
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "userinfo_endpoint": format!("{o}/oauth2/userInfo"),
    })
}

/// The issuer's routes (module docs).
pub fn router(issuer: Arc<Issuer>) -> Router {
    let well_known = format!("{}/.well-known", issuer.path);
    Router::new()
        .route(
            &format!("{well_known}/openid-configuration"),
            get(openid_configuration),
        )
        .route(&format!("{well_known}/jwks.json"), get(jwks))
        .route(TOKEN_PATH, post(token_endpoint))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(issuer)
}

async fn openid_configuration(State(issuer): State<Arc<Issuer>>) -> Response {
    axum::Json(discovery_document(&issuer)).into_response()
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
    let grant = match decided {
        Ok(grant) => grant,
        Err(err) => {
            log_token(err.code(), None, None);
            return refusal(err);
        }
    };
    let scopes: Vec<&str> = grant.scopes.iter().map(String::as_str).collect();
    let mut claims =
        MintClaims::client_credentials(&issuer.issuer, &grant.client.client_id, &scopes);
    claims.ttl = issuer.ttl;
    let token = match dev::mint(&issuer.key_pem, &issuer.kid, &claims) {
        Ok(token) => token,
        Err(err) => {
            log_token("server_error", Some(&grant.client.client_id), None);
            eprintln!("kosha-ops issuer: signing failed: {err}");
            return oauth_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "signing failed",
            );
        }
    };
    log_token("issued", Some(&grant.client.client_id), Some(&claims.scope));
    let body = serde_json::json!({
        "access_token": token,
        "expires_in": issuer.ttl.as_secs(),
        "token_type": "Bearer",
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
