//! Extracting a bearer token from `Authorization` (RFC 6750 §2.1) and cheap shape checks done
//! before any parsing or key lookup.
//!
//! - No header, or a scheme other than `Bearer` (compared case-insensitively, RFC 9110 §11.1):
//!   no credentials ([`Extracted::Missing`]).
//! - `Bearer` with an empty credential, more than [`MAX_TOKEN_BYTES`], or not three base64url
//!   segments (a compact JWS; JWE's five segments are refused): a rejected token.
//!
//! Used by kosha-auth's verifier (SPEC §5); kept here, free of crypto and HTTP crates, so the
//! fuzz target `bearer` builds in seconds.

/// Largest accepted token, bytes (16 KiB). Cognito access tokens are 1–2 KiB; anything larger
/// is refused before base64 or JSON parsing.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The result of reading the header.
#[derive(Debug, PartialEq, Eq)]
pub enum Extracted<'a> {
    /// No bearer credentials at all.
    Missing,
    /// A bearer token was sent but its shape is wrong.
    Rejected(Shape),
    /// A token of plausible shape.
    Token(&'a str),
}

/// What is wrong with the token's shape (logged, never returned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `Bearer` with nothing after it.
    Empty,
    /// Longer than [`MAX_TOKEN_BYTES`].
    Oversized,
    /// Not three non-empty base64url segments.
    Malformed,
}

/// Reads the token from an `Authorization` value (`None`: no header), as the module docs say.
pub fn extract(authorization: Option<&str>) -> Extracted<'_> {
    let Some(value) = authorization else {
        return Extracted::Missing;
    };
    let value = value.trim_matches(|c| c == ' ' || c == '\t');
    let (scheme, rest) = value.split_once([' ', '\t']).unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Extracted::Missing;
    }
    let token = rest.trim_start_matches([' ', '\t']);
    if token.is_empty() {
        return Extracted::Rejected(Shape::Empty);
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Extracted::Rejected(Shape::Oversized);
    }
    if !is_compact_jws(token) {
        return Extracted::Rejected(Shape::Malformed);
    }
    Extracted::Token(token)
}

fn is_compact_jws(token: &str) -> bool {
    let mut segments = 0;
    for segment in token.split('.') {
        segments += 1;
        let base64url = segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if segment.is_empty() || !base64url {
            return false;
        }
    }
    segments == 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheme_is_case_insensitive() {
        assert_eq!(extract(Some("bEaReR a.b.c")), Extracted::Token("a.b.c"));
        assert_eq!(extract(Some("Bearer   a.b.c ")), Extracted::Token("a.b.c"));
    }

    #[test]
    fn other_schemes_and_no_header_are_missing() {
        assert_eq!(extract(None), Extracted::Missing);
        assert_eq!(extract(Some("Basic dXNlcjpwYXNz")), Extracted::Missing);
        assert_eq!(extract(Some("Bearera.b.c")), Extracted::Missing);
        assert_eq!(extract(Some("")), Extracted::Missing);
    }

    #[test]
    fn bad_shapes_are_rejected() {
        assert_eq!(extract(Some("Bearer")), Extracted::Rejected(Shape::Empty));
        assert_eq!(
            extract(Some("Bearer a.b")),
            Extracted::Rejected(Shape::Malformed)
        );
        assert_eq!(
            extract(Some("Bearer a.b.c.d.e")),
            Extracted::Rejected(Shape::Malformed)
        );
        assert_eq!(
            extract(Some("Bearer a..c")),
            Extracted::Rejected(Shape::Malformed)
        );
        assert_eq!(
            extract(Some("Bearer a.b+/.c")),
            Extracted::Rejected(Shape::Malformed)
        );
        assert_eq!(
            extract(Some("Bearer a.b.c d")),
            Extracted::Rejected(Shape::Malformed)
        );
    }

    #[test]
    fn size_is_checked_before_shape() {
        let big = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
        assert_eq!(extract(Some(&big)), Extracted::Rejected(Shape::Oversized));
        let fits = format!("a.b.{}", "c".repeat(MAX_TOKEN_BYTES - 4));
        assert_eq!(
            extract(Some(&format!("Bearer {fits}"))),
            Extracted::Token(fits.as_str())
        );
    }
}
