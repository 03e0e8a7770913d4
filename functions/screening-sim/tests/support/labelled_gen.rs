//! Generator of the labelled query set `tests/data/labelled.jsonl` (issue 12 "Precision and
//! recall measured on a labelled set of at least 200 queries").
//!
//! Regenerate after a watchlist change with
//! `cargo run -p screening-sim --example gen_labelled > functions/screening-sim/tests/data/labelled.jsonl`;
//! `tests/labelled.rs` fails while the committed file differs from what this makes.
//!
//! The labels come from how each query is made, never from the matcher: a query derived
//! from entry X is labelled X, a query built to name nobody is labelled `null`. The matcher
//! is not called here. Kinds of query (the `category` field):
//!
//! | category | label | how it is made |
//! |---|---|---|
//! | `exact` | entry | the primary name as listed |
//! | `reordered` | entry | the last name token moved to the front with a comma ("Ivanov, Sergei") |
//! | `misspelling` | entry | one edit (drop, double, swap, vowel change) in one token of 5+ letters |
//! | `double_misspelling` | entry | the same in two tokens |
//! | `native_script` | entry | a Cyrillic / Arabic / Persian / Chinese alias verbatim |
//! | `native_partial` | entry | such an alias with a token dropped or the tokens reversed |
//! | `spelling_variant` | entry | one name replaced by another romanisation from the pools (Muhammad for Mohammed) |
//! | `dropped_middle` | entry | a middle token (patronymic, father's or second name) left out |
//! | `decorated` | entry | an honorific added, capitals, accents stripped |
//! | `entity_suffix` | entry | a company's legal form dropped or changed, a vessel's M/V prefix |
//! | `with_evidence` | entry | a misspelt person name with the listed date of birth and country |
//! | `typo_anywhere` | entry | one keyboard slip (neighbour key, dropped, added or swapped letter) anywhere in a token of 4+ letters, first and last letters included |
//! | `two_variants` | entry | two names replaced by other romanisations |
//! | `variant_and_drop` | entry | one name in another romanisation and a middle token left out |
//! | `recombined` | none | a given and a family name of one culture's pools that no entry carries together |
//! | `unrelated_person` | none | an ordinary name from cultures the list does not draw on |
//! | `unrelated_entity` | none | an ordinary business name |
//! | `contradicted` | none | a listed person's exact name with a date of birth 8+ years off and another country |
//! | `same_family_other_given` | none | a listed person's family name with another given name of the same culture |
//! | `same_given_other_family` | none | a listed person's given name with another family name of the same culture |
//! | `evasion_format` | entry | an invisible code point (general category `Cf` or `Default_Ignorable_Code_Point`: TAG, bidi, Arabic number signs, interlinear annotation, Hangul fillers …) inside every word of 3+ letters (issue #30) |
//! | `evasion_punctuation` | entry | a hyphen, underscore, middle dot or dash inside every word of 4+ letters ("Na-bil Sa-mir Had-dad") |
//! | `evasion_run_together` | entry | a person's or company's words run together ("NabilSamirHaddad", "nabilsamir haddad") |
//! | `evasion_format_negative` | none | an ordinary name with the same invisible insertions |
//! | `evasion_punctuation_negative` | none | a recombined or ordinary name with the same punctuation inside words, or a real double-barrelled name ("Jean-Luc Moreau") |
//! | `evasion_run_together_negative` | none | a recombined or ordinary name run together |
//! | `evasion_cyrillic_all` … `evasion_digits` and their `_invisible` and `_negative` | entry / none | what a person sees (issue 43): every primary name with look-alike letters, reversed under a bidi override, with initials, with 0/1 for o/l ([`seen_gen`]) |
//!
//! A built negative is dropped when some entry carries both of its names in any pool
//! spelling, or names one keyboard slip away from both (Damerau–Levenshtein ≤ 1: "Goran Ilić"
//! against a listed "Zoran Ilić"), because flagging those is right and a `null` label would
//! be wrong. Swapped names differ from every spelling of the name they replace by 3+ edits.
//!
//! Left out on purpose, because no label would be honest: a surname alone, and an entity
//! sharing a distinctive brand with a listed one ("Volganeft Logistics" against "Volganeft
//! Trading"), where analysts themselves disagree.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::OnceLock;

use screening_sim::normalize::normalize;
use screening_sim::watchlist::pools::{Family, Given, arabic, asian, slavic, western};
use screening_sim::watchlist::{EntryKind, SplitMix64, Watchlist, WatchlistEntry};

/// Issue 43's classes and the common-names set: a child of this module, so its use of the
/// shared builders below is no import cycle.
#[path = "seen_gen.rs"]
mod seen_gen;

/// The generator's seed (independent of the watchlist's).
pub const LABELLED_SEED: u64 = 0x01ab_e11e_d5e7_0001;

/// One labelled query.
#[derive(Debug, Clone)]
pub struct Labelled {
    pub query: String,
    pub country: Option<String>,
    pub date_of_birth: Option<String>,
    pub expected: Option<String>,
    pub category: &'static str,
}

impl Labelled {
    /// One line: canonical JSON (sorted keys), whatever serde_json's map order is in this
    /// build (a workspace build with `cedar-policy` turns on its `preserve_order`).
    fn to_json(&self) -> String {
        let mut v = serde_json::json!({"query": self.query, "expected": self.expected, "category": self.category});
        if let Some(c) = &self.country {
            v["country"] = c.clone().into();
        }
        if let Some(d) = &self.date_of_birth {
            v["date_of_birth"] = d.clone().into();
        }
        kosha_contract::canonical::to_string(&v)
    }
}

/// Invisible code points of the evasion classes (issue #30), one or more per class.
pub const INVISIBLE: &[char] = &[
    '\u{E0001}',
    '\u{E0020}',
    '\u{E0041}',
    '\u{E007F}',
    '\u{206A}',
    '\u{206B}',
    '\u{206F}',
    '\u{FFF9}',
    '\u{FFFA}',
    '\u{FFFB}',
    '\u{0600}',
    '\u{0601}',
    '\u{0605}',
    '\u{061C}',
    '\u{06DD}',
    '\u{070F}',
    '\u{08E2}',
    '\u{110BD}',
    '\u{13430}',
    '\u{13438}',
    '\u{1BCA0}',
    '\u{1BCA3}',
    '\u{1D173}',
    '\u{1D17A}',
    '\u{200B}',
    '\u{200D}',
    '\u{2060}',
    '\u{2064}',
    '\u{FEFF}',
    '\u{00AD}',
    '\u{180E}',
    '\u{034F}',
    '\u{115F}',
    '\u{3164}',
    '\u{FE0F}',
    '\u{E0100}',
    '\u{17B4}',
];

/// Punctuation put inside words to break them up (issue #30).
pub const INNER_PUNCTUATION: &[&str] = &["-", "_", "\u{00B7}", "\u{2013}", "\u{2010}", "~"];

/// `name` with `insert` put inside every word of at least `min` characters, at a random
/// position that is neither the first nor after the last character.
fn inside_words(rng: &mut SplitMix64, name: &str, min: usize, insert: &str) -> String {
    name.split(' ')
        .map(|w| {
            let chars: Vec<char> = w.chars().collect();
            if chars.len() < min || !chars.iter().all(|c| c.is_alphabetic()) {
                return w.to_owned();
            }
            insert_inside(rng, &chars, insert)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `chars` with `insert` at a random position that is neither the first nor after the last.
pub fn insert_inside(rng: &mut SplitMix64, chars: &[char], insert: &str) -> String {
    let at = 1 + rng.below(chars.len() - 1);
    let (a, b) = chars.split_at(at);
    format!(
        "{}{insert}{}",
        a.iter().collect::<String>(),
        b.iter().collect::<String>()
    )
}

/// `name`'s words run together: all of them in CamelCase, all lower case, or the first two
/// only.
fn run_together(rng: &mut SplitMix64, name: &str) -> String {
    let words: Vec<&str> = name.split(' ').collect();
    match rng.below(3) {
        0 => words.concat(),
        1 => words.concat().to_lowercase(),
        _ if words.len() >= 3 => format!("{}{} {}", words[0], words[1], words[2..].join(" ")),
        _ => words.concat(),
    }
}

/// The whole file's text, one JSON object per line.
pub fn render(queries: &[Labelled]) -> String {
    queries.iter().map(|q| q.to_json() + "\n").collect()
}

pub fn pos(entry: &WatchlistEntry, query: String, category: &'static str) -> Labelled {
    Labelled {
        query,
        country: None,
        date_of_birth: None,
        expected: Some(entry.id.clone()),
        category,
    }
}

pub fn neg(query: String, category: &'static str) -> Labelled {
    Labelled {
        query,
        country: None,
        date_of_birth: None,
        expected: None,
        category,
    }
}

fn is_latin(s: &str) -> bool {
    s.chars().all(|c| (c as u32) < 0x0250 || !c.is_alphabetic())
}

/// One random edit inside a word of 5+ ASCII letters; None if the name has none.
fn misspell(rng: &mut SplitMix64, name: &str, skip_word: Option<usize>) -> Option<(String, usize)> {
    let words: Vec<&str> = name.split(' ').collect();
    let eligible: Vec<usize> = (0..words.len())
        .filter(|i| {
            Some(*i) != skip_word
                && words[*i].len() >= 5
                && words[*i].chars().all(|c| c.is_ascii_alphabetic())
        })
        .collect();
    let &wi = rng.pick(&eligible)?;
    let mut chars: Vec<char> = words[wi].chars().collect();
    let at = 1 + rng.below(chars.len() - 2); // never the first or last letter
    match rng.below(4) {
        0 => {
            chars.remove(at);
        }
        1 => {
            let c = chars[at];
            chars.insert(at, c);
        }
        2 => chars.swap(at, at + 1),
        _ => {
            let vowels = ['a', 'e', 'i', 'o', 'u'];
            let c = chars[at];
            let replacement = vowels
                .iter()
                .copied()
                .find(|v| *v != c && (rng.chance(40) || *v == 'e'))?;
            chars[at] = replacement;
        }
    }
    let mut out: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
    out[wi] = chars.into_iter().collect();
    let joined = out.join(" ");
    (joined != name).then_some((joined, wi))
}

/// QWERTY neighbours of a lower-case letter.
fn neighbours(c: char) -> &'static str {
    match c {
        'q' => "wa",
        'w' => "qes",
        'e' => "wrd",
        'r' => "etf",
        't' => "ryg",
        'y' => "tuh",
        'u' => "yij",
        'i' => "uok",
        'o' => "ipl",
        'p' => "ol",
        'a' => "qsz",
        's' => "adw",
        'd' => "sfe",
        'f' => "dgr",
        'g' => "fht",
        'h' => "gjy",
        'j' => "hku",
        'k' => "jli",
        'l' => "ko",
        'z' => "xa",
        'x' => "zcs",
        'c' => "xvd",
        'v' => "cbf",
        'b' => "vng",
        'n' => "bmh",
        'm' => "nj",
        _ => "",
    }
}

/// One keyboard slip anywhere in a token of 4+ ASCII letters.
fn slip(rng: &mut SplitMix64, name: &str) -> Option<String> {
    let words: Vec<&str> = name.split(' ').collect();
    let eligible: Vec<usize> = (0..words.len())
        .filter(|i| words[*i].len() >= 4 && words[*i].chars().all(|c| c.is_ascii_alphabetic()))
        .collect();
    let &wi = rng.pick(&eligible)?;
    let mut chars: Vec<char> = words[wi].chars().collect();
    let at = rng.below(chars.len());
    let upper = chars[at].is_ascii_uppercase();
    let lower = chars[at].to_ascii_lowercase();
    let near: Vec<char> = neighbours(lower).chars().collect();
    let &n = rng.pick(&near)?;
    let n = if upper { n.to_ascii_uppercase() } else { n };
    match rng.below(4) {
        0 => chars[at] = n,
        1 => {
            chars.remove(at);
        }
        2 => chars.insert(at, n),
        _ => {
            let j = if at + 1 < chars.len() { at + 1 } else { at - 1 };
            chars.swap(at, j);
        }
    }
    let mut out: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
    out[wi] = chars.into_iter().collect();
    let joined = out.join(" ");
    (joined != name).then_some(joined)
}

/// Replaces `count` different pool names found in `name` by another spelling of each.
fn respell(
    rng: &mut SplitMix64,
    name: &str,
    pool: &[(&'static str, Vec<&'static str>)],
    count: usize,
) -> Option<String> {
    let mut candidates: Vec<&(&str, Vec<&str>)> = pool
        .iter()
        .filter(|(latin, vs)| vs.iter().any(|v| v != latin) && name.split(' ').any(|w| w == *latin))
        .collect();
    if candidates.len() < count {
        return None;
    }
    rng.shuffle(&mut candidates);
    let mut words: Vec<String> = name.split(' ').map(str::to_owned).collect();
    for (latin, vs) in candidates.into_iter().take(count) {
        let others: Vec<&str> = vs.iter().copied().filter(|v| v != latin).collect();
        let v = *rng.pick(&others)?;
        for w in &mut words {
            if w == latin {
                *w = v.to_owned();
            }
        }
    }
    Some(words.join(" "))
}

/// Whether a negative built from `given` and `family` would be ambiguous (see the module doc).
pub fn ambiguous(list: &Watchlist, given: &Given, family: &Family) -> bool {
    let near = |e: &WatchlistEntry, spellings: &[Vec<String>]| {
        spellings.iter().any(|wanted| {
            entry_tokens(e).iter().any(|have| {
                wanted.iter().all(|w| {
                    have.iter().any(|h| {
                        h.starts_with(w.as_str()) || strsim::damerau_levenshtein(h, w) <= 1
                    })
                })
            })
        })
    };
    let g: Vec<Vec<String>> = spellings(given.latin, given.variants)
        .into_iter()
        .map(tokens)
        .collect();
    let f: Vec<Vec<String>> = spellings(family.latin, family.variants)
        .into_iter()
        .map(tokens)
        .collect();
    list.entries().iter().any(|e| near(e, &g) && near(e, &f))
}

/// Whether every spelling of `a` is 3+ edits from every spelling of `b`.
fn far_apart(a: &Given, b: &Given) -> bool {
    spellings(a.latin, a.variants).iter().all(|x| {
        spellings(b.latin, b.variants)
            .iter()
            .all(|y| strsim::damerau_levenshtein(&x.to_lowercase(), &y.to_lowercase()) >= 3)
    })
}

/// Whether every spelling of `a` is 3+ edits from every spelling of `b`.
fn far_apart_family(a: &Family, b: &Family) -> bool {
    spellings(a.latin, a.variants).iter().all(|x| {
        spellings(b.latin, b.variants)
            .iter()
            .all(|y| strsim::damerau_levenshtein(&x.to_lowercase(), &y.to_lowercase()) >= 3)
    })
}

fn strip_accents(s: &str) -> String {
    use screening_sim::normalize::fold;
    // Keep word boundaries and capitalisation roughly: fold each word separately.
    s.split(' ')
        .map(|w| {
            let f = fold(w).join("");
            let mut cs = f.chars();
            match cs.next() {
                Some(c) => c.to_ascii_uppercase().to_string() + cs.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn all_given() -> Vec<Given> {
    [
        slavic::RUSSIAN_GIVEN,
        slavic::SERBIAN_GIVEN,
        arabic::ARABIC_GIVEN,
        arabic::PERSIAN_GIVEN,
        asian::CHINESE_GIVEN,
        asian::KOREAN_GIVEN,
        western::SPANISH_GIVEN,
        western::TURKISH_GIVEN,
        western::ENGLISH_GIVEN,
    ]
    .concat()
}

fn all_family() -> Vec<Family> {
    [
        slavic::RUSSIAN_FAMILY,
        slavic::SERBIAN_FAMILY,
        arabic::ARABIC_FAMILY,
        arabic::PERSIAN_FAMILY,
        asian::CHINESE_FAMILY,
        asian::KOREAN_FAMILY,
        western::SPANISH_FAMILY,
        western::TURKISH_FAMILY,
        western::ENGLISH_FAMILY,
    ]
    .concat()
}

/// Every entry's names as normalised tokens, by id (computed once).
fn entry_tokens(entry: &WatchlistEntry) -> &'static [Vec<String>] {
    static CACHE: OnceLock<HashMap<String, Vec<Vec<String>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| {
        Watchlist::bundled()
            .entries()
            .iter()
            .map(|e| (e.id.clone(), e.names().map(tokens).collect()))
            .collect()
    });
    cache.get(&entry.id).map(Vec::as_slice).unwrap_or(&[])
}

fn tokens(name: &str) -> Vec<String> {
    normalize(name).tokens.into_iter().map(|t| t.text).collect()
}

/// Whether `spelling`'s tokens all occur (as tokens or token prefixes) in one of `entry`'s names.
fn carries(entry: &WatchlistEntry, spelling: &str) -> bool {
    let wanted = tokens(spelling);
    entry_tokens(entry).iter().any(|have| {
        wanted
            .iter()
            .all(|w| have.iter().any(|h| h == w || h.starts_with(w.as_str())))
    })
}

fn spellings(latin: &'static str, variants: &[&'static str]) -> Vec<&'static str> {
    std::iter::once(latin)
        .chain(variants.iter().copied())
        .collect()
}

/// Builds the labelled set from the bundled watchlist.
pub fn generate() -> Vec<Labelled> {
    let list = Watchlist::bundled();
    let mut rng = SplitMix64::new(LABELLED_SEED);
    let persons: Vec<&WatchlistEntry> = list
        .entries()
        .iter()
        .filter(|e| e.kind == EntryKind::Person)
        .collect();
    let companies: Vec<&WatchlistEntry> = list
        .entries()
        .iter()
        .filter(|e| e.kind == EntryKind::Company)
        .collect();
    let vessels: Vec<&WatchlistEntry> = list
        .entries()
        .iter()
        .filter(|e| e.kind == EntryKind::Vessel)
        .collect();
    let mut out = Vec::new();

    // exact
    for _ in 0..10 {
        let Some(e) = rng.pick(list.entries()) else {
            break;
        };
        out.push(pos(e, e.name.clone(), "exact"));
    }
    // reordered
    for _ in 0..25 {
        let Some(e) = rng.pick(&persons) else { break };
        let words: Vec<&str> = e.name.split(' ').collect();
        if let Some((last, rest)) = words.split_last() {
            out.push(pos(e, format!("{last}, {}", rest.join(" ")), "reordered"));
        }
    }
    // misspelling (persons, companies and vessels in list proportions)
    let mut made = 0;
    while made < 45 {
        let Some(e) = rng.pick(list.entries()) else {
            break;
        };
        if let Some((q, _)) = misspell(&mut rng, &e.name, None) {
            out.push(pos(e, q, "misspelling"));
            made += 1;
        }
    }
    made = 0;
    while made < 15 {
        let Some(e) = rng.pick(&persons) else { break };
        if let Some((q1, w1)) = misspell(&mut rng, &e.name, None)
            && let Some((q2, _)) = misspell(&mut rng, &q1, Some(w1))
        {
            out.push(pos(e, q2, "double_misspelling"));
            made += 1;
        }
    }
    // native_script and native_partial
    let native: Vec<(&WatchlistEntry, &String)> = list
        .entries()
        .iter()
        .flat_map(|e| {
            e.aliases
                .iter()
                .filter(|a| !is_latin(a))
                .map(move |a| (e, a))
        })
        .collect();
    for _ in 0..30 {
        let Some((e, a)) = rng.pick(&native) else {
            break;
        };
        out.push(pos(e, (*a).clone(), "native_script"));
    }
    made = 0;
    while made < 15 {
        let Some((e, a)) = rng.pick(&native) else {
            break;
        };
        let words: Vec<&str> = a.split(' ').collect();
        let q = if words.len() >= 3 && rng.chance(50) {
            let mut w = words.clone();
            w.remove(1 + rng.below(words.len() - 2));
            w.join(" ")
        } else if words.len() >= 2 {
            words.iter().rev().copied().collect::<Vec<_>>().join(" ")
        } else {
            continue;
        };
        out.push(pos(e, q, "native_partial"));
        made += 1;
    }
    // spelling_variant
    let given = all_given();
    let family = all_family();
    made = 0;
    while made < 30 {
        let Some(e) = rng.pick(&persons) else { break };
        let candidates: Vec<(&str, Vec<&str>)> = given
            .iter()
            .map(|g| (g.latin, g.variants.to_vec()))
            .chain(family.iter().map(|f| (f.latin, f.variants.to_vec())))
            .filter(|(latin, vs)| {
                !vs.iter().all(|v| v == latin) && e.name.split(' ').any(|w| w == *latin)
            })
            .collect();
        let Some((latin, vs)) = rng.pick(&candidates) else {
            continue;
        };
        let others: Vec<&str> = vs.iter().copied().filter(|v| v != latin).collect();
        let Some(v) = rng.pick(&others) else { continue };
        let q: Vec<&str> = e
            .name
            .split(' ')
            .map(|w| if w == *latin { *v } else { w })
            .collect();
        out.push(pos(e, q.join(" "), "spelling_variant"));
        made += 1;
    }
    // dropped_middle
    made = 0;
    while made < 20 {
        let Some(e) = rng.pick(&persons) else { break };
        let words: Vec<&str> = e.name.split(' ').collect();
        // Korean given names are two inseparable syllables; dropping one is not a variant.
        if words.len() < 3 || e.country == "KP" {
            continue;
        }
        let mut w = words.clone();
        w.remove(1 + rng.below(words.len() - 2));
        out.push(pos(e, w.join(" "), "dropped_middle"));
        made += 1;
    }
    // decorated
    for _ in 0..15 {
        let Some(e) = rng.pick(&persons) else { break };
        let title = *rng
            .pick(&["Mr.", "Mrs.", "Dr.", "Sheikh", "Gen.", "Prof.", "Hajji"])
            .unwrap_or(&"Mr.");
        let name = match rng.below(3) {
            0 => e.name.to_uppercase(),
            1 => strip_accents(&e.name),
            _ => e.name.to_lowercase(),
        };
        out.push(pos(e, format!("{title} {name}"), "decorated"));
    }
    // entity_suffix
    for _ in 0..20 {
        let Some(e) = rng.pick(&companies) else { break };
        let words: Vec<&str> = e.name.split(' ').collect();
        let q = match rng.below(3) {
            0 => {
                // drop the legal form: the last word, or "Co., Ltd." / "Company"
                let keep = if e.name.ends_with("Co., Ltd.") {
                    words.len() - 2
                } else {
                    words.len() - 1
                };
                words[..keep].join(" ")
            }
            1 => format!("{} Limited", words[..words.len() - 1].join(" ")),
            _ => format!("{} Co.", words[..words.len() - 1].join(" ")),
        };
        out.push(pos(e, q, "entity_suffix"));
    }
    for _ in 0..5 {
        let Some(e) = rng.pick(&vessels) else { break };
        let prefix = *rng.pick(&["M/V", "MV", "MT", "M/T"]).unwrap_or(&"MV");
        out.push(pos(
            e,
            format!("{prefix} {}", e.name.to_uppercase()),
            "entity_suffix",
        ));
    }
    // with_evidence
    made = 0;
    while made < 15 {
        let Some(e) = rng.pick(&persons) else { break };
        let Some((q, _)) = misspell(&mut rng, &e.name, None) else {
            continue;
        };
        let mut l = pos(e, q, "with_evidence");
        l.country = Some(e.country.to_owned());
        l.date_of_birth = e.date_of_birth.map(|d| d.to_string());
        out.push(l);
        made += 1;
    }

    // typo_anywhere
    made = 0;
    while made < 30 {
        let Some(e) = rng.pick(list.entries()) else {
            break;
        };
        if let Some(q) = slip(&mut rng, &e.name) {
            out.push(pos(e, q, "typo_anywhere"));
            made += 1;
        }
    }
    // two_variants and variant_and_drop
    let pool: Vec<(&'static str, Vec<&'static str>)> = given
        .iter()
        .map(|g| (g.latin, g.variants.to_vec()))
        .chain(family.iter().map(|f| (f.latin, f.variants.to_vec())))
        .collect();
    made = 0;
    while made < 15 {
        let Some(e) = rng.pick(&persons) else { break };
        if let Some(q) = respell(&mut rng, &e.name, &pool, 2) {
            out.push(pos(e, q, "two_variants"));
            made += 1;
        }
    }
    made = 0;
    while made < 15 {
        let Some(e) = rng.pick(&persons) else { break };
        let words: Vec<&str> = e.name.split(' ').collect();
        if words.len() < 3 || e.country == "KP" {
            continue;
        }
        let mut w = words.clone();
        w.remove(1 + rng.below(words.len() - 2));
        if let Some(q) = respell(&mut rng, &w.join(" "), &pool, 1) {
            out.push(pos(e, q, "variant_and_drop"));
            made += 1;
        }
    }

    // recombined
    let cultures: [(&[Given], &[Family]); 7] = [
        (slavic::RUSSIAN_GIVEN, slavic::RUSSIAN_FAMILY),
        (arabic::ARABIC_GIVEN, arabic::ARABIC_FAMILY),
        (arabic::PERSIAN_GIVEN, arabic::PERSIAN_FAMILY),
        (slavic::SERBIAN_GIVEN, slavic::SERBIAN_FAMILY),
        (western::SPANISH_GIVEN, western::SPANISH_FAMILY),
        (western::TURKISH_GIVEN, western::TURKISH_FAMILY),
        (western::ENGLISH_GIVEN, western::ENGLISH_FAMILY),
    ];
    made = 0;
    while made < 40 {
        let Some((gs, fs)) = rng.pick(&cultures) else {
            break;
        };
        let (Some(g), Some(f)) = (rng.pick(gs), rng.pick(fs)) else {
            continue;
        };
        if !ambiguous(list, g, f) {
            out.push(neg(format!("{} {}", g.latin, f.latin), "recombined"));
            made += 1;
        }
    }
    // unrelated_person
    const ORDINARY: &[(&[&str], &[&str])] = &[
        (
            &["Hiroshi", "Yuki", "Takeshi", "Aiko", "Kenji"],
            &["Tanaka", "Sato", "Watanabe", "Yamamoto", "Nakamura"],
        ),
        (
            &["Ingrid", "Lars", "Sven", "Astrid", "Nils"],
            &["Johansson", "Lindqvist", "Andersen", "Haugen", "Nyberg"],
        ),
        (
            &["Priya", "Rahul", "Anjali", "Vikram", "Sunita"],
            &["Sharma", "Iyer", "Patel", "Reddy", "Banerjee"],
        ),
        (
            &["Klaus", "Ursula", "Jürgen", "Heike", "Matthias"],
            &["Becker", "Schulze", "Hoffmann", "Krüger", "Wagner"],
        ),
        (
            &["Giulia", "Lorenzo", "Francesca", "Matteo", "Chiara"],
            &["Bianchi", "Esposito", "Ricci", "Marino", "Greco"],
        ),
        (
            &["Chinedu", "Ngozi", "Oluwaseun", "Adaeze", "Emeka"],
            &["Okafor", "Adeyemi", "Nwosu", "Balogun", "Eze"],
        ),
        (
            &["Agnieszka", "Tomasz", "Katarzyna", "Piotr", "Magdalena"],
            &["Kowalska", "Wiśniewski", "Zieliński", "Wójcik", "Kamińska"],
        ),
        (
            &["Thiago", "Camila", "Rafaela", "Bruno", "Larissa"],
            &["Oliveira", "Souza", "Carvalho", "Ferreira", "Almeida"],
        ),
        (
            &["Aoife", "Ciarán", "Siobhán", "Eoin", "Niamh"],
            &[
                "Ó Briain",
                "Mac Cárthaigh",
                "Ní Dhomhnaill",
                "Ó Súilleabháin",
                "Breathnach",
            ],
        ),
    ];
    for _ in 0..35 {
        let Some((gs, fs)) = rng.pick(ORDINARY) else {
            break;
        };
        let (Some(g), Some(f)) = (rng.pick(gs), rng.pick(fs)) else {
            continue;
        };
        out.push(neg(format!("{g} {f}"), "unrelated_person"));
    }
    // unrelated_entity
    const FIRST: &[&str] = &[
        "Maple Leaf",
        "Sunrise",
        "Riverside",
        "Blue Lotus",
        "Greenfield",
        "Little Acorn",
        "Harbourview",
        "Old Mill",
        "Bright Smile",
        "Cedar Grove",
    ];
    const TRADE: &[&str] = &[
        "Bakery",
        "Dental Clinic",
        "Plumbing",
        "Yoga Studio",
        "Veterinary Practice",
        "Bookshop",
        "Car Wash",
        "Florists",
        "Tutoring",
        "Laundry Services",
    ];
    const FORM: &[&str] = &["Ltd", "LLC", "", "Inc.", "GmbH", "S.A.R.L."];
    for _ in 0..20 {
        let (Some(a), Some(t), Some(fm)) = (rng.pick(FIRST), rng.pick(TRADE), rng.pick(FORM))
        else {
            break;
        };
        out.push(neg(
            format!("{a} {t} {fm}").trim().to_owned(),
            "unrelated_entity",
        ));
    }
    // contradicted
    made = 0;
    while made < 15 {
        let Some(e) = rng.pick(&persons) else { break };
        let Some(dob) = e.date_of_birth else { continue };
        let years = 8 + i32::try_from(rng.below(15)).unwrap_or(0);
        let shifted = if rng.chance(50) {
            dob.year() + years
        } else {
            dob.year() - years
        };
        let Ok(other) = dob
            .replace_year(shifted)
            .or_else(|_| dob.replace_day(28).and_then(|d| d.replace_year(shifted)))
        else {
            continue;
        };
        if other.year() > 2005 {
            continue;
        }
        let others: Vec<&str> = ["GB", "JP", "BR", "NO", "IN", "CA"]
            .into_iter()
            .filter(|c| *c != e.country)
            .collect();
        let country = *rng.pick(&others).unwrap_or(&"JP");
        let mut l = neg(e.name.clone(), "contradicted");
        l.country = Some(country.to_owned());
        l.date_of_birth = Some(other.to_string());
        out.push(l);
        made += 1;
    }
    // same_family_other_given and same_given_other_family
    made = 0;
    while made < 30 {
        let Some((gs, fs)) = rng.pick(&cultures) else {
            break;
        };
        let (Some(f), Some(g_old), Some(g_new)) = (rng.pick(fs), rng.pick(gs), rng.pick(gs)) else {
            continue;
        };
        let listed = list.entries().iter().any(|e| {
            carries(e, g_old.latin) && carries(e, f.latin) && e.name.contains(g_old.latin)
        });
        if listed && far_apart(g_old, g_new) && !ambiguous(list, g_new, f) {
            out.push(neg(
                format!("{} {}", g_new.latin, f.latin),
                "same_family_other_given",
            ));
            made += 1;
        }
    }
    made = 0;
    while made < 20 {
        let Some((gs, fs)) = rng.pick(&cultures) else {
            break;
        };
        let (Some(g), Some(f_old), Some(f_new)) = (rng.pick(gs), rng.pick(fs), rng.pick(fs)) else {
            continue;
        };
        let listed = list.entries().iter().any(|e| {
            carries(e, g.latin) && carries(e, f_old.latin) && e.name.contains(f_old.latin)
        });
        if listed && far_apart_family(f_old, f_new) && !ambiguous(list, g, f_new) {
            out.push(neg(
                format!("{} {}", g.latin, f_new.latin),
                "same_given_other_family",
            ));
            made += 1;
        }
    }
    evasions(&mut rng, list, &cultures, ORDINARY, &mut out);
    out
}

/// The evasion classes of issue #30 and their negatives, appended after the other classes
/// so that those keep their queries.
fn evasions(
    rng: &mut SplitMix64,
    list: &Watchlist,
    cultures: &[(&[Given], &[Family])],
    ordinary: &[(&[&str], &[&str])],
    out: &mut Vec<Labelled>,
) {
    let latin: Vec<&WatchlistEntry> = list
        .entries()
        .iter()
        .filter(|e| is_latin(&e.name) && e.kind != EntryKind::Vessel)
        .collect();
    let mut invisible = INVISIBLE.iter().cycle();
    for _ in 0..INVISIBLE.len() {
        let (Some(e), Some(c)) = (rng.pick(&latin), invisible.next()) else {
            break;
        };
        let q = inside_words(rng, &e.name, 3, &c.to_string());
        out.push(pos(e, q, "evasion_format"));
    }
    for i in 0..30 {
        let Some(e) = rng.pick(&latin) else { break };
        let mark = INNER_PUNCTUATION[i % INNER_PUNCTUATION.len()];
        let q = inside_words(rng, &e.name, 4, mark);
        out.push(pos(e, q, "evasion_punctuation"));
    }
    let persons_and_companies: Vec<&&WatchlistEntry> = latin
        .iter()
        .filter(|e| e.name.split(' ').count() >= 2 && e.country != "KP")
        .collect();
    for _ in 0..20 {
        let Some(e) = rng.pick(&persons_and_companies) else {
            break;
        };
        let q = run_together(rng, &e.name);
        out.push(pos(e, q, "evasion_run_together"));
    }
    // Negatives: names on no list, with the same marks.
    let innocent = |rng: &mut SplitMix64| -> Option<String> {
        if rng.chance(50) {
            let (gs, fs) = rng.pick(ordinary)?;
            Some(format!("{} {}", rng.pick(gs)?, rng.pick(fs)?))
        } else {
            let (gs, fs) = rng.pick(cultures)?;
            let (g, f) = (rng.pick(gs)?, rng.pick(fs)?);
            (!ambiguous(list, g, f)).then(|| format!("{} {}", g.latin, f.latin))
        }
    };
    let mut made = 0;
    while made < 20 {
        let (Some(name), Some(c)) = (innocent(rng), invisible.next()) else {
            continue;
        };
        out.push(neg(
            inside_words(rng, &name, 3, &c.to_string()),
            "evasion_format_negative",
        ));
        made += 1;
    }
    made = 0;
    while made < 20 {
        let Some(name) = innocent(rng) else { continue };
        let mark = INNER_PUNCTUATION[made % INNER_PUNCTUATION.len()];
        out.push(neg(
            inside_words(rng, &name, 4, mark),
            "evasion_punctuation_negative",
        ));
        made += 1;
    }
    for name in [
        "Jean-Luc Moreau",
        "Anne-Marie Lefebvre",
        "Hans-Peter Vogel",
        "Mary-Kate O'Connor",
        "Sean O'Sullivan",
        "Lloyd-Davies Consulting Ltd",
    ] {
        out.push(neg(name.to_owned(), "evasion_punctuation_negative"));
    }
    made = 0;
    while made < 15 {
        let Some(name) = innocent(rng) else { continue };
        out.push(neg(
            run_together(rng, &name),
            "evasion_run_together_negative",
        ));
        made += 1;
    }
    seen_gen::seen(rng, list, innocent, out);
}

/// The common-names set (separate from the labelled set, [`seen_gen::common_names`]): given
/// and family names of every culture of the list.
pub fn common() -> Vec<Labelled> {
    let cultures: [(&[Given], &[Family]); 9] = [
        (slavic::RUSSIAN_GIVEN, slavic::RUSSIAN_FAMILY),
        (slavic::SERBIAN_GIVEN, slavic::SERBIAN_FAMILY),
        (arabic::ARABIC_GIVEN, arabic::ARABIC_FAMILY),
        (arabic::PERSIAN_GIVEN, arabic::PERSIAN_FAMILY),
        (asian::CHINESE_GIVEN, asian::CHINESE_FAMILY),
        (asian::KOREAN_GIVEN, asian::KOREAN_FAMILY),
        (western::SPANISH_GIVEN, western::SPANISH_FAMILY),
        (western::TURKISH_GIVEN, western::TURKISH_FAMILY),
        (western::ENGLISH_GIVEN, western::ENGLISH_FAMILY),
    ];
    seen_gen::common_names(&cultures)
}
