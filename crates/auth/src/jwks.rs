//! Signing keys from a JWKS (RFC 7517): fetching ([`JwksFetcher`]) and caching (module
//! `cache`, whose docs state when a fetch happens).

mod cache;
mod fetch;

pub use cache::CacheTiming;
pub(crate) use cache::{KeyCache, KeyMiss};
pub use fetch::{
    FetchError, FetchFuture, FileJwksFetcher, HttpJwksFetcher, JwksFetcher, MAX_JWKS_BYTES,
    StaticJwks,
};
