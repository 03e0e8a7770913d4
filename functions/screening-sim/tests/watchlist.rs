//! The bundled watchlist's shape and stability (issue 12 "at least 1,000 entries, generated
//! deterministically … Ids stable").
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::collections::HashSet;

use screening_sim::normalize::normalize;
use screening_sim::watchlist::BUNDLED_SEED;
use screening_sim::{EntryKind, Watchlist};

#[test]
fn has_1000_entries_of_every_kind_with_sequential_ids() {
    let list = Watchlist::bundled();
    assert!(list.len() >= 1000, "{}", list.len());
    for (i, e) in list.entries().iter().enumerate() {
        assert_eq!(e.id, format!("wl_{:05}", i + 1));
    }
    let count = |k| list.entries().iter().filter(|e| e.kind == k).count();
    assert!(count(EntryKind::Person) >= 600);
    assert!(count(EntryKind::Company) >= 200);
    assert!(count(EntryKind::Vessel) >= 80);
}

#[test]
fn generation_is_deterministic_and_pinned() {
    assert_eq!(Watchlist::generate(BUNDLED_SEED), *Watchlist::bundled());
    // Pinned so that a change to pools or generator that renumbers the list is noticed
    // (then regenerate tests/data/labelled.jsonl and update these).
    let list = Watchlist::bundled();
    assert_eq!(list.len(), 1008);
    assert_eq!(list.get("wl_00001").unwrap().name, "Bojan Tomić");
    assert_eq!(list.get("wl_00002").unwrap().name, "Nabil Samir Haddad");
    assert_eq!(
        list.get("wl_01008").unwrap().name,
        "Tawfiq Abdullah Al-Obeidi"
    );
}

#[test]
fn persons_have_dates_of_birth_and_entities_do_not() {
    for e in Watchlist::bundled().entries() {
        assert_eq!(
            e.date_of_birth.is_some(),
            e.kind == EntryKind::Person,
            "{}",
            e.id
        );
    }
}

#[test]
fn countries_are_assigned_iso_codes() {
    for e in Watchlist::bundled().entries() {
        assert!(
            rust_iso3166::from_alpha2(e.country).is_some(),
            "{} {}",
            e.id,
            e.country
        );
    }
}

#[test]
fn aliases_include_cyrillic_arabic_persian_and_chinese_scripts() {
    let has = |lo: char, hi: char| {
        Watchlist::bundled()
            .entries()
            .iter()
            .filter(|e| {
                e.aliases
                    .iter()
                    .any(|a| a.chars().any(|c| (lo..=hi).contains(&c)))
            })
            .count()
    };
    assert!(has('\u{0400}', '\u{04FF}') >= 200, "Cyrillic");
    assert!(has('\u{0600}', '\u{06FF}') >= 200, "Arabic script");
    assert!(has('\u{4E00}', '\u{9FFF}') >= 40, "Han");
}

#[test]
fn no_two_entries_share_a_name() {
    let mut seen = HashSet::new();
    for e in Watchlist::bundled().entries() {
        let keys: HashSet<String> = e
            .names()
            .map(|n| {
                let mut t: Vec<String> = normalize(n).tokens.into_iter().map(|t| t.text).collect();
                t.sort();
                t.join(" ")
            })
            .collect();
        for k in keys {
            assert!(seen.insert(k.clone()), "{} repeats {k:?}", e.id);
        }
    }
}

#[test]
fn native_aliases_transliterate_close_to_the_latin_name() {
    // The Chinese alias in characters reads as the pinyin of the primary name.
    for e in Watchlist::bundled().entries() {
        if let Some(han) = e
            .aliases
            .iter()
            .find(|a| a.chars().any(|c| ('\u{4E00}'..='\u{9FFF}').contains(&c)))
        {
            let latin: String = normalize(&e.name)
                .tokens
                .iter()
                .map(|t| t.text.as_str())
                .collect();
            let from_han: String = normalize(han)
                .tokens
                .iter()
                .map(|t| t.text.as_str())
                .collect();
            assert_eq!(from_han, latin, "{} {han}", e.id);
        }
    }
}
