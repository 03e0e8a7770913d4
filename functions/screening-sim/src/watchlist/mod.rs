//! The bundled synthetic watchlist (issue 12 "a bundled synthetic watchlist of at least 1,000
//! entries, generated deterministically … Ids stable (`wl_00001` …)").
//!
//! The list is generated in memory on first use from name pools compiled into the crate
//! ([`pools`]) and a SplitMix64 generator with a fixed seed ([`BUNDLED_SEED`]): no data file,
//! no network, the same 1,000+ entries on every machine. Changing the pools, the generator or
//! the seed renumbers the list, so a test pins a few entries (`tests/watchlist.rs`) and the
//! labelled set is regenerated with it (`tests/support/labelled_gen.rs`).
//!
//! What it holds, in the proportions of a real consolidated list:
//! - **persons** (about 70 %): Russian (with patronymics and Cyrillic aliases), Arabic (with
//!   father's names and Arabic-script aliases), Persian, Chinese (with characters), Korean,
//!   Spanish, Serbian (Cyrillic), Turkish and English names; each has a country (nationality)
//!   and a date of birth, and aliases in other spellings and scripts, e.g. Ivanov / Иванов /
//!   Ivanoff and Mohammed / Muhammad / محمد;
//! - **companies** (about 20 %): Russian (`ООО «…»` aliases), Gulf and Levant trading houses
//!   (Arabic aliases), Iranian, Chinese and Western shell companies, each with a country of
//!   registration and legal-form variants as aliases;
//! - **vessels** (about 10 %): a flag state and former names as aliases.
//!
//! No primary name or alias normalises to the same tokens as another entry's, so each query
//! in the labelled set has one right answer.

mod generate;
pub mod pools;

use std::sync::LazyLock;

use time::Date;

pub use kosha_splitmix::SplitMix64;

/// The seed of the bundled list. Changing it renumbers every entry.
pub const BUNDLED_SEED: u64 = 0x6b6f_7368_615f_736c; // "kosha_sl"

/// What a watchlist entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A natural person; has a date of birth.
    Person,
    /// A company or other legal entity.
    Company,
    /// A ship.
    Vessel,
}

/// One entry of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchlistEntry {
    /// Stable id `wl_` + five digits, from `wl_00001`.
    pub id: String,
    /// Person, company or vessel.
    pub kind: EntryKind,
    /// The primary name as the list prints it (Latin script).
    pub name: String,
    /// Other names: spellings, scripts, legal-form variants, former vessel names.
    pub aliases: Vec<String>,
    /// ISO 3166-1 alpha-2: nationality, country of registration or flag state.
    pub country: &'static str,
    /// Date of birth; persons only.
    pub date_of_birth: Option<Date>,
}

impl WatchlistEntry {
    /// The primary name followed by the aliases.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(self.aliases.iter().map(String::as_str))
    }
}

/// A list of entries, in id order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Watchlist {
    entries: Vec<WatchlistEntry>,
}

static BUNDLED: LazyLock<Watchlist> = LazyLock::new(|| Watchlist::generate(BUNDLED_SEED));

impl Watchlist {
    /// The bundled list, generated on first use (a few milliseconds) and shared after that.
    #[must_use]
    pub fn bundled() -> &'static Watchlist {
        &BUNDLED
    }

    /// Generates the synthetic list for `seed` (deterministic: same seed, same list).
    #[must_use]
    pub fn generate(seed: u64) -> Watchlist {
        Watchlist {
            entries: generate::generate(seed),
        }
    }

    /// A list of the given entries (for tests and other data sets); ids are not checked.
    #[must_use]
    pub fn from_entries(entries: Vec<WatchlistEntry>) -> Watchlist {
        Watchlist { entries }
    }

    /// All entries, in id order.
    #[must_use]
    pub fn entries(&self) -> &[WatchlistEntry] {
        &self.entries
    }

    /// The number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the list is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry with this id, if any.
    #[must_use]
    pub fn get(&self, id: &str) -> Option<&WatchlistEntry> {
        self.entries.iter().find(|e| e.id == id)
    }
}
