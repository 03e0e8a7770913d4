//! Policy settings for the behaviour tests: rows of seed 004 §1's table.
#![allow(dead_code)]

use std::time::Duration;

use kosha_resilience::config::{PolicyConfig, Profile};

/// core-api reads: 2 s cap, 3 attempts, bulkhead 32, window 20, open 15 s, margin 150 ms.
pub fn core_api_read() -> PolicyConfig {
    PolicyConfig::from_profile(Profile {
        attempt_cap: Duration::from_millis(2_000),
        attempt_margin: Duration::from_millis(150),
        max_attempts: 3,
        bulkhead: 32,
        breaker_window: 20,
        open_for: Duration::from_secs(15),
    })
}

/// core-api writes: as reads, but a 4 s cap, 1 attempt and bulkhead 16.
pub fn core_api_write() -> PolicyConfig {
    let mut c = core_api_read();
    c.attempt.cap = Duration::from_millis(4_000);
    c.retry.max_attempts = 1;
    c.bulkhead.capacity = 16;
    c
}

/// OpenAI embeddings: 2 s cap, 2 attempts, bulkhead 8, window 10, open 30 s.
pub fn openai() -> PolicyConfig {
    PolicyConfig::from_profile(Profile {
        attempt_cap: Duration::from_millis(2_000),
        attempt_margin: Duration::from_millis(100),
        max_attempts: 2,
        bulkhead: 8,
        breaker_window: 10,
        open_for: Duration::from_secs(30),
    })
}
