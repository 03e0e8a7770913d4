//! The opaque pagination cursor of `GET /v1/accounts/{id}/transactions`: its text is
//! [`kosha_contract::cursor`]'s (account-bound base64url keyset); here it becomes a
//! [`Keyset`], or an `invalid_argument` naming `cursor`.

use kosha_contract::cursor::{self, Position};
use time::OffsetDateTime;

use crate::db::queries::Keyset;
use crate::error::ApiError;

/// Encodes the position after `last` in `account_id`'s list.
pub fn encode(account_id: &str, last: &Keyset) -> String {
    let position = Position {
        micros: last.booked_at.unix_timestamp_nanos() / 1_000,
        transaction_id: last.transaction_id.clone(),
    };
    cursor::encode(account_id, &position)
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

fn parse(account_id: &str, text: &str) -> Option<Keyset> {
    let position = cursor::decode(account_id, text)?;
    let booked_at =
        OffsetDateTime::from_unix_timestamp_nanos(position.micros.checked_mul(1_000)?).ok()?;
    Some(Keyset {
        booked_at,
        transaction_id: position.transaction_id,
    })
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
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
