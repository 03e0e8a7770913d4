//! JSON Schema's `integer` (2020-12 validation §6.1.1: "any number with a zero fractional
//! part"), for the integer fields of request bodies: `5`, `5.0` and `5e0` are the same
//! integer, as the OpenAPI document and every tool's `inputSchema` promise. serde alone takes
//! only the first (an `i64` refuses a JSON float), so a client that writes `5.0` (Python's
//! `float`, a JSON Schema validator's idea of an integer) would get a 400 for a valid value.
//!
//! - [`integral`]: the `i64` a JSON number stands for, if it is a whole number in range.
//! - [`option`]: a serde `deserialize_with` for `Option<i64>` fields built on it.

use serde::{Deserialize, Deserializer, de};
use serde_json::Number;

/// `2^63` as an `f64`: the first whole number above `i64::MAX`.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// The integer `n` stands for: itself when serde_json holds it as an integer, else a finite
/// float with no fractional part within `i64` (`100.0`, `1e2`). `None` for `2.5`, `1e300`,
/// or an integer beyond `i64` (`u64` above `i64::MAX`).
pub fn integral(n: &Number) -> Option<i64> {
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    if n.is_u64() {
        return None;
    }
    let f = n.as_f64()?;
    if f.is_finite() && f.fract() == 0.0 && (-TWO_POW_63..TWO_POW_63).contains(&f) {
        // Whole and in range: the conversion is exact.
        #[allow(clippy::cast_possible_truncation)]
        Some(f as i64)
    } else {
        None
    }
}

/// `deserialize_with` for an `Option<i64>` body field: absent or `null` is `None`, any number
/// [`integral`] accepts is its integer, anything else an error ("expected an integer").
///
/// # Errors
/// A non-number, a fraction, or a number outside `i64`.
pub fn option<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    match Option::<Number>::deserialize(deserializer)? {
        None => Ok(None),
        Some(n) => integral(&n).map(Some).ok_or_else(|| {
            de::Error::invalid_value(de::Unexpected::Other("a number"), &"an integer in i64")
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn number(v: serde_json::Value) -> Number {
        match v {
            serde_json::Value::Number(n) => n,
            other => panic!("not a number: {other}"),
        }
    }

    #[test]
    fn whole_floats_are_integers_and_fractions_are_not() {
        assert_eq!(integral(&number(json!(5))), Some(5));
        assert_eq!(integral(&number(json!(5.0))), Some(5));
        assert_eq!(integral(&number(json!(-3.0))), Some(-3));
        assert_eq!(integral(&number(json!(1e2))), Some(100));
        assert_eq!(integral(&number(json!(2.5))), None);
        assert_eq!(integral(&number(json!(1e300))), None);
        assert_eq!(integral(&number(json!(u64::MAX))), None);
        assert_eq!(integral(&number(json!(9.3e18))), None);
        assert_eq!(integral(&number(json!(i64::MIN))), Some(i64::MIN));
        assert_eq!(integral(&number(json!(-(2f64.powi(63))))), Some(i64::MIN));
    }

    #[derive(Debug, serde::Deserialize)]
    struct Body {
        #[serde(default, deserialize_with = "option")]
        amount: Option<i64>,
    }

    #[test]
    fn the_deserializer_takes_absent_null_and_whole_numbers_only() {
        let read = |v| serde_json::from_value::<Body>(v).map(|b| b.amount);
        assert_eq!(read(json!({})).unwrap(), None);
        assert_eq!(read(json!({"amount": null})).unwrap(), None);
        assert_eq!(read(json!({"amount": 100.0})).unwrap(), Some(100));
        assert_eq!(read(json!({"amount": 7})).unwrap(), Some(7));
        assert!(read(json!({"amount": 1.5})).is_err());
        assert!(read(json!({"amount": "7"})).is_err());
        assert!(read(json!({"amount": 1e300})).is_err());
    }
}
