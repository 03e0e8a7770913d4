//! Name normalisation: from what a caller typed to the tokens the matcher compares
//! (issue 12 "Unicode-normalised (NFKD, case and diacritics folded, punctuation and honorifics
//! dropped), token-order-insensitive").
//!
//! The steps, in order:
//! 1. **NFKD** (`unicode-normalization`): compatibility forms become plain letters (`ﬁ` → `fi`,
//!    full-width `Ｊ` → `J`) and accented letters split into a base and combining marks.
//! 2. **Diacritics and invisible format characters dropped**: combining marks (`é` → `e`, Arabic
//!    vowel signs) and zero-width / bidi format characters (ZWNJ, RLM, BOM, soft hyphen), which
//!    copy-pasted Persian and Arabic names carry and which would otherwise split or hide tokens.
//! 3. **Transliteration to ASCII** ([`deunicode`]): Cyrillic, Arabic, Persian, Han and the
//!    remaining Latin letters (`ß`, `Đ`, `ı`) become ASCII, then ASCII-lowercased. Because every
//!    letter ends in ASCII this is at least as strong as Unicode case folding for matching. A
//!    Cyrillic query therefore meets the watchlist's Cyrillic alias in the same Latin spelling,
//!    and a homoglyph mix such as a Latin name with one Cyrillic `а` folds to the Latin name
//!    instead of slipping past the list.
//!    Why `deunicode`: it is actively maintained (kornelski; 1.6 line, no dependencies, a
//!    compact table), the de-facto Rust port of Text::Unidecode used by `slug` and others.
//!    `any_ascii` romanises Arabic more readably, but the matcher only needs the same input to
//!    give the same tokens on both sides (queries and aliases), which `deunicode` does.
//! 4. **Punctuation**: apostrophes, dots and slashes join (`O'Brien` → `obrien`, `S.A.` → `sa`,
//!    `M/V` → `mv`); every other non-alphanumeric character separates tokens (`Al-Tamimi` →
//!    `al tamimi`, `Smith, John` → `smith john`).
//! 5. **Stop tokens dropped**: honorifics and titles (`mr`, `dr`, `sheikh`, `general` …),
//!    generational suffixes (`jr`, `sr`), vessel prefixes (`mv`, `mt`) and legal forms of
//!    entities, single (`ltd`, `llc`, `gmbh`, `ooo` from `ООО` …) or multi-word (`limited
//!    liability company`, `public joint stock company` …), so "Volganeft LLC", "Volganeft
//!    Limited Liability Company" and "ООО «Волганефть»" compare alike. If dropping them would
//!    leave nothing (a query of just "Dr" or "LLC"), they are kept.
//! 6. **Weights**: name particles (`al`, `bin`, `ibn`, `van`, `de` …) weigh 0.3 and initials
//!    0.5, so "Al-" or "bin" neither makes nor breaks a match; every other token weighs 1.
//!
//! Token order is not kept as meaning: the matcher aligns tokens as a set
//! ([`crate::matching`]), which is what makes "Smith, John" equal "John Smith".

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Weight of a name particle such as `al`, `bin` or `van` (see the module doc, step 6).
pub const PARTICLE_WEIGHT: f64 = 0.3;
/// Weight of a one-letter token (an initial).
pub const INITIAL_WEIGHT: f64 = 0.5;

/// One comparable token of a name: lower-case ASCII letters and digits, never empty.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token text, `[a-z0-9]+`.
    pub text: String,
    /// Its weight in the alignment, in (0, 1]: 1, [`INITIAL_WEIGHT`] or [`PARTICLE_WEIGHT`].
    pub weight: f64,
    /// Whether it is a name particle (`al`, `bin`, `de` …); particles do not count towards
    /// the two tokens a multi-token match needs.
    pub particle: bool,
}

/// A name after normalisation: its tokens in input order (order carries no meaning).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NormalizedName {
    /// The tokens; empty only when the input had no letter or digit at all.
    pub tokens: Vec<Token>,
}

impl NormalizedName {
    /// The token texts joined by single spaces (for logs and tests).
    #[must_use]
    pub fn joined(&self) -> String {
        let texts: Vec<&str> = self.tokens.iter().map(|t| t.text.as_str()).collect();
        texts.join(" ")
    }

    /// Whether there is nothing to compare.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Honorifics and titles, dropped (issue 12 "honorifics dropped").
const HONORIFICS: &[&str] = &[
    "mr",
    "mrs",
    "ms",
    "miss",
    "mx",
    "dr",
    "doctor",
    "prof",
    "professor",
    "sir",
    "dame",
    "lord",
    "lady",
    "sheikh",
    "shaikh",
    "sheik",
    "shaykh",
    "haji",
    "hajji",
    "hajj",
    "imam",
    "mullah",
    "ayatollah",
    "hojatoleslam",
    "sayyid",
    "sayed",
    "general",
    "gen",
    "colonel",
    "col",
    "major",
    "maj",
    "captain",
    "capt",
    "lieutenant",
    "lt",
    "sgt",
    "sergeant",
    "admiral",
    "adm",
    "brig",
    "brigadier",
    "rev",
    "reverend",
    "herr",
    "frau",
    "monsieur",
    "mme",
    "mlle",
    "senor",
    "senora",
    "sr",
    "sra",
    "srta",
    "jr",
    "excellency",
    "hon",
    "honourable",
    "honorable",
    "gospodin",
    "gospozha",
    "mv",
    "mt",
    "mts",
];

/// Legal forms of entities that are one token after step 4, dropped.
const LEGAL_FORMS: &[&str] = &[
    "ltd",
    "limited",
    "llc",
    "llp",
    "lp",
    "plc",
    "inc",
    "incorporated",
    "corp",
    "corporation",
    "co",
    "company",
    "gmbh",
    "ag",
    "kg",
    "sa",
    "sarl",
    "sas",
    "srl",
    "spa",
    "bv",
    "nv",
    "ab",
    "as",
    "oy",
    "oyj",
    "pte",
    "pty",
    "bhd",
    "sdn",
    "jsc",
    "pjsc",
    "ojsc",
    "cjsc",
    "ooo",
    "oao",
    "zao",
    "pao",
    "ao",
    "tov",
    "fze",
    "fzco",
    "fzc",
    "fz",
    "est",
    "wll",
    "kft",
    "sro",
];

/// Multi-token legal forms, dropped as a whole (longest first).
const LEGAL_PHRASES: &[&[&str]] = &[
    &["public", "joint", "stock", "company"],
    &["closed", "joint", "stock", "company"],
    &["open", "joint", "stock", "company"],
    &["limited", "liability", "company"],
    &["limited", "liability", "partnership"],
    &["public", "limited", "company"],
    &["joint", "stock", "company"],
    &["societe", "anonyme"],
    &["sociedad", "anonima"],
    &["free", "zone", "establishment"],
];

/// Name particles, kept at [`PARTICLE_WEIGHT`].
const PARTICLES: &[&str] = &[
    "al", "el", "ul", "bin", "ben", "ibn", "bint", "abu", "de", "del", "della", "der", "den", "di",
    "da", "das", "dos", "du", "la", "le", "van", "von", "y", "zu", "and",
];

/// Characters that join their neighbours instead of separating tokens (step 4).
fn is_joiner(c: char) -> bool {
    matches!(
        c,
        '\'' | '\u{2019}' | '\u{2018}' | '\u{02BC}' | '\u{02BB}' | '`' | '\u{00B4}' | '.' | '/'
    )
}

/// Invisible format characters dropped before anything else (step 2).
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// Folds `raw` to raw tokens (steps 1–4), before stop tokens and weights.
///
/// Never fails; the result is empty when `raw` holds no letter or digit.
#[must_use]
pub fn fold(raw: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let push_ascii = |c: char, current: &mut String, tokens: &mut Vec<String>| {
        if c.is_ascii_alphanumeric() {
            current.push(c.to_ascii_lowercase());
        } else if !is_joiner(c) && !current.is_empty() {
            tokens.push(std::mem::take(current));
        }
    };
    for c in raw.nfkd() {
        if is_combining_mark(c) || is_invisible_format(c) {
            continue;
        }
        if c.is_ascii() {
            push_ascii(c, &mut current, &mut tokens);
        } else if c.is_alphanumeric() {
            // Letters of any script, and non-ASCII digits, go through the transliteration
            // table; its output is ASCII and runs through the same rules.
            for t in deunicode::deunicode_char(c).unwrap_or("").chars() {
                push_ascii(t, &mut current, &mut tokens);
            }
        } else if is_joiner(c) {
            // Typographic apostrophes join like ASCII ones.
        } else if !current.is_empty() {
            tokens.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

/// Normalises a name for matching (steps 1–6 of the module doc).
///
/// Used for both sides: watchlist names once at start-up, the query once per request.
#[must_use]
pub fn normalize(raw: &str) -> NormalizedName {
    let folded = fold(raw);
    let kept = drop_stop_tokens(&folded);
    let texts = if kept.is_empty() { folded } else { kept };
    let tokens = texts
        .into_iter()
        .map(|text| {
            let particle = PARTICLES.contains(&text.as_str());
            let weight = if particle {
                PARTICLE_WEIGHT
            } else if text.len() == 1 {
                INITIAL_WEIGHT
            } else {
                1.0
            };
            Token {
                text,
                weight,
                particle,
            }
        })
        .collect();
    NormalizedName { tokens }
}

/// Removes legal phrases, legal forms and honorifics (step 5).
fn drop_stop_tokens(tokens: &[String]) -> Vec<String> {
    let mut kept = Vec::with_capacity(tokens.len());
    let mut i = 0;
    'outer: while i < tokens.len() {
        for phrase in LEGAL_PHRASES {
            let end = i + phrase.len();
            if end <= tokens.len()
                && tokens[i..end]
                    .iter()
                    .zip(phrase.iter())
                    .all(|(t, p)| t == p)
            {
                i = end;
                continue 'outer;
            }
        }
        let t = tokens[i].as_str();
        if !HONORIFICS.contains(&t) && !LEGAL_FORMS.contains(&t) {
            kept.push(tokens[i].clone());
        }
        i += 1;
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> String {
        normalize(s).joined()
    }

    #[test]
    fn case_diacritics_and_compatibility_forms_fold() {
        assert_eq!(n("José Ramírez"), "jose ramirez");
        assert_eq!(n("ＪＯＨＮ ﬁnch"), "john finch");
        assert_eq!(n("Straße"), "strasse");
        assert_eq!(n("Đorđević"), "dordevic");
        assert_eq!(n("Yıldırım"), "yildirim");
    }

    #[test]
    fn scripts_transliterate_to_the_same_latin_tokens() {
        assert_eq!(n("Иванов Сергей"), "ivanov sergei");
        assert_eq!(n("مُحَمَّد"), n("محمد"), "vowel signs are diacritics");
        assert_eq!(n("王伟"), "wang wei");
        // A Latin name with a Cyrillic 'а' (U+0430) in it folds to the Latin name.
        assert_eq!(n("Iv\u{0430}nov"), "ivanov");
    }

    #[test]
    fn punctuation_joins_or_separates() {
        assert_eq!(n("O'Brien"), "obrien");
        assert_eq!(n("Smith, John"), "smith john");
        assert_eq!(n("Al-Tamimi"), "al tamimi");
        assert_eq!(n("Kuban\u{2019}agro"), "kubanagro");
        assert_eq!(
            n("Iva\u{200B}nov"),
            "ivanov",
            "zero-width space is invisible"
        );
    }

    #[test]
    fn honorifics_and_legal_forms_drop_unless_nothing_is_left() {
        assert_eq!(n("Dr. Sheikh Khalid"), "khalid");
        assert_eq!(n("Volganeft LLC"), "volganeft");
        assert_eq!(n("Volganeft Limited Liability Company"), "volganeft");
        assert_eq!(n("ООО «Волганефть»"), "volganeft");
        assert_eq!(n("Huaxing Electronics Co., Ltd."), "huaxing electronics");
        assert_eq!(n("M/V Ocean Star"), "ocean star");
        assert_eq!(n("Dr"), "dr");
    }

    #[test]
    fn particles_and_initials_weigh_less() {
        let name = normalize("J. bin Salman");
        let weights: Vec<f64> = name.tokens.iter().map(|t| t.weight).collect();
        assert_eq!(weights, vec![INITIAL_WEIGHT, PARTICLE_WEIGHT, 1.0]);
        assert!(name.tokens[1].particle);
    }

    #[test]
    fn nothing_to_compare_gives_no_tokens() {
        assert!(normalize("-- !! --").is_empty());
        assert!(normalize("").is_empty());
    }
}
