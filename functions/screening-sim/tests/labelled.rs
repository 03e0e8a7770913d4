//! Precision and recall of the matcher on the labelled query set (issue 12 "Matching: the
//! labelled set as a test with floors on precision and recall").
//!
//! Run with the figures printed:
//! `cargo test -p screening-sim --test labelled -- --nocapture`.
//!
//! Definitions (per query; a query labelled with an entry is a *positive*):
//! - a query **is flagged** when the answer is `potential_match`;
//! - a flagged query is **correct** when it is a positive and its entry is among the matches;
//! - **precision** = correct / flagged; **recall** = correct / positives;
//! - **top-1** (reported, not gated) = positives whose entry is the first match / positives.
//!
//! The floors sit a little under the measured figures, so a regression fails the test and
//! noise from a watchlist change does not, except for the targets of SPEC §4 (issue 43),
//! asserted as they are: recall 1.0 on every evasion class (each `evasion_*` category with
//! positives, its `_invisible` mix included), precision ≥ 0.99 on the labelled set, and at
//! most 1 % of the separate common-names set (`tests/data/common_names.jsonl`) flagged.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod support;

use std::collections::BTreeMap;

use screening_sim::{ScreenRequest, ScreenStatus, Screener, Validate};
use support::labelled_gen;

/// Precision floor (measured figure in `docs/benchmarks.md`; issue #30's goal).
const PRECISION_FLOOR: f64 = 0.99;
/// Recall floor, on the whole set and on the classes other than evasion (measured figures in
/// docs/benchmarks.md, "Screening matcher").
const RECALL_FLOOR: f64 = 0.95;
/// Recall on the evasion classes (`evasion_*`, issue #30): every evasion variant of a listed
/// name is flagged.
const EVASION_RECALL_FLOOR: f64 = 1.0;
/// Precision floor of the evasion part (its negatives carry the same marks).
const EVASION_PRECISION_FLOOR: f64 = 0.99;

/// Most of the common-names set that may be flagged (SPEC §4: at most 1 %).
const COMMON_FLAGGED_CEILING: f64 = 0.01;

const FILE: &str = include_str!("data/labelled.jsonl");
const COMMON: &str = include_str!("data/common_names.jsonl");

struct Row {
    query: String,
    country: Option<String>,
    date_of_birth: Option<String>,
    expected: Option<String>,
    category: String,
}

fn rows() -> Vec<Row> {
    parse(FILE)
}

fn parse(file: &str) -> Vec<Row> {
    file.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
            Row {
                query: s("query").unwrap(),
                country: s("country"),
                date_of_birth: s("date_of_birth"),
                expected: s("expected"),
                category: s("category").unwrap(),
            }
        })
        .collect()
}

#[test]
fn the_committed_set_is_what_the_generator_makes() {
    let made = labelled_gen::render(&labelled_gen::generate());
    assert!(
        made == FILE,
        "tests/data/labelled.jsonl is stale or was edited by hand; regenerate it with \
         `cargo run -p screening-sim --example gen_labelled > functions/screening-sim/tests/data/labelled.jsonl`"
    );
    let common = labelled_gen::render(&labelled_gen::common());
    assert!(
        common == COMMON,
        "tests/data/common_names.jsonl is stale or was edited by hand; regenerate it with \
         `cargo run -p screening-sim --example gen_labelled -- common > functions/screening-sim/tests/data/common_names.jsonl`"
    );
}

/// Whether `r` is flagged, and whether its expected entry is among the matches.
fn verdict(screener: &Screener, r: &Row) -> (bool, bool, screening_sim::ScreenResponse) {
    let request = ScreenRequest::new(
        r.query.clone(),
        r.country.as_deref(),
        r.date_of_birth.as_deref(),
    )
    .validate()
    .unwrap_or_else(|e| panic!("{:?} does not validate: {e}", r.query));
    let result = screener.screen(&request);
    let is_flagged = result.status == ScreenStatus::PotentialMatch;
    let found = r
        .expected
        .as_ref()
        .is_some_and(|id| result.matches.iter().any(|m| &m.list_entry_id == id));
    (is_flagged, found, result)
}

#[test]
fn common_names_are_rarely_flagged() {
    let screener = Screener::bundled();
    let rows = parse(COMMON);
    assert!(rows.len() >= 300, "{} common names", rows.len());
    let mut flagged = Vec::new();
    for r in &rows {
        let (is_flagged, _, result) = verdict(screener, r);
        if is_flagged {
            flagged.push(format!("  {:?} -> {:?}", r.query, result.matches.first()));
        }
    }
    let share = flagged.len() as f64 / rows.len() as f64;
    println!(
        "common names flagged: {:.4} ({}/{})",
        share,
        flagged.len(),
        rows.len()
    );
    for f in &flagged {
        println!("{f}");
    }
    assert!(
        share <= COMMON_FLAGGED_CEILING,
        "{} of {} common names flagged",
        flagged.len(),
        rows.len()
    );
}

#[test]
fn the_set_has_enough_queries_of_both_kinds() {
    let rows = rows();
    let positives = rows.iter().filter(|r| r.expected.is_some()).count();
    assert!(rows.len() >= 200, "{} queries", rows.len());
    assert!(
        positives >= 150 && rows.len() - positives >= 80,
        "{positives} positives"
    );
    let list = screening_sim::Watchlist::bundled();
    for r in &rows {
        if let Some(id) = &r.expected {
            assert!(list.get(id).is_some(), "{id} is not on the list");
        }
    }
}

#[test]
fn precision_and_recall_meet_their_floors() {
    let screener = Screener::bundled();
    let rows = rows();
    let (mut flagged, mut correct, mut positives, mut top1) = (0usize, 0usize, 0usize, 0usize);
    // The same three counts over the evasion classes alone.
    let mut evasion = [0usize; 3];
    let mut by_category: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    // Per category: flagged, correct, positives (the per-class table).
    let mut classes: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    let mut errors = Vec::new();
    for r in &rows {
        let (is_flagged, found, result) = verdict(screener, r);
        flagged += usize::from(is_flagged);
        correct += usize::from(found);
        if r.category.starts_with("evasion_") {
            evasion[0] += usize::from(is_flagged);
            evasion[1] += usize::from(found);
            evasion[2] += usize::from(r.expected.is_some());
        }
        let class = classes.entry(r.category.clone()).or_default();
        class[0] += usize::from(is_flagged);
        class[1] += usize::from(found);
        class[2] += usize::from(r.expected.is_some());
        let slot = by_category.entry(r.category.clone()).or_default();
        slot.0 += 1;
        if let Some(id) = &r.expected {
            positives += 1;
            top1 += usize::from(
                result
                    .matches
                    .first()
                    .is_some_and(|m| &m.list_entry_id == id),
            );
            slot.1 += usize::from(found);
        } else {
            slot.1 += usize::from(!is_flagged);
        }
        let wrong = if r.expected.is_some() {
            !found
        } else {
            is_flagged
        };
        if wrong {
            let got: Vec<String> = result
                .matches
                .iter()
                .take(3)
                .map(|m| format!("{} {:?} {}", m.list_entry_id, m.name, m.score))
                .collect();
            errors.push(format!(
                "  [{}] {:?} expected {:?} got {:?}",
                r.category, r.query, r.expected, got
            ));
        }
    }
    let precision = correct as f64 / flagged.max(1) as f64;
    let recall = correct as f64 / positives.max(1) as f64;
    println!(
        "labelled set: {} queries ({positives} positive, {} negative)",
        rows.len(),
        rows.len() - positives
    );
    println!(
        "precision {precision:.3} ({correct}/{flagged}), recall {recall:.3} ({correct}/{positives}), top-1 {:.3}",
        top1 as f64 / positives.max(1) as f64
    );
    let evasion_precision = evasion[1] as f64 / evasion[0].max(1) as f64;
    let evasion_recall = evasion[1] as f64 / evasion[2].max(1) as f64;
    println!(
        "evasion part: precision {evasion_precision:.3} ({}/{}), recall {evasion_recall:.3} ({}/{})",
        evasion[1], evasion[0], evasion[1], evasion[2]
    );
    println!("| class | queries | precision | recall |\n|---|---|---|---|");
    for (category, (n, _)) in &by_category {
        let [f, c, p] = classes.get(category).copied().unwrap_or_default();
        let precision = if f == 0 {
            "—".to_owned()
        } else {
            format!("{:.3} ({c}/{f})", c as f64 / f as f64)
        };
        let recall = if p == 0 {
            "—".to_owned()
        } else {
            format!("{:.3} ({c}/{p})", c as f64 / p as f64)
        };
        println!("| `{category}` | {n} | {precision} | {recall} |");
    }
    println!("wrong answers ({}):", errors.len());
    for e in &errors {
        println!("{e}");
    }
    assert!(
        precision >= PRECISION_FLOOR,
        "precision {precision:.3} < {PRECISION_FLOOR}"
    );
    assert!(
        recall >= RECALL_FLOOR,
        "recall {recall:.3} < {RECALL_FLOOR}"
    );
    // The evasion classes hold most positives since issue 43; the floor also holds without
    // them, so a loss on the other classes cannot hide behind them.
    let other = (correct - evasion[1], positives - evasion[2]);
    let other_recall = other.0 as f64 / other.1.max(1) as f64;
    println!(
        "other classes: recall {other_recall:.3} ({}/{})",
        other.0, other.1
    );
    assert!(
        other_recall >= RECALL_FLOOR,
        "recall outside the evasion classes {other_recall:.3} < {RECALL_FLOOR}"
    );
    assert!(evasion[2] >= 80, "{} evasion positives", evasion[2]);
    assert!(
        evasion_recall >= EVASION_RECALL_FLOOR,
        "evasion recall {evasion_recall:.3} < {EVASION_RECALL_FLOOR}"
    );
    assert!(
        evasion_precision >= EVASION_PRECISION_FLOOR,
        "evasion precision {evasion_precision:.3} < {EVASION_PRECISION_FLOOR}"
    );
    for (category, [_, c, p]) in &classes {
        if category.starts_with("evasion_") && *p > 0 {
            let recall = *c as f64 / *p as f64;
            assert!(
                recall >= EVASION_RECALL_FLOOR,
                "{category}: recall {recall:.3} ({c}/{p}) < {EVASION_RECALL_FLOOR}"
            );
        }
    }
}
