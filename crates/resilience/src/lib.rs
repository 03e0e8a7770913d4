//! kosha-resilience: the policies every Kosha function puts around a dependency call
//! (seed 004 §1–§7).
//!
//! One module per policy, composed by [`policy::Policy`] in the order of seed 004 §1:
//! [`deadline`] → [`not_before`] → [`bulkhead`] (optionally [`adaptive`]) → [`breaker`] →
//! [`retry`] (with [`backoff`] and [`budget`]) → [`hedge`] (with [`latency`]) → [`timeout`].
//! The origin backoff sits before the bulkhead so a dependency's "not before T" refuses a
//! call without taking a slot or a breaker permit; the hedge sits inside the breaker (one
//! outcome per logical call) and inside retry (a hedge is not a retry, pitfall 27), around
//! one attempt whose timeout it keeps; the adaptive limit is the bulkhead's own cap, moved by
//! attempt latency (issue #33). [`classify`] says which errors are retried and which count as dependency
//! failures; [`config`] completes a dependency's [`config::Profile`] (its row of seed 004 §1,
//! chosen by the binary that calls it) and reads environment overrides; [`error`] is the one
//! error type (a setting that cannot be used); [`overrides`] is where forced-open overrides
//! come from; [`fleet`] is the trips a breaker shares with the fleet (SPEC §8); [`principal_rate`] is the in-memory per-principal request limiter of SPEC §6
//! (beside the shared bucket of [`rate_limit`]); [`chaos`] verifies the signed chaos header
//! (SPEC §9) and draws the faults the policy injects at the call boundary. The crate knows
//! nothing of HTTP frameworks, tools or AWS: callers classify their own errors through
//! [`classify::Classify`].
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use kosha_contract::dependency::Dependency;
//! use kosha_resilience::classify::ErrorClass;
//! use kosha_resilience::config::{PolicyConfig, Profile};
//! use kosha_resilience::deadline::Deadline;
//! use kosha_resilience::overrides::NoOverrides;
//! use kosha_resilience::policy::{Policy, PolicyError};
//! use kosha_resilience::retry::Idempotency;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Once, in main: settings validated at start-up.
//! // Seed 004 §1, OpenAI embeddings: 2 s cap, 2 attempts, bulkhead 8, window 10, open 30 s.
//! let openai = Profile {
//!     attempt_cap: Duration::from_secs(2),
//!     attempt_margin: Duration::from_millis(100),
//!     max_attempts: 2,
//!     bulkhead: 8,
//!     breaker_window: 10,
//!     open_for: Duration::from_secs(30),
//! };
//! let config = PolicyConfig::from_lookup(openai, "KOSHA_POLICY_OPENAI", |name| {
//!     std::env::var(name).ok()
//! })?;
//! let policy = Policy::try_new(Dependency::OpenAi, config, Arc::new(NoOverrides))?;
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

pub mod adaptive;
pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod chaos;
pub mod classify;
pub mod config;
pub mod deadline;
pub mod error;
pub mod fleet;
pub mod hedge;
pub mod latency;
pub mod not_before;
pub mod overrides;
pub mod policy;
pub mod principal_rate;
pub mod rate_limit;
pub mod retry;
mod span;
pub mod timeout;
