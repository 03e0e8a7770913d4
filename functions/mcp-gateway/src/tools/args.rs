//! Argument parsing and validation shared by the tools (SEP-1303, MCP 2025-11-25: a bad
//! argument is a tool error naming the field, so the model can correct itself).
//!
//! Parsing goes through `serde_path_to_error`, so a type error names its path (`top_k`), and
//! every argument type denies unknown fields. Range and pattern checks live beside each
//! argument type and mirror the bounds its `inputSchema` declares.
//!
//! Before any of that, every string in the arguments (at any depth) is checked for control
//! characters: NUL and the other Unicode control characters (C0, DEL, C1) except tab, line
//! feed and carriage return are refused, before any network call, with one uniform
//! `invalid_argument` naming the field; this also covers values core-api does not check
//! itself (the opaque `cursor`). core-api refuses them too (400, which never counts against
//! the breaker).
//! Caller text quoted in messages (field names, values) is clipped ([`crate::echo`]).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::ToolError;
use crate::echo::{clip, clip_serde_message};

/// A key that appears twice at the top level of a `tools/call`'s `arguments`, found by the
/// HTTP edge in the raw body (the parsed arguments keep only the last value) and put into the
/// request extensions for [`DuplicateArgument::refusal`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateArgument(pub String);

impl DuplicateArgument {
    /// The tool error for it: `invalid_argument` naming the key (clipped).
    pub fn refusal(&self) -> ToolError {
        ToolError::invalid(clip(&self.0), "appears more than once in the arguments")
    }
}

/// Deserializes `arguments` (absent = `{}`) into `T`, naming the offending field on error.
///
/// # Errors
/// [`ToolError::InvalidArgument`] for a string with a control character, a missing field, a
/// wrong type, or an unknown field.
pub fn parse<T: DeserializeOwned>(arguments: Option<Map<String, Value>>) -> Result<T, ToolError> {
    let value = Value::Object(arguments.unwrap_or_default());
    check_no_control_chars(&value)?;
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let message = plain_types(&clip_serde_message(strip_position(&inner)));
        match missing_or_unknown_field(&inner) {
            Some(field) => ToolError::invalid(clip(field), message),
            None if path == "." => ToolError::invalid("", message),
            None => ToolError::invalid(clip(&path), message),
        }
    })
}

/// Whether `c` may appear in a string argument: anything but a control character, except
/// tab, line feed and carriage return.
fn allowed_char(c: char) -> bool {
    !c.is_control() || matches!(c, '\t' | '\n' | '\r')
}

/// Refuses the first string in `value` holding a character [`allowed_char`] refuses, naming
/// its path (`query`, `filters.name`, `ids[2]`) and the character's code point, never the value.
fn check_no_control_chars(value: &Value) -> Result<(), ToolError> {
    fn walk(value: &Value, path: &mut String) -> Option<char> {
        match value {
            Value::String(s) => s.chars().find(|&c| !allowed_char(c)),
            Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = walk(v, path);
                if found.is_none() {
                    path.truncate(len);
                }
                found
            }),
            Value::Object(map) => map.iter().find_map(|(k, v)| {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                let found = walk(v, path);
                if found.is_none() {
                    path.truncate(len);
                }
                found
            }),
            Value::Null | Value::Bool(_) | Value::Number(_) => None,
        }
    }
    let mut path = String::new();
    match walk(value, &mut path) {
        None => Ok(()),
        Some(c) => Err(ToolError::invalid(
            clip(&path),
            format!(
                "must not contain control characters (found U+{:04X}); only tab, line feed \
                 and carriage return are allowed",
                u32::from(c)
            ),
        )),
    }
}

/// serde names Rust types ("expected u32"); a model reads JSON Schema types. Rewrites the
/// trailing `expected <rust type>` of a serde message into the JSON type.
fn plain_types(message: &str) -> String {
    const PLAIN: [(&str, &str); 12] = [
        ("u8", "a non-negative integer"),
        ("u16", "a non-negative integer"),
        ("u32", "a non-negative integer"),
        ("u64", "a non-negative integer"),
        ("usize", "a non-negative integer"),
        ("i8", "an integer"),
        ("i16", "an integer"),
        ("i32", "an integer"),
        ("i64", "an integer"),
        ("isize", "an integer"),
        ("f32", "a number"),
        ("f64", "a number"),
    ];
    if let Some(at) = message.rfind(", expected ") {
        let (head, tail) = message.split_at(at);
        let rust = &tail[", expected ".len()..];
        if let Some((_, plain)) = PLAIN.iter().find(|(r, _)| *r == rust) {
            return format!("{head}, expected {plain}");
        }
    }
    message.to_owned()
}

/// serde_json appends " at line 1 column 42" to messages; the model gains nothing from it.
fn strip_position(message: &str) -> &str {
    message.find(" at line ").map_or(message, |i| &message[..i])
}

/// For "missing field `x`" and "unknown field `x`, expected ..." the field is in the message.
fn missing_or_unknown_field(message: &str) -> Option<&str> {
    let rest = message
        .strip_prefix("missing field `")
        .or_else(|| message.strip_prefix("unknown field `"))?;
    rest.split('`').next()
}

/// Checks that `value` has between `min` and `max` characters (Unicode scalar values).
///
/// # Errors
/// [`ToolError::InvalidArgument`] naming `field`.
pub fn check_chars(field: &str, value: &str, min: usize, max: usize) -> Result<(), ToolError> {
    let n = value.chars().count();
    if n < min || n > max {
        return Err(ToolError::invalid(
            field,
            format!("must be {min} to {max} characters long (got {n})"),
        ));
    }
    Ok(())
}

/// Checks `min <= value <= max`.
///
/// # Errors
/// [`ToolError::InvalidArgument`] naming `field`.
pub fn check_range(field: &str, value: i64, min: i64, max: i64) -> Result<(), ToolError> {
    if value < min || value > max {
        return Err(ToolError::invalid(
            field,
            format!("must be between {min} and {max} (got {value})"),
        ));
    }
    Ok(())
}

/// Checks that `value` is `prefix` followed by exactly `digits` ASCII digits (`txn_000001`).
///
/// # Errors
/// [`ToolError::InvalidArgument`] naming `field` and the expected form.
pub fn check_id(field: &str, value: &str, prefix: &str, digits: usize) -> Result<(), ToolError> {
    let ok = value
        .strip_prefix(prefix)
        .is_some_and(|rest| rest.len() == digits && rest.bytes().all(|b| b.is_ascii_digit()));
    if !ok {
        return Err(ToolError::invalid(
            field,
            format!("must look like {prefix}{} ", "0".repeat(digits))
                .trim_end()
                .to_owned(),
        ));
    }
    Ok(())
}

/// Checks an RFC 3339 timestamp (`2026-03-01T00:00:00Z`) and returns it normalised to UTC.
///
/// # Errors
/// [`ToolError::InvalidArgument`] naming `field`.
pub fn check_timestamp(field: &str, value: &str) -> Result<time::OffsetDateTime, ToolError> {
    time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339)
        .map(|t| t.to_offset(time::UtcOffset::UTC))
        .map_err(|_| {
            ToolError::invalid(
                field,
                "must be an RFC 3339 timestamp such as 2026-03-01T00:00:00Z",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Args {
        #[allow(dead_code)]
        query: String,
        #[allow(dead_code)]
        top_k: Option<u32>,
    }

    fn obj(v: Value) -> Option<Map<String, Value>> {
        v.as_object().cloned()
    }

    #[test]
    fn wrong_type_names_the_field() {
        let e = parse::<Args>(obj(json!({"query": "x", "top_k": "five"}))).unwrap_err();
        let ToolError::InvalidArgument { field, message } = e else {
            panic!("wrong variant")
        };
        assert_eq!(field, "top_k");
        assert!(message.contains("invalid type"), "{message}");
        assert!(!message.contains("line"), "{message}");
        assert!(
            message.ends_with("expected a non-negative integer"),
            "JSON types, not Rust's: {message}"
        );
        let e = parse::<Args>(obj(json!({"query": "x", "top_k": -1}))).unwrap_err();
        let ToolError::InvalidArgument { message, .. } = e else {
            panic!("wrong variant")
        };
        assert!(!message.contains("u32"), "{message}");
    }

    #[test]
    fn only_a_trailing_rust_type_is_rewritten() {
        assert_eq!(
            plain_types("invalid type: string \"x\", expected i64"),
            "invalid type: string \"x\", expected an integer"
        );
        assert_eq!(
            plain_types("invalid type: integer `1`, expected a string"),
            "invalid type: integer `1`, expected a string"
        );
        assert_eq!(
            plain_types("missing field `query`"),
            "missing field `query`"
        );
    }

    #[test]
    fn missing_field_is_named() {
        let e = parse::<Args>(None).unwrap_err();
        assert_eq!(e, ToolError::invalid("query", "missing field `query`"));
    }

    #[test]
    fn unknown_field_is_named() {
        let e = parse::<Args>(obj(json!({"query": "x", "topk": 3}))).unwrap_err();
        let ToolError::InvalidArgument { field, .. } = e else {
            panic!("wrong variant")
        };
        assert_eq!(field, "topk");
    }

    #[test]
    fn negative_for_unsigned_names_the_field() {
        let e = parse::<Args>(obj(json!({"query": "x", "top_k": -1}))).unwrap_err();
        assert!(matches!(e, ToolError::InvalidArgument { ref field, .. } if field == "top_k"));
    }

    #[test]
    fn a_control_character_in_any_string_names_the_field_not_the_value() {
        for bad in ["a\u{0}b", "\u{1b}[31m", "x\u{7f}", "\u{85}"] {
            let e = parse::<Args>(obj(json!({"query": bad}))).unwrap_err();
            let ToolError::InvalidArgument { field, message } = e else {
                panic!("wrong variant")
            };
            assert_eq!(field, "query", "{bad:?}");
            assert!(message.contains("control characters"), "{message}");
            assert!(!message.contains(bad), "{message}");
        }
        let e = parse::<Args>(obj(
            json!({"query": "ok", "extra": {"list": ["fine", "n\u{0}"]}}),
        ))
        .unwrap_err();
        assert!(
            matches!(e, ToolError::InvalidArgument { ref field, .. } if field == "extra.list[1]")
        );
    }

    #[test]
    fn tab_newline_and_carriage_return_are_allowed() {
        assert!(parse::<Args>(obj(json!({"query": "line one\r\n\tline two"}))).is_ok());
        assert!(parse::<Args>(obj(json!({"query": "naïve café — 東京"}))).is_ok());
    }

    #[test]
    fn quoted_caller_text_is_clipped() {
        let long = "k".repeat(5_000);
        let e = parse::<Args>(obj(json!({"query": "x", long.clone(): 1}))).unwrap_err();
        let ToolError::InvalidArgument { field, message } = e else {
            panic!("wrong variant")
        };
        assert!(
            field.chars().count() <= crate::echo::ECHO_MAX_CHARS + 1,
            "{field}"
        );
        assert!(message.len() < 200, "{message}");
        let e = parse::<Args>(obj(json!({"query": "x", "top_k": long}))).unwrap_err();
        assert!(e.to_string().len() < 200, "{e}");
    }

    #[test]
    fn ids_are_checked_exactly() {
        assert!(check_id("transaction_id", "txn_000001", "txn_", 6).is_ok());
        for bad in [
            "txn_1",
            "txn_0000011",
            "TXN_000001",
            "txn_00000a",
            "",
            "txn_000001'--",
        ] {
            assert!(check_id("transaction_id", bad, "txn_", 6).is_err(), "{bad}");
        }
    }

    #[test]
    fn char_bounds_count_characters_not_bytes() {
        assert!(check_chars("query", "é", 1, 1).is_ok());
        assert!(check_chars("query", "", 1, 512).is_err());
    }

    #[test]
    fn timestamps_must_be_rfc3339() {
        assert!(check_timestamp("from", "2026-03-01T00:00:00Z").is_ok());
        assert!(check_timestamp("from", "2026-03-01T02:00:00+02:00").is_ok());
        assert!(check_timestamp("from", "2026-03-01").is_err());
        assert!(check_timestamp("from", "yesterday").is_err());
    }
}
