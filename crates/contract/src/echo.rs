//! Bounds on caller-controlled text that error messages quote back (tool names, argument
//! names and values, header values).
//!
//! An error message that repeats the caller's input is useful to the calling model ("unknown
//! tool: serch"), but an attacker can make that input a megabyte long, and every error answer
//! and every log line would carry it. So every quoted piece goes through [`clip`]: at most
//! [`ECHO_MAX_CHARS`] characters, then `…`. One helper, so the bound is the same everywhere.

use std::borrow::Cow;

/// Longest piece of caller-controlled text quoted in an error message, in characters
/// (Unicode scalar values).
pub const ECHO_MAX_CHARS: usize = 64;

/// `text` itself when it has at most [`ECHO_MAX_CHARS`] characters, else its first
/// [`ECHO_MAX_CHARS`] characters followed by `…`.
pub fn clip(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(ECHO_MAX_CHARS) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
    }
}

/// Longest message [`clip_quoted`] keeps, in characters: room for another library's fixed
/// text around its clipped quotes.
pub const QUOTED_MESSAGE_MAX_CHARS: usize = 4 * ECHO_MAX_CHARS;

/// A message another library wrote (rmcp's refusals) with each piece it quotes clipped
/// ([`clip`]): the text between backticks (`` `…` ``) or parentheses, where such messages put
/// the caller's header and field values; then the whole cut at [`QUOTED_MESSAGE_MAX_CHARS`]
/// characters, for caller text quoted any other way. An unclosed quote is clipped to the end.
pub fn clip_quoted(message: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut rest = message;
    let mut changed = false;
    while let Some(open) = rest.find(['`', '(']) {
        let close_char = if rest[open..].starts_with('`') {
            '`'
        } else {
            ')'
        };
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        let (inner, tail) = after
            .find(close_char)
            .map_or((after, ""), |i| after.split_at(i));
        let clipped = clip(inner);
        changed |= matches!(clipped, Cow::Owned(_));
        out.push_str(&clipped);
        match tail.strip_prefix(close_char) {
            Some(t) => {
                out.push(close_char);
                rest = t;
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    match out.char_indices().nth(QUOTED_MESSAGE_MAX_CHARS) {
        Some((end, _)) => Cow::Owned(format!("{}…", &out[..end])),
        None if changed => Cow::Owned(out),
        None => Cow::Borrowed(message),
    }
}

/// A serde error message with the caller's value (or unknown field name) in it clipped.
///
/// serde writes `invalid type: string "<value>", expected i64` and
/// `unknown field `<name>`, expected one of ...`: the caller's text sits between the first
/// `: ` (or the first backtick) and the last `, expected `, which names our own type and stays
/// whole. A message without `, expected ` is clipped as a whole.
pub fn clip_serde_message(message: &str) -> Cow<'_, str> {
    let Some(tail_at) = message.rfind(", expected ") else {
        return clip(message);
    };
    let (head, tail) = message.split_at(tail_at);
    let quote_at = head
        .find(": ")
        .map(|i| i + 2)
        .or_else(|| head.find('`'))
        .unwrap_or(0);
    let (prefix, quoted) = head.split_at(quote_at);
    match clip(quoted) {
        Cow::Borrowed(_) => Cow::Borrowed(message),
        Cow::Owned(q) => Cow::Owned(format!("{prefix}{q}{tail}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_pieces_are_clipped_and_the_fixed_text_kept() {
        let long = "n".repeat(10_000);
        let message = format!("Mcp-Name header `{long}` does not match body value `x`");
        let clipped = clip_quoted(&message);
        let want = format!(
            "Mcp-Name header `{}…` does not match body value `x`",
            &long[..64]
        );
        assert_eq!(clipped, want);
        let version = format!("header (2025-11-25) does not match protocolVersion ({long})");
        assert_eq!(
            clip_quoted(&version),
            format!(
                "header (2025-11-25) does not match protocolVersion ({}…)",
                &long[..64]
            )
        );
        // Unclosed, or quoted no known way: still bounded.
        assert!(clip_quoted(&format!("value `{long}")).ends_with('…'));
        let bare = format!("value {}", "w ".repeat(5_000));
        assert_eq!(
            clip_quoted(&bare).chars().count(),
            QUOTED_MESSAGE_MAX_CHARS + 1
        );
        assert!(matches!(clip_quoted("short `x` (y)"), Cow::Borrowed(_)));
    }

    #[test]
    fn short_text_is_kept_whole() {
        assert_eq!(clip("serch"), "serch");
        let exact = "x".repeat(ECHO_MAX_CHARS);
        assert_eq!(clip(&exact), exact);
    }

    #[test]
    fn long_text_is_cut_at_the_bound_by_characters_not_bytes() {
        let long = "é".repeat(1000);
        let clipped = clip(&long);
        assert_eq!(clipped.chars().count(), ECHO_MAX_CHARS + 1);
        assert!(clipped.ends_with("…"));
        assert!(clipped.starts_with(&"é".repeat(ECHO_MAX_CHARS)));
    }

    #[test]
    fn serde_messages_keep_their_expected_part() {
        let value = "a".repeat(10_000);
        let message = format!("invalid type: string \"{value}\", expected i64");
        let clipped = clip_serde_message(&message);
        assert!(
            clipped.starts_with("invalid type: string \"aaaa"),
            "{clipped}"
        );
        assert!(clipped.ends_with("…, expected i64"), "{clipped}");
        assert!(clipped.len() < 120, "{clipped}");

        let field = "f".repeat(500);
        let message = format!("unknown field `{field}`, expected `query` or `top_k`");
        let clipped = clip_serde_message(&message);
        assert!(clipped.starts_with("unknown field `fff"), "{clipped}");
        assert!(
            clipped.ends_with("…, expected `query` or `top_k`"),
            "{clipped}"
        );

        let short = "invalid type: integer `5`, expected a string";
        assert_eq!(clip_serde_message(short), short);
        assert_eq!(
            clip_serde_message(&"m".repeat(200)).chars().count(),
            ECHO_MAX_CHARS + 1
        );
    }
}
