//! [`Verifier`]: `Authorization` header → [`Principal`] (SPEC §5).
//!
//! Checks, in order, each failure an [`AuthError`] (see `error` for the HTTP mapping):
//! 1. `Bearer` scheme, case-insensitive; otherwise [`AuthError::Missing`].
//! 2. Size ≤ [`crate::MAX_TOKEN_BYTES`] and compact-JWS shape, before any parsing.
//! 3. Header `alg` is exactly RS256 — `none`, HS256 (the RSA-public-key-as-HMAC-secret
//!    confusion) and everything else are refused before a key is looked up — and a `kid` exists.
//! 4. The key named by `kid` from the JWKS cache (`jwks::cache` says when it fetches).
//! 5. Signature (RS256 only, the key's family must be RSA), then `iss` exactly, `exp` and
//!    `nbf` with the configured leeway (≤ 60 s); `exp` and `iss` are required.
//! 6. `token_use == "access"`, `client_id` in the allowed list.
//! 7. Roles: a user's token (with `username`) from `cognito:groups` only, a client-credentials
//!    token (no `username`, `sub` = `client_id`) from the scopes `<prefix>/agent`,
//!    `<prefix>/operator` only (`KOSHA_SCOPE_PREFIX`, SPEC §5; `principal` says why); none
//!    known → [`AuthError::InsufficientScope`] for a client-credentials token (a scope would
//!    help it), [`AuthError::NoRole`] otherwise.
//!
//! A token that passed all of them is remembered until `exp` + leeway ([`crate::verified`]);
//! the same token again gets the same principal after step 4 alone (its key must still be
//! in the JWKS cache), without the signature check, the claims parse or steps 6–7.
//!
//! Failures 2–6 are all [`AuthError::InvalidToken`]; the precise reason goes to a `debug` log
//! event (`reason` field), which never contains the token. `aud` is not checked: Cognito access
//! tokens carry `client_id` instead (checked in 6).
//!
//! Clone is cheap and clones share the key cache.

use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};

use crate::config::{JwksSource, VerifierConfig};
use crate::error::AuthError;
use crate::jwks::{CacheTiming, FileJwksFetcher, HttpJwksFetcher, JwksFetcher, KeyCache, KeyMiss};
use crate::principal::{Caller, Principal, Role};
use crate::verified::{Verified, VerifiedTokens};
use kosha_contract::bearer::{self, Extracted, Shape};

/// Verifies Cognito access tokens. Build once at start-up; share by cloning.
#[derive(Clone)]
pub struct Verifier {
    inner: Arc<Inner>,
}

struct Inner {
    allowed_client_ids: Vec<String>,
    scope_prefix: String,
    validation: Validation,
    keys: Arc<KeyCache>,
    verified: VerifiedTokens,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("issuer", &self.inner.validation.iss)
            .field("allowed_client_ids", &self.inner.allowed_client_ids)
            .finish_non_exhaustive()
    }
}

#[derive(serde::Deserialize)]
struct AccessClaims {
    sub: String,
    client_id: String,
    token_use: String,
    exp: u64,
    #[serde(rename = "cognito:groups", default)]
    groups: Vec<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    /// Every other claim: the string ones become the principal's tags (SPEC §5a).
    #[serde(flatten)]
    other: std::collections::BTreeMap<String, serde_json::Value>,
}

/// Why a token was rejected; only ever logged.
#[derive(Clone, Copy)]
enum Reason {
    Shape(Shape),
    Malformed,
    Algorithm,
    NoKid,
    Key(KeyMiss),
    Signature,
    Expired,
    NotYetValid,
    Issuer,
    Claims,
    TokenUse,
    ClientNotAllowed,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::Shape(Shape::Empty) => "empty_token",
            Reason::Shape(Shape::Oversized) => "oversized_token",
            Reason::Shape(Shape::Malformed) | Reason::Malformed => "malformed_token",
            Reason::Algorithm => "algorithm_not_allowed",
            Reason::NoKid => "missing_kid",
            Reason::Key(KeyMiss::NoKeys) => "no_signing_keys",
            Reason::Key(KeyMiss::UnknownKid) => "unknown_kid",
            Reason::Signature => "bad_signature",
            Reason::Expired => "expired",
            Reason::NotYetValid => "not_yet_valid",
            Reason::Issuer => "wrong_issuer",
            Reason::Claims => "bad_claims",
            Reason::TokenUse => "not_an_access_token",
            Reason::ClientNotAllowed => "client_not_allowed",
        }
    }
}

impl Verifier {
    /// A verifier fetching keys from `config.jwks` (over `http` for an `https://` URL, or
    /// from a file), with the SPEC §5 cache timing. `http` is the process's shared client
    /// (`kosha_runtime::tls::http_client`); it is not used for a file.
    pub fn new(config: VerifierConfig, http: reqwest::Client) -> Self {
        let fetcher: Arc<dyn JwksFetcher> = match &config.jwks {
            JwksSource::Http(url) => Arc::new(HttpJwksFetcher::new(url.clone(), http)),
            JwksSource::File(path) => Arc::new(FileJwksFetcher::new(path.clone())),
        };
        Self::with_fetcher(config, fetcher, CacheTiming::default())
    }

    /// A verifier with an explicit key source and cache timing (tests, custom fetchers).
    /// `config.jwks` is ignored.
    pub fn with_fetcher(
        config: VerifierConfig,
        fetcher: Arc<dyn JwksFetcher>,
        timing: CacheTiming,
    ) -> Self {
        let mut validation = Validation::new(Algorithm::RS256);
        validation.leeway = config.leeway_s;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = false;
        validation.set_issuer(&[config.issuer.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss"]);
        let inner = Inner {
            allowed_client_ids: config.allowed_client_ids,
            scope_prefix: config.scope_prefix,
            validation,
            keys: Arc::new(KeyCache::new(fetcher, timing)),
            verified: VerifiedTokens::default(),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Verifies the value of the `Authorization` header (`None` when absent).
    pub async fn verify(&self, authorization: Option<&str>) -> Result<Principal, AuthError> {
        let token = match bearer::extract(authorization) {
            Extracted::Missing => return Err(AuthError::Missing),
            Extracted::Rejected(shape) => return Err(reject(Reason::Shape(shape))),
            Extracted::Token(token) => token,
        };
        let now_s = jsonwebtoken::get_current_timestamp();
        if let Some(seen) = self.inner.verified.get(token, now_s)
            && self.inner.keys.key(&seen.kid).await.is_ok()
        {
            return Ok(seen.principal);
        }
        let (claims, kid) = self.check_token(token).await.map_err(reject)?;
        let scopes: Vec<String> = claims
            .scope
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let caller = Caller::of(claims.username.as_deref(), &claims.client_id, &claims.sub);
        let roles = Role::of(
            caller,
            claims.groups.iter().map(String::as_str),
            scopes.iter().map(String::as_str),
            &self.inner.scope_prefix,
        );
        if roles.is_empty() {
            tracing::debug!(client_id = %claims.client_id, "valid token without a usable role");
            return Err(match caller {
                Caller::Client => AuthError::InsufficientScope,
                Caller::User | Caller::Other => AuthError::NoRole,
            });
        }
        let principal = Principal {
            client_id: claims.client_id,
            subject: claims.sub,
            username: claims.username,
            roles,
            scopes,
            groups: claims.groups,
            tags: tags(claims.other),
            expires_at: claims.exp,
        };
        let seen = Verified {
            principal: principal.clone(),
            kid,
        };
        let leeway_s = self.inner.validation.leeway;
        self.inner.verified.insert(token, seen, leeway_s, now_s);
        Ok(principal)
    }

    /// Like [`Verifier::verify`], reading `Authorization` from request headers. Several
    /// `Authorization` headers, or one that is not visible ASCII, is an invalid token.
    pub async fn verify_headers(&self, headers: &http::HeaderMap) -> Result<Principal, AuthError> {
        let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return match headers.contains_key(http::header::AUTHORIZATION) {
                true => Err(reject(Reason::Shape(Shape::Malformed))),
                false => Err(AuthError::Missing),
            };
        };
        match value.to_str() {
            Ok(value) => self.verify(Some(value)).await,
            Err(_) => Err(reject(Reason::Shape(Shape::Malformed))),
        }
    }

    /// The token's claims and `kid`, after steps 3–6.
    async fn check_token(&self, token: &str) -> Result<(AccessClaims, String), Reason> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| Reason::Malformed)?;
        if header.alg != Algorithm::RS256 {
            return Err(Reason::Algorithm);
        }
        let kid = header.kid.ok_or(Reason::NoKid)?;
        let key = self.inner.keys.key(&kid).await.map_err(Reason::Key)?;
        let data = jsonwebtoken::decode::<AccessClaims>(token, &key, &self.inner.validation)
            .map_err(|e| classify(e.kind()))?;
        let claims = data.claims;
        if claims.token_use != "access" {
            return Err(Reason::TokenUse);
        }
        if !self.inner.allowed_client_ids.contains(&claims.client_id) {
            tracing::debug!(client_id = %claims.client_id, "client_id not allowed");
            return Err(Reason::ClientNotAllowed);
        }
        Ok((claims, kid))
    }
}

/// The string claims of `other` that are not [`Principal::TAGGED_EXCEPT`] (SPEC §5a).
fn tags(
    other: std::collections::BTreeMap<String, serde_json::Value>,
) -> std::collections::BTreeMap<String, String> {
    other
        .into_iter()
        .filter(|(name, _)| !Principal::TAGGED_EXCEPT.contains(&name.as_str()))
        .filter_map(|(name, value)| match value {
            serde_json::Value::String(s) => Some((name, s)),
            _ => None,
        })
        .collect()
}

fn classify(kind: &ErrorKind) -> Reason {
    match kind {
        ErrorKind::InvalidSignature => Reason::Signature,
        ErrorKind::ExpiredSignature => Reason::Expired,
        ErrorKind::ImmatureSignature => Reason::NotYetValid,
        ErrorKind::InvalidIssuer => Reason::Issuer,
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => Reason::Algorithm,
        ErrorKind::MissingRequiredClaim(_)
        | ErrorKind::InvalidClaimFormat(_)
        | ErrorKind::Json(_)
        | ErrorKind::Utf8(_) => Reason::Claims,
        _ => Reason::Malformed,
    }
}

fn reject(reason: Reason) -> AuthError {
    tracing::debug!(reason = reason.as_str(), "bearer token rejected");
    AuthError::InvalidToken
}
