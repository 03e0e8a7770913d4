//! Bad input (issue 12 "Bad input: names empty, 201 chars, only punctuation, mixed scripts,
//! control characters; bad country codes and dates (2023-02-30)"): each is refused with code
//! `invalid_argument` and a message naming the field, or, for mixed scripts, screened.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use screening_sim::{ScreenError, ScreenRequest, ScreenStatus, Screener, Validate};
use time::macros::date;

const TODAY: time::Date = date!(2026 - 06 - 30);

fn refused(name: &str, country: Option<&str>, dob: Option<&str>) -> ScreenError {
    ScreenRequest::new(name, country, dob)
        .validate_at(TODAY)
        .expect_err("must be refused")
}

fn assert_names_field(err: &ScreenError, field: &str) {
    assert_eq!(err.code(), "invalid_argument", "{err}");
    assert_eq!(err.field(), Some(field), "{err}");
    assert!(
        err.to_string().starts_with(field),
        "message names the field: {err}"
    );
}

#[test]
fn empty_name_is_refused() {
    assert_names_field(&refused("", None, None), "name");
}

#[test]
fn name_of_200_chars_is_accepted_and_201_refused() {
    let ok = "a".repeat(199) + "b";
    assert!(
        ScreenRequest::new(ok, None, None)
            .validate_at(TODAY)
            .is_ok()
    );
    let err = refused(&"a".repeat(201), None, None);
    assert_names_field(&err, "name");
    assert!(err.to_string().contains("201"), "{err}");
}

#[test]
fn length_counts_characters_not_bytes() {
    // 200 Cyrillic characters are 390 bytes and still a valid name (10 words, so within the
    // 20 words a normalised name may have).
    let name = "Константинопольский ".repeat(9) + "Константинопольскийй";
    assert_eq!(name.chars().count(), 200);
    assert!(
        ScreenRequest::new(name, None, None)
            .validate_at(TODAY)
            .is_ok()
    );
}

/// Issue #30: 200 × U+FDFA passes the 200-character check but normalises to 1,600 words.
#[test]
fn a_name_that_normalises_past_400_characters_or_20_words_is_refused() {
    for name in [
        "\u{FDFA}".repeat(200),
        "\u{FDFA}".repeat(8),
        vec!["Ab"; 21].join(" "),
        // 199 characters as typed; "ﬃ" (U+FB03) normalises to "ffi": 559 characters.
        vec!["\u{FB03}".repeat(9); 20].join(" "),
    ] {
        let err = refused(&name, None, None);
        assert_names_field(&err, "name");
        assert!(err.to_string().contains("normalises"), "{err}");
    }
    ScreenRequest::new(vec!["Ab"; 20].join(" "), None, None)
        .validate()
        .expect("20 words are screened");
}

#[test]
fn names_without_letters_are_refused() {
    for name in ["...", "-- , --", "   ", "«»", "12345", "!!!???"] {
        assert_names_field(&refused(name, None, None), "name");
    }
}

#[test]
fn control_characters_are_refused() {
    for name in [
        "John\nSmith",
        "John\tSmith",
        "John\u{0}Smith",
        "John\u{7f}Smith",
        "\u{1b}[31mJohn",
    ] {
        assert_names_field(&refused(name, None, None), "name");
    }
}

#[test]
fn mixed_scripts_are_screened_not_refused() {
    // Latin with one Cyrillic look-alike letter folds to the Latin name and still matches.
    let entry = Screener::bundled();
    let list = screening_sim::Watchlist::bundled();
    let target = list
        .entries()
        .iter()
        .find(|e| {
            e.name.contains('a') && e.name.is_ascii() && e.kind == screening_sim::EntryKind::Person
        })
        .unwrap();
    let spoofed = target.name.replacen('a', "\u{0430}", 1);
    assert_ne!(spoofed, target.name);
    let request = ScreenRequest::new(spoofed, None, None)
        .validate_at(TODAY)
        .unwrap();
    let result = entry.screen(&request);
    assert_eq!(result.status, ScreenStatus::PotentialMatch);
    assert_eq!(result.matches[0].list_entry_id, target.id);
    // Two scripts side by side are a name too.
    assert!(
        ScreenRequest::new("Mohammed محمد", None, None)
            .validate_at(TODAY)
            .is_ok()
    );
}

#[test]
fn invisible_format_characters_are_not_control_characters() {
    // Persian names carry ZWNJ; copy-pasted Arabic carries RLM.
    assert!(
        ScreenRequest::new("Ali\u{200C}reza \u{200F}Karimi", None, None)
            .validate_at(TODAY)
            .is_ok()
    );
}

#[test]
fn bad_countries_are_refused() {
    for country in [
        "",
        "R",
        "RUS",
        "UK",
        "EU",
        "XK",
        "ZZ",
        "1A",
        "G B",
        "Россия",
    ] {
        assert_names_field(&refused("John Smith", Some(country), None), "country");
    }
}

#[test]
fn good_countries_are_accepted_in_either_case() {
    for (given, canonical) in [("GB", "GB"), ("ru", "RU"), ("Ir", "IR"), ("SS", "SS")] {
        let v = ScreenRequest::new("John Smith", Some(given), None)
            .validate_at(TODAY)
            .unwrap();
        assert_eq!(v.country, Some(canonical));
    }
}

#[test]
fn bad_dates_are_refused() {
    for dob in [
        "2023-02-30",
        "2023-02-29",
        "1990-13-01",
        "1990-00-10",
        "1990-04-31",
        "1990-4-1",
        "90-04-01",
        "1990/04/01",
        "1990-04-01T00:00:00Z",
        "",
        "+1990-04-01",
        "1899-12-31",
        "2026-07-01",
    ] {
        assert_names_field(&refused("John Smith", None, Some(dob)), "date_of_birth");
    }
}

#[test]
fn good_dates_are_accepted() {
    for dob in ["2024-02-29", "1900-01-01", "2026-06-30", "1975-12-31"] {
        let v = ScreenRequest::new("John Smith", None, Some(dob))
            .validate_at(TODAY)
            .unwrap();
        assert_eq!(v.date_of_birth.unwrap().to_string(), dob);
    }
}

#[test]
fn the_first_bad_field_is_reported() {
    assert_names_field(&refused("", Some("ZZ"), Some("2023-02-30")), "name");
    assert_names_field(&refused("John", Some("ZZ"), Some("2023-02-30")), "country");
}

#[test]
fn the_wire_shape_refuses_unknown_fields() {
    let ok: ScreenRequest =
        serde_json::from_str(r#"{"name":"John Smith","country":"GB"}"#).unwrap();
    assert_eq!(ok.country.as_deref(), Some("GB"));
    assert!(serde_json::from_str::<ScreenRequest>(r#"{"name":"x","dob":"1990-01-01"}"#).is_err());
    assert!(serde_json::from_str::<ScreenRequest>(r#"{"country":"GB"}"#).is_err());
}

#[test]
fn echoed_input_is_clipped() {
    let long = "Q".repeat(500);
    let err = refused("John", Some(&long), None);
    assert!(err.to_string().len() < 200, "{err}");
}
