//! `GET /v1/transactions/{id}` and `GET /v1/accounts/{id}/transactions`.

use std::collections::BTreeSet;

use axum::http::StatusCode;
use core_api::db::seed;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use crate::common::{NASTY, TestDb, encode, get};

fn booked_at(t: &Value) -> OffsetDateTime {
    OffsetDateTime::parse(t["booked_at"].as_str().expect("booked_at"), &Rfc3339).expect("rfc3339")
}

/// Walks every page of `base` (a list URL without cursor) and returns all rows in order.
async fn walk(app: &axum::Router, base: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1_000 {
        let uri = match &cursor {
            Some(c) => format!("{base}&cursor={c}"),
            None => base.to_owned(),
        };
        let reply = get(app, &uri).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        rows.extend(
            reply.body["transactions"]
                .as_array()
                .expect("array")
                .iter()
                .cloned(),
        );
        match reply.body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => {
                assert!(reply.body["next_cursor"].is_null());
                return rows;
            }
        }
    }
    panic!("pagination did not end");
}

#[tokio::test]
async fn gets_a_seeded_transaction_in_the_wire_shape() {
    let db = TestDb::seeded().await;
    let reply = get(&db.app(), "/v1/transactions/txn_000001").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let t = &reply.body["transaction"];
    let expected = &seed::generate().transactions[0];
    assert_eq!(t["transaction_id"], "txn_000001");
    assert_eq!(t["account_id"], "acc_0001");
    assert_eq!(t["amount_minor"].as_i64(), Some(expected.amount_minor));
    assert_eq!(t["currency"], expected.currency);
    assert_eq!(t["merchant"], expected.merchant);
    assert_eq!(t["category"], expected.category);
    assert_eq!(t["status"], expected.status);
    let text = t["booked_at"].as_str().unwrap();
    assert!(text.ends_with('Z') && text.len() == 20, "{text}");
    assert_eq!(booked_at(t), expected.booked_at);
    assert_eq!(
        t.as_object().unwrap().len(),
        8,
        "exactly the SPEC fields: {t}"
    );
}

#[tokio::test]
async fn refuses_malformed_transaction_ids_and_reports_unknown_ones() {
    let db = TestDb::seeded().await;
    let app = db.app();
    for bad in ["txn_1", "abc", "txn_00000a", "TXN_000001", "txn_00001"] {
        get(&app, &format!("/v1/transactions/{bad}"))
            .await
            .assert_invalid("transaction_id");
    }
    for nasty in NASTY {
        get(&app, &format!("/v1/transactions/{}", encode(nasty)))
            .await
            .assert_invalid("transaction_id");
    }
    for unknown in ["txn_999999", "txn_999999999"] {
        let reply = get(&app, &format!("/v1/transactions/{unknown}")).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{unknown}");
        assert_eq!(reply.code(), "not_found");
        assert!(reply.message().contains(unknown));
    }
    assert_eq!(db.account_count().await, 50);
}

#[tokio::test]
async fn lists_newest_first_with_default_limit() {
    let db = TestDb::seeded().await;
    let reply = get(&db.app(), "/v1/accounts/acc_0001/transactions").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let rows = reply.body["transactions"].as_array().unwrap();
    assert_eq!(rows.len(), 20);
    assert!(rows.iter().all(|t| t["account_id"] == "acc_0001"));
    for pair in rows.windows(2) {
        let key = |t: &Value| {
            (
                booked_at(t),
                t["transaction_id"].as_str().unwrap().to_owned(),
            )
        };
        assert!(key(&pair[0]) > key(&pair[1]), "not strictly descending");
    }
    assert!(reply.body["next_cursor"].is_string());
}

#[tokio::test]
async fn pagination_walks_every_transaction_once() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let rows = walk(&app, "/v1/accounts/acc_0001/transactions?limit=7").await;
    let ids: Vec<&str> = rows
        .iter()
        .map(|t| t["transaction_id"].as_str().unwrap())
        .collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "duplicates across pages");
    let expected: BTreeSet<String> = seed::generate()
        .transactions
        .into_iter()
        .filter(|t| t.account_id == "acc_0001")
        .map(|t| t.transaction_id)
        .collect();
    assert!(expected.len() >= 20);
    assert_eq!(unique, expected.iter().map(String::as_str).collect());
    for pair in rows.windows(2) {
        let key = |t: &Value| {
            (
                booked_at(t),
                t["transaction_id"].as_str().unwrap().to_owned(),
            )
        };
        assert!(key(&pair[0]) > key(&pair[1]), "order broken across pages");
    }
    // limit=100 returns the whole account in one page with no next cursor.
    let one = get(&app, "/v1/accounts/acc_0001/transactions?limit=100").await;
    assert_eq!(
        one.body["transactions"].as_array().unwrap().len(),
        expected.len()
    );
    assert!(one.body["next_cursor"].is_null());
}

#[tokio::test]
async fn from_and_to_are_inclusive_filters() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let account: Vec<_> = seed::generate()
        .transactions
        .into_iter()
        .filter(|t| t.account_id == "acc_0002")
        .collect();
    // Bounds equal to real booking times prove inclusiveness.
    let mut times: Vec<OffsetDateTime> = account.iter().map(|t| t.booked_at).collect();
    times.sort();
    let (from, to) = (times[20], times[60]);
    let expected = account
        .iter()
        .filter(|t| t.booked_at >= from && t.booked_at <= to)
        .count();
    let from_s = encode(&from.format(&Rfc3339).unwrap());
    // Same instant written with a +02:00 offset.
    let to_local = to
        .to_offset(time::macros::offset!(+2))
        .format(&Rfc3339)
        .unwrap();
    let base = format!(
        "/v1/accounts/acc_0002/transactions?limit=9&from={from_s}&to={}",
        encode(&to_local)
    );
    let rows = walk(&app, &base).await;
    assert_eq!(rows.len(), expected);
    assert!(
        rows.iter()
            .all(|t| booked_at(t) >= from && booked_at(t) <= to)
    );
    // A window with nothing in it is an empty page, not an error.
    let empty = get(
        &app,
        "/v1/accounts/acc_0002/transactions?from=2025-01-01T00:00:00Z&to=2025-02-01T00:00:00Z",
    )
    .await;
    assert_eq!(empty.status, StatusCode::OK);
    assert_eq!(empty.body["transactions"], Value::Array(vec![]));
    assert!(empty.body["next_cursor"].is_null());
}

/// Issue 43: the cursor carried its account but not its window, so a cursor taken with one
/// `from`/`to` was accepted with another. SPEC §4 (revised): it is bound to the whole query,
/// account, `from` and `to`, compared as instants; the page size may change between pages.
#[tokio::test]
async fn a_cursor_is_bound_to_its_account_and_window_but_not_to_its_limit() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let mut times: Vec<OffsetDateTime> = seed::generate()
        .transactions
        .into_iter()
        .filter(|t| t.account_id == "acc_0002")
        .map(|t| t.booked_at)
        .collect();
    times.sort();
    let text = |at: OffsetDateTime| encode(&at.format(&Rfc3339).unwrap());
    let (from, to) = (times[20], times[60]);
    let window = format!("from={}&to={}", text(from), text(to));
    let base = "/v1/accounts/acc_0002/transactions";
    let first = get(&app, &format!("{base}?limit=5&{window}")).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let cursor = first.body["next_cursor"].as_str().unwrap().to_owned();
    let second = Duration::seconds(1);
    for other in [
        String::new(),
        format!("from={}", text(from)),
        format!("to={}", text(to)),
        format!("from={}&to={}", text(from), text(to + second)),
        format!("from={}&to={}", text(from - second), text(to)),
        format!(
            "from={}&to={}",
            text(times[0]),
            text(times[times.len() - 1])
        ),
    ] {
        let reply = get(&app, &format!("{base}?limit=5&{other}&cursor={cursor}")).await;
        reply.assert_invalid("cursor");
        assert!(
            reply.message().contains("another query"),
            "{other}: {}",
            reply.body
        );
    }
    get(
        &app,
        &format!("/v1/accounts/acc_0003/transactions?limit=5&{window}&cursor={cursor}"),
    )
    .await
    .assert_invalid("cursor");
    // The same window with `to` in another offset and a larger page: the next rows.
    let to_local = to
        .to_offset(time::macros::offset!(+2))
        .format(&Rfc3339)
        .unwrap();
    let next = get(
        &app,
        &format!(
            "{base}?limit=7&from={}&to={}&cursor={cursor}",
            text(from),
            encode(&to_local)
        ),
    )
    .await;
    assert_eq!(next.status, StatusCode::OK, "{}", next.body);
    let all = get(&app, &format!("{base}?limit=100&{window}")).await;
    let ids = |reply: &crate::common::Reply| -> Vec<Value> {
        reply.body["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["transaction_id"].clone())
            .collect()
    };
    assert_eq!(
        [ids(&first), ids(&next)].concat(),
        ids(&all)[..12],
        "page two follows page one"
    );
}

#[tokio::test]
async fn refuses_bad_list_parameters_naming_the_field() {
    let db = TestDb::seeded().await;
    let app = db.app();
    let base = "/v1/accounts/acc_0001/transactions";
    for limit in ["0", "101", "-1", "abc", "1.5", "99999999999999999999"] {
        get(&app, &format!("{base}?limit={limit}"))
            .await
            .assert_invalid("limit");
    }
    for bad in [
        "yesterday",
        "2026-13-01T00:00:00Z",
        "2026-01-01",
        "2026-01-01T00:00:00",
    ] {
        get(&app, &format!("{base}?from={}", encode(bad)))
            .await
            .assert_invalid("from");
        get(&app, &format!("{base}?to={}", encode(bad)))
            .await
            .assert_invalid("to");
    }
    get(
        &app,
        &format!("{base}?from=2026-06-01T00:00:00Z&to=2026-05-01T00:00:00Z"),
    )
    .await
    .assert_invalid("from");
    get(&app, &format!("{base}?cursor=not-a-cursor"))
        .await
        .assert_invalid("cursor");
    // A cursor from another account is refused.
    let other = get(&app, "/v1/accounts/acc_0002/transactions?limit=1").await;
    let c = other.body["next_cursor"].as_str().unwrap().to_owned();
    get(&app, &format!("{base}?cursor={c}"))
        .await
        .assert_invalid("cursor");
    let unknown = get(&app, &format!("{base}?page=2")).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert_eq!(unknown.code(), "invalid_argument");
    for bad in ["acc_1", "acc_001", "account_1", "ACC_0001"] {
        get(&app, &format!("/v1/accounts/{bad}/transactions"))
            .await
            .assert_invalid("account_id");
    }
    // SPEC §3: a well-formed id with more digits than the seed uses is unknown, not malformed.
    let longer = get(&app, "/v1/accounts/acc_00001/transactions").await;
    assert_eq!(longer.status, StatusCode::NOT_FOUND);
    let missing = get(&app, "/v1/accounts/acc_9999/transactions").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.code(), "not_found");
}

#[tokio::test]
async fn sql_metacharacters_in_list_inputs_are_harmless() {
    let db = TestDb::seeded().await;
    let app = db.app();
    for nasty in NASTY {
        let n = encode(nasty);
        get(&app, &format!("/v1/accounts/{n}/transactions"))
            .await
            .assert_invalid("account_id");
        let base = "/v1/accounts/acc_0001/transactions";
        get(&app, &format!("{base}?cursor={n}"))
            .await
            .assert_invalid("cursor");
        get(&app, &format!("{base}?from={n}"))
            .await
            .assert_invalid("from");
        get(&app, &format!("{base}?to={n}"))
            .await
            .assert_invalid("to");
        get(&app, &format!("{base}?limit={n}"))
            .await
            .assert_invalid("limit");
    }
    assert_eq!(db.account_count().await, 50);
}
