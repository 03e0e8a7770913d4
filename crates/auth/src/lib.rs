//! kosha-auth: verifies Cognito access tokens and says who is calling (SPEC §5).
//!
//! - [`Verifier::verify`] turns an `Authorization` header into a [`Principal`] or an
//!   [`AuthError`]; [`AuthError::status`] and [`www_authenticate`] give the HTTP answer.
//! - verified tokens are remembered until they expire, so a client's
//!   calls after its first skip the RS256 verification (`verified`);
//! - [`jwks`] fetches and caches the signing keys (10 min fresh, 50 min grace, one refresh per
//!   30 s for unknown `kid`s).
//! - [`ProtectedResourceMetadata`] is the
//!   RFC 9728 document for `/.well-known/oauth-protected-resource`.
//! - [`dev`] makes a local RSA key pair, its JWKS, and Cognito-shaped tokens.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
pub mod dev;
mod error;
pub mod jwks;
mod metadata;
mod principal;
mod verified;
mod verifier;

pub use config::{
    ALLOWED_CLIENT_IDS_ENV, JWT_ISSUER_ENV, JwksSource, MAX_LEEWAY_S, VerifierConfig,
};
pub use error::{AuthError, ConfigError, resource_metadata_url, www_authenticate};
pub use kosha_contract::bearer::MAX_TOKEN_BYTES;
pub use metadata::ProtectedResourceMetadata;
pub use principal::{Caller, DEFAULT_SCOPE_PREFIX, Principal, Role};
pub use verifier::Verifier;
