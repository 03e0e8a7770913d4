//! The opaque pagination cursor of `GET /v1/accounts/{id}/transactions`.
//!
//! A cursor is base64url (no padding) of `v1:<account_id>:<booked_at as unix microseconds>:
//! <transaction_id>`: the keyset of the last row of the previous page. It is bound to its
//! account, so a cursor replayed against another account is refused rather than silently
//! skipping rows. Clients must treat it as opaque.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use time::OffsetDateTime;

use crate::db::queries::Keyset;
use crate::error::ApiError;
use kosha_contract::ids::TRANSACTION;

/// Encodes the position after `last` in `account_id`'s list.
pub fn encode(account_id: &str, last: &Keyset) -> String {
    let micros = last.booked_at.unix_timestamp_nanos() / 1_000;
    URL_SAFE_NO_PAD.encode(format!("v1:{account_id}:{micros}:{}", last.transaction_id))
}

/// Decodes a cursor issued for `account_id`.
///
/// # Errors
/// [`ApiError::InvalidArgument`] naming `cursor` when it is not one this service issued for
/// this account.
pub fn decode(account_id: &str, cursor: &str) -> Result<Keyset, ApiError> {
    parse(account_id, cursor).ok_or_else(|| {
        ApiError::invalid(
            "cursor is malformed or belongs to another query; pass next_cursor unchanged",
        )
    })
}

fn parse(account_id: &str, cursor: &str) -> Option<Keyset> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let mut parts = text.splitn(4, ':');
    let (version, account, micros, id) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "v1" || account != account_id {
        return None;
    }
    if !TRANSACTION.matches(id) {
        return None;
    }
    let micros: i128 = micros.parse().ok()?;
    let booked_at = OffsetDateTime::from_unix_timestamp_nanos(micros.checked_mul(1_000)?).ok()?;
    Some(Keyset {
        booked_at,
        transaction_id: id.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    fn keyset() -> Keyset {
        Keyset {
            booked_at: datetime!(2026-03-04 10:15:00.123456 UTC),
            transaction_id: "txn_000042".to_owned(),
        }
    }

    #[test]
    fn round_trips_to_the_microsecond() {
        let cursor = encode("acc_0001", &keyset());
        assert_eq!(decode("acc_0001", &cursor).unwrap(), keyset());
        assert!(
            cursor
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
    }

    #[test]
    fn refuses_another_accounts_cursor() {
        let cursor = encode("acc_0001", &keyset());
        assert!(decode("acc_0002", &cursor).is_err());
    }

    #[test]
    fn refuses_garbage_naming_the_field() {
        for bad in [
            "",
            "!!!",
            "djE6YWNjXzAwMDE6eDp0eG5fMDAwMDAx",
            &URL_SAFE_NO_PAD.encode("v2:acc_0001:0:txn_000001"),
            &URL_SAFE_NO_PAD.encode("v1:acc_0001:0:'; DROP TABLE core.accounts; --"),
            &URL_SAFE_NO_PAD.encode("v1:acc_0001:99999999999999999999999:txn_000001"),
        ] {
            let err = decode("acc_0001", bad).unwrap_err();
            assert!(err.to_string().contains("cursor"), "{bad}");
        }
    }
}
