//! `breaker#<dependency>` items (SPEC §8): parsing, the fleet read, and the operator's
//! force-open / clear / list.

use std::time::Duration;

use aws_sdk_dynamodb::types::{KeysAndAttributes, ReturnValue};
use kosha_contract::dependency::Dependency;
use kosha_resilience::overrides::ForcedOpen;

use super::Fetched;
use crate::attr::{self, Item, nv, sv};
use crate::{StateError, StateTable};

/// The only `state` an override item may hold.
const FORCED_OPEN: &str = "forced_open";

/// Whether `name` is a dependency that can be overridden (SPEC §8).
pub fn is_dependency(name: &str) -> bool {
    Dependency::parse(name).is_some()
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

/// Longest `reason` and `set_by` accepted when writing an override, in characters. The reason
/// reaches every agent through `get_service_health`.
pub(crate) const MAX_TEXT_CHARS: usize = 500;

/// Refuses an override text that is empty, longer than [`MAX_TEXT_CHARS`], or holds control
/// characters (it is shown to agents and written to logs).
fn check_text(name: &'static str, text: &str) -> Result<(), StateError> {
    let reason = if text.trim().is_empty() {
        "must not be empty"
    } else if text.chars().count() > MAX_TEXT_CHARS {
        "is longer than 500 characters"
    } else if text.chars().any(char::is_control) {
        "must not contain control characters"
    } else {
        return Ok(());
    };
    Err(StateError::InvalidSetting {
        name,
        reason: reason.to_owned(),
    })
}

/// An override text as shown to agents: control characters replaced by spaces, at most
/// [`MAX_TEXT_CHARS`] characters (then `…`). Items written by other tools are shown, not
/// refused: an operator's override must not be ignored for its wording.
fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(MAX_TEXT_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(MAX_TEXT_CHARS).is_some() {
        out.push('…');
    }
    out
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
            reason: shown(reason),
            set_by: shown(set_by),
            set_at,
            expires_at,
        },
    })
}

impl StateTable {
    /// Reads every `breaker#<dependency>` item present, in SPEC §8 order
    /// ([`Dependency::ALL`]), each parsed or with the reason it is malformed. Expired items are
    /// included (see [`BreakerItem::is_expired`]).
    ///
    /// # Errors
    /// [`StateError::Aws`] when the read fails or leaves keys unprocessed.
    pub async fn read_breakers(
        &self,
    ) -> Result<Vec<(String, Result<BreakerItem, &'static str>)>, StateError> {
        let keys = Dependency::ALL.map(|d| key(d.as_str())).to_vec();
        Ok(breakers_in(&self.batch_get(keys).await?))
    }

    /// One consistent `BatchGetItem` of the items keyed `pks` (at most 100); absent ones are
    /// left out.
    ///
    /// # Errors
    /// [`StateError::Aws`] when the read fails or leaves keys unprocessed.
    pub(crate) async fn batch_get(&self, pks: Vec<String>) -> Result<Vec<Item>, StateError> {
        let mut keys = KeysAndAttributes::builder().consistent_read(true);
        for pk in pks {
            keys = keys.keys(Item::from([("pk".to_owned(), sv(pk))]));
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
        let mut out = out;
        Ok(out
            .responses
            .take()
            .and_then(|mut r| r.remove(self.name()))
            .unwrap_or_default())
    }

    /// Forces `dependency` open fleet-wide: writes `breaker#<dependency>` (replacing any
    /// earlier override) with `set_at = now_s` and, given `ttl`, `expires_at = now_s + ttl`.
    ///
    /// # Errors
    /// [`StateError::UnknownDependency`]; [`StateError::InvalidSetting`] when `reason` or
    /// `set_by` is empty, over 500 characters (`MAX_TEXT_CHARS`) or holds control characters;
    /// [`StateError::Aws`] when the write fails.
    pub async fn force_open_breaker(
        &self,
        dependency: &str,
        reason: &str,
        set_by: &str,
        ttl: Option<Duration>,
        now_s: i64,
    ) -> Result<BreakerItem, StateError> {
        known(dependency)?;
        check_text("reason", reason)?;
        check_text("set_by", set_by)?;
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

/// The `breaker#<dependency>` items among `items`, in SPEC §8 order, each parsed or with the
/// reason it is malformed.
fn breakers_in(items: &[Item]) -> Vec<(String, Result<BreakerItem, &'static str>)> {
    let mut found = Vec::new();
    for dep in Dependency::ALL.map(Dependency::as_str) {
        let pk = key(dep);
        if let Some(item) = items.iter().find(|i| attr::s(i, "pk") == Some(pk.as_str())) {
            found.push((dep.to_owned(), parse(dep, item)));
        }
    }
    found
}

/// The gateway's read, one `BatchGetItem`: the overrides (well-formed items by dependency;
/// malformed ones logged and skipped) and the `trip#<breaker>` items of `trips` present.
pub(super) async fn fetch_snapshot(
    table: &StateTable,
    trips: &[String],
) -> Result<Fetched, StateError> {
    let mut keys: Vec<String> = Dependency::ALL.map(|d| key(d.as_str())).to_vec();
    keys.extend(trips.iter().map(|b| super::trips::key(b)));
    let items = table.batch_get(keys).await?;
    let mut fetched = Fetched::default();
    for breaker in trips {
        let pk = super::trips::key(breaker);
        if let Some(trip) = items
            .iter()
            .find(|i| attr::s(i, "pk") == Some(pk.as_str()))
            .and_then(super::trips::parse)
        {
            fetched.trips.insert(breaker.clone(), trip);
        }
    }
    let snapshot = &mut fetched.overrides;
    for (dependency, parsed) in breakers_in(&items) {
        match parsed {
            Ok(item) => {
                snapshot.insert(dependency, item.forced);
            }
            Err(reason) => {
                tracing::warn!(event = "breaker_override_malformed", %dependency, reason);
            }
        }
    }
    Ok(fetched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_texts_are_checked_when_written() {
        assert!(check_text("reason", "core-api maintenance, INC-42").is_ok());
        assert!(check_text("reason", &"é".repeat(MAX_TEXT_CHARS)).is_ok());
        for bad in ["", "   ", "a\u{1}b", "line\nbreak"] {
            assert!(check_text("reason", bad).is_err(), "{bad:?}");
        }
        let long = "x".repeat(MAX_TEXT_CHARS + 1);
        assert!(check_text("reason", &long).is_err());
    }

    #[test]
    fn odd_texts_written_by_other_tools_are_shown_clipped_and_flattened() {
        assert_eq!(shown("planned\tmaintenance\n"), "planned maintenance ");
        let long = "y".repeat(100_000);
        let s = shown(&long);
        assert_eq!(s.chars().count(), MAX_TEXT_CHARS + 1);
        assert!(s.ends_with('…'));
        assert_eq!(shown("short"), "short");
    }
}
