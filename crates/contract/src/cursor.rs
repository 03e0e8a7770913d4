//! The opaque pagination cursor of `GET /v1/accounts/{id}/transactions` (SPEC §4): its text.
//!
//! - **What it carries:** base64url (no padding) of
//!   `v2:<account_id>:<from>:<to>:<booked_at as unix microseconds>:<transaction_id>`, the
//!   keyset of the last row of the previous page and the [`Query`] that listed it (`from` and
//!   `to` as unix nanoseconds, empty when absent).
//! - **What it is bound to:** its whole query, account, `from` and `to` (SPEC §4, revised
//!   2026-12-05 after issue 43): a cursor sent with another account or another window is
//!   refused ([`Refused::OtherQuery`]) rather than silently skipping or repeating rows. The
//!   bounds are compared as instants, so `to` written with another offset is the same query.
//!   Not `limit`: changing the page size between pages is legitimate. No secret is needed: the
//!   account a cursor names is the query's, which the caller may list anyway.
//! - **What it returns:** [`decode`] gives the [`Position`], or why the text was refused.
//!   A `v1` cursor (account-bound only, before 2026-12-05) is [`Refused::Malformed`].
//! - **Neighbours:** core-api turns the microseconds into a timestamp (and refuses one out of
//!   range) and the refusal into `invalid_argument` naming `cursor`. Kept here, with no I/O,
//!   so the fuzz target `cursor` needs no database or AWS crates. Clients treat it as opaque.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::ids::TRANSACTION;

/// The text version [`encode`] writes and [`decode`] accepts.
const VERSION: &str = "v2";

/// The keyset a cursor carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// `booked_at` of the last row, unix microseconds.
    pub micros: i128,
    /// `transaction_id` of the last row (a well-formed transaction id).
    pub transaction_id: String,
}

/// The query a cursor is bound to: everything that selects the rows, not the page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query<'a> {
    /// The account listed.
    pub account_id: &'a str,
    /// The inclusive lower bound on `booked_at`, unix nanoseconds, if any.
    pub from_nanos: Option<i128>,
    /// The inclusive upper bound on `booked_at`, unix nanoseconds, if any.
    pub to_nanos: Option<i128>,
}

/// Why [`decode`] refused a cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not a cursor [`encode`] wrote (not base64url, not UTF-8, another version, a bad field).
    Malformed,
    /// A well-formed cursor written for another account, `from` or `to`.
    OtherQuery,
}

/// The cursor after `last` in `query`'s list.
pub fn encode(query: &Query<'_>, last: &Position) -> String {
    URL_SAFE_NO_PAD.encode(format!(
        "{VERSION}:{}:{}:{}:{}:{}",
        query.account_id,
        bound(query.from_nanos),
        bound(query.to_nanos),
        last.micros,
        last.transaction_id
    ))
}

/// The position in `cursor`, when it is one [`encode`] wrote for `query`.
///
/// # Errors
/// [`Refused::Malformed`] for text [`encode`] did not write, [`Refused::OtherQuery`] for a
/// cursor of another query.
pub fn decode(query: &Query<'_>, cursor: &str) -> Result<Position, Refused> {
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| Refused::Malformed)?;
    let text = String::from_utf8(bytes).map_err(|_| Refused::Malformed)?;
    let fields: Vec<&str> = text.splitn(6, ':').collect();
    let [version, account, from, to, micros, id] = fields[..] else {
        return Err(Refused::Malformed);
    };
    if version != VERSION || !TRANSACTION.matches(id) {
        return Err(Refused::Malformed);
    }
    let position = Position {
        micros: micros.parse().map_err(|_| Refused::Malformed)?,
        transaction_id: id.to_owned(),
    };
    let written = (account, parse_bound(from)?, parse_bound(to)?);
    if written != (query.account_id, query.from_nanos, query.to_nanos) {
        return Err(Refused::OtherQuery);
    }
    Ok(position)
}

/// A bound as cursor text: its nanoseconds, or empty when absent.
fn bound(nanos: Option<i128>) -> String {
    nanos.map_or_else(String::new, |n| n.to_string())
}

fn parse_bound(text: &str) -> Result<Option<i128>, Refused> {
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| Refused::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUERY: Query<'static> = Query {
        account_id: "acc_0001",
        from_nanos: None,
        to_nanos: Some(1_772_619_300_000_000_000),
    };

    fn last() -> Position {
        Position {
            micros: 1_772_619_300_123_456,
            transaction_id: "txn_000042".to_owned(),
        }
    }

    #[test]
    fn round_trips_and_is_url_safe() {
        let cursor = encode(&QUERY, &last());
        assert_eq!(decode(&QUERY, &cursor), Ok(last()));
        assert!(
            cursor
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
    }

    /// Issue 43: a cursor taken with one window was accepted with another.
    #[test]
    fn is_refused_for_another_account_from_or_to() {
        let cursor = encode(&QUERY, &last());
        for other in [
            Query {
                account_id: "acc_0002",
                ..QUERY
            },
            Query {
                from_nanos: Some(0),
                ..QUERY
            },
            Query {
                to_nanos: None,
                ..QUERY
            },
            Query {
                to_nanos: Some(1_772_619_300_000_000_001),
                ..QUERY
            },
        ] {
            assert_eq!(
                decode(&other, &cursor),
                Err(Refused::OtherQuery),
                "{other:?}"
            );
        }
    }

    #[test]
    fn refuses_text_it_did_not_write_as_malformed() {
        for text in [
            "v1:acc_0001:1772619300123456:txn_000042",
            "v2:acc_0001::1772619300000000000:1772619300123456",
            "v2:acc_0001:x:1772619300000000000:1772619300123456:txn_000042",
            "v2:acc_0001::1772619300000000000:1.5:txn_000042",
            "v2:acc_0001::1772619300000000000:1772619300123456:txn_42:x",
        ] {
            let cursor = URL_SAFE_NO_PAD.encode(text);
            assert_eq!(decode(&QUERY, &cursor), Err(Refused::Malformed), "{text}");
        }
        assert_eq!(decode(&QUERY, "!!!"), Err(Refused::Malformed));
    }
}
