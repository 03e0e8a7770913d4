//! The bucket item as this instance last saw it: what the limiter refills from, refuses from
//! and writes over (module doc, "What it counts").
//!
//! An item is seen in three ways: the limiter's own write succeeded ([`Seen::written`]), a
//! read answered, or a write or charge failed its condition and DynamoDB returned the current
//! item ([`Seen::answered`]). Its `updated_at` is the compare-and-set version the next write is
//! conditional on ([`Version`]). An item whose `expires_at` has passed refills as a fresh, full
//! bucket (SPEC §8: TTL deletion is lazy); one with a malformed `updated_at` is logged and
//! overwritten unconditionally once.

use kosha_resilience::rate_limit::{BucketState, bucket_expires_at};

use crate::attr::{self, Item};

/// The compare-and-set version of the item last seen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Version {
    /// No item: the next write is conditional on `attribute_not_exists(pk)`.
    Absent,
    /// `updated_at`, epoch ms: the next write is conditional on it.
    At(i64),
    /// `updated_at` missing or not an integer: the next write is unconditional.
    Corrupt,
}

/// The last item seen for one client.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    pub(super) version: Version,
    pub(super) state: Option<BucketState>,
    pub(super) expires_at_s: Option<i64>,
}

impl Seen {
    /// No item.
    pub(super) const UNKNOWN: Self = Self {
        version: Version::Absent,
        state: None,
        expires_at_s: None,
    };

    /// The bucket state to refill from at `now_ms`: `None` (a full bucket) when expired.
    pub(super) fn live_state(&self, now_ms: i64) -> Option<BucketState> {
        match self.expires_at_s {
            Some(exp) if exp <= now_ms.div_euclid(1000) => None,
            _ => self.state,
        }
    }

    /// The item in an answer (`None`: there is none).
    pub(super) fn answered(item: Option<&Item>) -> Self {
        item.map_or(Self::UNKNOWN, Self::from_item)
    }

    /// Whether an answer showing `current` over this cached item shows another instance's
    /// write: the item was seen before and has changed since (always so for a write over it
    /// that failed its condition).
    pub(super) fn overwritten_by(&self, current: &Seen) -> bool {
        matches!(self.version, Version::At(_)) && self.version != current.version
    }

    /// The item this limiter just wrote as `state`.
    pub(super) fn written(state: BucketState) -> Self {
        Self {
            version: Version::At(state.updated_at_ms),
            state: Some(state),
            expires_at_s: Some(bucket_expires_at(state.updated_at_ms)),
        }
    }

    /// The item's `updated_at`, `tokens` and `expires_at`; a malformed attribute is logged
    /// (`rate_limit_item_malformed`).
    pub(super) fn from_item(item: &Item) -> Self {
        let Some(updated_at_ms) = attr::n_i64(item, "updated_at") else {
            tracing::warn!(
                event = "rate_limit_item_malformed",
                attribute = "updated_at"
            );
            return Self {
                version: Version::Corrupt,
                ..Self::UNKNOWN
            };
        };
        let state = attr::n_f64(item, "tokens").map(|tokens| BucketState {
            tokens,
            updated_at_ms,
        });
        if state.is_none() {
            tracing::warn!(event = "rate_limit_item_malformed", attribute = "tokens");
        }
        Self {
            version: Version::At(updated_at_ms),
            state,
            expires_at_s: attr::n_i64(item, "expires_at"),
        }
    }
}
