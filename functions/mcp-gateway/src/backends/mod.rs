//! The resilience policy of each of the gateway's dependencies, and the deferred-screening
//! record ([`screening`]). The typed clients themselves are `kosha_clients`'s, shared with the
//! screening-worker.
//!
//! [`Backend`] names each dependency call the gateway makes under a policy of its own, with
//! its row of seed 004 §1's table:
//!
//! | backend | health name | override | attempt cap | attempts | bulkhead | window | open |
//! |---|---|---|---|---|---|---|---|
//! | core-api reads | `core-api` | `core-api` | 2.0 s | 3 | 32 | 20 | 15 s |
//! | core-api writes | `core-api-writes` | `core-api` | 4.0 s | 1 | 16 | 20 | 15 s |
//! | screening-sim | `screening-sim` | `screening-sim` | 1.5 s | 2 | 8 | 10 | 30 s |
//!
//! Each setting can be overridden with `<env prefix>_<SETTING>` (see
//! [`kosha_resilience::config`]), e.g. `KOSHA_POLICY_CORE_API_READ_BREAKER_OPEN_MS=3000`.

pub mod screening;

use std::time::Duration;

use kosha_clients::hop::HOP_MARGIN;
use kosha_contract::breaker::Breaker;
use kosha_contract::dependency::Dependency;
use kosha_resilience::config::Profile;

/// A dependency call under a policy of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// core-api's read endpoints.
    CoreApiRead,
    /// core-api's write endpoints (`POST /v1/disputes`, `POST /v1/reviews`): one attempt,
    /// since the agent retries with the same idempotency key (seed 004 §1).
    CoreApiWrite,
    /// screening-sim's `POST /v1/screen` (SPEC §4).
    ScreeningSim,
}

impl Backend {
    /// The breaker this backend's calls go through (one each).
    pub const fn breaker(self) -> Breaker {
        match self {
            Self::CoreApiRead => Breaker::CoreApi,
            Self::CoreApiWrite => Breaker::CoreApiWrites,
            Self::ScreeningSim => Breaker::ScreeningSim,
        }
    }

    /// The name `get_service_health` shows (SPEC §4), its breaker's.
    pub const fn health_name(self) -> &'static str {
        self.breaker().as_str()
    }

    /// The dependency whose `breaker#<dependency>` override forces this backend open
    /// (SPEC §8: `core-api` forces reads and writes alike).
    pub const fn dependency(self) -> Dependency {
        self.breaker().dependency()
    }

    /// Whether this backend's calls are hedged (issue #33): idempotent reads only — core-api's
    /// reads (`get_transaction`, `list_transactions`, and the knowledge search, a read sent as
    /// POST); never writes, never screening.
    pub const fn hedged(self) -> bool {
        matches!(self, Self::CoreApiRead)
    }

    /// Prefix of this backend's `KOSHA_POLICY_*` overrides.
    pub const fn env_prefix(self) -> &'static str {
        match self {
            Self::CoreApiRead => "KOSHA_POLICY_CORE_API_READ",
            Self::CoreApiWrite => "KOSHA_POLICY_CORE_API_WRITE",
            Self::ScreeningSim => "KOSHA_POLICY_SCREENING_SIM",
        }
    }

    /// Seed 004 §1's row for this backend. The attempt margin is the hop's
    /// ([`HOP_MARGIN`], SPEC §7's 150 ms): each attempt ends when its hop deadline would.
    pub const fn profile(self) -> Profile {
        match self {
            Self::CoreApiRead => Profile {
                attempt_cap: Duration::from_millis(2_000),
                attempt_margin: HOP_MARGIN,
                max_attempts: 3,
                bulkhead: 32,
                breaker_window: 20,
                open_for: Duration::from_secs(15),
            },
            Self::CoreApiWrite => Profile {
                attempt_cap: Duration::from_millis(4_000),
                attempt_margin: HOP_MARGIN,
                max_attempts: 1,
                bulkhead: 16,
                breaker_window: 20,
                open_for: Duration::from_secs(15),
            },
            Self::ScreeningSim => Profile {
                attempt_cap: Duration::from_millis(1_500),
                attempt_margin: HOP_MARGIN,
                max_attempts: 2,
                bulkhead: 8,
                breaker_window: 10,
                open_for: Duration::from_secs(30),
            },
        }
    }
}

/// One `T` for each [`Backend`]; [`PerBackend::get`] is an exhaustive match, so a backend
/// added to the enum cannot be left without its value.
#[derive(Debug, Clone)]
pub struct PerBackend<T> {
    /// For [`Backend::CoreApiRead`].
    pub core_api_read: T,
    /// For [`Backend::CoreApiWrite`].
    pub core_api_write: T,
    /// For [`Backend::ScreeningSim`].
    pub screening_sim: T,
}

impl<T> PerBackend<T> {
    /// `f(backend)` for every backend, or the first error.
    ///
    /// # Errors
    /// The first error `f` returns.
    pub fn try_new<E>(mut f: impl FnMut(Backend) -> Result<T, E>) -> Result<Self, E> {
        Ok(Self {
            core_api_read: f(Backend::CoreApiRead)?,
            core_api_write: f(Backend::CoreApiWrite)?,
            screening_sim: f(Backend::ScreeningSim)?,
        })
    }

    /// The value for `backend`.
    pub fn get(&self, backend: Backend) -> &T {
        match backend {
            Backend::CoreApiRead => &self.core_api_read,
            Backend::CoreApiWrite => &self.core_api_write,
            Backend::ScreeningSim => &self.screening_sim,
        }
    }
}

#[cfg(test)]
mod tests {
    use kosha_resilience::config::PolicyConfig;

    use super::*;

    #[test]
    fn profiles_follow_seed_004_section_1() {
        let read = PolicyConfig::from_profile(Backend::CoreApiRead.profile());
        assert_eq!(read.attempt.cap, Duration::from_secs(2));
        assert_eq!(read.retry.max_attempts, 3);
        assert_eq!(read.bulkhead.capacity, 32);
        assert_eq!(read.breaker.window, 20);
        assert_eq!(read.breaker.open_duration, Duration::from_secs(15));
        assert!(read.validate().is_ok());
        let screening = PolicyConfig::from_profile(Backend::ScreeningSim.profile());
        assert_eq!(screening.attempt.cap, Duration::from_millis(1_500));
        assert_eq!(screening.retry.max_attempts, 2);
        assert_eq!(screening.bulkhead.capacity, 8);
        assert_eq!(screening.breaker.window, 10);
        assert_eq!(screening.breaker.open_duration, Duration::from_secs(30));
        assert!(screening.validate().is_ok());
        let write = PolicyConfig::from_profile(Backend::CoreApiWrite.profile());
        assert_eq!(write.attempt.cap, Duration::from_secs(4));
        assert_eq!(write.retry.max_attempts, 1);
        assert_eq!(write.bulkhead.capacity, 16);
        assert_eq!(write.breaker.window, 20);
        assert_eq!(write.breaker.open_duration, Duration::from_secs(15));
        assert!(write.validate().is_ok());
    }

    #[test]
    fn each_backend_has_a_breaker_of_its_own_and_the_fleet_shares_them_all() {
        let breakers = PerBackend::try_new(|b| Ok::<_, ()>(b.breaker())).unwrap();
        assert_eq!(
            [
                breakers.core_api_read,
                breakers.core_api_write,
                breakers.screening_sim
            ],
            Breaker::ALL
        );
        assert_eq!(kosha_state::TRIP_BREAKERS, Breaker::NAMES);
    }

    #[test]
    fn only_core_api_reads_are_hedged() {
        assert!(Backend::CoreApiRead.hedged());
        assert!(!Backend::CoreApiWrite.hedged());
        assert!(!Backend::ScreeningSim.hedged());
    }

    #[test]
    fn the_core_api_override_forces_reads_and_writes() {
        assert_eq!(Backend::CoreApiRead.dependency(), Dependency::CoreApi);
        assert_eq!(Backend::CoreApiWrite.dependency(), Dependency::CoreApi);
        assert_ne!(
            Backend::CoreApiRead.health_name(),
            Backend::CoreApiWrite.health_name()
        );
    }
}
