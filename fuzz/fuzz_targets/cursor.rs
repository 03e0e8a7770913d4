//! core-api's pagination cursor (SPEC §4). Invariants: no panic; a decoded position re-encodes
//! to a cursor that decodes to it; it never decodes for another query (account, `from`, `to`).
#![no_main]

use kosha_contract::cursor::{self, Query};
use libfuzzer_sys::fuzz_target;

const QUERIES: [Query<'static>; 3] = [
    Query {
        account_id: "acc_0001",
        from_nanos: None,
        to_nanos: None,
    },
    Query {
        account_id: "acc_0001",
        from_nanos: Some(0),
        to_nanos: Some(1_772_619_300_000_000_000),
    },
    Query {
        account_id: "",
        from_nanos: None,
        to_nanos: Some(-1),
    },
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for query in &QUERIES {
        if let Ok(position) = cursor::decode(query, text) {
            let again = cursor::encode(query, &position);
            assert_eq!(cursor::decode(query, &again), Ok(position));
            for other in QUERIES.iter().filter(|other| *other != query) {
                assert!(cursor::decode(other, text).is_err());
            }
            let elsewhere = Query {
                account_id: "acc_9999",
                ..*query
            };
            assert!(cursor::decode(&elsewhere, text).is_err());
        }
    }
});
