//! The error body's schemas (feature `openapi`): the code's enum from [`ErrorCode::ALL`], so
//! it cannot drift, and the dependency names of SPEC §8.

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;
use utoipa::{PartialSchema, ToSchema};

use crate::dependency::Dependency;
use crate::error::ErrorCode;
use crate::openapi::string_enum;

/// `error.code`: one of the stable codes of SPEC §3 ([`ErrorCode::ALL`]).
/// [`ErrorCode::Unknown`] is a reader's fallback for a newer peer and is never sent.
impl PartialSchema for ErrorCode {
    fn schema() -> RefOr<Schema> {
        let codes = ErrorCode::ALL.map(ErrorCode::as_str);
        RefOr::T(string_enum(
            &codes,
            "The stable error code (SPEC §3). Clients branch on it; messages are for reading.",
        ))
    }
}

impl ToSchema for ErrorCode {}

/// `error.dependency`: a dependency name of SPEC §8 ([`Dependency::ALL`]).
pub fn dependency() -> Schema {
    let names = Dependency::ALL.map(Dependency::as_str);
    string_enum(&names, "The failing dependency (SPEC §8), when one failed.")
}
