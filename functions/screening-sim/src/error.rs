//! The crate's one error enum and its stable wire codes.
//!
//! A request the caller can fix is [`ScreenError::InvalidArgument`]: code `invalid_argument`,
//! and a message that names the field (SPEC §3 "Bad tool arguments", SPEC §4 `screen_entity`),
//! so an agent can correct itself and the screening-worker can mark a deferred screening
//! `failed` with that message as its `failure_reason` (issue 12). A bad setting at start-up is
//! [`ScreenError::InvalidConfig`]; it never reaches a caller.

/// Everything that can go wrong in this crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScreenError {
    /// The request is malformed: `field` is `name`, `country` or `date_of_birth`, and
    /// `message` says what is wrong in words that start with the field's name.
    #[error("{message}")]
    InvalidArgument {
        /// The request field at fault, as spelled on the wire.
        field: &'static str,
        /// A caller-safe sentence naming the field, e.g. "name must be 1 to 200 characters".
        message: String,
    },
    /// A matcher setting is out of range (for example a threshold outside (0, 1]).
    #[error("invalid setting {setting}: {message}")]
    InvalidConfig {
        /// The setting's name.
        setting: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

impl ScreenError {
    /// The stable error code for the wire (SPEC §3): `invalid_argument` for a bad request,
    /// `internal` for a bad setting (a deployment fault, not the caller's).
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            ScreenError::InvalidArgument { .. } => "invalid_argument",
            ScreenError::InvalidConfig { .. } => "internal",
        }
    }

    /// The request field at fault, when the error is about one.
    #[must_use]
    pub fn field(&self) -> Option<&'static str> {
        match self {
            ScreenError::InvalidArgument { field, .. } => Some(field),
            ScreenError::InvalidConfig { .. } => None,
        }
    }

    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        ScreenError::InvalidArgument {
            field,
            message: message.into(),
        }
    }
}
