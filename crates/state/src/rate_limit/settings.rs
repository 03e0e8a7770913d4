//! Rate-limiter settings (SPEC §6 defaults, env overrides).

use std::time::Duration;

use kosha_resilience::rate_limit::BucketConfig;

use crate::StateError;

/// Rate-limiter settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimitSettings {
    /// Capacity and refill rate.
    pub bucket: BucketConfig,
    /// Bound on each DynamoDB call (`KOSHA_RATE_CALL_TIMEOUT_MS`, default 100 ms, 1 to
    /// 10000); past it the call fails open (SPEC §6). Twice it bounds the wait for this
    /// client's turn in [`crate::DynamoRateLimiter`] (a call still waiting then is refused,
    /// or failed open when the client's last DynamoDB call failed).
    pub call_timeout: Duration,
    /// Compare-and-set tries before admitting anyway (default 3, SPEC §6).
    pub max_tries: u32,
    /// How long a lease lasts, and the window its size is measured over
    /// (`KOSHA_LEASE_SECONDS`, default 5; SPEC §6).
    pub lease: Duration,
    /// Most tokens one lease takes beyond a call's cost (`KOSHA_LEASE_MAX_TOKENS`, default
    /// max(1, capacity / 4); SPEC §6). 1 takes one token per write.
    pub lease_max_tokens: u32,
}

/// The lease duration of SPEC §6 when `KOSHA_LEASE_SECONDS` is unset.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(5);

/// The DynamoDB call bound when `KOSHA_RATE_CALL_TIMEOUT_MS` is unset.
const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_millis(100);

/// Longest lease accepted (`KOSHA_LEASE_SECONDS` at most 3600: the item's TTL).
const MAX_LEASE_S: f64 = 3600.0;

impl Default for RateLimitSettings {
    fn default() -> Self {
        Self {
            bucket: BucketConfig::DEFAULT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_tries: 3,
            lease: DEFAULT_LEASE,
            lease_max_tokens: default_lease_max(&BucketConfig::DEFAULT),
        }
    }
}

/// max(1, floor(capacity / 4)) (SPEC §6).
pub fn default_lease_max(bucket: &BucketConfig) -> u32 {
    let quarter = (bucket.capacity() / 4.0).floor().min(f64::from(u32::MAX));
    (quarter as u32).max(1)
}

impl RateLimitSettings {
    /// Defaults, with `KOSHA_RATE_CAPACITY`, `KOSHA_RATE_PER_SEC`, `KOSHA_LEASE_SECONDS`
    /// (a number of seconds > 0, at most 3600) and `KOSHA_LEASE_MAX_TOKENS` (a whole number
    /// from 1 to the capacity) when set (SPEC §6), and `KOSHA_RATE_CALL_TIMEOUT_MS` (a whole
    /// number of ms from 1 to 10000: for a table slower than DynamoDB in-region, such as a
    /// local emulator; the fleet simulator sets it).
    ///
    /// # Errors
    /// [`StateError::InvalidSetting`] naming the variable whose value is not a number or is
    /// out of range.
    pub fn from_env() -> Result<Self, StateError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`RateLimitSettings::from_env`] reading variables from `var` (tests).
    ///
    /// # Errors
    /// As [`RateLimitSettings::from_env`].
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self, StateError> {
        let value = |name: &'static str| var(name).filter(|v| !v.trim().is_empty());
        let invalid = |name: &'static str, reason: &str| StateError::InvalidSetting {
            name,
            reason: reason.into(),
        };
        let read = |name: &'static str, default: f64| -> Result<f64, StateError> {
            match value(name) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse()
                    .map_err(|_| invalid(name, "expected a number")),
            }
        };
        let capacity = read("KOSHA_RATE_CAPACITY", BucketConfig::DEFAULT.capacity())?;
        let per_sec = read("KOSHA_RATE_PER_SEC", BucketConfig::DEFAULT.per_sec())?;
        let bucket =
            BucketConfig::try_new(capacity, per_sec).map_err(|e| StateError::InvalidSetting {
                name: "KOSHA_RATE_CAPACITY/KOSHA_RATE_PER_SEC",
                reason: e.to_string(),
            })?;
        let lease_s = read("KOSHA_LEASE_SECONDS", DEFAULT_LEASE.as_secs_f64())?;
        if !(lease_s > 0.0 && lease_s <= MAX_LEASE_S) {
            return Err(invalid(
                "KOSHA_LEASE_SECONDS",
                "must be a number of seconds above 0 and at most 3600",
            ));
        }
        let lease_max_tokens = match value("KOSHA_LEASE_MAX_TOKENS") {
            None => default_lease_max(&bucket),
            Some(v) => match v.trim().parse::<u32>() {
                Ok(n) if n >= 1 && f64::from(n) <= bucket.capacity() => n,
                _ => {
                    return Err(invalid(
                        "KOSHA_LEASE_MAX_TOKENS",
                        "must be a whole number from 1 to the bucket's capacity",
                    ));
                }
            },
        };
        let call_timeout = match value("KOSHA_RATE_CALL_TIMEOUT_MS") {
            None => DEFAULT_CALL_TIMEOUT,
            Some(v) => match v.trim().parse::<u64>() {
                Ok(ms @ 1..=10_000) => Duration::from_millis(ms),
                _ => {
                    return Err(invalid(
                        "KOSHA_RATE_CALL_TIMEOUT_MS",
                        "must be a whole number of milliseconds from 1 to 10000",
                    ));
                }
            },
        };
        Ok(Self {
            bucket,
            call_timeout,
            lease: Duration::from_secs_f64(lease_s),
            lease_max_tokens,
            ..Self::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_lease_defaults_follow_the_capacity() {
        let s = RateLimitSettings::from_lookup(lookup(&[])).unwrap();
        assert_eq!((s.lease, s.lease_max_tokens), (DEFAULT_LEASE, 5));
        let s = RateLimitSettings::from_lookup(lookup(&[("KOSHA_RATE_CAPACITY", "3")])).unwrap();
        assert_eq!(s.lease_max_tokens, 1, "max(1, capacity / 4)");
        let s = RateLimitSettings::from_lookup(lookup(&[
            ("KOSHA_LEASE_SECONDS", "2.5"),
            ("KOSHA_LEASE_MAX_TOKENS", "20"),
        ]))
        .unwrap();
        assert_eq!(
            (s.lease, s.lease_max_tokens),
            (Duration::from_millis(2_500), 20)
        );
    }

    #[test]
    fn the_call_timeout_is_100_ms_unless_set() {
        let s = RateLimitSettings::from_lookup(lookup(&[])).unwrap();
        assert_eq!(s.call_timeout, Duration::from_millis(100));
        let s = RateLimitSettings::from_lookup(lookup(&[("KOSHA_RATE_CALL_TIMEOUT_MS", "750")]))
            .unwrap();
        assert_eq!(s.call_timeout, Duration::from_millis(750));
    }

    #[test]
    fn bad_lease_settings_are_refused_by_name() {
        for (name, value) in [
            ("KOSHA_LEASE_SECONDS", "0"),
            ("KOSHA_LEASE_SECONDS", "-1"),
            ("KOSHA_LEASE_SECONDS", "NaN"),
            ("KOSHA_LEASE_SECONDS", "3601"),
            ("KOSHA_LEASE_SECONDS", "five"),
            ("KOSHA_LEASE_MAX_TOKENS", "0"),
            ("KOSHA_LEASE_MAX_TOKENS", "21"),
            ("KOSHA_LEASE_MAX_TOKENS", "2.5"),
            ("KOSHA_RATE_CALL_TIMEOUT_MS", "0"),
            ("KOSHA_RATE_CALL_TIMEOUT_MS", "10001"),
            ("KOSHA_RATE_CALL_TIMEOUT_MS", "1.5"),
        ] {
            let err = RateLimitSettings::from_lookup(lookup(&[(name, value)])).unwrap_err();
            assert!(
                matches!(&err, StateError::InvalidSetting { name: n, .. } if *n == name),
                "{name}={value}: {err}"
            );
        }
    }
}
