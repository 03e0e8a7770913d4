//! kosha-resilience: the policies every Kosha function puts around a dependency call
//! (seed 004 §1–§7).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod overrides;
pub mod rate_limit;
