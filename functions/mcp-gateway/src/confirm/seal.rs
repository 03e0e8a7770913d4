//! The sealed `requestState` of a confirmation question (SPEC §5b; ARCHITECTURE pitfall 32;
//! SEP-2322: a server that lets `requestState` decide anything must protect its integrity).
//!
//! The client echoes the state verbatim, so on the retry it is attacker-controlled input.
//! [`Sealer::seal`] signs it with rmcp's `RequestStateCodec` (HMAC-SHA256 under the
//! confirmation key, format `rs1.<body>.<tag>`), and [`Sealer::open`] classifies what comes
//! back before anything runs:
//! - **[`Opened::Valid`]**: sealed by this key, for this [`Binding`], not past its expiry;
//! - **[`Opened::Expired`]**: all that, but older than the TTL (the person is asked again);
//! - **[`Opened::Invalid`]**: anything else — not a sealed state, forged or tampered, sealed
//!   under another key, for another client, another user, another tool or other arguments.
//!   One answer for all of them (`invalid_argument`); the reason is for the log only.
//!
//! **The binding** is not stored in the state: it is the codec's associated data, the
//! canonical JSON (`kosha_contract::canonical`) of the client id, the user (`sub`), the tool
//! and the SHA-256 of the canonical arguments. So the retry must come from the same client
//! and user with the same arguments, key order and spacing aside, or the tag does not verify.
//!
//! **Expiry** is an epoch-millisecond deadline inside the signed body, checked against the
//! caller's wall clock (`kosha_state::Clock`; states cross instances, so not tokio's clock).
//! The codec's own TTL is not used: it reads `chrono::Utc::now()`, which a test cannot set.
//! The body is signed, not encrypted: it holds only that deadline and a version.
//!
//! A state sealed under a key since rotated opens as invalid: rotating
//! `KOSHA_CONFIRM_SECRET_ID` ends every question in flight (at most the TTL's worth).

use std::time::Duration;

use kosha_contract::canonical;
use rmcp::model::{JsonObject, RequestStateCodec, RequestStateError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Longest `requestState` opened, in bytes; a longer one is invalid without decoding it. A
/// sealed state is 95 (`rs1.`, 35 body bytes and a 32-byte tag in base64url).
pub const MAX_STATE_BYTES: usize = 512;

/// Version of the signed body and of the binding's layout.
const VERSION: u8 = 1;

/// Whom and what a state is for.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// The app client's `client_id`.
    pub client_id: &'a str,
    /// The user's `sub` (SPEC §5 "The user").
    pub user: &'a str,
    /// The tool called.
    pub tool: &'a str,
    /// The call's arguments as sent (absent arguments: an empty object).
    pub arguments: &'a JsonObject,
}

impl Binding<'_> {
    /// SHA-256 (hex) of the canonical JSON of the arguments: also what the audit event
    /// names, so an auditor can match a confirmation to its call without the reason's text.
    pub fn arguments_digest(&self) -> String {
        canonical::sha256_hex(&Value::Object(self.arguments.clone()))
    }

    /// The codec's associated data (module docs).
    fn associated_data(&self) -> Vec<u8> {
        canonical::to_string(&json!([
            "kosha/confirm",
            VERSION,
            self.client_id,
            self.user,
            self.tool,
            self.arguments_digest()
        ]))
        .into_bytes()
    }
}

/// The signed body.
#[derive(Debug, Serialize, Deserialize)]
struct Body {
    /// [`VERSION`].
    v: u8,
    /// Expiry, epoch milliseconds.
    exp: i64,
}

/// Why a state is invalid: for the log, never for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    /// Longer than [`MAX_STATE_BYTES`].
    TooLong,
    /// Not in the codec's format, or not base64url.
    Malformed,
    /// The tag does not verify: forged, tampered, another key, or another binding.
    Unverified,
    /// Verified, but its body is not this version's.
    UnknownBody,
}

impl Invalid {
    /// The reason's name in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TooLong => "too_long",
            Self::Malformed => "malformed",
            Self::Unverified => "unverified",
            Self::UnknownBody => "unknown_body",
        }
    }
}

/// What opening a state found (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// Sealed here for this binding, within its TTL.
    Valid,
    /// Sealed here for this binding, past its TTL.
    Expired,
    /// Anything else.
    Invalid(Invalid),
}

/// Seals and opens states under one key.
#[derive(Debug)]
pub struct Sealer {
    codec: RequestStateCodec,
    ttl: Duration,
}

impl Sealer {
    /// A sealer keyed by `key` whose states live `ttl`.
    ///
    /// # Errors
    /// [`RequestStateError::KeyTooShort`] for a key under 32 bytes (the codec's minimum).
    pub fn try_new(key: &[u8], ttl: Duration) -> Result<Self, RequestStateError> {
        Ok(Self {
            codec: RequestStateCodec::try_new(key)?,
            ttl,
        })
    }

    /// A state for `binding`, sealed at `now_ms` (epoch ms), expiring a TTL later.
    pub fn seal(&self, binding: &Binding<'_>, now_ms: i64) -> String {
        let ttl_ms = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        let body = Body {
            v: VERSION,
            exp: now_ms.saturating_add(ttl_ms),
        };
        // Two integers: serializing cannot fail, and an empty body would open as invalid.
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let ad = binding.associated_data();
        self.codec
            .seal_with(&body, &rmcp::model::SealOptions::new().associated_data(&ad))
    }

    /// What `sealed` is for `binding` at `now_ms` (module docs). The expiry is inclusive: a
    /// state opened at its expiry millisecond is still valid.
    pub fn open(&self, sealed: &str, binding: &Binding<'_>, now_ms: i64) -> Opened {
        if sealed.len() > MAX_STATE_BYTES {
            return Opened::Invalid(Invalid::TooLong);
        }
        let ad = binding.associated_data();
        let body = match self.codec.open_with(sealed, &ad) {
            Ok(body) => body,
            Err(RequestStateError::IntegrityCheckFailed | RequestStateError::UnknownKeyId) => {
                return Opened::Invalid(Invalid::Unverified);
            }
            // Not sealed with a TTL, so the codec never says Expired; kept apart anyway.
            Err(RequestStateError::Expired) => return Opened::Expired,
            Err(_) => return Opened::Invalid(Invalid::Malformed),
        };
        match serde_json::from_slice::<Body>(&body) {
            Ok(Body { v: VERSION, exp }) if now_ms <= exp => Opened::Valid,
            Ok(Body { v: VERSION, .. }) => Opened::Expired,
            _ => Opened::Invalid(Invalid::UnknownBody),
        }
    }
}

#[cfg(test)]
mod tests;
