//! Integration tests of core-api against a real PostgreSQL (one throwaway database per test).
// Test helpers outside #[test] fns: a failed expectation is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bodies;
mod chaos;
mod common;
mod errors;
mod hung;
mod hybrid;
mod integers;
mod knowledge;
mod openapi;
mod seed;
mod transactions;
mod users;
mod writes;
