//! Free-text inputs (the knowledge-base `query` now; dispute and review reasons later): checked
//! before any query so a value PostgreSQL cannot store is a 400 naming the field, not a 500.
//!
//! Refused: Unicode control characters (general category Cc: U+0000–U+001F, U+007F–U+009F)
//! except tab, line feed and carriage return, which are ordinary whitespace in text. NUL is the
//! one PostgreSQL itself rejects (SQLSTATE 22021); the others are refused alike because no
//! caller means them and they corrupt logs and terminals.

use crate::error::ApiError;

/// Checks that `value` holds no control characters other than `\t`, `\n` and `\r`.
///
/// # Errors
/// [`ApiError::InvalidArgument`] naming `field` and the first offending character's code point.
pub fn plain(field: &str, value: &str) -> Result<(), ApiError> {
    match value
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        None => Ok(()),
        Some(c) => Err(ApiError::invalid(format!(
            "{field} must not contain control characters (found U+{:04X})",
            u32::from(c)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn refuses_control_characters_naming_field_and_code_point() {
        for (bad, point) in [
            ("a\u{0}b", "U+0000"),
            ("\u{1b}[2J", "U+001B"),
            ("x\u{7f}", "U+007F"),
            ("x\u{85}", "U+0085"),
            ("x\u{9f}", "U+009F"),
        ] {
            let message = plain("query", bad).unwrap_err().to_string();
            assert!(message.contains("query"), "{bad:?}: {message}");
            assert!(message.contains(point), "{bad:?}: {message}");
        }
    }

    #[test]
    fn accepts_text_and_whitespace_controls() {
        for ok in [
            "chargeback",
            "stolen\tcard\r\nreport",
            "é ü 日本 🙂",
            "\u{a0}",
        ] {
            assert!(plain("query", ok).is_ok(), "{ok:?}");
        }
    }
}
