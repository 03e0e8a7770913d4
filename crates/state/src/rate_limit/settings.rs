//! Rate-limiter settings (SPEC §6 defaults, env overrides).

use std::time::Duration;

use kosha_resilience::rate_limit::BucketConfig;

use crate::StateError;

/// Rate-limiter settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimitSettings {
    /// Capacity and refill rate.
    pub bucket: BucketConfig,
    /// Bound on each DynamoDB call (default 100 ms); twice it bounds the wait for this
    /// client's turn in [`crate::DynamoRateLimiter`] (a call still waiting then is refused,
    /// or failed open when the client's last DynamoDB call failed).
    pub call_timeout: Duration,
    /// Compare-and-set tries before admitting anyway (default 3, SPEC §6).
    pub max_tries: u32,
}

impl Default for RateLimitSettings {
    fn default() -> Self {
        Self {
            bucket: BucketConfig::DEFAULT,
            call_timeout: Duration::from_millis(100),
            max_tries: 3,
        }
    }
}

impl RateLimitSettings {
    /// Defaults, with `KOSHA_RATE_CAPACITY` and `KOSHA_RATE_PER_SEC` when set (SPEC §6).
    ///
    /// # Errors
    /// [`StateError::InvalidSetting`] for a value that is not a number or is out of range.
    pub fn from_env() -> Result<Self, StateError> {
        let read = |name: &'static str, default: f64| -> Result<f64, StateError> {
            match std::env::var(name).ok().filter(|v| !v.trim().is_empty()) {
                None => Ok(default),
                Some(v) => v.trim().parse().map_err(|_| StateError::InvalidSetting {
                    name,
                    reason: "expected a number".into(),
                }),
            }
        };
        let capacity = read("KOSHA_RATE_CAPACITY", BucketConfig::DEFAULT.capacity())?;
        let per_sec = read("KOSHA_RATE_PER_SEC", BucketConfig::DEFAULT.per_sec())?;
        let bucket =
            BucketConfig::try_new(capacity, per_sec).map_err(|e| StateError::InvalidSetting {
                name: "KOSHA_RATE_CAPACITY/KOSHA_RATE_PER_SEC",
                reason: e.to_string(),
            })?;
        Ok(Self {
            bucket,
            ..Self::default()
        })
    }
}
