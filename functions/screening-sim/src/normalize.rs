//! Name normalisation: from what a caller typed to the tokens the matcher compares
//! (issue 12 "Unicode-normalised (NFKD, case and diacritics folded, punctuation and honorifics
//! dropped), token-order-insensitive").
//!
//! The steps, in order:
//! 1. **NFKD** (`unicode-normalization`): compatibility forms become plain letters (`ﬁ` → `fi`,
//!    full-width `Ｊ` → `J`) and accented letters split into a base and combining marks.
//! 2. **Diacritics and invisible characters dropped**: combining marks (`é` → `e`, Arabic
//!    vowel signs), and every code point that is `Default_Ignorable_Code_Point` or of general
//!    category `Cf` (format), taken from Unicode's data by ICU4X's `icu_properties` (ZWNJ, RLM,
//!    BOM, soft hyphen, the TAG block U+E0001–E007F, U+0600–0605, U+FFF9–FFFB, Hangul fillers,
//!    variation selectors …). Copy-pasted Persian and Arabic names carry some of them, and
//!    any of them inside a word would otherwise split it or hide it from the list (issue #30:
//!    140 of the 163 `Cf` code points turned a listed name `clear` while a typed list was used).
//!    They are dropped both before and after NFKD.
//! 3. **Transliteration to ASCII** ([`deunicode`]): Cyrillic, Arabic, Persian, Han and the
//!    remaining Latin letters (`ß`, `Đ`, `ı`) become ASCII, then ASCII-lowercased. Because every
//!    letter ends in ASCII this is at least as strong as Unicode case folding for matching. A
//!    Cyrillic query therefore meets the watchlist's Cyrillic alias in the same Latin spelling.
//!    Transliteration maps a letter to its sound, not its look (`В` → `v`, `Н` → `n`), so a
//!    look-alike mix folds to the Latin name only where sound and look agree (`а` → `a`); the
//!    matcher also screens the look-alike spellings of [`crate::lookalike`] (issue 43).
//!    Why `deunicode`: it is actively maintained (kornelski; 1.6 line, no dependencies, a
//!    compact table), the de-facto Rust port of Text::Unidecode used by `slug` and others.
//!    `any_ascii` romanises Arabic more readably, but the matcher only needs the same input to
//!    give the same tokens on both sides (queries and aliases), which `deunicode` does.
//! 4. **Punctuation**: apostrophes, dots and slashes join (`O'Brien` → `obrien`, `S.A.` → `sa`,
//!    `M/V` → `mv`); every other non-alphanumeric character separates tokens (`Al-Tamimi` →
//!    `al tamimi`, `Smith, John` → `smith john`). This is the *split* form ([`normalize`]).
//!    The *joined* form ([`normalize_joined`]) lets every non-space character join, so
//!    punctuation inside a word used to break it up (`Na-bil Sa-mir` → `nabil samir`) does
//!    not; the matcher screens both forms (issue #30), because punctuation inside a name is
//!    sometimes real (`Al-Tamimi`) and sometimes evasion.
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

use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory};
use icu_properties::{CodePointMapData, CodePointSetData};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Weight of a name particle such as `al`, `bin` or `van` (see the module doc, step 6).
pub const PARTICLE_WEIGHT: f64 = 0.3;
/// Weight of a one-letter token (an initial).
pub const INITIAL_WEIGHT: f64 = 0.5;
/// Most characters of a normalised name (its tokens joined by spaces); longer is refused
/// (issue #30: 200 × U+FDFA normalises to 1,600 words and costs 20× a screening).
pub const MAX_NORMALIZED_CHARS: usize = 400;
/// Most tokens of a normalised name; more is refused (issue #30).
pub const MAX_NORMALIZED_WORDS: usize = 20;

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

/// Whether `c` is invisible and dropped (step 2): `Default_Ignorable_Code_Point` or general
/// category `Cf`, from Unicode's data (`icu_properties`' compiled tables).
#[must_use]
pub fn is_ignorable(c: char) -> bool {
    CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || CodePointMapData::<GeneralCategory>::new().get(c) == GeneralCategory::Format
}

/// Folds `raw` to raw tokens (steps 1–4, split form), before stop tokens and weights.
///
/// Never fails; the result is empty when `raw` holds no letter or digit.
#[must_use]
pub fn fold(raw: &str) -> Vec<String> {
    fold_with(raw, false)
}

/// Steps 1–4; with `join_all`, every character that is neither alphanumeric nor white space
/// joins its neighbours (the joined form), else only [`is_joiner`] ones do.
fn fold_with(raw: &str, join_all: bool) -> Vec<String> {
    let joins = |c: char| is_joiner(c) || (join_all && !c.is_whitespace());
    let mut tokens = Vec::new();
    let mut current = String::new();
    let push_ascii = |c: char, current: &mut String, tokens: &mut Vec<String>| {
        if c.is_ascii_alphanumeric() {
            current.push(c.to_ascii_lowercase());
        } else if !joins(c) && !current.is_empty() {
            tokens.push(std::mem::take(current));
        }
    };
    let visible = raw.chars().filter(|c| !is_ignorable(*c));
    for c in visible.nfkd() {
        if is_combining_mark(c) || is_ignorable(c) {
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
        } else if joins(c) {
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

/// Why `name` is too long to screen: more than [`MAX_NORMALIZED_CHARS`] characters or
/// [`MAX_NORMALIZED_WORDS`] tokens after normalisation (issue #30); `None` when it is not.
#[must_use]
pub fn oversize(name: &NormalizedName) -> Option<String> {
    let words = name.tokens.len();
    let chars = name.joined().chars().count();
    (words > MAX_NORMALIZED_WORDS || chars > MAX_NORMALIZED_CHARS).then(|| {
        format!(
            "name normalises to {words} words and {chars} characters; at most \
             {MAX_NORMALIZED_WORDS} words and {MAX_NORMALIZED_CHARS} characters are screened"
        )
    })
}

/// Normalises a name for matching (steps 1–6 of the module doc), split form.
///
/// Used for both sides: watchlist names once at start-up, the query once per request.
#[must_use]
pub fn normalize(raw: &str) -> NormalizedName {
    from_folded(fold(raw))
}

/// Normalises a name with punctuation inside words joining instead of separating (the joined
/// form of step 4): `Na-bil Sa-mir Had-dad` → `nabil samir haddad`.
#[must_use]
pub fn normalize_joined(raw: &str) -> NormalizedName {
    from_folded(fold_with(raw, true))
}

/// A name made of these token texts (steps 5 and 6 on already folded tokens), for the
/// matcher's segmentation of run-together names.
#[must_use]
pub fn from_folded(folded: Vec<String>) -> NormalizedName {
    let kept = drop_stop_tokens(&folded);
    let texts = if kept.is_empty() { folded } else { kept };
    NormalizedName {
        tokens: texts.into_iter().map(token).collect(),
    }
}

/// Whether `text` is dropped as an honorific or a one-token legal form (step 5).
#[must_use]
pub fn is_stop_token(text: &str) -> bool {
    HONORIFICS.contains(&text) || LEGAL_FORMS.contains(&text)
}

/// Whether `text` is a name particle (`al`, `bin`, `van` …, step 6).
#[must_use]
pub fn is_particle(text: &str) -> bool {
    PARTICLES.contains(&text)
}

/// One token with its weight (step 6).
fn token(text: String) -> Token {
    let particle = is_particle(&text);
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
    fn every_format_and_default_ignorable_code_point_is_dropped_inside_a_word() {
        // The classes of issue #30, typed here as test data only; the code reads Unicode's.
        let samples = [
            '\u{E0001}',
            '\u{E0041}',
            '\u{E007F}',
            '\u{206A}',
            '\u{206F}',
            '\u{FFF9}',
            '\u{FFFB}',
            '\u{0600}',
            '\u{0605}',
            '\u{06DD}',
            '\u{070F}',
            '\u{13430}',
            '\u{13438}',
            '\u{1BCA0}',
            '\u{1BCA3}',
            '\u{1D173}',
            '\u{1D17A}',
            '\u{00AD}',
            '\u{034F}',
            '\u{115F}',
            '\u{3164}',
            '\u{FE0F}',
            '\u{E0100}',
            '\u{2065}',
        ];
        for c in samples {
            assert!(is_ignorable(c), "U+{:04X}", u32::from(c));
            assert_eq!(
                n(&format!("Na{c}bil Had{c}dad")),
                "nabil haddad",
                "U+{:04X}",
                u32::from(c)
            );
        }
        // And every code point of the two properties, whatever Unicode version the data is.
        let mut dropped = 0;
        for c in (0..=0x10FFFF_u32).filter_map(char::from_u32) {
            let format =
                CodePointMapData::<GeneralCategory>::new().get(c) == GeneralCategory::Format;
            if format || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c) {
                assert_eq!(
                    fold(&format!("ab{c}cd")),
                    ["abcd"],
                    "U+{:04X}",
                    u32::from(c)
                );
                dropped += 1;
            }
        }
        assert!(dropped > 4_000, "{dropped}");
        assert_eq!(n("Ali"), "ali", "letters stay");
    }

    #[test]
    fn the_joined_form_keeps_words_that_punctuation_broke_up() {
        assert_eq!(n("Na-bil Had-dad"), "na bil had dad");
        assert_eq!(
            normalize_joined("Na-bil Sa-mir Had-dad").joined(),
            "nabil samir haddad"
        );
        assert_eq!(
            normalize_joined("Na_bil Sa·mir, Had–dad").joined(),
            "nabil samir haddad"
        );
        assert_eq!(normalize_joined("Al-Tamimi").joined(), "altamimi");
        assert_eq!(normalize_joined("O'Brien Ltd").joined(), "obrien");
    }

    #[test]
    fn a_name_that_normalises_too_long_is_oversize() {
        assert!(oversize(&normalize("Nabil Samir Haddad")).is_none());
        let expanded = normalize(&"\u{FDFA}".repeat(200));
        assert!(expanded.tokens.len() > 200, "{}", expanded.tokens.len());
        assert!(oversize(&expanded).is_some_and(|m| m.contains("20 words")));
        let words = vec!["ab"; 21].join(" ");
        assert!(oversize(&normalize(&words)).is_some());
        assert!(oversize(&normalize(&vec!["ab"; 20].join(" "))).is_none());
        let long = vec!["abcdefghijklmnopqrst"; 20].join(" ");
        assert!(oversize(&normalize(&long)).is_some(), "419 characters");
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
