//! The partition key of a bucket item (SPEC §8's table: `rl#<client_id>` for an app client's
//! bucket, `rl#u#<sub>` for a user's with `KOSHA_RATE_KEY=user`), made here alone: the
//! limiter's read, write and charge, and the tests, all take it from [`BucketKey`].
//!
//! The two kinds share one key space, so an id is escaped before it is put in: `%` becomes
//! `%25` and `#` becomes `%23` (RFC 3986 percent-encoding of just those two). An escaped id
//! holds no `#`, so a client's key never starts `rl#u#` (a client named `u#alice` is
//! `rl#u%23alice`, not alice's bucket), and two different ids never give one key. Ids
//! without `%` or `#` (every Cognito client id and `sub`) are kept as they are.

use std::borrow::Cow;

use kosha_resilience::rate_limit::{Bucket, BucketKind};

/// The `pk` of one bucket item (SPEC §8).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BucketKey(String);

impl BucketKey {
    /// The key of `client_id`'s bucket, `rl#<client_id>` (SPEC §8), the id escaped.
    pub fn client(client_id: &str) -> Self {
        Self(format!("rl#{}", escaped(client_id)))
    }

    /// The key of the bucket of the user whose `sub` claim is `sub`, `rl#u#<sub>` (SPEC §6,
    /// §8), the id escaped.
    pub fn user(sub: &str) -> Self {
        Self(format!("rl#u#{}", escaped(sub)))
    }

    /// The key of `bucket`.
    pub fn of(bucket: Bucket<'_>) -> Self {
        match bucket.kind {
            BucketKind::Client => Self::client(bucket.id),
            BucketKind::User => Self::user(bucket.id),
        }
    }

    /// The key as stored in `pk`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `id` with `%` and `#` percent-encoded, so it holds no `#` and decodes to one id only.
fn escaped(id: &str) -> Cow<'_, str> {
    if !id.contains(['%', '#']) {
        return Cow::Borrowed(id);
    }
    Cow::Owned(id.replace('%', "%25").replace('#', "%23"))
}

impl From<BucketKey> for String {
    fn from(key: BucketKey) -> Self {
        key.0
    }
}

impl std::fmt::Display for BucketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_bucket_is_rl_hash_its_id() {
        assert_eq!(BucketKey::client("agent-7").as_str(), "rl#agent-7");
        assert_eq!(String::from(BucketKey::client("")), "rl#");
        assert_eq!(
            BucketKey::of(Bucket::client("agent-7")).as_str(),
            "rl#agent-7"
        );
    }

    #[test]
    fn a_users_bucket_is_rl_hash_u_hash_its_sub() {
        let sub = "4f1c2a9e-8b7d-4e6f-9a0b-1c2d3e4f5a6b";
        assert_eq!(BucketKey::user(sub).as_str(), format!("rl#u#{sub}"));
        assert_eq!(BucketKey::of(Bucket::user("alice")).as_str(), "rl#u#alice");
    }

    #[test]
    fn no_client_id_names_a_users_bucket_and_no_two_ids_share_a_key() {
        assert_ne!(BucketKey::client("u#alice"), BucketKey::user("alice"));
        assert_eq!(BucketKey::client("u#alice").as_str(), "rl#u%23alice");
        assert_ne!(BucketKey::user("a#b"), BucketKey::user("a%23b"));
        assert_eq!(BucketKey::user("a%23b").as_str(), "rl#u#a%2523b");
        let ids = [
            "", "u", "u#", "u#a", "a#b", "a%23b", "%", "%25", "#", "alice",
        ];
        let mut keys = std::collections::HashSet::new();
        for id in ids {
            assert!(keys.insert(BucketKey::client(id)), "client {id:?}");
            assert!(keys.insert(BucketKey::user(id)), "user {id:?}");
        }
    }
}
