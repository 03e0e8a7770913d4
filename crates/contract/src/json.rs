//! One bounded parse of a JSON request body, for every function that takes JSON from a caller
//! (the gateway's JSON-RPC messages, SPEC §3; core-api's request bodies, SPEC §4).
//!
//! - **What:** [`parse`] reads the body once into a [`serde_json::Value`], and while it does,
//!   (1) bounds what the document may hold ([`Limits`]: nesting depth, keys per object, total
//!   values), so a 1 MiB body of 90,000 keys costs a counter, not a 90,000-entry map and every
//!   later walk over it; and (2) finds duplicate object keys (RFC 8259 §4: names SHOULD be
//!   unique; `Value` would silently keep the last), compared decoded (`"i\u0064"` is `"id"`),
//!   in the objects the caller asks about ([`Watch`]).
//! - **Returns:** the value and one duplicate in a watched object: the first in document
//!   order among those in the shallowest object that has one ([`Parsed`]; a duplicate the
//!   caller would refuse is not hidden behind an earlier one it would let pass), or a [`Fault`]: `Syntax` (not JSON up to where it was read; serde_json's
//!   message, which names a position and never input text), `Limit` (JSON up to the value
//!   that broke a bound: the parse stops there and the rest of the body is never read, so a
//!   refused body costs what its first 10,000 values cost, not what its megabyte does: a
//!   1 MiB body of 400,000 values cost 6.8 ms of CPU to scan to its end, release build), or
//!   `Unrepresentable` (JSON serde_json cannot hold: a number beyond `f64`, `1e400`).
//! - **Neighbours:** the gateway's envelope check and core-api's body extractor call it; what
//!   a duplicate means (refused, or reported to the tool) is theirs to decide.
//!
//! Kept free of HTTP and AWS crates so a fuzz target builds in seconds.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Bounds on one document. Every value (object, array, string, number, `true`, `false`,
/// `null`) counts as one node; depth counts enclosing arrays and objects (a bare scalar is at
/// depth 0, the members of the top object at depth 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most arrays and objects one value may sit inside.
    pub max_depth: usize,
    /// Most keys one object may hold.
    pub max_keys: usize,
    /// Most values in the whole document.
    pub max_nodes: usize,
}

impl Limits {
    /// The bounds of a request body (SPEC §3, §4): depth 32, 256 keys per object, 10,000
    /// values. A tool call's arguments are a few dozen values; serde_json's own recursion limit
    /// (128) is never reached first.
    pub const REQUEST: Self = Self {
        max_depth: 32,
        max_keys: 256,
        max_nodes: 10_000,
    };
}

/// Which bound a document broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Nested deeper than [`Limits::max_depth`].
    Depth(usize),
    /// An object with more than [`Limits::max_keys`] keys.
    Keys(usize),
    /// More than [`Limits::max_nodes`] values.
    Nodes(usize),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Depth(n) => write!(f, "the JSON nests deeper than {n} levels"),
            Self::Keys(n) => write!(f, "a JSON object holds more than {n} keys"),
            Self::Nodes(n) => write!(f, "the JSON holds more than {n} values"),
        }
    }
}

/// Why [`parse`] returned no value.
#[derive(Debug)]
pub enum Fault {
    /// Not JSON (nor UTF-8, nor a valid `\u` escape): serde_json's error, with its position.
    Syntax(serde_json::Error),
    /// JSON, but over a bound.
    Limit(Limit),
    /// JSON that serde_json cannot hold (a number beyond `f64`).
    Unrepresentable,
}

/// One step from the document root to a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The member of an object under this key.
    Key(String),
    /// An element of an array.
    Element,
}

/// The first key that appears twice in one watched object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The path from the root to the object holding it (empty: the top object).
    pub path: Vec<Step>,
    /// The key, decoded (not clipped: callers clip before quoting it).
    pub key: String,
}

impl Duplicate {
    /// Whether the object holding the key sits under exactly these keys from the root.
    pub fn is_under(&self, keys: &[&str]) -> bool {
        self.path.len() == keys.len()
            && self
                .path
                .iter()
                .zip(keys)
                .all(|(step, key)| matches!(step, Step::Key(k) if k == key))
    }
}

/// Which objects to look for duplicate keys in: given the path to an object, whether a
/// duplicate there is reported.
pub type Watch = fn(&[Step]) -> bool;

/// Every object.
pub fn watch_all(_: &[Step]) -> bool {
    true
}

/// The objects of a JSON-RPC message whose duplicate keys matter (SPEC §3): the message, its
/// `params`, and their `arguments`.
pub fn watch_jsonrpc(path: &[Step]) -> bool {
    match path {
        [] => true,
        [Step::Key(k)] => k == "params",
        [Step::Key(k), Step::Key(a)] => k == "params" && a == "arguments",
        _ => false,
    }
}

/// A parsed document.
#[derive(Debug)]
pub struct Parsed {
    /// The document.
    pub value: Value,
    /// A duplicate key in a watched object: of the shallowest such object, the first in
    /// document order.
    pub duplicate: Option<Duplicate>,
}

/// Parses `body` as one JSON document within `limits`, reporting the first duplicate key in
/// an object `watch` accepts.
///
/// # Errors
/// A [`Fault`], as described in the module docs.
pub fn parse(body: &[u8], limits: Limits, watch: Watch) -> Result<Parsed, Fault> {
    let state = State {
        limits,
        watch,
        nodes: Cell::new(0),
        broken: Cell::new(None),
        duplicate: RefCell::new(None),
        path: RefCell::new(Vec::new()),
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let result = Node {
        state: &state,
        depth: 0,
    }
    .deserialize(&mut de)
    .and_then(|value| de.end().map(|()| value));
    match (result, state.broken.get()) {
        // The error is the one the bound raised.
        (_, Some(limit)) => Err(Fault::Limit(limit)),
        (Ok(value), None) => Ok(Parsed {
            value,
            duplicate: state.duplicate.into_inner(),
        }),
        (Err(e), _) if e.to_string().starts_with("number out of range") && is_json(body) => {
            Err(Fault::Unrepresentable)
        }
        (Err(e), _) => Err(Fault::Syntax(e)),
    }
}

/// Whether `body` is syntactically JSON whatever its number sizes (the scan neither builds
/// numbers nor decodes strings).
fn is_json(body: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(body).is_ok()
}

/// What one parse shares across its nested values.
struct State {
    limits: Limits,
    watch: Watch,
    nodes: Cell<usize>,
    /// The bound broken, which stops the parse (its error unwinds the deserializer).
    broken: Cell<Option<Limit>>,
    duplicate: RefCell<Option<Duplicate>>,
    /// The path to the value being parsed.
    path: RefCell<Vec<Step>>,
}

impl State {
    /// Records `limit` and returns the error that stops the parse.
    fn break_limit<E: serde::de::Error>(&self, limit: Limit) -> E {
        self.broken.set(Some(limit));
        E::custom("over a bound")
    }

    /// Counts one value; the stopping error when that breaks the node bound.
    fn count<E: serde::de::Error>(&self) -> Result<(), E> {
        let n = self.nodes.get() + 1;
        self.nodes.set(n);
        if n > self.limits.max_nodes {
            return Err(self.break_limit(Limit::Nodes(self.limits.max_nodes)));
        }
        Ok(())
    }

    /// The stopping error when a container at `depth` is one level too deep.
    fn enter<E: serde::de::Error>(&self, depth: usize) -> Result<(), E> {
        if depth >= self.limits.max_depth {
            return Err(self.break_limit(Limit::Depth(self.limits.max_depth)));
        }
        Ok(())
    }
}

/// One value at `depth`.
#[derive(Clone, Copy)]
struct Node<'s> {
    state: &'s State,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.state.count()?;
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        self.state.enter(self.depth)?;
        loop {
            let state = self.state;
            let depth = self.depth + 1;
            state.path.borrow_mut().push(Step::Element);
            let next = seq.next_element_seed(Node { state, depth });
            state.path.borrow_mut().pop();
            match next? {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        self.state.enter(self.depth)?;
        let watched = (self.state.watch)(&self.state.path.borrow());
        while let Some(key) = map.next_key::<String>()? {
            if object.len() >= self.state.limits.max_keys {
                return Err(self
                    .state
                    .break_limit(Limit::Keys(self.state.limits.max_keys)));
            }
            let state = self.state;
            let depth = self.depth + 1;
            state.path.borrow_mut().push(Step::Key(key));
            let value = map.next_value_seed(Node { state, depth });
            let Some(Step::Key(key)) = state.path.borrow_mut().pop() else {
                return Ok(Value::Null);
            };
            let value = value?;
            if object.contains_key(&key) {
                let mut found = state.duplicate.borrow_mut();
                let depth = state.path.borrow().len();
                if watched && found.as_ref().is_none_or(|f| depth < f.path.len()) {
                    *found = Some(Duplicate {
                        path: state.path.borrow().clone(),
                        key: key.clone(),
                    });
                }
            }
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(body: &str) -> Option<Duplicate> {
        parse(body.as_bytes(), Limits::REQUEST, watch_jsonrpc)
            .expect(body)
            .duplicate
    }

    fn limit(body: &str, limits: Limits) -> Limit {
        match parse(body.as_bytes(), limits, watch_all) {
            Err(Fault::Limit(l)) => l,
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn parses_what_serde_json_parses() {
        for body in [
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping","params":{"a":[1,-2,3.5,"x",true,null,{}]}}"#,
            r#"[]"#,
            "\"\\ud83d\\ude00\"",
            "1e300",
            " null ",
        ] {
            let ours = parse(body.as_bytes(), Limits::REQUEST, watch_all)
                .expect(body)
                .value;
            let theirs: Value = serde_json::from_str(body).expect(body);
            assert_eq!(ours, theirs, "{body}");
        }
    }

    #[test]
    fn finds_the_first_duplicate_of_the_shallowest_watched_object_decoded() {
        let d = dup(r#"{"jsonrpc":"2.0","id":1,"i\u0064":2,"method":"ping"}"#).expect("dup");
        assert_eq!((d.path.as_slice(), d.key.as_str()), (&[][..], "id"));
        let d = dup(r#"{"params":{"arguments":{"q":"x","q":"y"}}}"#).expect("dup");
        assert!(d.is_under(&["params", "arguments"]));
        assert_eq!(d.key, "q");
        // An earlier duplicate deeper down does not hide one in the message or its params.
        let d = dup(r#"{"params":{"arguments":{"q":"x","q":"y"}},"id":1,"id":2}"#).expect("dup");
        assert_eq!((d.path.as_slice(), d.key.as_str()), (&[][..], "id"));
        let d = dup(r#"{"params":{"arguments":{"a":1,"a":2},"name":"x","name":"y","z":0,"z":1}}"#)
            .expect("dup");
        assert_eq!(d.path, vec![Step::Key("params".into())]);
        assert_eq!(d.key, "name");
        // Deeper objects and objects inside arrays are not watched here.
        assert_eq!(dup(r#"{"params":{"arguments":{"f":{"a":1,"a":2}}}}"#), None);
        assert_eq!(dup(r#"[{"a":1,"a":2}]"#), None);
        let all = parse(br#"{"a":[{"b":1,"b":2}]}"#, Limits::REQUEST, watch_all)
            .expect("json")
            .duplicate
            .expect("dup");
        assert_eq!(
            all.path,
            vec![Step::Key("a".into()), Step::Element],
            "{all:?}"
        );
    }

    #[test]
    fn each_bound_is_a_limit_fault_naming_it() {
        let small = Limits {
            max_depth: 3,
            max_keys: 2,
            max_nodes: 6,
        };
        assert_eq!(limit("[[[[1]]]]", small), Limit::Depth(3));
        assert_eq!(limit(r#"{"a":1,"b":2,"c":3}"#, small), Limit::Keys(2));
        assert_eq!(limit("[1,2,3,4,5,6]", small), Limit::Nodes(6));
        assert!(parse(b"[[[1]]]", small, watch_all).is_ok());
        assert!(parse(b"[1,2,3,4,5]", small, watch_all).is_ok());
        let keys = format!(
            "{{{}}}",
            (0..90_000)
                .map(|i| format!("\"k{i}\":0"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(limit(&keys, Limits::REQUEST), Limit::Keys(256));
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(limit(&deep, Limits::REQUEST), Limit::Depth(32));
    }

    #[test]
    fn the_parse_stops_at_the_bound_whatever_follows_and_a_fault_before_it_is_syntax() {
        // Attack pass of 2026-12-01 (commit 5152bfa): scanning a refused megabyte to its end cost 5-7 ms of CPU.
        let shallow = Limits {
            max_depth: 3,
            ..Limits::REQUEST
        };
        for body in [
            "[".repeat(200).as_bytes(),
            b"[[[[1]]]] x",
            b"[[[[\"\xff\"]]]]",
            b"[[[[ not json at all",
        ] {
            assert!(
                matches!(
                    parse(body, shallow, watch_all),
                    Err(Fault::Limit(Limit::Depth(3)))
                ),
                "{body:?}"
            );
        }
        for body in [&b"[[x"[..], b"[[\"\xff\"]]", b"[1,2] x"] {
            assert!(
                matches!(parse(body, shallow, watch_all), Err(Fault::Syntax(_))),
                "{body:?}"
            );
        }
    }

    #[test]
    fn numbers_beyond_f64_are_unrepresentable_and_bad_text_is_syntax() {
        assert!(matches!(
            parse(b"{\"n\":1e400}", Limits::REQUEST, watch_all),
            Err(Fault::Unrepresentable)
        ));
        for body in [
            &b"{\"n\":1e400"[..],
            b"",
            b"{}}",
            b"\"\\ud800\"",
            b"\"\xff\"",
        ] {
            assert!(
                matches!(
                    parse(body, Limits::REQUEST, watch_all),
                    Err(Fault::Syntax(_))
                ),
                "{body:?}"
            );
        }
    }
}
