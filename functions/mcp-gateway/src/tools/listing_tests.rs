//! What `tools/list` shows a model and a client (SPEC §3, issue 45): the model-visible part's
//! size, its words, and the output schemas' types.

use kosha_auth::Role;
use serde_json::{Value, json};

use super::catalogue;
use crate::server::INSTRUCTIONS;

/// The principals of SPEC §5 and their roles.
const PRINCIPALS: [(&str, &[Role]); 3] = [
    ("agent", &[Role::Agent]),
    ("operator", &[Role::Operator]),
    ("tester", &[Role::Agent, Role::Operator]),
];

/// `tools/list`'s tools for a user with `roles` under the built-in policy set, as JSON.
fn listed(roles: &[Role]) -> Vec<Value> {
    let c = catalogue();
    let groups: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
    let principal = kosha_authz::testing::principal("u", &groups);
    let set = kosha_authz::Policies::builtin();
    c.all()
        .filter(|e| set.may_list(&principal, e.spec.name, "2025-11-25"))
        .map(|e| serde_json::to_value(e.tool()).unwrap())
        .collect()
}

/// The part a host shows the model: each tool's name, title, description, input schema and
/// annotations, and the instructions.
fn model_visible(tools: &[Value]) -> Value {
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| {
            let keep = ["name", "title", "description", "inputSchema", "annotations"];
            Value::Object(
                keep.iter()
                    .filter_map(|k| t.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                    .collect(),
            )
        })
        .collect();
    json!({"instructions": INSTRUCTIONS, "tools": tools})
}

fn size(v: &Value) -> usize {
    serde_json::to_string(v).unwrap().len()
}

#[test]
fn sizes_of_tools_list_per_principal() {
    for (name, roles) in PRINCIPALS {
        let tools = listed(roles);
        let whole = size(&json!({"tools": tools}));
        let visible = size(&model_visible(&tools));
        println!("{name}: tools/list {whole} B, model-visible {visible} B");
    }
}

/// SPEC §3: the model-visible part of an agent's `tools/list` is at most 8 KB.
const MODEL_VISIBLE_MAX_BYTES: usize = 8 * 1024;

#[test]
fn what_an_agent_shows_its_model_fits_in_8_kb() {
    let visible = size(&model_visible(&listed(&[Role::Agent])));
    assert!(
        visible <= MODEL_VISIBLE_MAX_BYTES,
        "{visible} B > {MODEL_VISIBLE_MAX_BYTES} B"
    );
}

/// Every string in `v`, keys included.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(m) => m.iter().for_each(|(k, v)| {
            out.push(k.clone());
            strings(v, out);
        }),
        _ => {}
    }
}

#[test]
fn no_string_refers_to_the_contract_or_to_rustdoc() {
    let mut all = vec![INSTRUCTIONS.to_owned()];
    strings(
        &Value::Array(listed(&[Role::Agent, Role::Operator])),
        &mut all,
    );
    for s in all {
        for internal in ["SPEC", "§", "[`", "]("] {
            assert!(!s.contains(internal), "{internal:?} in {s:?}");
        }
    }
}

#[test]
fn every_schema_has_a_title_and_no_optional_argument_admits_null() {
    for tool in listed(&[Role::Agent, Role::Operator]) {
        let input = &tool["inputSchema"];
        let title = input["title"].as_str().unwrap_or_default();
        assert!(title.ends_with(" arguments"), "{title:?}");
        let mut all = Vec::new();
        strings(input, &mut all);
        assert!(
            !all.iter().any(|s| s == "null"),
            "{}: {input}",
            tool["name"]
        );
    }
}

/// Whether `schema` (or what it refers to in `defs`) states a type.
fn typed(schema: &Value, defs: &Value) -> bool {
    if let Some(r) = schema["$ref"].as_str() {
        return typed(&defs[r.trim_start_matches("#/$defs/")], defs);
    }
    let all_typed = |key: &str| {
        schema[key]
            .as_array()
            .is_some_and(|v| v.iter().all(|s| typed(s, defs)))
    };
    schema.get("type").is_some() || all_typed("anyOf") || all_typed("oneOf")
}

/// Checks every property under `schema` is typed.
fn properties_typed(schema: &Value, defs: &Value, at: &str) {
    if let Some(props) = schema["properties"].as_object() {
        for (name, p) in props {
            assert!(typed(p, defs), "{at}.{name} has no type: {p}");
            properties_typed(p, defs, &format!("{at}.{name}"));
            properties_typed(&p["items"], defs, &format!("{at}.{name}[]"));
        }
    }
    for key in ["anyOf", "oneOf"] {
        for s in schema[key].as_array().into_iter().flatten() {
            properties_typed(s, defs, at);
        }
    }
}

#[test]
fn every_output_property_is_typed_and_no_prose_is_left() {
    for tool in listed(&[Role::Agent, Role::Operator]) {
        let output = &tool["outputSchema"];
        let defs = &output["$defs"];
        properties_typed(output, defs, tool["name"].as_str().unwrap());
        for def in defs.as_object().into_iter().flatten().map(|(_, d)| d) {
            properties_typed(def, defs, tool["name"].as_str().unwrap());
        }
        let text = output.to_string();
        assert!(!text.contains("\"description\":"), "{text}");
        // The MCP Inspector's `--strict` check warns on a `type` array (`type-union`).
        assert!(!text.contains("\"type\":["), "{text}");
    }
}

#[test]
fn each_description_names_the_error_codes_its_tool_answers() {
    for entry in catalogue().all() {
        let described = entry.tool().description.clone().unwrap_or_default();
        let codes: Vec<&str> = entry.spec.errors.iter().map(|c| c.as_str()).collect();
        assert!(!codes.is_empty(), "{}", entry.spec.name);
        assert!(
            described.ends_with(&format!(" Errors: {}.", codes.join(", "))),
            "{described}"
        );
        let order: Vec<_> = kosha_contract::error::ErrorCode::ALL
            .into_iter()
            .filter(|c| entry.spec.errors.contains(c))
            .collect();
        assert_eq!(
            order, entry.spec.errors,
            "{}: in the contract's order",
            entry.spec.name
        );
    }
}

#[test]
fn a_tool_that_calls_an_outside_service_says_so() {
    for tool in listed(&[Role::Agent, Role::Operator]) {
        let outside = tool["name"] == "screen_entity";
        assert_eq!(
            tool["annotations"]["openWorldHint"],
            json!(outside),
            "{}",
            tool["name"]
        );
    }
}

#[test]
fn the_instructions_name_every_tool() {
    for entry in catalogue().all() {
        assert!(
            INSTRUCTIONS.contains(entry.spec.name),
            "{} is not in the instructions",
            entry.spec.name
        );
    }
}
