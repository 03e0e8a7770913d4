//! Shapes of the stable ids (SPEC §4), checked before any query so a malformed id is a 400
//! naming the field rather than a 404.

use crate::error::ApiError;

/// Checks `^txn_[0-9]{6}$`.
///
/// # Errors
/// [`ApiError::InvalidArgument`] naming `field`.
pub fn transaction_id(field: &str, value: &str) -> Result<(), ApiError> {
    check(field, value, "txn_", 6)
}

/// Checks `^acc_[0-9]{4}$`.
///
/// # Errors
/// [`ApiError::InvalidArgument`] naming `field`.
pub fn account_id(field: &str, value: &str) -> Result<(), ApiError> {
    check(field, value, "acc_", 4)
}

fn check(field: &str, value: &str, prefix: &str, digits: usize) -> Result<(), ApiError> {
    let ok = value
        .strip_prefix(prefix)
        .is_some_and(|rest| rest.len() == digits && rest.bytes().all(|b| b.is_ascii_digit()));
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "{field} must look like {prefix}{} ({digits} digits)",
            "0".repeat(digits.saturating_sub(1)) + "1"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_well_formed_ids() {
        assert!(transaction_id("transaction_id", "txn_000001").is_ok());
        assert!(account_id("account_id", "acc_0050").is_ok());
    }

    #[test]
    fn rejects_everything_else_naming_the_field() {
        for bad in [
            "",
            "txn_1",
            "txn_0000011",
            "TXN_000001",
            "txn_00000a",
            "txn_000001 ",
            "txn_٠٠٠٠٠١",
            "'; DROP TABLE core.accounts; --",
            "txn_%",
        ] {
            let err = transaction_id("transaction_id", bad).unwrap_err();
            assert!(err.to_string().contains("transaction_id"), "{bad}");
        }
        assert!(account_id("account_id", "acc_001").is_err());
        assert!(account_id("account_id", "acc_00001").is_err());
    }
}
