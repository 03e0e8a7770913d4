//! `KOSHA_RATE_KEY` (SPEC §6): whose bucket a `tools/call` spends from.
//!
//! - `client` (the default): the app client's, `rl#<client_id>`, shared by everyone behind it.
//! - `user`: each person's own, `rl#u#<sub>`, with the same capacity, rate and leases; a
//!   client-credentials token (its `sub` is its `client_id`, [`Caller::Client`]) has no user
//!   and keeps its client's bucket.
//!
//! Any other value stops the start (`main` exits 2). Source: SPEC §6; issue 44.

use kosha_auth::{Caller, Principal};
use kosha_resilience::rate_limit::Bucket;

/// The variable.
pub const RATE_KEY_ENV: &str = "KOSHA_RATE_KEY";

/// What keys the `tools/call` bucket (`KOSHA_RATE_KEY`, SPEC §6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RateKey {
    /// One bucket per app client (`client`, the default).
    #[default]
    Client,
    /// One bucket per user (`user`); client-credentials tokens keep their client's.
    User,
}

impl RateKey {
    /// The bucket `principal`'s calls spend from.
    ///
    /// ```
    /// use kosha_resilience::rate_limit::Bucket;
    /// use mcp_gateway::config::RateKey;
    /// let user = kosha_auth::Principal {
    ///     client_id: "app".into(),
    ///     subject: "uuid-1".into(),
    ///     username: Some("alice".into()),
    ///     roles: vec![kosha_auth::Role::Agent],
    ///     scopes: vec![],
    ///     groups: vec![],
    ///     tags: Default::default(),
    ///     expires_at: 0,
    /// };
    /// assert_eq!(RateKey::Client.bucket(&user), Bucket::client("app"));
    /// assert_eq!(RateKey::User.bucket(&user), Bucket::user("uuid-1"));
    /// ```
    pub fn bucket(self, principal: &Principal) -> Bucket<'_> {
        let caller = Caller::of(
            principal.username.as_deref(),
            &principal.client_id,
            &principal.subject,
        );
        match (self, caller) {
            (Self::User, Caller::User | Caller::Other) => Bucket::user(&principal.subject),
            (Self::User, Caller::Client) | (Self::Client, _) => {
                Bucket::client(&principal.client_id)
            }
        }
    }
}

/// A refused `KOSHA_RATE_KEY` (the value is not echoed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be `client` or `user`")]
pub struct InvalidRateKey;

impl std::str::FromStr for RateKey {
    type Err = InvalidRateKey;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        match raw.trim() {
            "client" => Ok(Self::Client),
            "user" => Ok(Self::User),
            _ => Err(InvalidRateKey),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(client_id: &str, subject: &str, username: Option<&str>) -> Principal {
        Principal {
            client_id: client_id.into(),
            subject: subject.into(),
            username: username.map(Into::into),
            roles: vec![kosha_auth::Role::Agent],
            scopes: vec![],
            groups: vec![],
            tags: Default::default(),
            expires_at: 0,
        }
    }

    #[test]
    fn only_client_and_user_parse() {
        assert_eq!("client".parse(), Ok(RateKey::Client));
        assert_eq!(" user ".parse(), Ok(RateKey::User));
        for bad in ["", "User", "sub", "client_id"] {
            assert_eq!(bad.parse::<RateKey>(), Err(InvalidRateKey), "{bad:?}");
        }
    }

    #[test]
    fn keyed_by_user_a_client_credentials_token_keeps_its_clients_bucket() {
        let machine = principal("ops", "ops", None);
        assert_eq!(RateKey::User.bucket(&machine), Bucket::client("ops"));
        let person = principal("app", "uuid-1", Some("alice"));
        assert_eq!(RateKey::User.bucket(&person), Bucket::user("uuid-1"));
        assert_eq!(RateKey::Client.bucket(&person), Bucket::client("app"));
    }
}
