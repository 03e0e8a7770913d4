//! The crate's one error type. Messages never carry item values or secrets.

/// What went wrong talking to the state table or Secrets Manager.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A setting was refused at construction (names the setting, never a secret value).
    #[error("invalid setting {name}: {reason}")]
    InvalidSetting {
        /// Which setting.
        name: &'static str,
        /// Why.
        reason: String,
    },
    /// The dependency is not one of SPEC §8's four.
    #[error("unknown dependency {0:?} (expected one of core-api, screening-sim, openai, postgres)")]
    UnknownDependency(String),
    /// An AWS call failed (the SDK's error, displayed with its source chain).
    #[error("{operation} failed: {message}")]
    Aws {
        /// The API operation, e.g. `PutItem`.
        operation: &'static str,
        /// The SDK's description of the failure.
        message: String,
    },
    /// An AWS call did not answer in time.
    #[error("{operation} timed out")]
    Timeout {
        /// The API operation.
        operation: &'static str,
    },
    /// A state-table item is not in the shape its module writes (values are never shown).
    #[error("malformed {kind} item: {reason}")]
    MalformedItem {
        /// Which kind of item (`screening`, …).
        kind: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The secret exists but is not in the expected format (the value is never shown).
    #[error("secret {secret_id} is malformed: {reason}")]
    MalformedSecret {
        /// The secret's id.
        secret_id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl StateError {
    /// Wraps an SDK error for `operation`, keeping the whole source chain in the message.
    pub(crate) fn aws(operation: &'static str, err: impl std::error::Error) -> Self {
        let mut message = err.to_string();
        let mut source = err.source();
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        Self::Aws { operation, message }
    }
}
