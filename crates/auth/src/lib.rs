//! kosha-auth: verifies Cognito access tokens (SPEC §5).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
