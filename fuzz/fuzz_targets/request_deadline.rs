//! `X-Request-Deadline` (SPEC §7): RFC 3339 with milliseconds and `Z`. Invariant: no panic;
//! an accepted value is at most 60 s ahead.
#![no_main]

use std::time::Duration;

use kosha_resilience::deadline::Deadline;
use libfuzzer_sys::fuzz_target;
use time::OffsetDateTime;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let now = OffsetDateTime::from_unix_timestamp(1_796_040_000).expect("fixed now");
    if let Ok(deadline) = Deadline::parse_header_at(text, now) {
        assert!(deadline.remaining() <= Duration::from_secs(61));
    }
});
