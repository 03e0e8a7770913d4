//! An amount in minor units as a person reads it: `81240` EUR is `812.40 EUR` (SPEC §4:
//! amounts are integers in minor units; SPEC §5b: the question states the amount in its
//! currency).
//!
//! The number of decimals is the currency's ISO 4217 minor unit: 2 for most, 0 or 3 for the
//! codes listed below (ISO 4217's table, current codes). A code that is not three capital
//! letters is not shown as given: the amount reads `… (unknown currency)`.

/// ISO 4217 currencies whose minor unit is 0 decimals.
const NO_DECIMALS: [&str; 17] = [
    "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND",
    "VUV", "XAF", "XOF", "XPF",
];

/// ISO 4217 currencies whose minor unit is 3 decimals.
const THREE_DECIMALS: [&str; 7] = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"];

/// ISO 4217 currencies whose minor unit is 4 decimals.
const FOUR_DECIMALS: [&str; 2] = ["CLF", "UYW"];

/// Decimals of `currency`'s minor unit (2 unless listed).
fn decimals(currency: &str) -> u32 {
    if NO_DECIMALS.contains(&currency) {
        0
    } else if THREE_DECIMALS.contains(&currency) {
        3
    } else if FOUR_DECIMALS.contains(&currency) {
        4
    } else {
        2
    }
}

/// `amount_minor` of `currency` as `812.40 EUR` (`-12.30 EUR` for a negative amount).
///
/// ```
/// use mcp_gateway::confirm::amount::display;
/// assert_eq!(display(81_240, "EUR"), "812.40 EUR");
/// assert_eq!(display(5_000, "JPY"), "5000 JPY");
/// ```
pub fn display(amount_minor: i64, currency: &str) -> String {
    let code_ok = currency.len() == 3 && currency.bytes().all(|b| b.is_ascii_uppercase());
    let places = if code_ok { decimals(currency) } else { 2 };
    let sign = if amount_minor < 0 { "-" } else { "" };
    let magnitude = amount_minor.unsigned_abs();
    let number = match 10u64.checked_pow(places) {
        Some(unit) if places > 0 => format!(
            "{sign}{}.{:0width$}",
            magnitude / unit,
            magnitude % unit,
            width = places as usize
        ),
        _ => format!("{sign}{magnitude}"),
    };
    if code_ok {
        format!("{number} {currency}")
    } else {
        format!("{number} (unknown currency)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_decimals_for_most_currencies_with_leading_and_trailing_zeros() {
        assert_eq!(display(81_240, "EUR"), "812.40 EUR");
        assert_eq!(display(5, "USD"), "0.05 USD");
        assert_eq!(display(0, "GBP"), "0.00 GBP");
        assert_eq!(display(100_000, "SEK"), "1000.00 SEK");
    }

    #[test]
    fn the_minor_unit_follows_iso_4217() {
        assert_eq!(display(812, "JPY"), "812 JPY");
        assert_eq!(display(1_234, "KWD"), "1.234 KWD");
        assert_eq!(display(12_345, "CLF"), "1.2345 CLF");
    }

    #[test]
    fn negative_and_extreme_amounts_do_not_overflow() {
        assert_eq!(display(-1_230, "EUR"), "-12.30 EUR");
        assert_eq!(display(i64::MIN, "EUR"), "-92233720368547758.08 EUR");
        assert_eq!(display(i64::MAX, "EUR"), "92233720368547758.07 EUR");
    }

    #[test]
    fn a_code_that_is_not_iso_shaped_is_not_echoed() {
        assert_eq!(display(100, "eur"), "1.00 (unknown currency)");
        assert_eq!(display(100, "EURO\n"), "1.00 (unknown currency)");
    }
}
