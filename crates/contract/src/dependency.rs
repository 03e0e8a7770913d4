//! The dependencies of SPEC §8: the names of `breaker#<dependency>` override items, of the
//! `dependency` metric dimension and of the `dependency` field of an error body.

use std::fmt;

/// A dependency an operator can force open (SPEC §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dependency {
    /// core-api, reads and writes alike (honoured by the gateway).
    CoreApi,
    /// screening-sim (honoured by the gateway and the screening-worker).
    ScreeningSim,
    /// The OpenAI-compatible embeddings API (honoured by core-api).
    OpenAi,
    /// PostgreSQL (honoured by core-api).
    Postgres,
}

impl Dependency {
    /// Every dependency, in SPEC §8 order.
    pub const ALL: [Self; 4] = [
        Self::CoreApi,
        Self::ScreeningSim,
        Self::OpenAi,
        Self::Postgres,
    ];

    /// The name on the wire: `core-api`, `screening-sim`, `openai`, `postgres`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::CoreApi => "core-api",
            Self::ScreeningSim => "screening-sim",
            Self::OpenAi => "openai",
            Self::Postgres => "postgres",
        }
    }

    /// The dependency named `name`, if it is one of [`Dependency::ALL`] (exact, lowercase).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == name)
    }
}

impl fmt::Display for Dependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Dependency;

    #[test]
    fn names_round_trip_and_nothing_else_parses() {
        for d in Dependency::ALL {
            assert_eq!(Dependency::parse(d.as_str()), Some(d));
        }
        for bad in ["Core-Api", "core_api", "", "dynamodb", "postgres "] {
            assert_eq!(Dependency::parse(bad), None, "{bad}");
        }
    }
}
