//! The decision of one call (SPEC §5a, §5b).

use cedar_policy::{Decision as CedarDecision, Entities, Request, Response};

use crate::decision::{Decision, NOT_PERMITTED};
use crate::load::Policies;
use crate::request::{self, Ask, Unaskable};

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
