//! Canonical JSON (SPEC §4, §7): object keys sorted by their UTF-8 bytes, no insignificant
//! whitespace, strings and numbers as serde_json writes them. Two bodies that differ only in
//! key order or spacing have the same canonical text, so core-api hashes it to compare an
//! idempotency key's requests, and the gateway derives keys from it and binds a confirmation
//! to it (SPEC §5b).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// SHA-256 of the canonical text of `value`, 64 lowercase hex characters.
///
/// ```
/// use serde_json::json;
/// let a = kosha_contract::canonical::sha256_hex(&json!({"b": 1, "a": [true]}));
/// assert_eq!(a, kosha_contract::canonical::sha256_hex(&json!({"a": [true], "b": 1})));
/// assert_eq!(a.len(), 64);
/// ```
pub fn sha256_hex(value: &Value) -> String {
    hex::encode(Sha256::digest(to_string(value).as_bytes()))
}

/// The canonical text of `value`: `{"a":1,"b":[true,null]}`.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::to_string;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a: serde_json::Value =
            serde_json::from_str(r#"{ "b": [1, {"y": 2, "x": "é\n"}], "a": null }"#).unwrap();
        let b: serde_json::Value =
            serde_json::from_str(r#"{"a":null,"b":[1,{"x":"é\n","y":2}]}"#).unwrap();
        assert_eq!(to_string(&a), r#"{"a":null,"b":[1,{"x":"é\n","y":2}]}"#);
        assert_eq!(to_string(&a), to_string(&b));
    }

    #[test]
    fn different_values_differ() {
        let a = serde_json::json!({"amount_minor": 1});
        let b = serde_json::json!({"amount_minor": 2});
        assert_ne!(to_string(&a), to_string(&b));
    }
}
