//! Look-alike spellings of a name: what a person reads on the screen, from the UTS #39
//! confusable data (SPEC §4 "Screening sees what a person sees"; issue 43, HIGH).
//!
//! - **What it maps:** each character that is not ASCII and that Unicode's confusables table
//!   (UTS #39 §4, `confusables.txt`, through `unicode-security`'s [`skeleton`]) gives as one
//!   ASCII letter becomes that letter, in the case the prototype has: Cyrillic `а`, `В`, `Н`,
//!   `Ѕ`, `і` become `a`, `B`, `H`, `S`, `i`; Greek `Α`, `ο`, `ν` become `A`, `o`, `v`.
//!   A character whose compatibility form (NFKC) is one ASCII letter or digit takes that form
//!   instead (fullwidth and mathematical letters: `Ｋａｍａｌ` is `Kamal`, never the
//!   prototype `rn` of `ｍ`). The ASCII digits `0` and `1` become `o` and `l`, the letters UTS
//!   #39 maps them to. Every other character is kept: ASCII letters (`m` stays `m`, so
//!   `Kamal` and `Karnal` stay apart), and letters with no one-letter Latin look-alike, which
//!   the normaliser then transliterates as usual (`Козлов` → `kozlov`).
//! - **Why the case as typed:** UTS #39 maps some look-alikes from one case only. Cyrillic
//!   capital `Н` looks like `H`, its lower case `н` like nothing Latin, so the prototype is
//!   taken before any case folding. Transliteration alone reads `Н` as its sound, `N`, which is
//!   why a look-alike mix slipped through it.
//! - **The one ambiguity:** UTS #39 gives `l` as the prototype of capital `I` and of its
//!   look-alikes (Cyrillic `І`, Greek `Ι`, `Ӏ`). A capital look-alike is read as `I` in one
//!   spelling and as `l` in a second, so both `NАBІL` (`NABIL`) and `KUӀIKOV` (`KULIKOV`) are
//!   met.
//! - **What it returns:** [`lookalikes`] gives the spellings that differ from the input (none,
//!   one or two); the matcher normalises each like the name itself and scores it as one more
//!   form of the query ([`crate::matching`]), and the watchlist's names get the same
//!   spellings once, when the index is built.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;
use unicode_security::skeleton;

/// How a capital look-alike of `I`, whose UTS #39 prototype is `l`, is read.
#[derive(Clone, Copy, PartialEq)]
enum CapitalI {
    /// As the capital `I` it usually imitates.
    AsI,
    /// As the `l` of its prototype.
    AsL,
}

/// The look-alike spellings of `raw` that differ from it (the module doc): empty when no
/// character has a look-alike, else one spelling, or two when a capital look-alike of `I`
/// can be read both ways.
#[must_use]
pub fn lookalikes(raw: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for reading in [CapitalI::AsI, CapitalI::AsL] {
        let spelling = spell(raw, reading);
        if spelling != raw && !out.contains(&spelling) {
            out.push(spelling);
        }
    }
    out
}

/// `raw` with every character replaced by its look-alike, capital `I` look-alikes read as
/// `reading` says.
fn spell(raw: &str, reading: CapitalI) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            '0' => out.push('o'),
            '1' => out.push('l'),
            c if c.is_ascii() => out.push(c),
            c => match letter(c) {
                Some('l') if c.is_uppercase() && reading == CapitalI::AsI => out.push('I'),
                Some(l) => out.push(l),
                None => out.push(c),
            },
        }
    }
    out
}

/// The one ASCII letter `c` looks like (a compatibility form may also give a digit other
/// than `0` and `1`), if any.
fn letter(c: char) -> Option<char> {
    let mut buf = [0_u8; 4];
    let one = |s: &mut dyn Iterator<Item = char>| {
        let mut kept = s.filter(|c| !is_combining_mark(*c));
        match (kept.next(), kept.next()) {
            (Some(a), None) if a.is_ascii_alphanumeric() => Some(a),
            _ => None,
        }
    };
    let text = c.encode_utf8(&mut buf);
    if let Some(compat) = one(&mut text.nfkc()) {
        return Some(match compat {
            '0' => 'o',
            '1' => 'l',
            other => other,
        });
    }
    one(&mut skeleton(text)).filter(char::is_ascii_alphabetic)
}

#[cfg(test)]
mod tests;
