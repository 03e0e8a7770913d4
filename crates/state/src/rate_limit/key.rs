//! The partition key of a bucket item (SPEC §8's table: `rl#<client_id>`), made here alone:
//! the limiter's read, write and charge, and the tests, all take it from [`BucketKey`].

/// The `pk` of one bucket item. SPEC §6 and §8 also name `rl#u#<sub>` for a user's bucket
/// (`KOSHA_RATE_KEY=user`); that key is not made yet, and when it is, it belongs here, beside
/// [`BucketKey::client`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BucketKey(String);

impl BucketKey {
    /// The key of `client_id`'s bucket, `rl#<client_id>` (SPEC §8).
    pub fn client(client_id: &str) -> Self {
        Self(format!("rl#{client_id}"))
    }

    /// The key as stored in `pk`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
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
    }
}
