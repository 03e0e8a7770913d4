//! Cost of one screening against the bundled watchlist (1,000+ entries, about 2,500 names),
//! validation included, for the kinds of query the service sees: a clear Latin name, a
//! Latin match, a Cyrillic alias, an Arabic alias, a long entity name, a 200-character name
//! (the worst case of issue #30) and the same disguised with look-alike letters under a bidi
//! override (the most query forms, issue 43). Also the one-off cost
//! of building the index.
//!
//! Run: `cargo bench -p screening-sim --bench screen -- --warm-up-time 1 --measurement-time 3`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use screening_sim::{MatchConfig, ScreenRequest, Screener, Validate, Watchlist};

/// The worst-case name of issue #30: 19 words, about 200 characters.
fn max_length() -> String {
    "Abdulrahman Mohammed Khalid Ibrahim Youssef Mustafa Hassan Hussein Al-Tamimi Sergei \
     Viktorovich Ivanov Zhang Jianguo Kim Yong Su José Luis García Pérez Mehmet Yılmaz \
     John Smith Ana María"
        .split_whitespace()
        .take(19)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The same name disguised (issue 43): Cyrillic look-alikes for every
/// letter that has one, reversed under a right-to-left override, at most 200 characters:
/// the most forms a query is screened in.
fn max_length_disguised() -> String {
    // Latin letters and, at the same position, their Cyrillic look-alikes.
    let (latin, cyrillic): (Vec<char>, Vec<char>) = (
        "acepisABHIKMSJ".chars().collect(),
        "асеріѕАВНІКМЅЈ".chars().collect(),
    );
    let swapped: String = max_length()
        .chars()
        .take(198)
        .map(|c| {
            latin
                .iter()
                .position(|l| *l == c)
                .map_or(c, |i| cyrillic[i])
        })
        .collect();
    format!(
        "\u{202E}{}\u{202C}",
        swapped.chars().rev().collect::<String>()
    )
}

fn queries() -> Vec<(&'static str, ScreenRequest)> {
    let list = Watchlist::bundled();
    let person = list
        .entries()
        .iter()
        .find(|e| {
            e.aliases
                .iter()
                .any(|a| a.chars().any(|c| ('\u{0400}'..='\u{04FF}').contains(&c)))
        })
        .unwrap();
    let arab = list
        .entries()
        .iter()
        .find(|e| {
            e.aliases
                .iter()
                .any(|a| a.chars().any(|c| ('\u{0600}'..='\u{06FF}').contains(&c)))
        })
        .unwrap();
    let cyrillic = person.aliases[0].clone();
    let arabic = arab.aliases[0].clone();
    vec![
        (
            "clear_latin",
            ScreenRequest::new("Hiroshi Tanaka", Some("JP"), Some("1980-05-17")),
        ),
        (
            "match_latin",
            ScreenRequest::new(person.name.clone(), None, None),
        ),
        (
            "cyrillic_alias",
            ScreenRequest::new(cyrillic, Some("RU"), None),
        ),
        ("arabic_alias", ScreenRequest::new(arabic, None, None)),
        (
            // Worst case: the most words screened (20, issue #30: these 19 tokens, `Al-Tamimi`
            // normalising to two), each compared with the vocabulary in every form of the name.
            "max_length_name",
            ScreenRequest::new(max_length(), None, None),
        ),
        (
            "max_length_disguised",
            ScreenRequest::new(max_length_disguised(), None, None),
        ),
        (
            "long_entity",
            ScreenRequest::new(
                "Shenzhen Huaxing Electronics Import and Export Co., Ltd.",
                None,
                None,
            ),
        ),
    ]
}

fn screen(c: &mut Criterion) {
    let screener = Screener::bundled();
    let mut group = c.benchmark_group("screen");
    for (label, request) in queries() {
        group.bench_function(label, |b| {
            b.iter(|| {
                let valid = black_box(&request).validate().unwrap();
                black_box(screener.screen(&valid))
            });
        });
    }
    group.finish();
}

fn build(c: &mut Criterion) {
    let list = Watchlist::bundled();
    c.bench_function("index_bundled_watchlist", |b| {
        b.iter(|| black_box(Screener::new(black_box(list), MatchConfig::default())));
    });
    c.bench_function("generate_bundled_watchlist", |b| {
        b.iter(|| black_box(Watchlist::generate(screening_sim::watchlist::BUNDLED_SEED)));
    });
}

criterion_group!(benches, screen, build);
criterion_main!(benches);
