//! Duplicate object keys in a JSON-RPC message (RFC 8259 §4: names SHOULD be unique; JSON-RPC
//! gives a message with two `id`s no meaning). `serde_json::Value` silently keeps the last of
//! two equal keys, and rmcp's types refuse them with a plain-text 415, so the edge looks for
//! them itself: in the message object, in its `params` object, and in the `arguments` object of
//! those params. Keys are compared decoded (`"i\u0064"` is `"id"`); values are skipped without
//! being built.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Which object held the duplicate key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The message object itself (`jsonrpc`, `id`, `method`, `params`, …).
    Envelope,
    /// The top level of `params`.
    Params,
    /// The top level of `params.arguments`.
    Arguments,
}

/// The first key that appears twice in one object, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The object holding it.
    pub place: Place,
    /// The key, decoded (not clipped: callers clip before quoting it).
    pub key: String,
}

/// The first duplicate key in `body`'s message, params or arguments object; `None` when there
/// is none, or when `body` is not a JSON object (the caller has parsed it already).
pub fn first_duplicate(body: &[u8]) -> Option<Duplicate> {
    let mut de = serde_json::Deserializer::from_slice(body);
    Object(Place::Envelope).deserialize(&mut de).ok().flatten()
}

/// Scans one value; when it is an object, reports its first duplicate key or the first found
/// in the object nested under it (`params`, then `arguments`).
#[derive(Clone, Copy)]
struct Object(Place);

impl Object {
    /// The nested object to scan under `key`, if any.
    fn nested(self, key: &str) -> Option<Object> {
        match (self.0, key) {
            (Place::Envelope, "params") => Some(Object(Place::Params)),
            (Place::Params, "arguments") => Some(Object(Place::Arguments)),
            _ => None,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Object {
    type Value = Option<Duplicate>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Object {
    type Value = Option<Duplicate>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = HashSet::new();
        let mut found = None;
        // Every entry is consumed, even after a find: the parser checks the closing brace.
        while let Some(key) = map.next_key::<String>()? {
            let inner = match self.nested(&key) {
                Some(seed) => map.next_value_seed(seed)?,
                None => map.next_value::<IgnoredAny>().map(|_| None)?,
            };
            if found.is_none() {
                found = if seen.contains(&key) {
                    Some(Duplicate { place: self.0, key })
                } else {
                    seen.insert(key);
                    inner
                };
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(body: &str) -> Option<(Place, String)> {
        first_duplicate(body.as_bytes()).map(|d| (d.place, d.key))
    }

    #[test]
    fn finds_the_first_duplicate_in_the_message_params_or_arguments() {
        let envelope = r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#;
        assert_eq!(dup(envelope), Some((Place::Envelope, "id".into())));
        let escaped = r#"{"jsonrpc":"2.0","id":1,"i\u0064":2,"method":"ping"}"#;
        assert_eq!(dup(escaped), Some((Place::Envelope, "id".into())));
        let params =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#;
        assert_eq!(dup(params), Some((Place::Params, "name".into())));
        let args = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"q":"x","top_k":1,"q":"y"}}}"#;
        assert_eq!(dup(args), Some((Place::Arguments, "q".into())));
        let first = r#"{"params":{"a":1,"a":2},"id":1,"id":2}"#;
        assert_eq!(dup(first), Some((Place::Params, "a".into())));
    }

    #[test]
    fn unique_keys_and_deeper_or_other_values_pass() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1,{"a":1,"a":2}]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{"f":{"a":1,"a":2}}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":[1,2],"meta":{"a":1,"a":2}}}"#,
            r#"{"result":{"a":1,"a":2},"id":1,"jsonrpc":"2.0"}"#,
            r#"[{"a":1,"a":2}]"#,
            "null",
        ] {
            assert_eq!(dup(body), None, "{body}");
        }
    }
}
