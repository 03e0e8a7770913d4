//! One module per top-level command. To add one: a module here, a variant in `main.rs`'s
//! `Command`, an arm in its dispatch.

pub mod bootstrap;
pub mod breaker;
pub mod chaos;
pub mod token;

/// A command failed; printed as one line on stderr, exit status 1.
pub type CommandError = Box<dyn std::error::Error + Send + Sync>;
