//! A person's confirmation (SPEC §5b): which secret seals the question's `requestState`, and
//! how long a sealed state lives.
//!
//! - `KOSHA_CONFIRM_SECRET_ID` (default `kosha/confirm-hmac-key`): the Secrets Manager secret
//!   holding the HMAC key, read and cached like the chaos key (`kosha_state::SecretCache`).
//! - `KOSHA_CONFIRM_TTL_S` (default 600): seconds from the question to the last answer the
//!   gateway accepts, 1 to 600. SPEC §5b's 10 minutes is the most; a shorter one lets a test
//!   see an expired state without waiting. Anything else stops the start (`main` exits 2).

use std::time::Duration;

use kosha_runtime::config::{self, ConfigError};

/// The TTL variable.
pub const CONFIRM_TTL_ENV: &str = "KOSHA_CONFIRM_TTL_S";

/// SPEC §5b: a sealed state lives 10 minutes; also the longest `KOSHA_CONFIRM_TTL_S`.
pub const CONFIRM_TTL: Duration = Duration::from_secs(600);

/// The confirmation settings of a gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmSettings {
    /// The secret holding the sealing key (`KOSHA_CONFIRM_SECRET_ID`).
    pub secret_id: String,
    /// How long a sealed state lives (`KOSHA_CONFIRM_TTL_S`).
    pub ttl: Duration,
}

impl Default for ConfirmSettings {
    /// The default secret and SPEC §5b's 10 minutes.
    fn default() -> Self {
        Self {
            secret_id: kosha_state::DEFAULT_CONFIRM_SECRET_ID.to_owned(),
            ttl: CONFIRM_TTL,
        }
    }
}

impl ConfirmSettings {
    /// Reads both variables.
    ///
    /// # Errors
    /// [`ConfigError`] naming `KOSHA_CONFIRM_TTL_S` when it is set to anything but a whole
    /// number of seconds from 1 to 600.
    pub fn from_env() -> Result<Self, ConfigError> {
        let ttl = parse_ttl(config::var(CONFIRM_TTL_ENV).as_deref())
            .map_err(|e| ConfigError::new(CONFIRM_TTL_ENV, e))?;
        Ok(Self {
            secret_id: config::string_or(
                kosha_state::CONFIRM_SECRET_ENV,
                kosha_state::DEFAULT_CONFIRM_SECRET_ID,
            )
            .trim()
            .to_owned(),
            ttl,
        })
    }
}

/// `KOSHA_CONFIRM_TTL_S`: unset or blank → [`CONFIRM_TTL`]; else whole seconds, 1 to 600.
///
/// # Errors
/// A reason (never echoing the value).
pub fn parse_ttl(raw: Option<&str>) -> Result<Duration, &'static str> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(CONFIRM_TTL);
    };
    match raw.parse::<u64>() {
        Ok(s @ 1..=600) => Ok(Duration::from_secs(s)),
        _ => Err("must be a whole number of seconds from 1 to 600 (SPEC §5b: 10 minutes at most)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ttl_defaults_to_ten_minutes_and_may_only_be_shorter() {
        assert_eq!(parse_ttl(None), Ok(CONFIRM_TTL));
        assert_eq!(parse_ttl(Some(" ")), Ok(CONFIRM_TTL));
        assert_eq!(parse_ttl(Some("2")), Ok(Duration::from_secs(2)));
        assert_eq!(parse_ttl(Some("600")), Ok(CONFIRM_TTL));
        for bad in ["0", "601", "-1", "1.5", "ten"] {
            assert!(parse_ttl(Some(bad)).is_err(), "{bad}");
        }
    }
}
