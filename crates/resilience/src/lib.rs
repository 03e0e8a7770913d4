//! kosha-resilience: the policies every Kosha function puts around a dependency call
//! (seed 004 §1–§7).
//!
//! One module per policy, composed by [`policy::Policy`] in the order of seed 004 §1:
//! [`deadline`] → [`bulkhead`] → [`breaker`] → [`retry`] (with [`backoff`] and [`budget`]) →
//! [`timeout`]. [`classify`] says which errors are retried and which count as dependency
//! failures; [`config`] holds the per-dependency defaults and their environment overrides;
//! [`overrides`] is where forced-open overrides come from; [`chaos`] verifies the signed
//! chaos header (SPEC §9) and draws the faults the policy injects at the call boundary. The
//! crate knows nothing of HTTP frameworks, tools or AWS: callers classify their own errors
//! through [`classify::Classify`].
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use kosha_resilience::classify::ErrorClass;
//! use kosha_resilience::config::{Dependency, PolicyConfig};
//! use kosha_resilience::deadline::Deadline;
//! use kosha_resilience::overrides::NoOverrides;
//! use kosha_resilience::policy::{Policy, PolicyError};
//! use kosha_resilience::retry::Idempotency;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Once, in main: settings validated at start-up.
//! let config = PolicyConfig::from_lookup(Dependency::OpenAi, |name| std::env::var(name).ok())?;
//! let policy = Policy::try_new(Dependency::OpenAi.name(), config, Arc::new(NoOverrides))?;
//!
//! // Per request: the deadline comes from the tool budget (or `X-Request-Deadline`).
//! let deadline = Deadline::after(Duration::from_secs(8));
//! let result: Result<u32, PolicyError<ErrorClass>> = policy
//!     .call(&deadline, Idempotency::Idempotent, |attempt| async move {
//!         // attempt.timeout is min(remaining − margin, attempt cap).
//!         if attempt.number == 1 {
//!             Err(ErrorClass::Status { status: 503, retry_after: None })
//!         } else {
//!             Ok(42)
//!         }
//!     })
//!     .await;
//! assert_eq!(result.ok(), Some(42)); // the floor of the retry budget allowed one retry
//! assert_eq!(policy.health().state.as_str(), "closed");
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod chaos;
pub mod classify;
pub mod config;
pub mod deadline;
pub mod overrides;
pub mod policy;
pub mod rate_limit;
pub mod retry;
pub mod timeout;
