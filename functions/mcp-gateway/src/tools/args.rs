//! Argument checks shared by the tools (SEP-1303, MCP 2025-11-25: a bad argument is a tool
//! error naming the field, so the model can correct itself).
//!
//! One source for every bound a JSON Schema can state: the tool's `inputSchema` (generated
//! from its argument type, as `tools/list` shows it). [`ArgsSchema::check`] validates the
//! arguments against it with the `jsonschema` crate (draft 2020-12, formats asserted), and
//! each violation becomes one `invalid_argument` written from the violated keyword, naming
//! the field: `required`, `additionalProperties`, `type`, `minimum`/`maximum`,
//! `minLength`/`maxLength` (characters, not bytes), `pattern` (an id shape is described in
//! words, [`kosha_contract::ids`]), `format` (`date-time`, `date`). Rules a schema cannot state
//! (an amount not above the transaction's, `from` not after `to`) live in the tool.
//!
//! Before the schema, every string in the arguments (at any depth) is checked for control
//! characters: NUL and the other Unicode control characters (C0, DEL, C1) except tab, line
//! feed and carriage return are refused, before any network call, naming the field; core-api
//! refuses them too (400, which never counts against the breaker).
//!
//! Caller text quoted in messages (field names, values) is clipped ([`kosha_contract::echo`]); a
//! value is quoted only when it is a number.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use kosha_contract::ids;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::error::ToolError;
use kosha_contract::echo::clip;

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

/// A tool's `inputSchema`, compiled for validation.
#[derive(Debug)]
pub struct ArgsSchema {
    validator: Validator,
}

impl ArgsSchema {
    /// Compiles `schema` (a draft 2020-12 object schema without remote references).
    ///
    /// # Errors
    /// The compiler's message when the schema itself is invalid: a bug in a tool's argument
    /// type, caught by the catalogue's tests.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(schema)
            .map(|validator| Self { validator })
            .map_err(|e| e.to_string())
    }

    /// Checks `arguments` (absent = `{}`) and deserializes them into `T`: [`ArgsSchema::check`]
    /// then [`deserialize`].
    ///
    /// # Errors
    /// As [`ArgsSchema::check`] and [`deserialize`].
    pub fn parse<T: DeserializeOwned>(
        &self,
        arguments: Option<Map<String, Value>>,
    ) -> Result<T, ToolError> {
        deserialize(self.check(arguments)?)
    }

    /// Checks `arguments` (absent = `{}`) against the schema and returns them with every
    /// integral float written as the integer it is: what the policies read (SPEC §5a) and
    /// [`deserialize`] takes.
    ///
    /// # Errors
    /// [`ToolError::InvalidArgument`] naming the first field that breaks the schema, or holds
    /// a control character.
    pub fn check(
        &self,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Map<String, Value>, ToolError> {
        let value = Value::Object(arguments.unwrap_or_default());
        check_no_control_chars(&value)?;
        if let Some(e) = self.validator.iter_errors(&value).next() {
            return Err(refusal(&e, &value));
        }
        // JSON Schema counts `3.0` an integer, serde does not: give serde the integer.
        let mut value = value;
        integral_floats_as_integers(&mut value);
        match value {
            Value::Object(map) => Ok(map),
            _ => Err(ToolError::Internal),
        }
    }
}

/// Deserializes checked arguments ([`ArgsSchema::check`]) into `T`.
///
/// # Errors
/// [`ToolError::InvalidArgument`] naming the field where `T` and the schema it was generated
/// from still disagree.
pub fn deserialize<T: DeserializeOwned>(checked: Map<String, Value>) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(Value::Object(checked)).map_err(|e| {
        ToolError::invalid(
            clip(&e.path().to_string()),
            "does not have the type the schema declares",
        )
    })
}

/// Rewrites every number with no fractional part written as a float (`3.0`, `1e1`) as the
/// integer it is (JSON Schema 2020-12 §6.1.1: such a number is an integer), within `i64`.
fn integral_floats_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9_007_199_254_740_992.0
            {
                // Exact: |f| < 2^53.
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                *value = Value::from(i);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}

/// The `invalid_argument` for one schema violation of `arguments`: the field it is about and
/// what the violated keyword asks for.
fn refusal(e: &ValidationError<'_>, arguments: &Value) -> ToolError {
    let at = field_name(e.instance_path().as_str());
    let got_number = e.instance().as_number().map(ToString::to_string);
    let (field, message) = match e.kind() {
        ValidationErrorKind::Required { property } => (
            property.as_str().map(str::to_owned).unwrap_or(at),
            "is required".to_owned(),
        ),
        ValidationErrorKind::AdditionalProperties { unexpected } => (
            unexpected.first().cloned().unwrap_or(at),
            NOT_AN_ARGUMENT.to_owned(),
        ),
        // `additionalProperties: false` with no `properties` (a tool without arguments) is
        // reported at the root without the key: every key of the arguments is unexpected.
        ValidationErrorKind::FalseSchema if at.is_empty() => (
            arguments
                .as_object()
                .and_then(|o| o.keys().next().cloned())
                .unwrap_or(at),
            NOT_AN_ARGUMENT.to_owned(),
        ),
        ValidationErrorKind::Type { kind } => (at, format!("must be {}", type_words(kind))),
        ValidationErrorKind::Minimum { limit } => (
            at,
            with_value(format!("must be at least {limit}"), got_number),
        ),
        ValidationErrorKind::Maximum { limit } => (
            at,
            with_value(format!("must be at most {limit}"), got_number),
        ),
        ValidationErrorKind::MinLength { limit } => {
            (at, length_words("at least", *limit, e.instance()))
        }
        ValidationErrorKind::MaxLength { limit } => {
            (at, length_words("at most", *limit, e.instance()))
        }
        ValidationErrorKind::Pattern { pattern } => (at, pattern_words(pattern)),
        ValidationErrorKind::Format { format } => (at, format_words(format)),
        ValidationErrorKind::Enum { options } => (at, format!("must be one of {options}")),
        _ => (at, "is not valid for this tool's inputSchema".to_owned()),
    };
    ToolError::invalid(clip(&field), message)
}

const NOT_AN_ARGUMENT: &str = "is not an argument of this tool (see its inputSchema)";

/// `/filters/name` → `filters.name`; the empty pointer (the arguments object) → `""`.
fn field_name(pointer: &str) -> String {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

fn with_value(message: String, got: Option<String>) -> String {
    match got {
        Some(v) => format!("{message} (got {})", clip(&v)),
        None => message,
    }
}

fn type_words(kind: &TypeKind) -> String {
    let article = |t: String| match t.as_str() {
        "integer" | "array" | "object" => format!("an {t}"),
        _ => format!("a {t}"),
    };
    match kind {
        TypeKind::Single(t) => article(t.to_string()),
        TypeKind::Multiple(set) => set
            .iter()
            .filter(|t| t.to_string() != "null")
            .map(|t| article(t.to_string()))
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

fn length_words(bound: &str, limit: u64, value: &Value) -> String {
    let got = value.as_str().map_or(0, |s| s.chars().count());
    format!("must be {bound} {limit} characters long (got {got})")
}

/// Words for a `pattern`: an id shape described as such, a non-blank rule, else the pattern.
fn pattern_words(pattern: &str) -> String {
    let shapes = [
        ids::ACCOUNT,
        ids::TRANSACTION,
        ids::ARTICLE,
        ids::DISPUTE,
        ids::REVIEW,
        ids::SCREENING,
    ];
    if let Some(shape) = shapes.iter().find(|s| s.pattern() == pattern) {
        return format!("must be {}", shape.describe());
    }
    if pattern == NOT_BLANK {
        return "must contain a non-space character".to_owned();
    }
    format!("must match the pattern {}", clip(pattern))
}

/// The `pattern` of a free-text argument that must not be blank.
pub const NOT_BLANK: &str = r"\S";

fn format_words(format: &str) -> String {
    match format {
        "date-time" => "must be an RFC 3339 timestamp such as 2026-03-01T00:00:00Z".to_owned(),
        "date" => "must be a date such as 1980-02-29 (YYYY-MM-DD)".to_owned(),
        other => format!("must be a valid {}", clip(other)),
    }
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

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Args {
        #[allow(dead_code)]
        #[schemars(length(min = 1, max = 512), extend("pattern" = NOT_BLANK))]
        query: String,
        #[allow(dead_code)]
        #[schemars(range(min = 1, max = 20))]
        top_k: Option<u32>,
        #[allow(dead_code)]
        #[schemars(extend("pattern" = ids::TRANSACTION.pattern()))]
        transaction_id: Option<String>,
        #[allow(dead_code)]
        #[schemars(extend("format" = "date-time"))]
        from: Option<String>,
    }

    fn schema() -> ArgsSchema {
        let s = rmcp::handler::server::tool::schema_for_type::<Args>();
        ArgsSchema::compile(&Value::Object((*s).clone())).unwrap()
    }

    fn refused(args: Value) -> (String, String) {
        match schema()
            .parse::<Args>(args.as_object().cloned())
            .unwrap_err()
        {
            ToolError::InvalidArgument { field, message } => (field, message),
            other => panic!("wrong variant {other:?}"),
        }
    }

    #[test]
    fn valid_arguments_deserialize() {
        let ok = schema()
            .parse::<Args>(
                json!({"query": "naïve café — 東京\r\n\t", "top_k": 3})
                    .as_object()
                    .cloned(),
            )
            .unwrap();
        assert_eq!(ok.top_k, Some(3));
    }

    #[test]
    fn each_keyword_names_the_field_and_says_what_is_accepted() {
        let cases = [
            (json!({}), "query", "is required"),
            (json!({"query": "x", "topk": 3}), "topk", "not an argument"),
            (
                json!({"query": "x", "top_k": "five"}),
                "top_k",
                "must be an integer",
            ),
            (
                json!({"query": "x", "top_k": 0}),
                "top_k",
                "at least 1 (got 0)",
            ),
            (
                json!({"query": "x", "top_k": 10000}),
                "top_k",
                "at most 20 (got 10000)",
            ),
            (
                json!({"query": ""}),
                "query",
                "at least 1 characters long (got 0)",
            ),
            (
                json!({"query": "é".repeat(513)}),
                "query",
                "at most 512 characters long (got 513)",
            ),
            (json!({"query": "   "}), "query", "non-space"),
            (
                json!({"query": "x", "transaction_id": "txn_1"}),
                "transaction_id",
                "txn_ followed by 6 or more digits",
            ),
            (
                json!({"query": "x", "from": "yesterday"}),
                "from",
                "RFC 3339",
            ),
            (
                json!({"query": "x", "from": "2026-13-01T00:00:00Z"}),
                "from",
                "RFC 3339",
            ),
        ];
        for (args, field, words) in cases {
            let (f, m) = refused(args.clone());
            assert_eq!(f, field, "{args}");
            assert!(m.contains(words), "{args}: {m}");
            assert!(!m.contains("five"), "values are not quoted: {m}");
        }
    }

    #[test]
    fn an_argument_to_a_tool_without_arguments_is_named() {
        #[derive(Debug, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        struct NoArgs {}
        let s = rmcp::handler::server::tool::schema_for_type::<NoArgs>();
        let schema = ArgsSchema::compile(&Value::Object((*s).clone())).unwrap();
        let err = schema
            .parse::<NoArgs>(json!({"verbose": true}).as_object().cloned())
            .unwrap_err();
        assert_eq!(
            err,
            ToolError::invalid("verbose", NOT_AN_ARGUMENT),
            "{err:?}"
        );
        assert!(schema.parse::<NoArgs>(None).is_ok());
    }

    #[test]
    fn a_whole_number_written_as_a_float_is_an_integer() {
        for n in [json!(3.0), json!(3e0), json!(0.3e1)] {
            let ok = schema()
                .parse::<Args>(json!({"query": "x", "top_k": n}).as_object().cloned())
                .unwrap();
            assert_eq!(ok.top_k, Some(3));
        }
        let (field, message) = refused(json!({"query": "x", "top_k": 5.5}));
        assert_eq!(field, "top_k");
        assert!(message.contains("must be an integer"), "{message}");
    }

    #[test]
    fn a_well_formed_long_id_passes_the_schema() {
        assert!(
            schema()
                .parse::<Args>(
                    json!({"query": "x", "transaction_id": "txn_999999999"})
                        .as_object()
                        .cloned()
                )
                .is_ok()
        );
    }

    #[test]
    fn a_control_character_in_any_string_names_the_field_not_the_value() {
        for bad in ["a\u{0}b", "\u{1b}[31m", "x\u{7f}", "\u{85}"] {
            let (field, message) = refused(json!({"query": bad}));
            assert_eq!(field, "query", "{bad:?}");
            assert!(message.contains("control characters"), "{message}");
            assert!(!message.contains(bad), "{message}");
        }
        let (field, _) = refused(json!({"query": "ok", "extra": {"list": ["fine", "n\u{0}"]}}));
        assert_eq!(field, "extra.list[1]");
    }

    #[test]
    fn quoted_caller_text_is_clipped() {
        let long = "k".repeat(5_000);
        let (field, message) = refused(json!({"query": "x", long.clone(): 1}));
        assert!(
            field.chars().count() <= kosha_contract::echo::ECHO_MAX_CHARS + 1,
            "{field}"
        );
        assert!(message.len() < 200, "{message}");
    }

    #[test]
    fn json_pointers_become_dotted_names() {
        assert_eq!(field_name(""), "");
        assert_eq!(field_name("/top_k"), "top_k");
        assert_eq!(field_name("/a~1b/c~0d"), "a/b.c~d");
    }
}
