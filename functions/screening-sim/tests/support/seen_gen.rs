//! The labelled set's classes of what a person sees (issue 43), and the common-names set.
//!
//! Each class is applied to **every** listed primary name that it changes, so no generator
//! can pick easy cases; each also comes mixed with the invisible code points of issue #30
//! (one inside every word of 3+ characters, `<class>_invisible`), and with negatives: names on
//! no list carrying the same marks (`<class>_negative`). Labels come from how the query is
//! made, never from the matcher.
//!
//! | category | how it is made |
//! |---|---|
//! | `evasion_cyrillic_all` | every letter that has a Cyrillic look-alike replaced by it (`Nаbіl Ѕаmіr Наddаd`) |
//! | `evasion_cyrillic_one` | one such letter replaced (`Вoris Alekseevich Kulikov`) |
//! | `evasion_greek` | every letter that has a Greek look-alike replaced by it |
//! | `evasion_compat` | every ASCII letter in its fullwidth form (even entries) or mathematical bold form (odd) |
//! | `evasion_bidi_reversed` | the name reversed and put under a right-to-left override (`U+202E … U+202C`), shown as the name |
//! | `evasion_initials` | a person's every word but the last as its initial (`B. A. Kulikov`, `N S Haddad`), particles kept; not when the last word is a particle (`Fang Bin`) |
//! | `evasion_digits` | `0` for every `o`/`O`, `1` for every `l` (the two digits UTS #39 maps to letters) |
//!
//! The common-names set ([`common_names`]) is separate: at least 300 given and family names of
//! one culture from the pools, none that an entry carries together (the same rule as the
//! labelled set's negatives), each with the label `null`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use screening_sim::normalize::normalize;
use screening_sim::watchlist::pools::{Family, Given};
use screening_sim::watchlist::{EntryKind, SplitMix64, Watchlist};

use super::{INVISIBLE, Labelled, ambiguous, insert_inside, neg, pos};

/// Seed of the common-names set (independent of the labelled set's).
pub const COMMON_SEED: u64 = 0x00c0_aa0a_05e7_0043;
/// Size of the common-names set.
pub const COMMON_COUNT: usize = 400;
/// Negatives per class.
const NEGATIVES: usize = 10;

/// Latin letters and their Cyrillic look-alikes (test data: the attack, not the defence).
const CYRILLIC: &[(char, char)] = &[
    ('a', 'а'),
    ('c', 'с'),
    ('e', 'е'),
    ('o', 'о'),
    ('p', 'р'),
    ('x', 'х'),
    ('y', 'у'),
    ('i', 'і'),
    ('j', 'ј'),
    ('s', 'ѕ'),
    ('h', 'һ'),
    ('d', 'ԁ'),
    ('q', 'ԛ'),
    ('w', 'ԝ'),
    ('l', 'ӏ'),
    ('A', 'А'),
    ('B', 'В'),
    ('C', 'С'),
    ('E', 'Е'),
    ('H', 'Н'),
    ('I', 'І'),
    ('J', 'Ј'),
    ('K', 'К'),
    ('M', 'М'),
    ('O', 'О'),
    ('P', 'Р'),
    ('S', 'Ѕ'),
    ('T', 'Т'),
    ('X', 'Х'),
    ('Y', 'Ү'),
];

/// Latin letters and their Greek look-alikes.
const GREEK: &[(char, char)] = &[
    ('A', 'Α'),
    ('B', 'Β'),
    ('E', 'Ε'),
    ('H', 'Η'),
    ('I', 'Ι'),
    ('K', 'Κ'),
    ('M', 'Μ'),
    ('N', 'Ν'),
    ('O', 'Ο'),
    ('P', 'Ρ'),
    ('T', 'Τ'),
    ('X', 'Χ'),
    ('Y', 'Υ'),
    ('Z', 'Ζ'),
    ('o', 'ο'),
    ('v', 'ν'),
    ('i', 'ι'),
    ('a', 'α'),
    ('p', 'ρ'),
    ('y', 'γ'),
];

/// `name` with every letter found in `table` replaced.
fn replace_all(name: &str, table: &[(char, char)]) -> String {
    name.chars()
        .map(|c| table.iter().find(|(l, _)| *l == c).map_or(c, |(_, r)| *r))
        .collect()
}

/// `name` with one letter found in `table`, picked at random, replaced.
fn replace_one(rng: &mut SplitMix64, name: &str, table: &[(char, char)]) -> String {
    let chars: Vec<char> = name.chars().collect();
    let at: Vec<usize> = (0..chars.len())
        .filter(|i| table.iter().any(|(l, _)| *l == chars[*i]))
        .collect();
    let Some(&i) = rng.pick(&at) else {
        return name.to_owned();
    };
    let mut out = chars;
    out[i] = replace_all(&out[i].to_string(), table)
        .chars()
        .next()
        .unwrap_or(out[i]);
    out.into_iter().collect()
}

/// Every ASCII letter in its fullwidth (`bold` false) or mathematical bold form.
fn compat(name: &str, bold: bool) -> String {
    let shift = |c: char, upper: u32, lower: u32| {
        let base = if c.is_ascii_uppercase() { upper } else { lower };
        let first = if c.is_ascii_uppercase() { 'A' } else { 'a' };
        char::from_u32(base + (u32::from(c) - u32::from(first))).unwrap_or(c)
    };
    name.chars()
        .map(|c| match (c.is_ascii_alphabetic(), bold) {
            (false, _) => c,
            (true, false) => shift(c, 0xFF21, 0xFF41),
            (true, true) => shift(c, 0x1D400, 0x1D41A),
        })
        .collect()
}

/// The name reversed under a right-to-left override: shown as the name.
fn reversed(name: &str) -> String {
    format!("\u{202E}{}\u{202C}", name.chars().rev().collect::<String>())
}

/// A person's every word but the last as its initial, with a dot or without.
fn initials(name: &str, dotted: bool) -> Option<String> {
    let words: Vec<&str> = name.split(' ').collect();
    let (last, given) = words.split_last()?;
    // A surname that is also a particle (`Fang Bin`) is no surname to match exactly.
    if given.is_empty() || screening_sim::normalize::is_particle(&last.to_lowercase()) {
        return None;
    }
    let mut out: Vec<String> = given
        .iter()
        .map(|w| {
            if screening_sim::normalize::is_particle(&w.to_lowercase()) {
                (*w).to_owned()
            } else {
                let first = w.chars().next().unwrap_or('X');
                if dotted {
                    format!("{first}.")
                } else {
                    first.to_string()
                }
            }
        })
        .collect();
    out.push((*last).to_owned());
    Some(out.join(" "))
}

/// `0` for every `o`/`O`, `1` for every `l`.
fn digits(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            'o' | 'O' => '0',
            'l' => '1',
            c => c,
        })
        .collect()
}

/// `query` with one invisible code point inside every word of 3+ characters.
fn with_invisible(rng: &mut SplitMix64, query: &str, invisible: char) -> String {
    query
        .split(' ')
        .map(|w| {
            let chars: Vec<char> = w.chars().collect();
            if chars.len() < 3 {
                return w.to_owned();
            }
            insert_inside(rng, &chars, &invisible.to_string())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One class: its category and how it changes a name (`None`: not applicable).
type Mark = (
    &'static str,
    fn(&mut SplitMix64, &str, usize) -> Option<String>,
);

const MARKS: &[(Mark, &str, &str)] = &[
    (
        ("evasion_cyrillic_all", |_, n, _| {
            Some(replace_all(n, CYRILLIC))
        }),
        "evasion_cyrillic_all_invisible",
        "evasion_cyrillic_all_negative",
    ),
    (
        ("evasion_cyrillic_one", |rng, n, _| {
            Some(replace_one(rng, n, CYRILLIC))
        }),
        "evasion_cyrillic_one_invisible",
        "evasion_cyrillic_one_negative",
    ),
    (
        ("evasion_greek", |_, n, _| Some(replace_all(n, GREEK))),
        "evasion_greek_invisible",
        "evasion_greek_negative",
    ),
    (
        ("evasion_compat", |_, n, i| Some(compat(n, i % 2 == 1))),
        "evasion_compat_invisible",
        "evasion_compat_negative",
    ),
    (
        ("evasion_bidi_reversed", |_, n, _| Some(reversed(n))),
        "evasion_bidi_reversed_invisible",
        "evasion_bidi_reversed_negative",
    ),
    (
        ("evasion_initials", |_, n, i| initials(n, i % 2 == 0)),
        "evasion_initials_invisible",
        "evasion_initials_negative",
    ),
    (
        ("evasion_digits", |_, n, _| Some(digits(n))),
        "evasion_digits_invisible",
        "evasion_digits_negative",
    ),
];

/// The classes of the module doc over every primary name, then their negatives built from
/// `innocent` names.
pub fn seen(
    rng: &mut SplitMix64,
    list: &Watchlist,
    mut innocent: impl FnMut(&mut SplitMix64) -> Option<String>,
    out: &mut Vec<Labelled>,
) {
    let mut invisible = INVISIBLE.iter().cycle();
    for ((category, mark), mixed, negative) in MARKS {
        let initials_only = *category == "evasion_initials";
        for (i, e) in list.entries().iter().enumerate() {
            if initials_only && e.kind != EntryKind::Person {
                continue;
            }
            let Some(q) = mark(rng, &e.name, i).filter(|q| *q != e.name) else {
                continue;
            };
            let c = *invisible.next().unwrap_or(&'\u{200B}');
            let hidden = with_invisible(rng, &q, c);
            out.push(pos(e, q, category));
            out.push(pos(e, hidden, mixed));
        }
        let mut made = 0;
        while made < NEGATIVES {
            let Some(name) = innocent(rng) else { continue };
            let Some(q) = mark(rng, &name, made).filter(|q| *q != name) else {
                continue;
            };
            if initials_only && initials_name_someone(list, &q) {
                continue;
            }
            out.push(neg(q, negative));
            made += 1;
        }
    }
}

/// Whether some entry carries the last token of `query` and, for each of its initials, a
/// token starting with it: SPEC §4 makes that a match, so no honest negative.
fn initials_name_someone(list: &Watchlist, query: &str) -> bool {
    let tokens =
        |s: &str| -> Vec<String> { normalize(s).tokens.into_iter().map(|t| t.text).collect() };
    let q = tokens(query);
    let Some((last, initials)) = q.split_last() else {
        return false;
    };
    list.entries().iter().any(|e| {
        e.names().any(|n| {
            let have = tokens(n);
            have.contains(last)
                && initials
                    .iter()
                    .all(|i| have.iter().any(|h| h != last && h.starts_with(i.as_str())))
        })
    })
}

/// The common-names set: [`COMMON_COUNT`] given and family names of one culture from the
/// pools, none that an entry carries together.
pub fn common_names(cultures: &[(&[Given], &[Family])]) -> Vec<Labelled> {
    let list = Watchlist::bundled();
    let mut rng = SplitMix64::new(COMMON_SEED);
    let mut out: Vec<Labelled> = Vec::new();
    while out.len() < COMMON_COUNT {
        let Some((gs, fs)) = rng.pick(cultures) else {
            break;
        };
        let (Some(g), Some(f)) = (rng.pick(gs), rng.pick(fs)) else {
            continue;
        };
        let name = format!("{} {}", g.latin, f.latin);
        if !ambiguous(list, g, f) && out.iter().all(|l| l.query != name) {
            out.push(neg(name, "common_name"));
        }
    }
    out
}
