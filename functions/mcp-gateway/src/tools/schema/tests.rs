use serde_json::json;

use super::*;

#[test]
fn formats_outside_json_schema_2020_12_are_removed_at_any_depth() {
    let kept = standard_formats_only(json!({"properties": {
        "a": {"format": "date-time"},
        "b": {"items": [{"format": "uint8"}]},
        "c": {"format": "int64"},
    }}));
    assert_eq!(
        kept,
        json!({"properties": {"a": {"format": "date-time"}, "b": {"items": [{}]}, "c": {}}})
    );
}

#[test]
fn an_optional_argument_has_a_plain_type_and_the_input_a_title() {
    let schema = for_model(
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "description": "Arguments.",
            "properties": {
                "limit": {"type": ["integer", "null"], "description": "Page size."},
                "when": {"anyOf": [{"$ref": "#/$defs/When"}, {"type": "null"}]},
            },
        }),
        "List transactions arguments",
    );
    assert_eq!(
        schema,
        json!({
            "title": "List transactions arguments",
            "properties": {
                "limit": {"type": "integer", "description": "Page size."},
                "when": {"$ref": "#/$defs/When"},
            },
        })
    );
}

#[test]
fn an_output_schema_sheds_prose_but_not_a_property_named_like_it() {
    let schema = for_client(json!({
        "title": "Output",
        "description": "structuredContent.",
        "properties": {
            "description": {"type": "string", "description": "The text."},
            "next": {"type": ["string", "null"], "examples": ["c1"]},
        },
        "required": ["description"],
    }));
    assert_eq!(
        schema,
        json!({
            "properties": {
                "description": {"type": "string"},
                "next": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["description"],
        })
    );
}
