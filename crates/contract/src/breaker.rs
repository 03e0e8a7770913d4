//! The gateway's breakers by name (SPEC §4 `get_service_health`, §8 "Fleet trips"): one
//! name per breaker, the key of `get_service_health`'s `dependencies` and of the
//! `trip#<breaker>` items the fleet shares. The gateway maps each of its backends to one
//! (`Backend::breaker`); `kosha_state`'s trip reads list [`Breaker::NAMES`]; `kosha-ops`
//! reads them back. One definition, so the three cannot drift apart (issue 42).

use std::fmt;

use crate::dependency::Dependency;

/// One of the gateway's breakers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Breaker {
    /// core-api's reads.
    CoreApi,
    /// core-api's writes: a breaker of their own, under the `core-api` override.
    CoreApiWrites,
    /// screening-sim.
    ScreeningSim,
}

impl Breaker {
    /// Every breaker, in `get_service_health` order.
    pub const ALL: [Self; 3] = [Self::CoreApi, Self::CoreApiWrites, Self::ScreeningSim];

    /// [`Breaker::ALL`]'s names, in that order.
    pub const NAMES: [&'static str; 3] = {
        let mut names = [""; 3];
        let mut i = 0;
        while i < names.len() {
            names[i] = Self::ALL[i].as_str();
            i += 1;
        }
        names
    };

    /// The name: `core-api`, `core-api-writes`, `screening-sim`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::CoreApi => "core-api",
            Self::CoreApiWrites => "core-api-writes",
            Self::ScreeningSim => "screening-sim",
        }
    }

    /// The dependency whose `breaker#<dependency>` override forces it open (SPEC §8:
    /// `core-api` forces reads and writes alike).
    pub const fn dependency(self) -> Dependency {
        match self {
            Self::CoreApi | Self::CoreApiWrites => Dependency::CoreApi,
            Self::ScreeningSim => Dependency::ScreeningSim,
        }
    }
}

impl fmt::Display for Breaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Breaker;

    #[test]
    fn names_follow_the_list_and_are_distinct() {
        assert_eq!(
            Breaker::NAMES,
            ["core-api", "core-api-writes", "screening-sim"]
        );
        for (b, name) in Breaker::ALL.into_iter().zip(Breaker::NAMES) {
            assert_eq!(b.as_str(), name);
            assert_eq!(b.to_string(), name);
        }
    }
}
