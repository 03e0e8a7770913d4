//! Caller text inside a confirmation question, quoted and clipped (ARCHITECTURE pitfall 33,
//! SPEC §5b).
//!
//! The question is the gateway's; only the reason is the model's, and the person must see
//! where it starts and ends. So [`quote`] puts it between `“` and `”` after making it one
//! plain line:
//! - every control character (general category `Cc`: newlines, tabs, escapes) and every
//!   whitespace run becomes one space, so the text cannot start a line of its own;
//! - every format character (`Cf`: bidirectional overrides and isolates, zero-width joiners)
//!   and every `Default_Ignorable_Code_Point` is dropped, from Unicode's data
//!   (`icu_properties`), so the text cannot reorder or hide what surrounds it;
//! - `“` and `”` inside become `"`, so the text cannot close the quote and go on as if the
//!   gateway spoke;
//! - at most [`QUOTE_MAX_CHARS`] characters are kept, then `…`.
//!
//! The tool's own argument check already refuses control characters; this holds without it.

use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory};
use icu_properties::{CodePointMapData, CodePointSetData};

/// Most characters of caller text a question quotes (before the closing `…`).
pub const QUOTE_MAX_CHARS: usize = 120;

/// `text` as one plain line between `“` and `”`, clipped (module docs).
///
/// ```
/// use mcp_gateway::confirm::quote::quote;
/// assert_eq!(quote("charged\ntwice"), "“charged twice”");
/// assert_eq!(quote("a\u{202E}b”c"), "“ab\"c”");
/// ```
pub fn quote(text: &str) -> String {
    let mut out = String::from('“');
    let mut kept = 0;
    let mut space = false;
    for c in text.chars() {
        if is_hidden(c) {
            continue;
        }
        if c.is_whitespace() || c.is_control() {
            space = kept > 0;
            continue;
        }
        // A space is written only before a character that follows it, so none dangles at
        // either end or before the ellipsis.
        let needed = kept + usize::from(space) + 1;
        if needed > QUOTE_MAX_CHARS {
            out.push('…');
            break;
        }
        if space {
            out.push(' ');
            kept += 1;
            space = false;
        }
        out.push(if matches!(c, '“' | '”') { '"' } else { c });
        kept += 1;
    }
    out.push('”');
    out
}

/// Whether `c` is dropped: a format character or a default-ignorable code point.
fn is_hidden(c: char) -> bool {
    CodePointMapData::<GeneralCategory>::new().get(c) == GeneralCategory::Format
        || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_tabs_and_runs_of_spaces_become_one_space_and_the_ends_are_trimmed() {
        assert_eq!(
            quote("  charged\r\n\ttwice \u{2028} today  "),
            "“charged twice today”"
        );
        assert_eq!(quote("\u{1b}[2Jcleared"), "“[2Jcleared”");
    }

    #[test]
    fn bidi_controls_and_invisible_characters_are_dropped() {
        // RLO, RLI, PDI, ZWSP, ZWJ, word joiner, soft hyphen, BOM.
        let text = "a\u{202E}b\u{2067}c\u{2069}d\u{200B}e\u{200D}f\u{2060}g\u{AD}h\u{FEFF}i";
        assert_eq!(quote(text), "“abcdefghi”");
    }

    #[test]
    fn the_text_cannot_close_the_quote() {
        assert_eq!(
            quote("x” and approve everything “y"),
            "“x\" and approve everything \"y”"
        );
    }

    #[test]
    fn long_text_is_clipped_to_the_bound_with_an_ellipsis() {
        let long = "é".repeat(500);
        let q = quote(&long);
        assert_eq!(q.chars().count(), QUOTE_MAX_CHARS + 3, "{q}");
        assert!(q.ends_with("…”"), "{q}");
        let exact = "x".repeat(QUOTE_MAX_CHARS);
        assert_eq!(quote(&exact), format!("“{exact}”"));
        // A space at the bound is not kept dangling before the ellipsis.
        let xs = "x".repeat(QUOTE_MAX_CHARS - 1);
        assert_eq!(quote(&format!("{xs} y")), format!("“{xs}…”"));
    }

    #[test]
    fn empty_or_invisible_text_quotes_as_empty() {
        assert_eq!(quote(""), "“”");
        assert_eq!(quote(" \n\u{200B} "), "“”");
    }
}
