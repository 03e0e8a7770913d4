//! The opaque pagination cursor of `GET /v1/accounts/{id}/transactions`: its text is
//! [`kosha_contract::cursor`]'s (a base64url keyset bound to the list's account, `from` and
//! `to`, SPEC §4); here a [`ListQuery`]'s cursor is written, and a cursor sent with one becomes
//! a [`Keyset`] or an `invalid_argument` naming `cursor`. `limit` is not part of the binding:
//! a client may change the page size between pages.

use kosha_contract::cursor::{self, Position, Query, Refused};
use time::OffsetDateTime;

use crate::db::queries::{Keyset, ListQuery};
use crate::error::ApiError;

/// The answer to text this service did not write.
const MALFORMED: &str = "cursor is malformed; pass next_cursor unchanged";

/// The cursor of the page after `last` in `query`'s list.
pub fn encode(query: &ListQuery, last: &Keyset) -> String {
    let position = Position {
        micros: last.booked_at.unix_timestamp_nanos() / 1_000,
        transaction_id: last.transaction_id.clone(),
    };
    cursor::encode(&binding(query), &position)
}

/// The position in `text`, a cursor issued for `query` (its `after` is not read).
///
/// # Errors
/// [`ApiError::InvalidArgument`] naming `cursor` when it is not one this service issued, or
/// was issued for another account, `from` or `to` (SPEC §4).
pub fn decode(query: &ListQuery, text: &str) -> Result<Keyset, ApiError> {
    let position = cursor::decode(&binding(query), text).map_err(|refused| match refused {
        Refused::Malformed => ApiError::invalid(MALFORMED),
        Refused::OtherQuery => ApiError::invalid(
            "cursor belongs to another query; send it with the account_id, from and to of the \
             page that returned it",
        ),
    })?;
    keyset(position).ok_or_else(|| ApiError::invalid(MALFORMED))
}

/// What a cursor of `query` is bound to.
fn binding(query: &ListQuery) -> Query<'_> {
    Query {
        account_id: &query.account_id,
        from_nanos: query.from.map(OffsetDateTime::unix_timestamp_nanos),
        to_nanos: query.to.map(OffsetDateTime::unix_timestamp_nanos),
    }
}

/// `position` as a timestamp keyset, when its microseconds are a representable time.
fn keyset(position: Position) -> Option<Keyset> {
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

    fn query(account_id: &str) -> ListQuery {
        ListQuery {
            account_id: account_id.to_owned(),
            from: None,
            to: Some(datetime!(2026-03-31 00:00 UTC)),
            after: None,
            limit: 21,
        }
    }

    #[test]
    fn round_trips_to_the_microsecond() {
        let cursor = encode(&query("acc_0001"), &keyset());
        assert_eq!(decode(&query("acc_0001"), &cursor).unwrap(), keyset());
        assert!(
            cursor
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
    }

    #[test]
    fn refuses_another_accounts_cursor() {
        let cursor = encode(&query("acc_0001"), &keyset());
        assert!(decode(&query("acc_0002"), &cursor).is_err());
    }

    /// Issue 43: the window is part of the query; the page size and the offset are not.
    #[test]
    fn is_bound_to_the_window_as_instants_and_not_to_the_limit() {
        let cursor = encode(&query("acc_0001"), &keyset());
        let wider = ListQuery {
            to: Some(datetime!(2026-04-30 00:00 UTC)),
            ..query("acc_0001")
        };
        let err = decode(&wider, &cursor).unwrap_err().to_string();
        assert!(err.contains("cursor belongs to another query"), "{err}");
        let from = ListQuery {
            from: Some(datetime!(2026-01-01 00:00 UTC)),
            ..query("acc_0001")
        };
        assert!(decode(&from, &cursor).is_err());
        let same = ListQuery {
            to: Some(datetime!(2026-03-31 02:00 +2)),
            limit: 101,
            ..query("acc_0001")
        };
        assert_eq!(decode(&same, &cursor).unwrap(), keyset());
    }

    #[test]
    fn refuses_garbage_naming_the_field() {
        for bad in [
            "",
            "!!!",
            "djE6YWNjXzAwMDE6eDp0eG5fMDAwMDAx",
            &URL_SAFE_NO_PAD.encode("v1:acc_0001:0:txn_000001"),
            &URL_SAFE_NO_PAD
                .encode("v2:acc_0001::1774915200000000000:0:'; DROP TABLE core.accounts; --"),
            &URL_SAFE_NO_PAD
                .encode("v2:acc_0001::1774915200000000000:99999999999999999999999:txn_000001"),
        ] {
            let err = decode(&query("acc_0001"), bad).unwrap_err();
            assert!(err.to_string().contains("cursor"), "{bad}");
        }
    }
}
