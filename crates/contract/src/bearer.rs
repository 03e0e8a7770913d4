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

/// Which bytes are base64url's (RFC 4648 §5), by byte value: one look-up per byte of a
/// token of ~1–2 KiB, on every request.
const BASE64URL: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
        b += 1;
    }
    table
};

fn is_compact_jws(token: &str) -> bool {
    let mut segments = 1;
    let mut segment_len = 0;
    for &b in token.as_bytes() {
        if b == b'.' {
            if segment_len == 0 {
                return false;
            }
            segments += 1;
            segment_len = 0;
        } else if BASE64URL[usize::from(b)] {
            segment_len += 1;
        } else {
            return false;
        }
    }
    segments == 3 && segment_len > 0
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
    fn every_byte_outside_base64url_is_refused_in_any_segment() {
        for b in 0..=255u8 {
            let base64url = b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
            for at in 0..3 {
                let mut token = b"ab.cd.ef".to_vec();
                token[at * 3] = b;
                let Ok(token) = std::str::from_utf8(&token) else {
                    continue;
                };
                // A '.' there makes a fourth or an empty segment: refused too.
                assert_eq!(
                    is_compact_jws(token),
                    base64url,
                    "byte {b:#04x} in segment {at}"
                );
            }
        }
        assert!(is_compact_jws("a.b.c"));
        for bad in ["", ".", "..", "a.b.", ".b.c", "a..c", "a.b.c.", "abc"] {
            assert!(!is_compact_jws(bad), "{bad:?}");
        }
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
