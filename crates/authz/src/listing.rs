//! The listing rule (SPEC §5a, ARCHITECTURE pitfall 31): `tools/list` shows a tool when the
//! principal may call it with some arguments, asking the same policy set as a call.
//!
//! The set evaluated for a listing is derived from the calling set:
//! - a policy that reads neither `context.input`, `context.record`, `context.now` nor
//!   `context.confirmed` is kept as written (it is evaluated exactly);
//! - a permit that reads one of them keeps its scope and loses its conditions: some call may
//!   satisfy it;
//! - a forbid that reads one of them is dropped: some call may escape it (a dispute over the
//!   cap is refused, a smaller one is not; a write needing a confirmation is listed).
//!
//! No partial evaluation (experimental in Cedar): the rule needs none.

use cedar_policy::{Effect, Policy, PolicySet};
use serde_json::Value;

use crate::error::LoadError;
use crate::reads::Reads;

/// The listing set of `set`.
pub(crate) fn derive(set: &PolicySet) -> Result<PolicySet, LoadError> {
    let mut listing = PolicySet::new();
    for policy in set.policies() {
        let mut est = est(policy)?;
        if Reads::of_policy(&est).per_call() {
            if policy.effect() == Effect::Forbid {
                continue;
            }
            if let Some(map) = est.as_object_mut() {
                map.insert("conditions".to_owned(), Value::Array(Vec::new()));
            }
        }
        let derived = Policy::from_json(Some(policy.id().clone()), est).map_err(|e| LoadError {
            policy: Some(policy.id().to_string()),
            line: None,
            message: format!("deriving its listing form: {e}"),
        })?;
        listing.add(derived).map_err(|e| LoadError {
            policy: Some(policy.id().to_string()),
            line: None,
            message: e.to_string(),
        })?;
    }
    Ok(listing)
}

/// The JSON form (EST) of `policy`.
pub(crate) fn est(policy: &Policy) -> Result<Value, LoadError> {
    policy.to_json().map_err(|e| LoadError {
        policy: Some(policy.id().to_string()),
        line: None,
        message: e.to_string(),
    })
}
