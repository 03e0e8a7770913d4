//! The decision of one call (SPEC §5a, §5b).

use cedar_policy::{Decision as CedarDecision, Entities, Request, Response};

use crate::load::Policies;
use crate::request::{self, Ask, Unaskable};

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

/// One Cedar answer: allowed, or the deciding policies; any evaluation error denies.
enum Outcome {
    Allowed(Vec<String>),
    Denied(Vec<String>),
    Failed(Vec<String>),
}

impl Policies {
    /// Decides `ask` (SPEC §5a): with `context.confirmed = false`; a write refused so, and
    /// allowed with `true`, is [`Decision::Confirm`] (SPEC §5b). Any error (evaluating a
    /// policy, a context that does not fit the schema, an unknown tool) is a
    /// [`Decision::Forbid`]: a broken rule refuses, it never skips the question.
    pub fn decide(&self, ask: &Ask<'_>) -> Decision {
        match self.outcome(ask, false) {
            Outcome::Allowed(policies) => Decision::Allow { policies },
            Outcome::Failed(policies) => Decision::Forbid {
                reason: NOT_PERMITTED.to_owned(),
                policies,
            },
            Outcome::Denied(policies) => {
                let confirmable = crate::WRITE_TOOLS.contains(&ask.tool)
                    && self.reads(ask.tool).confirmed
                    && matches!(self.outcome(ask, true), Outcome::Allowed(_));
                if confirmable {
                    Decision::Confirm { policies }
                } else {
                    Decision::Forbid {
                        reason: self.reason(&policies),
                        policies,
                    }
                }
            }
        }
    }

    /// The listing rule (SPEC §5a): whether `tools/list` shows `tool` to `principal`, i.e.
    /// whether it may call it with some arguments, on some record, at some time.
    pub fn may_list(
        &self,
        principal: &kosha_auth::Principal,
        tool: &str,
        protocol_version: &str,
    ) -> bool {
        matches!(
            self.listing(principal, tool, protocol_version),
            Decision::Allow { .. }
        )
    }

    /// [`Policies::may_list`] as a decision, with the policies that decided it: when no
    /// policy for `tool` reads anything of the context ([`Policies::reads`]), it is also the
    /// decision of every call of `tool`.
    pub fn listing(
        &self,
        principal: &kosha_auth::Principal,
        tool: &str,
        protocol_version: &str,
    ) -> Decision {
        let key = crate::memo::key(principal, tool, protocol_version);
        if let Some(decision) = self.memo.get(&key) {
            return decision;
        }
        let decision = self.evaluate_listing(principal, tool, protocol_version);
        self.memo.put(key, decision.clone());
        decision
    }

    fn evaluate_listing(
        &self,
        principal: &kosha_auth::Principal,
        tool: &str,
        protocol_version: &str,
    ) -> Decision {
        let listed = request::entities(self, principal).and_then(|(uid, entities)| {
            let req = request::listing_request(self, uid, tool, protocol_version)?;
            Ok(self.answer(&req, &entities, true))
        });
        match listed {
            Ok(Outcome::Allowed(policies)) => Decision::Allow { policies },
            Ok(Outcome::Denied(policies) | Outcome::Failed(policies)) => Decision::Forbid {
                reason: NOT_PERMITTED.to_owned(),
                policies,
            },
            Err(Unaskable(why)) => {
                tracing::warn!(tool, error = %why, "listing not decidable: not listed");
                Decision::Forbid {
                    reason: NOT_PERMITTED.to_owned(),
                    policies: Vec::new(),
                }
            }
        }
    }

    fn outcome(&self, ask: &Ask<'_>, confirmed: bool) -> Outcome {
        let asked = request::entities(self, ask.principal).and_then(|(uid, entities)| {
            let reads = self.reads(ask.tool);
            let req = request::request(self, ask, uid, reads, confirmed)?;
            Ok(self.answer(&req, &entities, false))
        });
        asked.unwrap_or_else(|Unaskable(why)| {
            tracing::warn!(tool = ask.tool, error = %why, "call not decidable: denied");
            Outcome::Failed(Vec::new())
        })
    }

    fn answer(&self, req: &Request, entities: &Entities, listing: bool) -> Outcome {
        let set = if listing { &self.listing } else { &self.set };
        let response: Response = self.authorizer.is_authorized(req, set, entities);
        let failed: Vec<String> = response
            .diagnostics()
            .errors()
            .map(|e| match e {
                cedar_policy::AuthorizationError::PolicyEvaluationError(e) => {
                    e.policy_id().to_string()
                }
            })
            .collect();
        if !failed.is_empty() {
            return Outcome::Failed(failed);
        }
        let deciding = response
            .diagnostics()
            .reason()
            .map(ToString::to_string)
            .collect();
        match response.decision() {
            CedarDecision::Allow => Outcome::Allowed(deciding),
            CedarDecision::Deny => Outcome::Denied(deciding),
        }
    }

    /// The first deciding forbid's `@reason`, or [`NOT_PERMITTED`].
    fn reason(&self, deciding: &[String]) -> String {
        deciding
            .iter()
            .find_map(|id| {
                self.set
                    .annotation(&cedar_policy::PolicyId::new(id), "reason")
            })
            .unwrap_or(NOT_PERMITTED)
            .to_owned()
    }
}

#[cfg(test)]
mod tests;
