//! The bearer pre-parse (RFC 6750 §2.1, SPEC §5): scheme, size and compact-JWS shape, before
//! any base64 or JSON. Invariants: no panic; an extracted token is within the size bound, has
//! three non-empty base64url segments and is a substring of the header.
#![no_main]

use kosha_contract::bearer::{self, Extracted, MAX_TOKEN_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Extracted::Token(token) = bearer::extract(Some(text)) {
        assert!(token.len() <= MAX_TOKEN_BYTES);
        assert!(text.contains(token));
        let segments: Vec<&str> = token.split('.').collect();
        assert_eq!(segments.len(), 3);
        assert!(segments.iter().all(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        }));
    }
});
