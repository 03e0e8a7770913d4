//! `breaker#<dependency>` items (SPEC §8): parsing, the fleet read, and the operator's
//! force-open / clear / list.

use std::time::Duration;

use aws_sdk_dynamodb::types::{KeysAndAttributes, ReturnValue};
use kosha_resilience::overrides::ForcedOpen;

use super::OverrideSnapshot;
use crate::attr::{self, Item, nv, sv};
use crate::{StateError, StateTable};

/// The dependencies that can be overridden (SPEC §8).
pub const DEPENDENCIES: [&str; 4] = ["core-api", "screening-sim", "openai", "postgres"];

/// The only `state` an override item may hold.
const FORCED_OPEN: &str = "forced_open";

/// Whether `name` is one of [`DEPENDENCIES`].
pub fn is_dependency(name: &str) -> bool {
    DEPENDENCIES.contains(&name)
}

fn key(dependency: &str) -> String {
    format!("breaker#{dependency}")
}

fn known(dependency: &str) -> Result<(), StateError> {
    if is_dependency(dependency) {
        Ok(())
    } else {
        Err(StateError::UnknownDependency(dependency.to_owned()))
    }
}

/// One well-formed override item; `state` is always `forced_open`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerItem {
    /// Which dependency.
    pub dependency: String,
    /// The override.
    pub forced: ForcedOpen,
}

impl BreakerItem {
    /// Whether `expires_at` has passed at `now_s` (epoch seconds).
    pub fn is_expired(&self, now_s: i64) -> bool {
        self.forced.expires_at.is_some_and(|exp| exp <= now_s)
    }
}

/// Parses an item, or says (without quoting values) why it is malformed.
fn parse(dependency: &str, item: &Item) -> Result<BreakerItem, &'static str> {
    let state = attr::s(item, "state").ok_or("state missing or not a string")?;
    if state != FORCED_OPEN {
        return Err("state is not forced_open");
    }
    let reason = attr::s(item, "reason").ok_or("reason missing or not a string")?;
    let set_by = attr::s(item, "set_by").ok_or("set_by missing or not a string")?;
    let set_at = attr::n_i64(item, "set_at").ok_or("set_at missing or not an integer")?;
    let expires_at = match item.get("expires_at") {
        None => None,
        Some(_) => Some(attr::n_i64(item, "expires_at").ok_or("expires_at not an integer")?),
    };
    Ok(BreakerItem {
        dependency: dependency.to_owned(),
        forced: ForcedOpen {
            reason: reason.to_owned(),
            set_by: set_by.to_owned(),
            set_at,
            expires_at,
        },
    })
}

impl StateTable {
    /// Reads every `breaker#<dependency>` item present, in [`DEPENDENCIES`] order, each parsed
    /// or with the reason it is malformed. Expired items are included (see
    /// [`BreakerItem::is_expired`]).
    ///
    /// # Errors
    /// [`StateError::Aws`] when the read fails or leaves keys unprocessed.
    pub async fn read_breakers(
        &self,
    ) -> Result<Vec<(String, Result<BreakerItem, &'static str>)>, StateError> {
        let mut keys = KeysAndAttributes::builder().consistent_read(true);
        for dep in DEPENDENCIES {
            keys = keys.keys(Item::from([("pk".to_owned(), sv(key(dep)))]));
        }
        let keys = keys
            .build()
            .map_err(|e| StateError::aws("BatchGetItem", e))?;
        let out = self
            .client()
            .batch_get_item()
            .request_items(self.name(), keys)
            .send()
            .await
            .map_err(|e| StateError::aws("BatchGetItem", e))?;
        if out.unprocessed_keys().is_some_and(|u| !u.is_empty()) {
            return Err(StateError::Aws {
                operation: "BatchGetItem",
                message: "unprocessed keys".into(),
            });
        }
        let items = out
            .responses()
            .and_then(|r| r.get(self.name()))
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut found = Vec::new();
        for dep in DEPENDENCIES {
            let pk = key(dep);
            if let Some(item) = items.iter().find(|i| attr::s(i, "pk") == Some(pk.as_str())) {
                found.push((dep.to_owned(), parse(dep, item)));
            }
        }
        Ok(found)
    }

    /// Forces `dependency` open fleet-wide: writes `breaker#<dependency>` (replacing any
    /// earlier override) with `set_at = now_s` and, given `ttl`, `expires_at = now_s + ttl`.
    ///
    /// # Errors
    /// [`StateError::UnknownDependency`], or [`StateError::Aws`] when the write fails.
    pub async fn force_open_breaker(
        &self,
        dependency: &str,
        reason: &str,
        set_by: &str,
        ttl: Option<Duration>,
        now_s: i64,
    ) -> Result<BreakerItem, StateError> {
        known(dependency)?;
        let expires_at =
            ttl.map(|t| now_s.saturating_add(i64::try_from(t.as_secs()).unwrap_or(i64::MAX)));
        let mut put = self
            .client()
            .put_item()
            .table_name(self.name())
            .item("pk", sv(key(dependency)))
            .item("state", sv(FORCED_OPEN))
            .item("reason", sv(reason))
            .item("set_by", sv(set_by))
            .item("set_at", nv(now_s));
        if let Some(exp) = expires_at {
            put = put.item("expires_at", nv(exp));
        }
        put.send()
            .await
            .map_err(|e| StateError::aws("PutItem", e))?;
        Ok(BreakerItem {
            dependency: dependency.to_owned(),
            forced: ForcedOpen {
                reason: reason.to_owned(),
                set_by: set_by.to_owned(),
                set_at: now_s,
                expires_at,
            },
        })
    }

    /// Removes any override on `dependency`; returns whether one was there.
    ///
    /// # Errors
    /// [`StateError::UnknownDependency`], or [`StateError::Aws`] when the delete fails.
    pub async fn clear_breaker(&self, dependency: &str) -> Result<bool, StateError> {
        known(dependency)?;
        let out = self
            .client()
            .delete_item()
            .table_name(self.name())
            .key("pk", sv(key(dependency)))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| StateError::aws("DeleteItem", e))?;
        Ok(out.attributes().is_some_and(|a| !a.is_empty()))
    }
}

/// The gateway's read: well-formed items by dependency; malformed ones logged and skipped.
pub(super) async fn fetch_snapshot(table: &StateTable) -> Result<OverrideSnapshot, StateError> {
    let mut snapshot = OverrideSnapshot::new();
    for (dependency, parsed) in table.read_breakers().await? {
        match parsed {
            Ok(item) => {
                snapshot.insert(dependency, item.forced);
            }
            Err(reason) => {
                tracing::warn!(event = "breaker_override_malformed", %dependency, reason);
            }
        }
    }
    Ok(snapshot)
}
