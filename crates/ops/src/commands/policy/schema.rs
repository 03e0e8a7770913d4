//! What `policy test` reads of Kosha's Cedar schema (`kosha_authz::SCHEMA`, SPEC §5a): the
//! tools (its actions) and each tool's `context.input` attributes, so that arguments the
//! policies would read are checked as the schema types them, with a message naming the field.
//!
//! The schema in its JSON form types an input attribute as
//! `{"type": "EntityOrCommon", "name": "String"}` (or `"type": "String"`), with
//! `"required": false` when optional.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// Every tool's input attributes, by tool; empty if the schema did not load (it is a constant
/// that `kosha_authz` validates).
fn inputs() -> &'static BTreeMap<String, Map<String, Value>> {
    static INPUTS: OnceLock<BTreeMap<String, Map<String, Value>>> = OnceLock::new();
    INPUTS.get_or_init(|| {
        let json = cedar_policy::SchemaFragment::from_cedarschema_str(kosha_authz::SCHEMA)
            .ok()
            .and_then(|(fragment, _warnings)| fragment.to_json_value().ok())
            .unwrap_or_default();
        let actions = json
            .pointer("/Kosha/actions")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        actions
            .into_iter()
            .map(|(tool, action)| {
                let input = action
                    .pointer("/appliesTo/context/attributes/input/attributes")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                (tool, input)
            })
            .collect()
    })
}

/// The tools the schema declares, sorted.
pub fn tools() -> impl Iterator<Item = &'static str> {
    inputs().keys().map(String::as_str)
}

/// Whether `tool` is one of [`tools`].
pub fn is_tool(tool: &str) -> bool {
    inputs().contains_key(tool)
}

/// Checks `input` (`null` values count as absent) against `tool`'s input attributes.
///
/// # Errors
/// One line naming the first unknown argument, the first of another type than the schema's,
/// or the first required one missing.
pub fn check_input(tool: &str, input: &Map<String, Value>) -> Result<(), String> {
    let Some(attributes) = inputs().get(tool) else {
        return Err(format!("{tool} is not a tool of the schema"));
    };
    for (name, value) in input.iter().filter(|(_, v)| !v.is_null()) {
        let Some(declared) = attributes.get(name) else {
            let known: Vec<&str> = attributes.keys().map(String::as_str).collect();
            return Err(format!(
                "{name} is not an argument of {tool} (its arguments: {})",
                known.join(", ")
            ));
        };
        if let Some(expected) = mismatch(declared, value) {
            return Err(format!("{name} must be {expected}"));
        }
    }
    let missing = attributes.iter().find(|(name, declared)| {
        let required = declared.get("required").and_then(Value::as_bool) != Some(false);
        required && input.get(name.as_str()).is_none_or(Value::is_null)
    });
    match missing {
        Some((name, _)) => Err(format!("{tool} needs {name}")),
        None => Ok(()),
    }
}

/// What `value` should be when it is not of the `declared` type; types this check does not
/// know (entities, common types) pass.
fn mismatch(declared: &Value, value: &Value) -> Option<&'static str> {
    let kind = match declared.get("type").and_then(Value::as_str) {
        Some("EntityOrCommon") => declared.get("name").and_then(Value::as_str),
        other => other,
    };
    let (fits, expected) = match kind? {
        "String" => (value.is_string(), "a string"),
        "Long" => (value.is_i64(), "an integer"),
        "Bool" | "Boolean" => (value.is_boolean(), "true or false"),
        "Set" => (value.is_array(), "an array"),
        "Record" => (value.is_object(), "an object"),
        _ => return None,
    };
    (!fits).then_some(expected)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn the_tools_are_the_schemas_actions() {
        let tools: Vec<&str> = tools().collect();
        assert_eq!(tools.len(), 8, "{tools:?}");
        assert!(is_tool("raise_dispute") && is_tool("get_service_health"));
        assert!(!is_tool("drop_tables"));
    }

    #[test]
    fn arguments_are_checked_as_the_schema_types_them() {
        let ok = json!({"transaction_id": "txn_1", "reason": "r", "amount_minor": 5});
        assert_eq!(check_input("raise_dispute", &obj(ok)), Ok(()));
        let optional_null = json!({"transaction_id": "t", "reason": "r", "amount_minor": 5,
                                   "idempotency_key": null});
        assert_eq!(check_input("raise_dispute", &obj(optional_null)), Ok(()));
        assert_eq!(check_input("get_service_health", &obj(json!({}))), Ok(()));
        let cases = [
            (
                json!({"transaction_id": "t", "reason": "r"}),
                "raise_dispute needs amount_minor",
            ),
            (
                json!({"transaction_id": "t", "reason": "r", "amount_minor": "5"}),
                "amount_minor must be an integer",
            ),
            (
                json!({"transaction_id": "t", "reason": "r", "amount_minor": 5.5}),
                "amount_minor must be an integer",
            ),
            (
                json!({"transaction_id": 7, "reason": "r", "amount_minor": 5}),
                "transaction_id must be a string",
            ),
            (
                json!({"transaction_id": "t", "reason": "r", "amount_minor": 5, "amount": 1}),
                "amount is not an argument of raise_dispute (its arguments: amount_minor, idempotency_key, reason, transaction_id)",
            ),
        ];
        for (input, message) in cases {
            assert_eq!(
                check_input("raise_dispute", &obj(input)),
                Err(message.to_owned())
            );
        }
    }
}
