//! The screening request and its validation (SPEC §4 `screen_entity` and `POST /v1/screen`,
//! issue 12 "Bad input").
//!
//! Rules, each refused with [`ScreenError::InvalidArgument`] naming the field:
//! - `name`: 1 to 200 characters (Unicode scalar values, as typed), no control characters
//!   (`\n`, `\t`, NUL … — Unicode category Cc), and at least one letter: a name of only
//!   punctuation, spaces or digits is not a name; and at most 400 characters and 20 words
//!   once normalised ([`crate::normalize::oversize`], issue #30: a few code points expand
//!   to many words).
//! - `country` (optional): an ISO 3166-1 alpha-2 code that is officially assigned today, from
//!   the `rust_iso3166` table (Debian iso-codes data): `GB` yes, `UK`, `EU`, `XK` or `ZZ` no.
//!   Lower case is accepted and upper-cased (`ru` → `RU`).
//! - `date_of_birth` (optional): exactly `YYYY-MM-DD`, a real calendar date (`2023-02-30` is
//!   refused), from 1900-01-01 up to today (UTC).
//!
//! Choices where SPEC is silent (written here and in the crate doc):
//! - **Mixed scripts are screened, not refused.** A name may carry several scripts ("Mohammed
//!   محمد") and a Latin name with a Cyrillic look-alike letter is a classic way to slip past a
//!   list; refusing it would leave the name unscreened, while reading it as a person does
//!   (see [`crate::lookalike`]) screens it as the name it imitates.
//! - Invisible format characters (zero-width joiners, bidi marks) are not control characters;
//!   they are dropped during normalisation, because Persian names legitimately contain ZWNJ.

pub use kosha_contract::screening::{NAME_MAX_CHARS, ScreenRequest};
use time::{Date, Month};

use crate::error::ScreenError;
use crate::normalize::{NormalizedName, normalize, oversize};

/// Earliest accepted date of birth.
pub const MIN_BIRTH_YEAR: i32 = 1900;

/// A request that passed validation, with the name already normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRequest {
    /// The name as given.
    pub name: String,
    /// The name's comparable tokens; never empty.
    pub query: NormalizedName,
    /// Upper-case ISO 3166-1 alpha-2 code.
    pub country: Option<&'static str>,
    /// The date of birth.
    pub date_of_birth: Option<Date>,
}

/// The validation of the contract's [`ScreenRequest`] (the module doc's rules).
pub trait Validate {
    /// Validates against today's UTC date (see [`Validate::validate_at`]).
    ///
    /// # Errors
    /// [`ScreenError::InvalidArgument`] naming the first field at fault, in the order `name`,
    /// `country`, `date_of_birth`.
    fn validate(&self) -> Result<ValidRequest, ScreenError>;

    /// Validates with `today` as the latest acceptable date of birth.
    ///
    /// # Errors
    /// As [`Validate::validate`].
    fn validate_at(&self, today: Date) -> Result<ValidRequest, ScreenError>;
}

impl Validate for ScreenRequest {
    /// Validates against today's UTC date (see [`ScreenRequest::validate_at`]).
    ///
    /// # Errors
    /// [`ScreenError::InvalidArgument`] naming the first field at fault, in the order `name`,
    /// `country`, `date_of_birth`.
    fn validate(&self) -> Result<ValidRequest, ScreenError> {
        self.validate_at(time::OffsetDateTime::now_utc().date())
    }

    fn validate_at(&self, today: Date) -> Result<ValidRequest, ScreenError> {
        let query = validate_name(&self.name)?;
        let country = self.country.as_deref().map(validate_country).transpose()?;
        let date_of_birth = self
            .date_of_birth
            .as_deref()
            .map(|d| validate_date_of_birth(d, today))
            .transpose()?;
        Ok(ValidRequest {
            name: self.name.clone(),
            query,
            country,
            date_of_birth,
        })
    }
}

fn validate_name(name: &str) -> Result<NormalizedName, ScreenError> {
    let chars = name.chars().count();
    if chars == 0 || chars > NAME_MAX_CHARS {
        return Err(ScreenError::invalid(
            "name",
            format!("name must be 1 to {NAME_MAX_CHARS} characters, got {chars}"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(ScreenError::invalid(
            "name",
            "name must not contain control characters (newlines, tabs, NUL …)",
        ));
    }
    if !name.chars().any(char::is_alphabetic) {
        return Err(ScreenError::invalid(
            "name",
            "name must contain at least one letter, not only punctuation, digits or spaces",
        ));
    }
    let query = normalize(name);
    if query.is_empty() {
        // Unreachable in practice (a letter always transliterates to something), but the
        // matcher relies on a non-empty query, so say so rather than assume it.
        return Err(ScreenError::invalid(
            "name",
            "name has no letters that can be compared",
        ));
    }
    if let Some(why) = oversize(&query) {
        return Err(ScreenError::invalid("name", why));
    }
    Ok(query)
}

fn validate_country(country: &str) -> Result<&'static str, ScreenError> {
    let upper = country.to_ascii_uppercase();
    let known = (upper.len() == 2 && upper.bytes().all(|b| b.is_ascii_uppercase()))
        .then(|| rust_iso3166::from_alpha2(&upper))
        .flatten();
    match known {
        Some(code) => Ok(code.alpha2),
        None => Err(ScreenError::invalid(
            "country",
            format!(
                "country must be an assigned ISO 3166-1 alpha-2 code such as \"GB\" or \"RU\", got {:?}",
                clip(country)
            ),
        )),
    }
}

fn validate_date_of_birth(value: &str, today: Date) -> Result<Date, ScreenError> {
    let bad = |why: &str| {
        ScreenError::invalid(
            "date_of_birth",
            format!("date_of_birth {why}, got {:?}", clip(value)),
        )
    };
    let b = value.as_bytes();
    let shape_ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shape_ok {
        return Err(bad("must be YYYY-MM-DD"));
    }
    let num = |range: std::ops::Range<usize>| -> u32 {
        b[range]
            .iter()
            .fold(0, |acc, c| acc * 10 + u32::from(c - b'0'))
    };
    let (year, month, day) = (num(0..4), num(5..7), num(8..10));
    let date = i32::try_from(year)
        .ok()
        .zip(
            u8::try_from(month)
                .ok()
                .and_then(|m| Month::try_from(m).ok()),
        )
        .zip(u8::try_from(day).ok())
        .and_then(|((y, m), d)| Date::from_calendar_date(y, m, d).ok())
        .ok_or_else(|| bad("must be a real calendar date"))?;
    if date.year() < MIN_BIRTH_YEAR {
        return Err(bad("must not be before 1900-01-01"));
    }
    if date > today {
        return Err(bad("must not be in the future"));
    }
    Ok(date)
}

/// Caller text echoed in an error is clipped to 40 characters (STYLE: caller text is clipped).
fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}
