//! `KOSHA_TOOL_COSTS` (SPEC §6): `name=cost,…`, each tool's cost in tokens of the caller's
//! bucket, overriding its catalogue entry's ([`super::catalogue::Tool::COST`]).
//!
//! Checked once at start ([`parse`]): a cost below 1, above the bucket's capacity (such a
//! call could never be admitted) or not a whole number, a name that is not a served tool, an
//! entry without `=`, or a name given twice refuses to start, naming the entry. A tool's own
//! catalogue cost above the capacity is refused the same way.

use std::collections::BTreeMap;

use super::catalogue::Catalogue;
use kosha_contract::echo::clip;

/// Validated cost overrides: tool name → tokens per call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCosts(BTreeMap<&'static str, u32>);

impl ToolCosts {
    /// The cost set for tool `name`, if any.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.0.get(name).copied()
    }
}

/// Parses `raw` (the value of `KOSHA_TOOL_COSTS`; `None` or blank: no overrides) against the
/// tools of `catalogue` and a bucket of `capacity` tokens.
///
/// ```
/// use mcp_gateway::tools::{catalogue, cost};
/// let costs = cost::parse(Some("screen_entity=3, get_transaction=2"), &catalogue(), 20.0).unwrap();
/// assert_eq!(costs.get("screen_entity"), Some(3));
/// let err = cost::parse(Some("screen_entity=0"), &catalogue(), 20.0).unwrap_err();
/// assert!(err.contains("`screen_entity=0`"), "{err}");
/// ```
///
/// # Errors
/// A message naming the refused entry (or tool) and why.
pub fn parse(raw: Option<&str>, catalogue: &Catalogue, capacity: f64) -> Result<ToolCosts, String> {
    let fits = |cost: u32| cost >= 1 && f64::from(cost) <= capacity;
    for e in catalogue.all() {
        if !fits(e.cost()) {
            return Err(format!(
                "tool `{}` costs {} tokens, more than the bucket's capacity {capacity}",
                e.spec.name,
                e.cost()
            ));
        }
    }
    let mut costs = BTreeMap::new();
    for entry in raw.unwrap_or("").split(',').map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        let shown = clip(entry);
        let Some((name, cost)) = entry.split_once('=') else {
            return Err(format!("entry `{shown}`: expected name=cost"));
        };
        let (name, cost) = (name.trim(), cost.trim());
        let Some(tool) = catalogue.all().find(|e| e.spec.name == name) else {
            return Err(format!("entry `{shown}`: no tool is named so"));
        };
        let cost = match cost.parse::<u32>() {
            Ok(c) if fits(c) => c,
            _ => {
                return Err(format!(
                    "entry `{shown}`: the cost must be a whole number from 1 to the bucket's \
                     capacity ({capacity})"
                ));
            }
        };
        if costs.insert(tool.spec.name, cost).is_some() {
            return Err(format!("entry `{shown}`: `{name}` is given twice"));
        }
    }
    Ok(ToolCosts(costs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::catalogue;

    #[test]
    fn costs_override_the_catalogue_and_unset_means_none() {
        let c = catalogue();
        assert_eq!(parse(None, &c, 20.0), Ok(ToolCosts::default()));
        assert_eq!(parse(Some(" , "), &c, 20.0), Ok(ToolCosts::default()));
        let costs = parse(Some("screen_entity = 20,get_transaction=2"), &c, 20.0).unwrap();
        let served = catalogue().with_costs(|name| costs.get(name));
        let cost_of = |name: &str| served.all().find(|e| e.spec.name == name).unwrap().cost();
        assert_eq!(
            (
                cost_of("screen_entity"),
                cost_of("get_transaction"),
                cost_of("list_transactions")
            ),
            (20, 2, 1)
        );
    }

    #[test]
    fn every_bad_entry_refuses_naming_it() {
        let c = catalogue();
        for (raw, named) in [
            ("get_transaction=0", "`get_transaction=0`"),
            ("get_transaction=-1", "`get_transaction=-1`"),
            ("get_transaction=21", "`get_transaction=21`"),
            ("get_transaction=1.5", "`get_transaction=1.5`"),
            ("get_transaction=two", "`get_transaction=two`"),
            ("get_transaction", "`get_transaction`"),
            ("no_such_tool=1", "`no_such_tool=1`"),
            ("get_transaction=1,get_transaction=2", "`get_transaction=2`"),
        ] {
            let err = parse(Some(raw), &c, 20.0).unwrap_err();
            assert!(err.contains(named), "{raw}: {err}");
        }
    }

    #[test]
    fn a_catalogue_cost_above_the_capacity_refuses_naming_the_tool() {
        let costs = parse(Some("screen_entity=5"), &catalogue(), 20.0).unwrap();
        let c = catalogue().with_costs(|name| costs.get(name));
        let err = parse(None, &c, 4.0).unwrap_err();
        assert!(err.contains("`screen_entity`"), "{err}");
    }
}
