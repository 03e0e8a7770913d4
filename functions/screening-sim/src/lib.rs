//! screening-sim: the simulated sanctions-screening service (SPEC §4, issue 12): its matching
//! core (no I/O), its HTTP API and chaos knobs. It serves the contract's bodies
//! (`kosha_contract::screening`); its callers' client is `kosha_clients::screening`.
//!
//! - [`http`]: the router (`POST /v1/screen`, `GET /v1/health`, `/admin/chaos`) the binary
//!   serves with `kosha_runtime::serve`.
//! - [`chaos`]: the `/admin/chaos` knobs, kept in the state table for every instance.
//!
//! - [`watchlist`]: the bundled synthetic watchlist, 1,000+ persons, companies and vessels
//!   with aliases in several spellings and scripts, generated deterministically (`wl_00001` …).
//! - [`normalize`]: NFKD, diacritics, case and script folding, punctuation, honorifics and
//!   legal forms, tokens.
//! - [`lookalike`] and [`display`]: what a person sees on the screen, screened as well: UTS
//!   #39 look-alike letters read as the Latin ones (`unicode-security`), and text holding
//!   bidirectional controls read in display order (UAX #9, `unicode-bidi`).
//! - [`request`]: the validation of the request `{name, country?, date_of_birth?}`, with a
//!   typed `invalid_argument` error naming the field.
//! - [`matching`]: the [`Screener`]: tokens aligned as a set by Jaro–Winkler (`strsim`) with
//!   Double Metaphone (`rphonetic`) telling transliterations from different names, best over
//!   every name of every entry and every form of the query, initials matching an exact
//!   surname, date of birth and country as evidence, a threshold (default 0.85) for
//!   `potential_match`.
//!
//! Choices where SPEC §4 is silent: mixed-script names are screened (read as they look), not
//! refused;
//! lower-case country codes are accepted; a date of birth must be 1900-01-01..today; at most
//! 10 matches are returned; scores have 4 decimals (see [`request`] and [`matching`]).
//!
//! Use:
//! ```
//! use screening_sim::{ScreenRequest, ScreenStatus, Screener, Validate};
//!
//! let request = ScreenRequest::new("Hiroshi Tanaka", Some("JP"), None).validate()?;
//! let result = Screener::bundled().screen(&request);
//! assert_eq!(result.status, ScreenStatus::Clear);
//! # Ok::<(), screening_sim::ScreenError>(())
//! ```
//!
//! Measured quality: precision and recall on the labelled set `tests/data/labelled.jsonl`
//! (`cargo test -p screening-sim --test labelled -- --nocapture`); speed: `cargo bench -p
//! screening-sim --bench screen`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chaos;
pub mod display;
pub mod error;
pub mod http;
pub mod lookalike;
pub mod matching;
pub mod normalize;
pub mod request;
pub mod watchlist;

pub use error::ScreenError;
pub use matching::{
    DEFAULT_THRESHOLD, MatchConfig, ScreenMatch, ScreenResponse, ScreenStatus, Screener,
};
pub use request::{ScreenRequest, ValidRequest, Validate};
pub use watchlist::{EntryKind, Watchlist, WatchlistEntry};
