//! Cognito-shaped access tokens signed with a dev key.
//!
//! Two shapes, as a Cognito user pool issues them:
//! - a user's ([`MintClaims::new`], [`MintClaims::user`]): `sub`, `iss`, `version: 2`,
//!   `client_id`, `token_use`, `scope`, `cognito:groups`, `exp`, `iat`, `auth_time`, `jti`,
//!   `username`; `scope` holds what a login through the hosted UI grants ([`user_scope`]:
//!   `openid` and the role scopes of its groups), yet its roles come from the groups alone;
//! - a machine client's, from the client-credentials grant ([`MintClaims::client_credentials`]):
//!   the same without `cognito:groups` and `username`, `sub` its `client_id`, and `scope`
//!   holding the granted resource-server scopes (roles come from those, SPEC §5).
//!
//! The header is `{"alg":"RS256","kid":…}` as Cognito's (no `typ`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};

use super::DevError;
use crate::principal::{DEFAULT_SCOPE_PREFIX, Role};

/// The `scope` of a dev user's token in the `roles` groups: `openid` and the role scopes
/// (`kosha/agent`, `kosha/operator`, under [`DEFAULT_SCOPE_PREFIX`]), as Cognito grants a user
/// who logs in through an app client allowing them (the vocabulary of the gateway's
/// `scopes_supported`, SPEC §5).
///
/// ```
/// use kosha_auth::{Role, dev::user_scope};
/// assert_eq!(user_scope(&[Role::Agent, Role::Operator]), "openid kosha/agent kosha/operator");
/// ```
pub fn user_scope(roles: &[Role]) -> String {
    std::iter::once("openid".to_owned())
        .chain(roles.iter().map(|role| role.scope(DEFAULT_SCOPE_PREFIX)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What to put into a dev token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintClaims {
    /// `iss`: must equal the gateway's `KOSHA_JWT_ISSUER`.
    pub issuer: String,
    /// `client_id`.
    pub client_id: String,
    /// `sub`: the user, or for a machine client its `client_id`.
    pub subject: String,
    /// Written to `cognito:groups`; empty means the claim is left out.
    pub roles: Vec<Role>,
    /// Lifetime: `exp = iat + ttl` (whole seconds).
    pub ttl: Duration,
    /// `token_use`: `"access"` for a usable token.
    pub token_use: String,
    /// `scope`: space-separated scopes.
    pub scope: String,
    /// `username`: `Some` in a user's token, `None` in a machine client's (SPEC §5 tells the
    /// two apart by it).
    pub username: Option<String>,
}

impl MintClaims {
    /// A user's access token for `client_id` with `roles` as groups and [`user_scope`], valid
    /// 12 h (SPEC §2); the user (`sub` and `username`) is named after the client.
    pub fn new(issuer: &str, client_id: &str, roles: &[Role]) -> Self {
        Self::user(issuer, client_id, client_id, client_id, roles)
    }

    /// The access token of the user `sub` (login name `username`) signed in through the app
    /// client `client_id`, in the `roles` groups, with [`user_scope`], valid 12 h.
    ///
    /// ```
    /// use kosha_auth::{Role, dev::MintClaims};
    /// let issuer = "https://idp.example/p";
    /// let claims = MintClaims::user(issuer, "app", "u-1", "alice", &[Role::Agent]);
    /// let json = claims.to_json(1_700_000_000).unwrap();
    /// assert_eq!((json["sub"].as_str(), json["username"].as_str()), (Some("u-1"), Some("alice")));
    /// assert_eq!(json["cognito:groups"], serde_json::json!(["agent"]));
    /// assert_eq!(json["scope"], "openid kosha/agent");
    /// ```
    pub fn user(issuer: &str, client_id: &str, sub: &str, username: &str, roles: &[Role]) -> Self {
        Self {
            issuer: issuer.to_owned(),
            client_id: client_id.to_owned(),
            subject: sub.to_owned(),
            roles: roles.to_vec(),
            ttl: Duration::from_secs(12 * 3600),
            token_use: "access".to_owned(),
            scope: user_scope(roles),
            username: Some(username.to_owned()),
        }
    }

    /// A machine client's access token from the client-credentials grant: no groups, `scopes`
    /// in `scope`, valid 1 h (Cognito's default access-token validity).
    ///
    /// ```
    /// use kosha_auth::dev::MintClaims;
    /// let claims = MintClaims::client_credentials("https://idp.example/p", "c1", &["kosha/agent"]);
    /// let json = claims.to_json(1_700_000_000).unwrap();
    /// assert_eq!(json["scope"], "kosha/agent");
    /// assert_eq!(json["version"], 2);
    /// assert!(json.get("cognito:groups").is_none() && json.get("username").is_none());
    /// ```
    pub fn client_credentials(issuer: &str, client_id: &str, scopes: &[&str]) -> Self {
        Self {
            issuer: issuer.to_owned(),
            client_id: client_id.to_owned(),
            subject: client_id.to_owned(),
            roles: Vec::new(),
            ttl: Duration::from_secs(3600),
            token_use: "access".to_owned(),
            scope: scopes.join(" "),
            username: None,
        }
    }

    /// The claims as JSON, issued at `now` (seconds since the Unix epoch).
    pub fn to_json(&self, now: u64) -> Result<serde_json::Value, DevError> {
        let mut claims = serde_json::json!({
            "sub": self.subject,
            "iss": self.issuer,
            "version": 2,
            "client_id": self.client_id,
            "token_use": self.token_use,
            "scope": self.scope,
            "auth_time": now,
            "iat": now,
            "exp": now.saturating_add(self.ttl.as_secs()),
            "jti": jti()?,
        });
        if let Some(username) = &self.username {
            claims["username"] = serde_json::json!(username);
        }
        if !self.roles.is_empty() {
            let groups: Vec<&str> = self.roles.iter().map(|r| r.as_str()).collect();
            claims["cognito:groups"] = serde_json::json!(groups);
        }
        Ok(claims)
    }
}

/// Signs `claims` (issued now, by the system clock) with `private_pem` under `kid`.
pub fn mint(private_pem: &str, kid: &str, claims: &MintClaims) -> Result<String, DevError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| DevError::Clock)?;
    sign_claims(private_pem, kid, &claims.to_json(now.as_secs())?)
}

/// Signs arbitrary JSON claims RS256 with `private_pem` under `kid`.
pub fn sign_claims(
    private_pem: &str,
    kid: &str,
    claims: &serde_json::Value,
) -> Result<String, DevError> {
    let key =
        EncodingKey::from_rsa_pem(private_pem.as_bytes()).map_err(|_| DevError::InvalidKey)?;
    let mut header = Header::new(Algorithm::RS256);
    header.typ = None;
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &key).map_err(|e| DevError::Signing(e.to_string()))
}

/// A random UUID-v4-shaped token id.
fn jti() -> Result<String, DevError> {
    let mut b = [0u8; 16];
    aws_lc_rs::rand::fill(&mut b).map_err(|_| DevError::Signing("no randomness".to_owned()))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}
