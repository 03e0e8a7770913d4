//! The gateway's envelope parse: one bounded parse of a `POST /mcp` body with the JSON-RPC
//! duplicate-key rule (message, params, arguments). Invariants: no panic; a parsed body is
//! what serde_json reads; a reported duplicate sits in a watched object.
#![no_main]

use kosha_contract::json::{self, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(parsed) = json::parse(data, Limits::REQUEST, json::watch_jsonrpc) {
        let theirs: serde_json::Value = serde_json::from_slice(data).expect("serde_json agrees");
        assert_eq!(parsed.value, theirs);
        if let Some(dup) = parsed.duplicate {
            assert!(json::watch_jsonrpc(&dup.path));
            assert!(
                dup.path.is_empty()
                    || dup.is_under(&["params"])
                    || dup.is_under(&["params", "arguments"])
            );
        }
    }
});
