//! kosha-state: the DynamoDB state table (SPEC §8) and the HMAC-key secrets (SPEC §5b, §9), in one place.
//!
//! - [`StateTable`]: the client and table name (`KOSHA_STATE_TABLE`, default `kosha-state`),
//!   plus idempotent creation (pk S, on-demand, TTL on `expires_at`).
//! - [`DynamoRateLimiter`]: the token bucket per client `rl#<client_id>` or per user
//!   `rl#u#<sub>` ([`BucketKey`]),
//!   taken in leases of one conditional write each, spent locally (seed 004 §6, SPEC §6).
//! - [`DynamoOverrides`]: the breaker forced-open source `breaker#<dependency>`, refreshed
//!   lazily at most every 5 s ([`OVERRIDE_REFRESH`]), kept 60 s through read errors (seed
//!   004 §4, SPEC §8), and the operator's `force_open` / `clear` / `list`; with
//!   [`DynamoOverrides::with_trips`] also the gateway's fleet trips `trip#<breaker>` (SPEC §8).
//! - [`SecretCache`]: an HMAC key from Secrets Manager (the chaos header's, a confirmation's
//!   `requestState`'s), cached 5 minutes.
//! - [`screening`]: `screening#<id>` items, written by the gateway and finished by the
//!   screening-worker (SPEC §4, §8); [`sim_chaos`]: screening-sim's `simchaos#<service>` knobs.
//! - [`Clock`]: wall-clock epoch milliseconds, injectable for tests; with feature
//!   `test-support`, `test_support`'s request counter for the emulator tests and bucket-load.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod attr;
mod clock;
mod error;
mod overrides;
mod rate_limit;
pub mod screening;
mod secrets;
pub mod sim_chaos;
mod table;
#[cfg(feature = "test-support")]
pub mod test_support;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::StateError;
pub use overrides::{
    BreakerItem, DynamoOverrides, Fetched, MAX_WRITES, OVERRIDE_REFRESH, OverrideFetcher,
    OverrideSettings, OverrideSnapshot, TRIP_BREAKERS, TripItem, TripSnapshot, TripWrite,
    instance_id, is_dependency,
};
pub use rate_limit::{BucketKey, DynamoRateLimiter, RateLimitSettings};
pub use secrets::{
    CHAOS_SECRET_ENV, CONFIRM_SECRET_ENV, DEFAULT_CHAOS_SECRET_ID, DEFAULT_CONFIRM_SECRET_ID,
    FAILURE_TTL as SECRET_FAILURE_TTL, HmacKey, SecretCache, SecretFetcher, SecretsClient,
    decode_hmac_key,
};
pub use table::{STATE_TABLE_ENV, StateTable};
