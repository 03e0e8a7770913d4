//! What the policy set says of one call or listing (SPEC §5a, §5b).

/// The message of a `forbidden` whose deciding forbid has no `@reason` (SPEC §5a).
pub const NOT_PERMITTED: &str = "not permitted";

/// What the policy set says of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The call may run. `policies`: the permits that allowed it.
    Allow {
        /// The deciding policies' ids.
        policies: Vec<String>,
    },
    /// The call is refused: the tool error `forbidden` (SPEC §3, §5a).
    Forbid {
        /// For the model: the deciding forbid's `@reason`, or [`NOT_PERMITTED`].
        reason: String,
        /// The deciding policies' ids (the forbids that applied, or the ones whose evaluation
        /// failed); empty when no permit applied.
        policies: Vec<String>,
    },
    /// Refused as asked, allowed with `context.confirmed = true`: the person must confirm
    /// (SPEC §5b). Only for the write tools.
    Confirm {
        /// The forbids that a confirmation lifts.
        policies: Vec<String>,
    },
}

impl Decision {
    /// The decision's name in logs and the `authz{decision}` metric: `allow`, `forbid`,
    /// `confirm`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Allow { .. } => "allow",
            Self::Forbid { .. } => "forbid",
            Self::Confirm { .. } => "confirm",
        }
    }

    /// Whether it is [`Decision::Allow`].
    pub fn is_allow(&self) -> bool {
        matches!(self, Self::Allow { .. })
    }

    /// The deciding policies' ids.
    pub fn policies(&self) -> &[String] {
        match self {
            Self::Allow { policies }
            | Self::Forbid { policies, .. }
            | Self::Confirm { policies } => policies,
        }
    }
}
