//! Id shapes (SPEC §3): a prefix and digits for the seeded records, a prefix and a ULID for
//! what the system creates. A well-formed id that does not exist is `not_found`; only a
//! malformed one is `invalid_argument`, so both sides check the shape with [`IdShape::matches`]
//! and tools declare it in their `inputSchema` with [`IdShape::pattern`].
//!
//! | id | shape | example |
//! |---|---|---|
//! | account | `acc_` + 4 or more digits | `acc_0001` |
//! | transaction | `txn_` + 6 or more digits | `txn_000001` |
//! | article | `kb_` + 3 or more digits | `kb_001` |
//! | dispute | `dsp_` + 26 Crockford base-32 characters (a ULID) | `dsp_01JD8X4ZQ7M2N5P8R3T6V9W0YB` |
//! | review | `rev_` + a ULID | `rev_01JD8X4ZQ7M2N5P8R3T6V9W0YB` |
//! | screening | `scr_` + a ULID | `scr_01JD8X4ZQ7M2N5P8R3T6V9W0YB` |
//!
//! Only ASCII digits count (`txn_٠٠٠٠٠١` is malformed). The digit forms have no upper bound
//! on length (SPEC §3), but no id longer than [`MAX_DIGITS`] digits is ever issued:
//! [`IdShape::may_exist`] lets a caller answer `not_found` for one without a lookup (and
//! without building a URL too long to send).

/// What follows an id's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdBody {
    /// At least `min` ASCII digits.
    Digits {
        /// Fewest digits.
        min: usize,
    },
    /// Exactly 26 Crockford base-32 characters, uppercase (`0-9A-HJKMNP-TV-Z`): a ULID.
    Ulid,
}

/// The shape of one kind of id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdShape {
    /// `txn_`, `acc_`, …
    pub prefix: &'static str,
    /// What follows the prefix.
    pub body: IdBody,
    /// A well-formed example, quoted in error messages.
    pub example: &'static str,
}

/// `acc_` + 4 or more digits.
pub const ACCOUNT: IdShape = IdShape {
    prefix: "acc_",
    body: IdBody::Digits { min: 4 },
    example: "acc_0001",
};

/// `txn_` + 6 or more digits.
pub const TRANSACTION: IdShape = IdShape {
    prefix: "txn_",
    body: IdBody::Digits { min: 6 },
    example: "txn_000001",
};

/// `kb_` + 3 or more digits.
pub const ARTICLE: IdShape = IdShape {
    prefix: "kb_",
    body: IdBody::Digits { min: 3 },
    example: "kb_001",
};

/// `dsp_` + a ULID.
pub const DISPUTE: IdShape = IdShape {
    prefix: "dsp_",
    body: IdBody::Ulid,
    example: "dsp_01JD8X4ZQ7M2N5P8R3T6V9W0YB",
};

/// `rev_` + a ULID.
pub const REVIEW: IdShape = IdShape {
    prefix: "rev_",
    body: IdBody::Ulid,
    example: "rev_01JD8X4ZQ7M2N5P8R3T6V9W0YB",
};

/// `scr_` + a ULID.
pub const SCREENING: IdShape = IdShape {
    prefix: "scr_",
    body: IdBody::Ulid,
    example: "scr_01JD8X4ZQ7M2N5P8R3T6V9W0YB",
};

/// Most digits of any id Kosha issues or seeds; a longer well-formed id does not exist.
pub const MAX_DIGITS: usize = 32;

/// Length of a ULID in Crockford base-32 characters.
pub const ULID_CHARS: usize = 26;

/// Whether `b` is an uppercase Crockford base-32 digit (no I, L, O, U).
fn is_crockford(b: u8) -> bool {
    b.is_ascii_digit() || (b.is_ascii_uppercase() && !matches!(b, b'I' | b'L' | b'O' | b'U'))
}

impl IdShape {
    /// Whether `value` has this shape.
    pub fn matches(&self, value: &str) -> bool {
        let Some(rest) = value.strip_prefix(self.prefix) else {
            return false;
        };
        match self.body {
            IdBody::Digits { min } => rest.len() >= min && rest.bytes().all(|b| b.is_ascii_digit()),
            // The first character of a ULID is at most 7 (128 bits in 26 characters).
            IdBody::Ulid => {
                rest.len() == ULID_CHARS
                    && rest.bytes().all(is_crockford)
                    && rest.as_bytes().first().is_some_and(|b| *b <= b'7')
            }
        }
    }

    /// Whether a well-formed `value` could name a record: ULIDs always, digit forms up to
    /// [`MAX_DIGITS`] digits. `false` means `not_found` without looking.
    pub fn may_exist(&self, value: &str) -> bool {
        match self.body {
            IdBody::Digits { .. } => value.len() <= self.prefix.len() + MAX_DIGITS,
            IdBody::Ulid => true,
        }
    }

    /// The ECMA-262 regular expression of this shape, for a JSON Schema `pattern`
    /// (`^txn_[0-9]{6,}$`).
    pub fn pattern(&self) -> String {
        match self.body {
            IdBody::Digits { min } => format!("^{}[0-9]{{{min},}}$", self.prefix),
            IdBody::Ulid => format!("^{}[0-7][0-9A-HJKMNP-TV-Z]{{25}}$", self.prefix),
        }
    }

    /// What the shape is, in words, for an `invalid_argument` message:
    /// `txn_ followed by 6 or more digits, such as txn_000001`.
    pub fn describe(&self) -> String {
        match self.body {
            IdBody::Digits { min } => format!(
                "{} followed by {min} or more digits, such as {}",
                self.prefix, self.example
            ),
            IdBody::Ulid => format!(
                "{} followed by a 26-character ULID, such as {}",
                self.prefix, self.example
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_ids_and_longer_well_formed_ids_match() {
        for (shape, ok) in [
            (TRANSACTION, "txn_000001"),
            (TRANSACTION, "txn_999999999"),
            (ACCOUNT, "acc_0050"),
            (ACCOUNT, "acc_12345"),
            (ARTICLE, "kb_001"),
            (ARTICLE, "kb_0400"),
            (DISPUTE, DISPUTE.example),
            (REVIEW, REVIEW.example),
            (SCREENING, SCREENING.example),
        ] {
            assert!(shape.matches(ok), "{ok}");
        }
    }

    #[test]
    fn malformed_ids_do_not_match() {
        for bad in [
            "",
            "txn_1",
            "txn_00001",
            "TXN_000001",
            "txn_00000a",
            "txn_000001 ",
            " txn_000001",
            "txn_٠٠٠٠٠١",
            "'; DROP TABLE core.accounts; --",
            "txn_%",
            "txn_",
        ] {
            assert!(!TRANSACTION.matches(bad), "{bad:?}");
        }
        assert!(!ACCOUNT.matches("acc_001"));
        assert!(!ARTICLE.matches("kb_01"));
        for bad in [
            "dsp_01jd8x4zq7m2n5p8r3t6v9w0yb",
            "dsp_01JD8X4ZQ7M2N5P8R3T6V9W0Y",
            "dsp_01JD8X4ZQ7M2N5P8R3T6V9W0YBB",
            "dsp_01JD8X4ZQ7M2N5P8R3T6V9W0YI",
            "dsp_81JD8X4ZQ7M2N5P8R3T6V9W0YB",
            "rev_01JD8X4ZQ7M2N5P8R3T6V9W0YB",
        ] {
            assert!(!DISPUTE.matches(bad), "{bad}");
        }
    }

    #[test]
    fn ids_longer_than_any_issued_are_well_formed_but_cannot_exist() {
        let long = format!("txn_{}", "9".repeat(MAX_DIGITS + 1));
        assert!(TRANSACTION.matches(&long));
        assert!(!TRANSACTION.may_exist(&long));
        assert!(TRANSACTION.may_exist(&format!("txn_{}", "9".repeat(MAX_DIGITS))));
        assert!(DISPUTE.may_exist(DISPUTE.example));
    }

    #[test]
    fn patterns_and_descriptions_say_the_same_shape() {
        assert_eq!(TRANSACTION.pattern(), "^txn_[0-9]{6,}$");
        assert_eq!(SCREENING.pattern(), "^scr_[0-7][0-9A-HJKMNP-TV-Z]{25}$");
        assert_eq!(
            ACCOUNT.describe(),
            "acc_ followed by 4 or more digits, such as acc_0001"
        );
    }
}
