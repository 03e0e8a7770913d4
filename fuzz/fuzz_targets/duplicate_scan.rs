//! The duplicate-key scan over every object, with tight bounds so the bound paths are reached
//! too. Invariants: no panic; a parsed body is what serde_json reads; a reported key exists in
//! the object its path names.
#![no_main]

use kosha_contract::json::{self, Limits, Step};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_depth: 8,
        max_keys: 16,
        max_nodes: 256,
    };
    for limits in [limits, Limits::REQUEST] {
        let Ok(parsed) = json::parse(data, limits, json::watch_all) else {
            continue;
        };
        let theirs: Value = serde_json::from_slice(data).expect("serde_json agrees");
        assert_eq!(parsed.value, theirs);
        if let Some(dup) = parsed.duplicate {
            // The object at the path (first array element where the path says "element")
            // holds the key.
            let mut at = &parsed.value;
            let mut exact = true;
            for step in &dup.path {
                at = match (step, at) {
                    (Step::Key(k), Value::Object(m)) => &m[k],
                    (Step::Element, Value::Array(_)) => {
                        exact = false;
                        break;
                    }
                    _ => panic!("path does not lead to an object: {dup:?}"),
                };
            }
            if exact {
                assert!(at.get(&dup.key).is_some(), "{dup:?}");
            }
        }
    }
});
