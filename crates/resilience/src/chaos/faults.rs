//! Per-call fault plans drawn from a verified [`ChaosSpec`] (SPEC §9: `p` per attempt).
//!
//! - **What it counts:** attempts drawn and attempts faulted ([`Faults::drawn`],
//!   [`Faults::injected`]).
//! - **When it trips:** each attempt draws a uniform `f64` in [0, 1) from the caller's RNG and
//!   injects when it is below `p`.
//! - **What it returns:** a [`FaultAction`] for the policy's call boundary; `error` and
//!   `reset` become the caller's own error through `E: From<InjectedFault>`.
//! - **Neighbours:** [`crate::policy::Policy::call_with_faults`] draws once per attempt it
//!   starts, after the breaker and inside the attempt timeout.

use std::time::Duration;

use rand::Rng;

use super::{ChaosSpec, Fault, Target};
use crate::classify::ErrorClass;

impl ChaosSpec {
    /// The fault plan for calls to `target`, drawing from `rng`; `None` when the header
    /// targets another dependency. Pass an RNG that is `Send` (e.g. `rand::rngs::SmallRng`,
    /// seeded per request from `rand::rng()`), not `ThreadRng`, so the call's future stays
    /// `Send`; tests pass a seeded one.
    pub fn faults_for<R: Rng>(&self, target: Target, rng: R) -> Option<Faults<R>> {
        (self.target == target).then(|| Faults {
            fault: self.fault,
            latency: Duration::from_millis(u64::from(self.ms.unwrap_or(0))),
            p: self.p,
            rng,
            drawn: 0,
            injected: 0,
        })
    }
}

/// What to do to one attempt ([`Faults::draw`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    /// Sleep this long, then make the call (with the rest of the attempt's timeout).
    Latency(Duration),
    /// Do not call; fail as if the dependency answered 503 ([`InjectedFault::Unavailable`]).
    Error,
    /// Do not call; pend until the attempt timeout fires.
    Timeout,
    /// Do not call; fail with a connection error ([`InjectedFault::Reset`]).
    Reset,
}

impl FaultAction {
    /// The fault this action injects (its wire name is `fault().as_str()`).
    pub fn fault(self) -> Fault {
        match self {
            Self::Latency(_) => Fault::Latency,
            Self::Error => Fault::Error,
            Self::Timeout => Fault::Timeout,
            Self::Reset => Fault::Reset,
        }
    }
}

/// The failure an `error` or `reset` fault stands for. The caller's error type converts from
/// it (`E: From<InjectedFault>`) into what a real 503 or connection reset would have been, so
/// the failure is classified, retried and mapped to a tool error exactly as a real one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InjectedFault {
    /// The dependency answered 503 (no `Retry-After`).
    #[error("chaos: dependency answered 503")]
    Unavailable,
    /// The connection was reset.
    #[error("chaos: connection reset")]
    Reset,
}

impl InjectedFault {
    /// Its class: `Status { 503 }` or `Connect` (both retryable breaker failures).
    pub fn class(self) -> ErrorClass {
        match self {
            Self::Unavailable => ErrorClass::Status {
                status: 503,
                retry_after: None,
            },
            Self::Reset => ErrorClass::Connect,
        }
    }
}

impl From<InjectedFault> for ErrorClass {
    fn from(fault: InjectedFault) -> Self {
        fault.class()
    }
}

/// A per-call fault plan for one dependency ([`ChaosSpec::faults_for`]): one draw per attempt.
#[derive(Debug)]
pub struct Faults<R> {
    fault: Fault,
    latency: Duration,
    p: f64,
    rng: R,
    drawn: u32,
    injected: u32,
}

impl<R: Rng> Faults<R> {
    /// One attempt's draw: the fault with probability `p` (a uniform `f64` in [0, 1) below
    /// `p`, so `p = 1` always and `p = 0` never injects), else `None` (call normally).
    pub fn draw(&mut self) -> Option<FaultAction> {
        self.drawn = self.drawn.saturating_add(1);
        if self.rng.random::<f64>() >= self.p {
            return None;
        }
        self.injected = self.injected.saturating_add(1);
        Some(match self.fault {
            Fault::Latency => FaultAction::Latency(self.latency),
            Fault::Error => FaultAction::Error,
            Fault::Timeout => FaultAction::Timeout,
            Fault::Reset => FaultAction::Reset,
        })
    }

    /// Attempts that drew (one per attempt the policy started).
    pub fn drawn(&self) -> u32 {
        self.drawn
    }

    /// Attempts that got a fault.
    pub fn injected(&self) -> u32 {
        self.injected
    }
}
