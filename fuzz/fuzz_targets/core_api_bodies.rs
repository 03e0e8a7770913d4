//! core-api's request bodies as its extractor reads them: the bounded parse refusing duplicate
//! keys anywhere, then each request type of SPEC §4. Invariants: no panic; a parsed body is
//! what serde_json reads.
#![no_main]

use kosha_contract::core_api::{DisputeRequest, ReviewRequest, SearchRequest};
use kosha_contract::json::{self, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(parsed) = json::parse(data, Limits::REQUEST, json::watch_all) else {
        return;
    };
    let theirs: serde_json::Value = serde_json::from_slice(data).expect("serde_json agrees");
    assert_eq!(parsed.value, theirs);
    if parsed.duplicate.is_some() {
        return;
    }
    let _ = serde_json::from_value::<SearchRequest>(parsed.value.clone());
    let _ = serde_json::from_value::<DisputeRequest>(parsed.value.clone());
    let _ = serde_json::from_value::<ReviewRequest>(parsed.value);
});
