//! Typed environment lookups. Config is read and validated once in `main`; a bad value is an
//! error at start-up naming the variable, never a panic deep inside a request.

use std::str::FromStr;

/// A configuration value that is present but cannot be parsed.
#[derive(Debug, thiserror::Error)]
#[error("invalid value for {key}: {reason}")]
pub struct ConfigError {
    /// The environment variable's name.
    pub key: String,
    /// Why the value was refused (never the value itself: it may be a secret).
    pub reason: String,
}

impl ConfigError {
    /// A refusal of `key` for `reason`.
    pub fn new(key: &str, reason: impl Into<String>) -> Self {
        Self {
            key: key.to_owned(),
            reason: reason.into(),
        }
    }
}

/// The raw value of `key`, `None` when unset or empty.
pub fn var(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

/// `key` parsed as `T`, or `default` when unset or empty.
///
/// # Errors
/// [`ConfigError`] when the value is set but does not parse as `T`.
pub fn parse_or<T>(key: &str, default: T) -> Result<T, ConfigError>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    match var(key) {
        None => Ok(default),
        Some(raw) => raw
            .trim()
            .parse()
            .map_err(|e: T::Err| ConfigError::new(key, e.to_string())),
    }
}

/// `key` as a string, or `default` when unset or empty.
pub fn string_or(key: &str, default: &str) -> String {
    var(key).unwrap_or_else(|| default.to_owned())
}

/// `key` as a comma-separated list with blanks dropped; empty when unset.
pub fn list(key: &str) -> Vec<String> {
    var(key).map(|raw| split_list(&raw)).unwrap_or_default()
}

/// A comma list: entries trimmed, empty ones dropped.
fn split_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `key` as a boolean (`true`/`false`/`1`/`0`), or `default` when unset.
///
/// # Errors
/// [`ConfigError`] for any other value.
pub fn bool_or(key: &str, default: bool) -> Result<bool, ConfigError> {
    match var(key).as_deref().map(str::trim) {
        None => Ok(default),
        Some("true" | "1" | "TRUE" | "True") => Ok(true),
        Some("false" | "0" | "FALSE" | "False") => Ok(false),
        Some(_) => Err(ConfigError::new(key, "expected true or false")),
    }
}

#[cfg(test)]
mod tests {
    use super::split_list;

    #[test]
    fn lists_are_trimmed_and_drop_empty_entries() {
        assert_eq!(split_list("a, b ,"), vec!["a", "b"]);
        assert!(split_list("").is_empty());
        assert!(split_list(" , ").is_empty());
    }
}
