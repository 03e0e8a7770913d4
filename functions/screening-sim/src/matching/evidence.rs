//! Secondary evidence: date of birth and country raise or lower a name score (issue 12
//! "country and date of birth raise or lower the score").
//!
//! Applied only to a name score that is already above zero (the names agree); the adjusted
//! score is clamped to [0, 1]. Missing data on either side changes nothing: a list entry
//! without a date of birth is not contradicted by one.
//!
//! | evidence | effect | why |
//! |---|---|---|
//! | same date of birth | +0.05 | strongest identifier after the name |
//! | same year, other day | +0.02 | lists often know only the year; day and month get swapped |
//! | year one apart | −0.03 | a weak contradiction (an off-by-one year is a common typo) |
//! | years further apart | −0.12 | a different person, most likely |
//! | same country | +0.03 | nationality / registration agrees |
//! | other country | −0.05 (persons, companies); 0 (vessels) | ships change flag routinely |
//!
//! With these, a full name match (1.0) with a contradicting date and country ends at 0.83,
//! under the default threshold, and a misspelt name at 0.83 with the right date of birth rises
//! to 0.88, over it.

use time::Date;

use crate::watchlist::EntryKind;

/// Bonus for the same date of birth.
pub const SAME_BIRTH_DATE: f64 = 0.05;
/// Bonus for the same birth year with another day.
pub const SAME_BIRTH_YEAR: f64 = 0.02;
/// Malus for birth years one apart.
pub const NEAR_BIRTH_YEAR: f64 = -0.03;
/// Malus for birth years further apart.
pub const OTHER_BIRTH_YEAR: f64 = -0.12;
/// Bonus for the same country.
pub const SAME_COUNTRY: f64 = 0.03;
/// Malus for another country (persons and companies).
pub const OTHER_COUNTRY: f64 = -0.05;

/// The score change for an entry of `kind` with `entry_country` and `entry_dob`, given the
/// request's `country` and `dob`.
#[must_use]
pub fn adjustment(
    kind: EntryKind,
    entry_country: &str,
    entry_dob: Option<Date>,
    country: Option<&str>,
    dob: Option<Date>,
) -> f64 {
    let mut delta = 0.0;
    if let (Some(listed), Some(given)) = (entry_dob, dob) {
        delta += if listed == given {
            SAME_BIRTH_DATE
        } else {
            match (listed.year() - given.year()).abs() {
                0 => SAME_BIRTH_YEAR,
                1 => NEAR_BIRTH_YEAR,
                _ => OTHER_BIRTH_YEAR,
            }
        };
    }
    if let Some(given) = country {
        delta += if given == entry_country {
            SAME_COUNTRY
        } else if kind == EntryKind::Vessel {
            0.0
        } else {
            OTHER_COUNTRY
        };
    }
    delta
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    #[test]
    fn agreement_raises_and_contradiction_lowers() {
        let dob = Some(date!(1970 - 03 - 14));
        let p = EntryKind::Person;
        assert_eq!(adjustment(p, "RU", dob, None, None), 0.0);
        assert_eq!(adjustment(p, "RU", None, Some("GB"), dob), OTHER_COUNTRY);
        let agree = adjustment(p, "RU", dob, Some("RU"), dob);
        assert!((agree - (SAME_BIRTH_DATE + SAME_COUNTRY)).abs() < 1e-12);
        let near = adjustment(p, "RU", dob, None, Some(date!(1971 - 03 - 14)));
        assert_eq!(near, NEAR_BIRTH_YEAR);
        let far = adjustment(p, "RU", dob, Some("GB"), Some(date!(1985 - 01 - 01)));
        assert!((far - (OTHER_BIRTH_YEAR + OTHER_COUNTRY)).abs() < 1e-12);
        assert_eq!(
            adjustment(p, "RU", dob, None, Some(date!(1970 - 11 - 02))),
            SAME_BIRTH_YEAR
        );
    }

    #[test]
    fn vessels_are_not_contradicted_by_a_flag() {
        assert_eq!(
            adjustment(EntryKind::Vessel, "PA", None, Some("LR"), None),
            0.0
        );
        assert_eq!(
            adjustment(EntryKind::Vessel, "PA", None, Some("PA"), None),
            SAME_COUNTRY
        );
    }
}
