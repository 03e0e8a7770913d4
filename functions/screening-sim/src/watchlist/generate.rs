//! The deterministic generator behind [`super::Watchlist::generate`].
//!
//! Drafts are made culture by culture in a fixed order from one SplitMix64 stream, shuffled,
//! and numbered `wl_00001` … in the shuffled order, so the kinds interleave as on a real list.
//! A draft whose any name normalises like a name already taken, or a person whose given and
//! family name pair is taken, is skipped and another is drawn.

use std::collections::HashSet;

use time::Date;

use super::pools::{Family, Given, arabic, asian, entities, slavic, western};
use super::{EntryKind, SplitMix64, WatchlistEntry};
use crate::normalize::normalize;

/// A not-yet-numbered entry.
struct Draft {
    kind: EntryKind,
    name: String,
    aliases: Vec<String>,
    country: &'static str,
    date_of_birth: Option<Date>,
}

/// Tracks names taken so far.
#[derive(Default)]
struct Builder {
    drafts: Vec<Draft>,
    keys: HashSet<String>,
    pairs: HashSet<(&'static str, &'static str)>,
}

impl Builder {
    /// Adds `draft` unless one of its names is taken; says whether it was added.
    fn try_add(&mut self, draft: Draft) -> bool {
        let keys: HashSet<String> = std::iter::once(draft.name.as_str())
            .chain(draft.aliases.iter().map(String::as_str))
            .map(key)
            .collect();
        if keys.iter().any(|k| k.is_empty() || self.keys.contains(k)) {
            return false;
        }
        self.keys.extend(keys);
        self.drafts.push(draft);
        true
    }

    /// Adds a person draft unless its (given, family) pair or a name is taken.
    fn try_add_person(&mut self, pair: (&'static str, &'static str), draft: Draft) -> bool {
        if self.pairs.contains(&pair) {
            return false;
        }
        let added = self.try_add(draft);
        if added {
            self.pairs.insert(pair);
        }
        added
    }
}

/// A name's identity for collisions: its normalised tokens, sorted.
fn key(name: &str) -> String {
    let mut tokens: Vec<String> = normalize(name).tokens.into_iter().map(|t| t.text).collect();
    tokens.sort();
    tokens.join(" ")
}

pub(super) fn generate(seed: u64) -> Vec<WatchlistEntry> {
    let mut rng = SplitMix64::new(seed);
    let mut b = Builder::default();
    russians(&mut b, &mut rng, 200);
    arabs(&mut b, &mut rng, 190);
    simple_persons(&mut b, &mut rng, &PERSIAN, 60);
    chinese(&mut b, &mut rng, 55);
    simple_persons(&mut b, &mut rng, &KOREAN, 30);
    spanish(&mut b, &mut rng, 60);
    simple_persons(&mut b, &mut rng, &SERBIAN, 30);
    simple_persons(&mut b, &mut rng, &TURKISH, 25);
    english(&mut b, &mut rng, 25);
    russian_companies(&mut b, &mut rng, 60);
    arabic_companies(&mut b, &mut rng, 28);
    persian_companies(&mut b, &mut rng, 35);
    chinese_companies(&mut b, &mut rng, 50);
    western_companies(&mut b, &mut rng, 60);
    vessels(&mut b, &mut rng, 100);
    let mut drafts = b.drafts;
    rng.shuffle(&mut drafts);
    drafts
        .into_iter()
        .enumerate()
        .map(|(i, d)| WatchlistEntry {
            id: format!("wl_{:05}", i + 1),
            kind: d.kind,
            name: d.name,
            aliases: d.aliases,
            country: d.country,
            date_of_birth: d.date_of_birth,
        })
        .collect()
}

/// Runs `make` until `count` drafts were added or 30× as many attempts were spent.
fn repeat(count: usize, mut make: impl FnMut() -> bool) {
    let mut added = 0;
    for _ in 0..count * 30 {
        if added == count {
            break;
        }
        if make() {
            added += 1;
        }
    }
}

fn pick<T: Copy>(rng: &mut SplitMix64, items: &[T], fallback: T) -> T {
    rng.pick(items).copied().unwrap_or(fallback)
}

/// A spelling different from `latin`, if the pool has one.
fn variant(rng: &mut SplitMix64, latin: &'static str, variants: &[&'static str]) -> &'static str {
    let others: Vec<&'static str> = variants.iter().copied().filter(|v| *v != latin).collect();
    pick(rng, &others, latin)
}

fn birth_date(rng: &mut SplitMix64, from_year: i32, to_year: i32) -> Option<Date> {
    let span = usize::try_from(to_year - from_year + 1).unwrap_or(1);
    let year = from_year + i32::try_from(rng.below(span)).unwrap_or(0);
    let ordinal = u16::try_from(rng.below(365) + 1).unwrap_or(1);
    Date::from_ordinal_date(year, ordinal).ok()
}

const NO_GIVEN: Given = super::pools::m("", &[], "");
const NO_FAMILY: Family = super::pools::fam("", &[], "");

/// Women's form of a Russian family name, Latin or Cyrillic.
fn feminine(name: &str) -> String {
    const RULES: &[(&str, &str)] = &[
        ("off", "ova"),
        ("eff", "eva"),
        ("skiy", "skaya"),
        ("skii", "skaya"),
        ("sky", "skaya"),
        ("nyi", "naya"),
        ("ny", "naya"),
        ("ov", "ova"),
        ("ev", "eva"),
        ("in", "ina"),
        ("ий", "ая"),
        ("ый", "ая"),
        ("ов", "ова"),
        ("ев", "ева"),
        ("ёв", "ёва"),
        ("ин", "ина"),
    ];
    for (from, to) in RULES {
        if let Some(stem) = name.strip_suffix(from) {
            return format!("{stem}{to}");
        }
    }
    name.to_owned()
}

/// Women's form of a patronymic (Viktorovich → Viktorovna, Викторович → Викторовна).
fn feminine_patronymic(p: &str) -> String {
    if let Some(stem) = p.strip_suffix("ich") {
        format!("{stem}na")
    } else if let Some(stem) = p.strip_suffix("ич") {
        format!("{stem}на")
    } else {
        p.to_owned()
    }
}

fn russians(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    const COUNTRIES: &[&str] = &[
        "RU", "RU", "RU", "RU", "RU", "RU", "RU", "RU", "BY", "KZ", "UA", "CY",
    ];
    let men: Vec<Given> = slavic::RUSSIAN_GIVEN
        .iter()
        .copied()
        .filter(|g| !g.female)
        .collect();
    repeat(count, || {
        let g = pick(rng, slavic::RUSSIAN_GIVEN, NO_GIVEN);
        let fam = pick(rng, slavic::RUSSIAN_FAMILY, NO_FAMILY);
        let father = pick(rng, &men, NO_GIVEN);
        let (mut pat, mut pat_cyr) = (
            father.patronymic.0.to_owned(),
            father.patronymic.1.to_owned(),
        );
        let (mut surname, mut surname_cyr) = (fam.latin.to_owned(), fam.native.to_owned());
        let mut surname_var = variant(rng, fam.latin, fam.variants).to_owned();
        if g.female {
            pat = feminine_patronymic(&pat);
            pat_cyr = feminine_patronymic(&pat_cyr);
            surname = feminine(&surname);
            surname_cyr = feminine(&surname_cyr);
            surname_var = feminine(&surname_var);
        }
        let given_var = variant(rng, g.latin, g.variants);
        let mut aliases = vec![format!("{surname_cyr} {} {pat_cyr}", g.native)];
        if given_var != g.latin || surname_var != surname {
            if rng.chance(50) {
                aliases.push(format!("{given_var} {pat} {surname_var}"));
            } else {
                aliases.push(format!("{given_var} {surname_var}"));
            }
        }
        let draft = Draft {
            kind: EntryKind::Person,
            name: format!("{} {pat} {surname}", g.latin),
            aliases,
            country: pick(rng, COUNTRIES, "RU"),
            date_of_birth: birth_date(rng, 1950, 1992),
        };
        b.try_add_person((g.latin, fam.latin), draft)
    });
}

fn arabs(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    const COUNTRIES: &[&str] = &[
        "SY", "SY", "IQ", "IQ", "YE", "LB", "LY", "SD", "SA", "AE", "EG", "JO", "PS", "KW", "QA",
        "OM", "DZ", "TN",
    ];
    let men: Vec<Given> = arabic::ARABIC_GIVEN
        .iter()
        .copied()
        .filter(|g| !g.female)
        .collect();
    repeat(count, || {
        let g = pick(rng, arabic::ARABIC_GIVEN, NO_GIVEN);
        let father = pick(rng, &men, NO_GIVEN);
        let fam = pick(rng, arabic::ARABIC_FAMILY, NO_FAMILY);
        if father.latin == g.latin {
            return false;
        }
        let mut aliases = vec![format!("{} {} {}", g.native, father.native, fam.native)];
        let (gv, fv) = (
            variant(rng, g.latin, g.variants),
            variant(rng, fam.latin, fam.variants),
        );
        if rng.chance(60) {
            let father_v = variant(rng, father.latin, father.variants);
            aliases.push(format!("{gv} {father_v} {fv}"));
        } else {
            aliases.push(format!("{gv} {fv}"));
        }
        if !g.female && rng.chance(30) {
            aliases.push(format!("{} bin {} {}", g.latin, father.latin, fam.latin));
        }
        let draft = Draft {
            kind: EntryKind::Person,
            name: format!("{} {} {}", g.latin, father.latin, fam.latin),
            aliases,
            country: pick(rng, COUNTRIES, "SY"),
            date_of_birth: birth_date(rng, 1950, 1995),
        };
        b.try_add_person((g.latin, fam.latin), draft)
    });
}

/// A culture whose names are "given family" (or "family given") with one native alias.
struct Simple {
    given: &'static [Given],
    family: &'static [Family],
    countries: &'static [&'static str],
    family_first: bool,
    years: (i32, i32),
}

const PERSIAN: Simple = Simple {
    given: arabic::PERSIAN_GIVEN,
    family: arabic::PERSIAN_FAMILY,
    countries: &["IR", "IR", "IR", "IR", "IR", "IR", "IR", "IR", "IQ", "AE"],
    family_first: false,
    years: (1950, 1990),
};
const KOREAN: Simple = Simple {
    given: asian::KOREAN_GIVEN,
    family: asian::KOREAN_FAMILY,
    countries: &["KP"],
    family_first: true,
    years: (1945, 1988),
};
const SERBIAN: Simple = Simple {
    given: slavic::SERBIAN_GIVEN,
    family: slavic::SERBIAN_FAMILY,
    countries: &["RS", "RS", "RS", "RS", "BA", "ME"],
    family_first: false,
    years: (1955, 1985),
};
const TURKISH: Simple = Simple {
    given: western::TURKISH_GIVEN,
    family: western::TURKISH_FAMILY,
    countries: &["TR"],
    family_first: false,
    years: (1960, 1992),
};

fn simple_persons(b: &mut Builder, rng: &mut SplitMix64, c: &Simple, count: usize) {
    repeat(count, || {
        let g = pick(rng, c.given, NO_GIVEN);
        let fam = pick(rng, c.family, NO_FAMILY);
        let order = |given: &str, family: &str| {
            if c.family_first {
                format!("{family} {given}")
            } else {
                format!("{given} {family}")
            }
        };
        let mut aliases = Vec::new();
        if !g.native.is_empty() && !fam.native.is_empty() {
            aliases.push(order(g.native, fam.native));
        }
        let (gv, fv) = (
            variant(rng, g.latin, g.variants),
            variant(rng, fam.latin, fam.variants),
        );
        if gv != g.latin || fv != fam.latin {
            aliases.push(order(gv, fv));
        }
        let draft = Draft {
            kind: EntryKind::Person,
            name: order(g.latin, fam.latin),
            aliases,
            country: pick(rng, c.countries, "IR"),
            date_of_birth: birth_date(rng, c.years.0, c.years.1),
        };
        b.try_add_person((g.latin, fam.latin), draft)
    });
}

fn chinese(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    repeat(count, || {
        let g = pick(rng, asian::CHINESE_GIVEN, NO_GIVEN);
        let fam = pick(rng, asian::CHINESE_FAMILY, NO_FAMILY);
        let hk = rng.chance(20);
        let fv = variant(rng, fam.latin, fam.variants);
        let aliases = vec![
            format!("{}{}", fam.native, g.native),
            format!("{} {fv}", g.latin),
        ];
        let draft = Draft {
            kind: EntryKind::Person,
            name: format!("{} {}", fam.latin, g.latin),
            aliases,
            country: if hk { "HK" } else { "CN" },
            date_of_birth: birth_date(rng, 1955, 1990),
        };
        b.try_add_person((g.latin, fam.latin), draft)
    });
}

fn spanish(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    const COUNTRIES: &[&str] = &[
        "VE", "VE", "VE", "CO", "MX", "MX", "NI", "CU", "PA", "EC", "BO",
    ];
    repeat(count, || {
        let g = pick(rng, western::SPANISH_GIVEN, NO_GIVEN);
        let s1 = pick(rng, western::SPANISH_FAMILY, NO_FAMILY);
        let s2 = pick(rng, western::SPANISH_FAMILY, NO_FAMILY);
        if s1.latin == s2.latin {
            return false;
        }
        let gv = variant(rng, g.latin, g.variants);
        let s1v = variant(rng, s1.latin, s1.variants);
        let aliases = vec![
            format!("{} {}", g.latin, s1.latin),
            format!("{gv} {s1v} {}", s2.latin),
        ];
        let draft = Draft {
            kind: EntryKind::Person,
            name: format!("{} {} {}", g.latin, s1.latin, s2.latin),
            aliases,
            country: pick(rng, COUNTRIES, "VE"),
            date_of_birth: birth_date(rng, 1955, 1990),
        };
        b.try_add_person((g.latin, s1.latin), draft)
    });
}

fn english(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    const COUNTRIES: &[&str] = &["GB", "GB", "US", "US", "IE", "CA", "AU", "ZA", "NZ"];
    repeat(count, || {
        let g = pick(rng, western::ENGLISH_GIVEN, NO_GIVEN);
        let mid = pick(rng, western::ENGLISH_GIVEN, NO_GIVEN);
        let fam = pick(rng, western::ENGLISH_FAMILY, NO_FAMILY);
        if mid.latin == g.latin || mid.female != g.female {
            return false;
        }
        let initial: String = mid.latin.chars().take(1).collect();
        let draft = Draft {
            kind: EntryKind::Person,
            name: format!("{} {} {}", g.latin, mid.latin, fam.latin),
            aliases: vec![format!("{} {initial}. {}", g.latin, fam.latin)],
            country: pick(rng, COUNTRIES, "GB"),
            date_of_birth: birth_date(rng, 1950, 1985),
        };
        b.try_add_person((g.latin, fam.latin), draft)
    });
}

fn company(name: String, aliases: Vec<String>, country: &'static str) -> Draft {
    Draft {
        kind: EntryKind::Company,
        name,
        aliases,
        country,
        date_of_birth: None,
    }
}

fn russian_companies(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    const COUNTRIES: &[&str] = &["RU", "RU", "RU", "RU", "RU", "RU", "BY", "KZ"];
    repeat(count, || {
        let (stem, stem_cyr) = pick(rng, entities::RUSSIAN_STEMS, ("", ""));
        let (suf, suf_cyr) = pick(rng, entities::RUSSIAN_SUFFIXES, ("", ""));
        let (sector, sector_cyr) = pick(rng, entities::RUSSIAN_SECTORS, ("", ""));
        let (legal, legal_long, legal_cyr) = pick(rng, entities::RUSSIAN_LEGAL, ("", "", ""));
        let base = [format!("{stem}{suf}"), sector.to_owned()].join(" ");
        let base = base.trim();
        let base_cyr = [format!("{stem_cyr}{suf_cyr}"), sector_cyr.to_owned()].join(" ");
        let mut aliases = vec![format!("{legal_cyr} «{}»", base_cyr.trim())];
        if rng.chance(50) {
            aliases.push(format!("{base} {legal_long}"));
        }
        b.try_add(company(
            format!("{base} {legal}"),
            aliases,
            pick(rng, COUNTRIES, "RU"),
        ))
    });
}

fn arabic_companies(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    const COUNTRIES: &[&str] = &[
        "AE", "AE", "AE", "AE", "LB", "SY", "IQ", "OM", "QA", "KW", "JO", "TR",
    ];
    let mut brands: Vec<(&str, &str)> = entities::ARABIC_BRANDS.to_vec();
    rng.shuffle(&mut brands);
    let mut next = brands.into_iter();
    repeat(count, || {
        let Some((brand, brand_ar)) = next.next() else {
            return false;
        };
        let sector = pick(rng, entities::ARABIC_SECTORS, "General Trading");
        let legal = pick(rng, entities::ARABIC_LEGAL, "LLC");
        let house = if legal == "Est." {
            "مؤسسة"
        } else {
            "شركة"
        };
        let aliases = vec![
            format!("{house} {brand_ar}"),
            format!("Al-{brand} {sector}"),
        ];
        b.try_add(company(
            format!("Al {brand} {sector} {legal}"),
            aliases,
            pick(rng, COUNTRIES, "AE"),
        ))
    });
}

fn persian_companies(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    repeat(count, || {
        let brand = pick(rng, entities::PERSIAN_BRANDS, "Pars");
        let sector = pick(rng, entities::PERSIAN_SECTORS, "Trading");
        let aliases = vec![
            format!("{brand} {sector} Co."),
            format!("{brand} {sector} PJSC"),
        ];
        let country = if rng.chance(85) { "IR" } else { "AE" };
        b.try_add(company(
            format!("{brand} {sector} Company"),
            aliases,
            country,
        ))
    });
}

fn chinese_companies(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    repeat(count, || {
        let place = pick(rng, entities::CHINESE_PLACES, "Shenzhen");
        let brand = pick(rng, entities::CHINESE_BRANDS, "Huaxing");
        let sector = pick(rng, entities::CHINESE_SECTORS, "Trading");
        let country = if place == "Hong Kong" { "HK" } else { "CN" };
        let aliases = vec![format!("{brand} {sector} ({place}) Company Limited")];
        b.try_add(company(
            format!("{place} {brand} {sector} Co., Ltd."),
            aliases,
            country,
        ))
    });
}

fn western_companies(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    repeat(count, || {
        let first = pick(rng, entities::WESTERN_FIRST, "North");
        let second = pick(rng, entities::WESTERN_SECOND, "bridge");
        let sector = pick(rng, entities::WESTERN_SECTORS, "Capital");
        let (legal, legal_alt) = pick(rng, entities::WESTERN_LEGAL, ("Ltd", "Limited"));
        let countries: &[&str] = match legal {
            "GmbH" => &["DE", "AT", "CH"],
            "AG" => &["CH", "LI", "DE"],
            "S.A." => &["PA", "LU", "CH"],
            "B.V." => &["NL"],
            "Ltd" | "PLC" | "LLP" => &["GB", "CY", "MT", "VG", "SC", "HK"],
            _ => &["US", "AE", "MH", "BZ", "PA"],
        };
        let brand = format!("{first}{second}");
        let mut aliases = vec![format!("{brand} {sector} {legal_alt}")];
        if rng.chance(30) {
            aliases.push(brand.clone());
        }
        let country = pick(rng, countries, "GB");
        b.try_add(company(
            format!("{brand} {sector} {legal}"),
            aliases,
            country,
        ))
    });
}

fn vessels(b: &mut Builder, rng: &mut SplitMix64, count: usize) {
    let western_name = |rng: &mut SplitMix64| {
        format!(
            "{} {}",
            pick(rng, entities::VESSEL_FIRST, "Ocean"),
            pick(rng, entities::VESSEL_SECOND, "Star")
        )
    };
    let ship = |name: String, aliases: Vec<String>, country: &'static str| Draft {
        kind: EntryKind::Vessel,
        name,
        aliases,
        country,
        date_of_birth: None,
    };
    repeat(count * 12 / 100, || {
        let (rank, rank_cyr) = pick(rng, entities::VESSEL_RANKS, ("Kapitan", "Капитан"));
        let fam = pick(rng, slavic::RUSSIAN_FAMILY, NO_FAMILY);
        let aliases = vec![format!("{rank_cyr} {}", fam.native), western_name(rng)];
        let flag = pick(rng, &["RU", "RU", "KM", "CM", "PA", "GA"], "RU");
        b.try_add(ship(format!("{rank} {}", fam.latin), aliases, flag))
    });
    repeat(count * 8 / 100, || {
        let brand = pick(rng, entities::PERSIAN_BRANDS, "Pars");
        let aliases = vec![western_name(rng)];
        let flag = pick(rng, &["IR", "IR", "PA", "KM", "TZ"], "IR");
        b.try_add(ship(format!("Darya {brand}"), aliases, flag))
    });
    repeat(count * 80 / 100, || {
        let name = western_name(rng);
        let former = (0..rng.below(3)).map(|_| western_name(rng)).collect();
        b.try_add(ship(name, former, pick(rng, entities::FLAGS, "PA")))
    });
}
