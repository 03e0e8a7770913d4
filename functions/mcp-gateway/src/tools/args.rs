//! Argument parsing and validation shared by the tools (SEP-1303, MCP 2025-11-25: a bad
//! argument is a tool error naming the field, so the model can correct itself).
//!
//! Parsing goes through `serde_path_to_error`, so a type error names its path (`top_k`), and
//! every argument type denies unknown fields. Range and pattern checks live beside each
//! argument type and mirror the bounds its `inputSchema` declares.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::ToolError;

/// Deserializes `arguments` (absent = `{}`) into `T`, naming the offending field on error.
///
/// # Errors
/// [`ToolError::InvalidArgument`] for a missing field, a wrong type, or an unknown field.
pub fn parse<T: DeserializeOwned>(arguments: Option<Map<String, Value>>) -> Result<T, ToolError> {
    let value = Value::Object(arguments.unwrap_or_default());
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let message = strip_position(&inner);
        match missing_or_unknown_field(message) {
            Some(field) => ToolError::invalid(field, message),
            None if path == "." => ToolError::invalid("", message),
            None => ToolError::invalid(path, message),
        }
    })
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
