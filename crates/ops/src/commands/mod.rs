//! One module per top-level command.

pub mod bootstrap;
pub mod breaker;
