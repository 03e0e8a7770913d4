//! core-api's pagination cursor (SPEC §4). Invariants: no panic; a decoded position re-encodes
//! to a cursor that decodes to it; it never decodes for another account.
#![no_main]

use kosha_contract::cursor;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for account in ["acc_0001", ""] {
        if let Some(position) = cursor::decode(account, text) {
            let again = cursor::encode(account, &position);
            assert_eq!(cursor::decode(account, &again), Some(position));
            assert_eq!(cursor::decode("acc_9999", text), None);
        }
    }
});
