//! SigV4 signing of the gateway's core-api and screening-sim requests: the one signer,
//! [`kosha_runtime::sigv4`], shared with the screening-worker (issue 6, issue 12).

pub use kosha_runtime::sigv4::{REFRESH_BEFORE_EXPIRY, SERVICE, SigV4Signer, SignError};
