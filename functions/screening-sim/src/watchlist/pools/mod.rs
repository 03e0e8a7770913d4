//! Name pools for the synthetic watchlist, by naming culture.
//!
//! Each pool pairs the Latin spelling a list would print with common alternative Latin
//! spellings and, where the culture writes another script, the native form. The native
//! forms are the everyday spellings (Russian and Serbian Cyrillic, Arabic, Persian, simplified
//! Chinese); the variants are the romanisations seen on real lists (Sergei / Sergey,
//! Mohammed / Muhammad / Mohamed, Ivanov / Ivanoff). None of the combinations names a real
//! listed person: first and family names are drawn independently.

pub mod arabic;
pub mod asian;
pub mod entities;
pub mod slavic;
pub mod western;

/// A given name.
#[derive(Debug, Clone, Copy)]
pub struct Given {
    /// The Latin spelling used in primary names.
    pub latin: &'static str,
    /// Other Latin spellings of the same name.
    pub variants: &'static [&'static str],
    /// The native-script form, or "" for Latin-script cultures.
    pub native: &'static str,
    /// Whether the name is a woman's.
    pub female: bool,
    /// Russian patronymic stem for children of a man of this name (Latin, native), or ("", "").
    pub patronymic: (&'static str, &'static str),
}

/// A family name.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// The Latin spelling used in primary names.
    pub latin: &'static str,
    /// Other Latin spellings.
    pub variants: &'static [&'static str],
    /// The native-script form, or "".
    pub native: &'static str,
}

/// Shorthand constructors keep the tables readable.
pub(crate) const fn m(
    latin: &'static str,
    variants: &'static [&'static str],
    native: &'static str,
) -> Given {
    Given {
        latin,
        variants,
        native,
        female: false,
        patronymic: ("", ""),
    }
}

pub(crate) const fn f(
    latin: &'static str,
    variants: &'static [&'static str],
    native: &'static str,
) -> Given {
    Given {
        latin,
        variants,
        native,
        female: true,
        patronymic: ("", ""),
    }
}

pub(crate) const fn mp(
    latin: &'static str,
    variants: &'static [&'static str],
    native: &'static str,
    patronymic: (&'static str, &'static str),
) -> Given {
    Given {
        latin,
        variants,
        native,
        female: false,
        patronymic,
    }
}

pub(crate) const fn fam(
    latin: &'static str,
    variants: &'static [&'static str],
    native: &'static str,
) -> Family {
    Family {
        latin,
        variants,
        native,
    }
}
