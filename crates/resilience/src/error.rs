//! The one error of the resilience crate: a setting that cannot be used. Every policy's
//! constructor validates its settings and returns it (STYLE.md: `try_new`, never a panic);
//! it is raised at start-up, never on the request path.

/// A setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A value outside its allowed range.
    #[error("invalid setting {field}: {reason}")]
    Invalid {
        /// The setting (e.g. `breaker.window`).
        field: &'static str,
        /// What is allowed.
        reason: &'static str,
    },
    /// An environment variable that is not an unsigned integer.
    #[error("environment variable {var} must be an unsigned integer")]
    Parse {
        /// The variable's name (its value is not echoed).
        var: String,
    },
    /// A setting made invalid by environment overrides under `prefix`.
    #[error("{prefix}_*: {source}")]
    Env {
        /// The dependency's variable prefix, e.g. `KOSHA_POLICY_OPENAI`.
        prefix: &'static str,
        /// The validation failure.
        #[source]
        source: Box<ConfigError>,
    },
}

impl ConfigError {
    /// A [`ConfigError::Invalid`] for `field`, saying what is allowed.
    pub fn invalid(field: &'static str, reason: &'static str) -> Self {
        Self::Invalid { field, reason }
    }
}
