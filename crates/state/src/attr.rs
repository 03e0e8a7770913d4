//! Typed reads of DynamoDB attribute values: `None` for a missing attribute or a wrong type.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

pub(crate) type Item = HashMap<String, AttributeValue>;

/// A string attribute.
pub(crate) fn s<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)?.as_s().ok().map(String::as_str)
}

/// A number attribute as an integer (a fractional value is refused).
pub(crate) fn n_i64(item: &Item, name: &str) -> Option<i64> {
    item.get(name)?.as_n().ok()?.trim().parse().ok()
}

/// A number attribute as a finite float.
pub(crate) fn n_f64(item: &Item, name: &str) -> Option<f64> {
    let v: f64 = item.get(name)?.as_n().ok()?.trim().parse().ok()?;
    v.is_finite().then_some(v)
}

/// A string value.
pub(crate) fn sv(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// A number value.
pub(crate) fn nv(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}
