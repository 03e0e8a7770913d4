use super::*;
use crate::normalize::normalize;

/// The normalised tokens of each look-alike spelling of `raw`.
fn read(raw: &str) -> Vec<String> {
    lookalikes(raw)
        .iter()
        .map(|s| normalize(s).joined())
        .collect()
}

#[test]
fn cyrillic_and_greek_look_alikes_read_as_the_latin_letters_they_imitate() {
    // The queries (2026-12-05): Cyrillic а, і, Ѕ, Н; one Cyrillic В.
    assert_eq!(
        read("N\u{0430}b\u{0456}l \u{0405}\u{0430}m\u{0456}r \u{041D}\u{0430}dd\u{0430}d"),
        ["nabil samir haddad"]
    );
    assert_eq!(
        read("\u{0412}oris Alekseevich Kulikov"),
        ["boris alekseevich kulikov"]
    );
    // Transliteration reads them by sound: the reason for this module.
    assert_eq!(normalize("\u{041D}\u{0430}dd\u{0430}d").joined(), "naddad");
    // Greek capitals and small letters.
    assert_eq!(
        read("\u{0392}\u{03BF}ris \u{039A}uliko\u{03BD}"),
        ["boris kulikov"]
    );
}

#[test]
fn capital_i_look_alikes_are_read_both_ways() {
    assert_eq!(
        read("NAB\u{0406}L KU\u{04C0}\u{0406}KOV"),
        ["nabil kuiikov", "nabll kullkov"]
    );
    assert_eq!(read("N\u{0430}b\u{0456}l"), ["nabil"], "small і is i only");
}

#[test]
fn fullwidth_mathematical_and_digit_forms_read_as_letters() {
    assert_eq!(read("\u{FF2B}\u{FF41}\u{FF4D}\u{FF41}\u{FF4C}"), ["kamal"]);
    assert_eq!(
        read("\u{1D401}\u{1D428}\u{1D42B}\u{1D422}\u{1D42C}"),
        ["boris"]
    );
    assert_eq!(read("B0ris Ku1ikov"), ["boris kulikov"]);
    assert_eq!(read("B\u{FF10}ris"), ["boris"], "fullwidth zero");
}

#[test]
fn latin_letters_and_real_other_scripts_are_left_alone() {
    // UTS #39 makes `m` and `rn` one skeleton; ASCII letters are kept, so these stay apart.
    assert!(lookalikes("Kamal").is_empty());
    assert!(lookalikes("Karnal").is_empty());
    assert_eq!(
        read("José García"),
        ["jose garcia"],
        "accents fold as before"
    );
    // A name really written in Cyrillic keeps its transliteration (the matcher's first
    // form); `з`, whose prototype is the digit `3`, is not read as one.
    assert_eq!(normalize("Козлов").joined(), "kozlov");
    assert!(
        read("Козлов").iter().all(|r| !r.contains('3')),
        "{:?}",
        read("Козлов")
    );
}
