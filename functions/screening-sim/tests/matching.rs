//! Behaviour of the screener on the bundled list (SPEC §4 result shape, issue 12 rules).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use screening_sim::matching::DEFAULT_THRESHOLD;
use screening_sim::{
    EntryKind, MatchConfig, ScreenRequest, ScreenResponse, ScreenStatus, Screener, Validate,
    Watchlist, WatchlistEntry,
};
use time::macros::date;

fn screen(name: &str, country: Option<&str>, dob: Option<&str>) -> ScreenResponse {
    let request = ScreenRequest::new(name, country, dob)
        .validate_at(date!(2026 - 06 - 30))
        .unwrap();
    Screener::bundled().screen(&request)
}

fn person(pred: impl Fn(&WatchlistEntry) -> bool) -> &'static WatchlistEntry {
    Watchlist::bundled()
        .entries()
        .iter()
        .find(|e| e.kind == EntryKind::Person && pred(e))
        .unwrap()
}

fn score_of(result: &ScreenResponse, id: &str) -> Option<f64> {
    result
        .matches
        .iter()
        .find(|m| m.list_entry_id == id)
        .map(|m| m.score)
}

#[test]
fn result_shape_is_spec_4() {
    let e = person(|e| e.name.split(' ').count() == 3);
    let result = screen(&e.name, None, None);
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["status"], "potential_match");
    let m = &json["matches"][0];
    assert_eq!(
        m.as_object().unwrap().len(),
        3,
        "exactly list_entry_id, name, score: {m}"
    );
    assert_eq!(m["list_entry_id"], e.id.as_str());
    assert_eq!(m["name"], e.name.as_str());
    assert_eq!(m["score"], 1.0);
    let clear = serde_json::to_value(screen("Hiroshi Tanaka", None, None)).unwrap();
    assert_eq!(clear, serde_json::json!({"status": "clear", "matches": []}));
}

#[test]
fn matches_are_best_first_within_range_and_above_the_threshold() {
    // A common given name with a family name shared by several entries gives several matches.
    for e in Watchlist::bundled().entries().iter().take(200) {
        let result = screen(&e.name, None, None);
        assert!(result.matches.len() <= 10);
        for pair in result.matches.windows(2) {
            assert!(
                pair[0].score > pair[1].score
                    || (pair[0].score == pair[1].score
                        && pair[0].list_entry_id < pair[1].list_entry_id)
            );
        }
        for m in &result.matches {
            assert!((DEFAULT_THRESHOLD..=1.0).contains(&m.score), "{m:?}");
        }
        assert_eq!(
            result.matches[0].list_entry_id, e.id,
            "{} finds itself first",
            e.name
        );
    }
}

#[test]
fn token_order_and_punctuation_do_not_matter() {
    let e = person(|e| e.name.split(' ').count() == 3 && e.name.is_ascii());
    let words: Vec<&str> = e.name.split(' ').collect();
    let reordered = format!("{}, {} {}", words[2], words[0], words[1]);
    assert_eq!(score_of(&screen(&reordered, None, None), &e.id), Some(1.0));
    let shouted = format!("DR. {}", e.name.to_uppercase());
    assert_eq!(score_of(&screen(&shouted, None, None), &e.id), Some(1.0));
}

#[test]
fn a_native_script_alias_finds_the_entry() {
    let cyrillic = person(|e| e.aliases.iter().any(|a| a.contains('в')));
    let alias = cyrillic.aliases.iter().find(|a| a.contains('в')).unwrap();
    assert_eq!(
        screen(alias, None, None).matches[0].list_entry_id,
        cyrillic.id
    );
    let arabic = person(|e| e.aliases.iter().any(|a| a.contains('م')));
    let alias = arabic.aliases.iter().find(|a| a.contains('م')).unwrap();
    assert_eq!(
        screen(alias, None, None).matches[0].list_entry_id,
        arabic.id
    );
}

#[test]
fn a_full_name_needs_more_than_a_surname() {
    let e = person(|e| e.name.split(' ').count() == 3 && e.name.is_ascii());
    let surname = e.name.split(' ').next_back().unwrap();
    assert!(score_of(&screen(surname, None, None), &e.id).is_none());
}

#[test]
fn date_of_birth_and_country_raise_or_lower_the_score() {
    let e = person(|e| e.name.split(' ').count() == 3 && e.name.is_ascii());
    let words: Vec<&str> = e.name.split(' ').collect();
    // Without the middle name the name scores 0.92.
    let short = format!("{} {}", words[0], words[2]);
    let dob = e.date_of_birth.unwrap();
    let plain = score_of(&screen(&short, None, None), &e.id).unwrap();
    let agreeing = score_of(
        &screen(&short, Some(e.country), Some(&dob.to_string())),
        &e.id,
    )
    .unwrap();
    assert!(agreeing > plain, "{agreeing} > {plain}");
    let other_country = if e.country == "JP" { "BR" } else { "JP" };
    let far = dob.replace_year(dob.year() - 15).unwrap_or(dob);
    let contradicted = screen(&short, Some(other_country), Some(&far.to_string()));
    assert!(
        score_of(&contradicted, &e.id).is_none(),
        "a contradicted partial name is clear"
    );
    // An exact name with the listed date and country scores 1, not more.
    let exact = screen(&e.name, Some(e.country), Some(&dob.to_string()));
    assert_eq!(score_of(&exact, &e.id), Some(1.0));
}

#[test]
fn entity_legal_forms_do_not_matter() {
    let company = Watchlist::bundled()
        .entries()
        .iter()
        .find(|e| e.kind == EntryKind::Company && e.name.ends_with(" LLC"))
        .unwrap();
    let bare = company.name.trim_end_matches(" LLC");
    assert_eq!(score_of(&screen(bare, None, None), &company.id), Some(1.0));
    let long = format!("{bare} Limited Liability Company");
    assert_eq!(score_of(&screen(&long, None, None), &company.id), Some(1.0));
}

#[test]
fn the_threshold_is_configurable() {
    let e = person(|e| e.name.split(' ').count() == 3 && e.name.is_ascii());
    let words: Vec<&str> = e.name.split(' ').collect();
    let short = format!("{} {}", words[0], words[2]);
    let strict = Screener::new(
        Watchlist::bundled(),
        MatchConfig::with_threshold(0.95).unwrap(),
    );
    let request = ScreenRequest::new(short, None, None)
        .validate_at(date!(2026 - 06 - 30))
        .unwrap();
    assert_eq!(strict.screen(&request).status, ScreenStatus::Clear);
    assert_eq!(
        Screener::bundled().screen(&request).status,
        ScreenStatus::PotentialMatch
    );
    for bad in [0.0, -0.1, 1.01, f64::NAN] {
        let err = MatchConfig::with_threshold(bad).unwrap_err();
        assert_eq!(err.code(), "internal");
    }
}

/// The first match's id and score, if any.
fn first(name: &str) -> Option<(String, f64)> {
    let result = screen(name, None, None);
    result
        .matches
        .first()
        .map(|m| (m.list_entry_id.clone(), m.score))
}

#[test]
fn what_looks_like_a_listed_name_screens_as_it() {
    // Issue 43 (2026-12-05): Cyrillic а, і, Ѕ, Н; one Cyrillic В; the same reversed under a
    // right-to-left override; the digits 0 and 1 for o and l.
    let nabil = "N\u{0430}b\u{0456}l \u{0405}\u{0430}m\u{0456}r \u{041D}\u{0430}dd\u{0430}d";
    assert_eq!(first(nabil), Some(("wl_00002".to_owned(), 1.0)));
    for boris in [
        "\u{0412}oris Alekseevich Kulikov",
        "\u{202E}vokiluK hciveeskelA siroB\u{202C}",
        "B0ris A1ekseevich Ku1ikov",
        "\u{0392}\u{03BF}ris Alekseevich Kuliko\u{03BD}",
    ] {
        assert_eq!(
            first(boris),
            Some(("wl_00368".to_owned(), 1.0)),
            "{boris:?}"
        );
    }
    // Latin letters keep their own shapes: `rn` is not read as `m`.
    assert_eq!(screen("Karnal", None, None).status, ScreenStatus::Clear);
}

#[test]
fn initials_match_the_exact_surname_at_a_lower_score() {
    for (query, id) in [("B. A. Kulikov", "wl_00368"), ("N S Haddad", "wl_00002")] {
        let (got, score) = first(query).unwrap();
        assert_eq!(got, id, "{query}");
        assert!(
            (DEFAULT_THRESHOLD..1.0).contains(&score),
            "{query}: {score}"
        );
    }
    assert_eq!(
        screen("B. A. Kulikof", None, None).status,
        ScreenStatus::Clear
    );
}
