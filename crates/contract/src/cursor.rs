//! The opaque pagination cursor of `GET /v1/accounts/{id}/transactions` (SPEC §4): its text.
//!
//! A cursor is base64url (no padding) of `v1:<account_id>:<booked_at as unix microseconds>:
//! <transaction_id>`: the keyset of the last row of the previous page. It is bound to its
//! account, so a cursor replayed against another account is refused rather than silently
//! skipping rows. Clients must treat it as opaque. core-api turns the microseconds into a
//! timestamp (and refuses one out of range); kept here so the fuzz target `cursor` needs no
//! database or AWS crates.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::ids::TRANSACTION;

/// The keyset a cursor carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// `booked_at` of the last row, unix microseconds.
    pub micros: i128,
    /// `transaction_id` of the last row (a well-formed transaction id).
    pub transaction_id: String,
}

/// The cursor after `last` in `account_id`'s list.
pub fn encode(account_id: &str, last: &Position) -> String {
    URL_SAFE_NO_PAD.encode(format!(
        "v1:{account_id}:{}:{}",
        last.micros, last.transaction_id
    ))
}

/// The position in `cursor`, when it is one [`encode`] wrote for `account_id`.
pub fn decode(account_id: &str, cursor: &str) -> Option<Position> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let mut parts = text.splitn(4, ':');
    let (version, account, micros, id) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "v1" || account != account_id || !TRANSACTION.matches(id) {
        return None;
    }
    Some(Position {
        micros: micros.parse().ok()?,
        transaction_id: id.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_is_url_safe() {
        let last = Position {
            micros: 1_772_619_300_123_456,
            transaction_id: "txn_000042".to_owned(),
        };
        let cursor = encode("acc_0001", &last);
        assert_eq!(decode("acc_0001", &cursor), Some(last));
        assert!(
            cursor
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(decode("acc_0002", &cursor), None);
    }
}
