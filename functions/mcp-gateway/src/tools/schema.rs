//! The JSON Schemas of `tools/list`, as a model and a client read them (SPEC §3, issue 45).
//!
//! schemars writes schemas for Rust readers; this module rewrites them for MCP:
//! - **Input** ([`for_model`]): the host shows it to the model, so it gets a title, loses the
//!   `$schema` line (2020-12 is MCP's default dialect) and the struct's own doc comment (the
//!   tool's description says it), and an optional argument is simply not `required`: `null`
//!   leaves its `type` array and its `anyOf` (the MCP Inspector's `--strict` check warns on
//!   `type: [X, "null"]`).
//! - **Output** ([`for_client`]): only clients read it, to validate `structuredContent`; it
//!   keeps every `type`, `required`, `enum`, `const` and bound, and sheds `title`,
//!   `description` and `examples`; a `type` array becomes an `anyOf` of single types.
//! - Both: a `format` that is not JSON Schema 2020-12's (schemars' `uint32`, `int64`, …) is
//!   removed ([`standard_formats_only`]), as Ajv in the TypeScript SDK refuses it.
//!
//! Neighbours: [`super::catalogue`] builds each tool's schemas with these; `args` compiles the
//! input schema to check arguments.

use serde_json::{Map, Value, json};

/// The `format` values of JSON Schema 2020-12 (§7.3).
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose value is a map from names to subschemas.
const SCHEMA_MAPS: [&str; 4] = [
    "properties",
    "$defs",
    "patternProperties",
    "dependentSchemas",
];
/// Keywords whose value is a subschema or an array of them.
const SCHEMA_SLOTS: [&str; 13] = [
    "items",
    "prefixItems",
    "additionalProperties",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "anyOf",
    "oneOf",
    "allOf",
];

/// Calls `f` on `schema` and on every subschema under it, parents first. Property names are
/// never taken for keywords: a property called `description` stays.
fn each_schema(schema: &mut Value, f: &mut impl FnMut(&mut Map<String, Value>)) {
    let Value::Object(m) = schema else { return };
    f(m);
    for (key, value) in m.iter_mut() {
        if SCHEMA_MAPS.contains(&key.as_str()) {
            if let Value::Object(named) = value {
                named.values_mut().for_each(|s| each_schema(s, f));
            }
        } else if SCHEMA_SLOTS.contains(&key.as_str()) {
            match value {
                Value::Array(all) => all.iter_mut().for_each(|s| each_schema(s, f)),
                one => each_schema(one, f),
            }
        }
    }
}

/// `schema` without any `format` that is not in [`STANDARD_FORMATS`], at any depth.
pub fn standard_formats_only(mut schema: Value) -> Value {
    each_schema(&mut schema, &mut |m| {
        if m.get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
        {
            m.remove("format");
        }
    });
    schema
}

/// An `inputSchema` for the model, titled `title` (see the module docs).
pub fn for_model(mut schema: Value, title: &str) -> Value {
    if let Value::Object(top) = &mut schema {
        top.remove("$schema");
        top.remove("description");
        top.insert("title".to_owned(), Value::String(title.to_owned()));
    }
    each_schema(&mut schema, &mut |m| {
        if let Some(Value::Array(types)) = m.get_mut("type") {
            types.retain(|t| t != "null");
            if let [only] = types.as_slice() {
                let only = only.clone();
                m.insert("type".to_owned(), only);
            }
        }
        if let Some(Value::Array(any)) = m.get_mut("anyOf") {
            any.retain(|s| s.get("type").is_none_or(|t| t != "null"));
            if let [only] = any.as_slice() {
                let only = only.clone();
                m.remove("anyOf");
                if let Value::Object(inner) = only {
                    m.extend(inner);
                }
            }
        }
    });
    standard_formats_only(schema)
}

/// An `outputSchema` for the client (see the module docs). A `type` array (a result field
/// that may be `null`, such as `next_cursor`) becomes an `anyOf` of one-type branches, the
/// spelling the MCP Inspector's portability check asks for.
pub fn for_client(mut schema: Value) -> Value {
    each_schema(&mut schema, &mut |m| {
        for prose in ["title", "description", "examples"] {
            m.remove(prose);
        }
        if m.contains_key("anyOf") || !m.get("type").is_some_and(Value::is_array) {
            return;
        }
        if let Some(Value::Array(types)) = m.remove("type") {
            let branches = types.into_iter().map(|t| json!({"type": t})).collect();
            m.insert("anyOf".to_owned(), Value::Array(branches));
        }
    });
    standard_formats_only(schema)
}

#[cfg(test)]
mod tests;
