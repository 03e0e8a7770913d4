//! The display order of a name holding bidirectional controls (SPEC §4 "matched in the order
//! it is displayed (UAX #9) as well as in logical order"; issue 43, MEDIUM).
//!
//! - **What it looks at:** the explicit bidirectional formatting characters of UAX #9 §2
//!   (embeddings LRE/RLE, overrides LRO/RLO, their PDF, isolates LRI/RLI/FSI and their PDI),
//!   by their `Bidi_Class` from Unicode's data (`unicode-bidi`). Marks (LRM, RLM, ALM) are
//!   strong characters, not controls: they do not turn Latin letters around.
//! - **What it returns:** [`display_order`] gives, for a name holding at least one control,
//!   its characters in the order they are shown (UAX #9 rules X1–L2 per paragraph, by
//!   `unicode-bidi`'s `reorder_line`), when that differs from the logical order; `None`
//!   otherwise. `"\u{202E}vokiluK hciveeskelA siroB\u{202C}"` is shown, and so screened, as
//!   `Boris Alekseevich Kulikov`.
//! - **Neighbours:** the controls themselves stay in the text; the normaliser drops them as
//!   general category `Cf` ([`crate::normalize::is_ignorable`]). The matcher screens the
//!   logical order as well ([`crate::matching`]), so a control put into a name without
//!   reordering anything (issue #30) is still dropped as before.

use unicode_bidi::{BidiClass, BidiInfo, bidi_class};

/// Whether `c` is an explicit bidirectional formatting character (UAX #9 §2.1–2.5).
#[must_use]
pub fn is_bidi_control(c: char) -> bool {
    use BidiClass::{FSI, LRE, LRI, LRO, PDF, PDI, RLE, RLI, RLO};
    matches!(
        bidi_class(c),
        LRE | RLE | LRO | RLO | PDF | LRI | RLI | FSI | PDI
    )
}

/// `raw` in display order when it holds a bidirectional control and the order differs from
/// the logical one; `None` otherwise (the module doc).
#[must_use]
pub fn display_order(raw: &str) -> Option<String> {
    if !raw.chars().any(is_bidi_control) {
        return None;
    }
    let info = BidiInfo::new(raw, None);
    let shown: String = info
        .paragraphs
        .iter()
        .map(|para| info.reorder_line(para, para.range.clone()))
        .collect();
    (shown != raw).then_some(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reversed_under_an_override_is_read_as_shown() {
        let shown = display_order("\u{202E}vokiluK hciveeskelA siroB\u{202C}");
        let visible: Option<String> =
            shown.map(|s| s.chars().filter(|c| !is_bidi_control(*c)).collect());
        assert_eq!(visible.as_deref(), Some("Boris Alekseevich Kulikov"));
        assert_eq!(
            display_order("\u{2067}Boris Kulikov\u{2069}"),
            None,
            "a right-to-left isolate shows Latin text in order: nothing to reverse"
        );
    }

    #[test]
    fn text_without_controls_or_with_nothing_to_reorder_has_no_display_form() {
        assert_eq!(display_order("Boris Kulikov"), None);
        assert_eq!(
            display_order("Bo\u{200F}ris"),
            None,
            "a mark is not a control"
        );
        assert_eq!(display_order("Bo\u{202A}ris\u{202C}"), None, "LTR in LTR");
        assert!(is_bidi_control('\u{2066}') && !is_bidi_control('\u{200E}'));
    }
}
