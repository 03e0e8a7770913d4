//! Bounds on caller-controlled text that error messages and log lines quote back: the
//! contract crate's [`kosha_contract::echo`], shared with core-api so the bound is the same in
//! every function.

pub use kosha_contract::echo::{ECHO_MAX_CHARS, clip, clip_quoted, clip_serde_message};
