//! `trip#<breaker>` items (SPEC §8 "Fleet trips", issue #27): parsing, and the one write that
//! records an instance's trip.
//!
//! Item: `instances` (map: instance id → epoch ms of its trip), `expires_at` (epoch s). The
//! write is one `UpdateItem`, conditional on what this instance last read of the item, so no
//! other instance's entry is ever lost:
//! - item (or its `instances` map) absent at the last read:
//!   `SET instances = {<me>: now}, expires_at = :exp` if `attribute_not_exists(instances)`;
//! - present: `SET instances.<me> = now, expires_at = :exp REMOVE instances.<old>…` if
//!   `attribute_exists(instances)` and each removed entry still holds the value read (an
//!   instance that tripped again meanwhile keeps its new entry). Entries at least the open
//!   duration old are removed.
//!
//! When the condition fails (another instance wrote in between), the current item comes back
//! on the error (`ReturnValuesOnConditionCheckFailure=ALL_OLD`) and the write is made again on
//! it: one write per trip, more only on such a race, at most [`MAX_WRITES`].
//! `expires_at` = the trip + the open duration, rounded up to the second: the item lapses
//! with its newest entry.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

use crate::attr::{self, Item, nv, sv};
use crate::{StateError, StateTable};

/// Most writes one trip makes (the first, and one per lost race).
pub const MAX_WRITES: usize = 3;

/// The breakers whose trips the gateway shares (SPEC §8): core-api reads, core-api writes,
/// screening-sim ([`kosha_contract::breaker::Breaker`]'s names).
pub const TRIP_BREAKERS: [&str; 3] = kosha_contract::breaker::Breaker::NAMES;

/// The key of `breaker`'s trip item.
pub(crate) fn key(breaker: &str) -> String {
    format!("trip#{breaker}")
}

/// One `trip#<breaker>` item as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TripItem {
    /// Instance id → epoch ms of its trip (entries that are not integers are left out).
    pub instances: HashMap<String, i64>,
    /// Epoch seconds; the item is absent to readers once passed (SPEC §8).
    pub expires_at: Option<i64>,
}

impl TripItem {
    /// Whether `expires_at` has passed at `now_s` (epoch seconds).
    pub fn is_expired(&self, now_s: i64) -> bool {
        self.expires_at.is_some_and(|exp| exp <= now_s)
    }

    /// Distinct instances whose trip is later than `after_ms` (exclusive), none when the item
    /// has expired at `now_ms`.
    pub fn count_after(&self, after_ms: i64, now_ms: i64) -> usize {
        if self.is_expired(now_ms.div_euclid(1000)) {
            return 0;
        }
        self.instances.values().filter(|&&at| at > after_ms).count()
    }
}

/// Parses an item's `instances` map; `None` when the item has no such map.
pub(crate) fn parse(item: &Item) -> Option<TripItem> {
    let map = item.get("instances")?.as_m().ok()?;
    let instances = map
        .iter()
        .filter_map(|(id, v)| Some((id.clone(), v.as_n().ok()?.trim().parse().ok()?)))
        .collect();
    Some(TripItem {
        instances,
        expires_at: attr::n_i64(item, "expires_at"),
    })
}

/// This instance's trip, to be written ([`StateTable::record_trip`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TripWrite {
    /// Which breaker (`trip#<breaker>`).
    pub breaker: String,
    /// This instance's id.
    pub instance: String,
    /// When it tripped, epoch ms.
    pub at_ms: i64,
    /// The breaker's open duration: older entries are dropped, and the item expires this long
    /// after the trip.
    pub open_for: Duration,
    /// The item as this instance last read it (`None`: absent).
    pub seen: Option<TripItem>,
}

impl StateTable {
    /// Records `trip` in `trip#<breaker>` (module docs): adds this instance's entry, keeps every
    /// other instance's, drops entries older than the open duration. Returns the writes made.
    ///
    /// # Errors
    /// [`StateError::Aws`] when a write fails, or when [`MAX_WRITES`] writes all lost a race.
    pub async fn record_trip(&self, trip: &TripWrite) -> Result<usize, StateError> {
        let mut seen = trip.seen.clone();
        for writes in 1..=MAX_WRITES {
            match self.write_trip_once(trip, seen.as_ref()).await? {
                None => return Ok(writes),
                Some(current) => seen = current,
            }
        }
        Err(StateError::Aws {
            operation: "UpdateItem",
            message: format!("trip#{}: {MAX_WRITES} writes lost a race", trip.breaker),
        })
    }

    /// One conditional write on `seen`; `Some(current item)` when the condition failed.
    async fn write_trip_once(
        &self,
        trip: &TripWrite,
        seen: Option<&TripItem>,
    ) -> Result<Option<Option<TripItem>>, StateError> {
        let open_ms = i64::try_from(trip.open_for.as_millis()).unwrap_or(i64::MAX);
        let expires_at = trip.at_ms.saturating_add(open_ms).saturating_add(999) / 1000;
        let update = self
            .client()
            .update_item()
            .table_name(self.name())
            .key("pk", sv(key(&trip.breaker)))
            .expression_attribute_values(":exp", nv(expires_at))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let update = match seen {
            None => update
                .update_expression("SET instances = :m, expires_at = :exp")
                .condition_expression("attribute_not_exists(instances)")
                .expression_attribute_values(
                    ":m",
                    AttributeValue::M(HashMap::from([(trip.instance.clone(), nv(trip.at_ms))])),
                ),
            Some(item) => {
                let cutoff = trip.at_ms.saturating_sub(open_ms);
                let old: Vec<(&String, &i64)> = item
                    .instances
                    .iter()
                    .filter(|&(id, &at)| at <= cutoff && *id != trip.instance)
                    .collect();
                let mut expression = "SET instances.#me = :now, expires_at = :exp".to_owned();
                let mut condition = "attribute_exists(instances)".to_owned();
                let mut update = update
                    .expression_attribute_names("#me", trip.instance.as_str())
                    .expression_attribute_values(":now", nv(trip.at_ms));
                for (i, (id, at)) in old.iter().enumerate() {
                    expression.push_str(if i == 0 { " REMOVE " } else { ", " });
                    expression.push_str(&format!("instances.#r{i}"));
                    condition.push_str(&format!(" AND instances.#r{i} = :v{i}"));
                    update = update
                        .expression_attribute_names(format!("#r{i}"), id.as_str())
                        .expression_attribute_values(format!(":v{i}"), nv(**at));
                }
                update
                    .update_expression(expression)
                    .condition_expression(condition)
            }
        };
        match update.send().await {
            Ok(_) => Ok(None),
            Err(err) => match err.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(ccf) => {
                    Ok(Some(ccf.item().and_then(parse)))
                }
                other => Err(StateError::aws("UpdateItem", other)),
            },
        }
    }

    /// Reads every `trip#<breaker>` item of [`TRIP_BREAKERS`] present (consistent read), in that
    /// order, expired ones included (see [`TripItem::is_expired`]): `kosha-ops status`.
    ///
    /// # Errors
    /// [`StateError::Aws`] when the read fails or leaves keys unprocessed.
    pub async fn read_trips(&self) -> Result<Vec<(String, TripItem)>, StateError> {
        let items = self
            .batch_get(TRIP_BREAKERS.iter().map(|b| key(b)).collect())
            .await?;
        Ok(TRIP_BREAKERS
            .iter()
            .filter_map(|b| {
                let pk = key(b);
                let item = items.iter().find(|i| attr::s(i, "pk") == Some(&pk))?;
                Some(((*b).to_owned(), parse(item)?))
            })
            .collect())
    }
}
