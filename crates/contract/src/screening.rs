//! screening-sim's request and response bodies (SPEC §4): `POST /v1/screen`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest name screened, in characters.
pub const NAME_MAX_CHARS: usize = 200;

/// Body of `POST /v1/screen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenRequest {
    /// A person's or an entity's name, 1–[`NAME_MAX_CHARS`] characters.
    pub name: String,
    /// ISO 3166-1 alpha-2 country code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_of_birth: Option<String>,
}

impl ScreenRequest {
    /// A request from its parts: `ScreenRequest::new("Hiroshi Tanaka", Some("JP"), None)`.
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        country: Option<&str>,
        date_of_birth: Option<&str>,
    ) -> Self {
        Self {
            name: name.into(),
            country: country.map(str::to_owned),
            date_of_birth: date_of_birth.map(str::to_owned),
        }
    }
}

/// The verdict of one screening.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScreenStatus {
    /// No watchlist entry scored at or above the threshold.
    Clear,
    /// At least one entry did; a human must review.
    PotentialMatch,
}

/// One watchlist entry that matched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScreenMatch {
    /// `wl_00001` …
    pub list_entry_id: String,
    /// The entry's primary name.
    pub name: String,
    /// Similarity in [0, 1], at or above the threshold.
    pub score: f64,
}

/// Answer of `POST /v1/screen`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenResponse {
    /// The verdict.
    pub status: ScreenStatus,
    /// Best first; empty when `clear`.
    pub matches: Vec<ScreenMatch>,
}

/// A message on the screening queue (`KOSHA_SCREENING_QUEUE_URL`, issue 12): the gateway
/// sends one per deferred screening after recording `screening#<screening_id>`; the
/// screening-worker reads the request from that item, so the message carries the id and the
/// issuing client's `client_id` (SPEC §4: a screening is its client's only; issue #30).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreeningMessage {
    /// `scr_` + a ULID (SPEC §3).
    pub screening_id: String,
    /// The issuing client's `client_id`; absent in messages sent before issue #30.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
}
