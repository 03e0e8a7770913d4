//! Id shapes (SPEC §3, [`kosha_contract::ids`]), checked before any query: a malformed id is
//! a 400 naming the field; a well-formed one that does not exist is a 404.

use kosha_contract::ids::IdShape;

use crate::error::ApiError;

/// Checks that `value`, the request's `field`, has `shape`.
///
/// # Errors
/// [`ApiError::InvalidArgument`] naming `field` and the shape (never quoting the value).
pub fn check(field: &str, value: &str, shape: &IdShape) -> Result<(), ApiError> {
    if shape.matches(value) {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "{field} must be {}",
            shape.describe()
        )))
    }
}

#[cfg(test)]
mod tests {
    use kosha_contract::ids::{ACCOUNT, TRANSACTION};

    use super::*;

    #[test]
    fn well_formed_ids_pass_whatever_their_length() {
        assert!(check("transaction_id", "txn_000001", &TRANSACTION).is_ok());
        assert!(check("transaction_id", "txn_999999999", &TRANSACTION).is_ok());
        assert!(check("account_id", "acc_0050", &ACCOUNT).is_ok());
    }

    #[test]
    fn malformed_ids_are_refused_naming_the_field_not_the_value() {
        for bad in ["", "txn_1", "'; DROP TABLE core.accounts; --", "txn_%"] {
            let err = check("transaction_id", bad, &TRANSACTION).unwrap_err();
            let message = err.to_string();
            assert!(message.contains("transaction_id"), "{bad}");
            assert!(message.contains("such as txn_000001"), "{message}");
            if !bad.is_empty() {
                assert!(!message.contains(bad), "{message}");
            }
        }
        assert!(check("account_id", "acc_001", &ACCOUNT).is_err());
    }
}
