//! `screening#<screening_id>` items (SPEC §4, §8; issue 12): every answer of `screen_entity`,
//! synchronous or deferred, so `get_screening_result` can read back every id the gateway
//! issued, and the screening-worker can complete the deferred ones.
//!
//! Attributes: `pk`, `status` (`pending` | `done` | `failed`), `request` (the screening-sim
//! request as JSON text), `result?` (screening-sim's answer as JSON text, when `done`),
//! `failure_reason?` (when `failed`), `client_id?` (the issuing client, SPEC §4: only it may
//! read the screening; absent on items written before issue #30), `user?` (the issuing user's
//! `sub`, SPEC §5 "The user": only that user of the client may read it; absent on items
//! written before issue 44, which only a machine client, whose user is itself, may read),
//! `created_at` (N, epoch s),
//! `completed_at?` (N, epoch s), `expires_at` (N, `created_at` + 7 days).
//!
//! - **Writes**: [`StateTable::put_screening`] creates an item and never overwrites one
//!   (`attribute_not_exists(pk)`: ids are ULIDs, a collision is a bug, not a retry).
//!   [`StateTable::finish_screening`] moves a `pending` item to `done` or `failed` with one
//!   conditional update (only from `pending`), so a redelivered queue message or a second
//!   worker changes nothing ([`Finished::AlreadyFinal`]).
//! - **Reads**: [`StateTable::get_screening`] reads consistently; an item whose `expires_at`
//!   has passed is absent (SPEC §8: TTL deletion is lazy). A malformed item is
//!   [`StateError::MalformedItem`], never a guess.
//! - **Clean-up**: [`StateTable::delete_screening`], for a deferral whose queue message could
//!   not be sent (nothing half-recorded, ARCHITECTURE.md pitfall 20).
//!
//! The gateway writes `pending` and `done` items and reads them; the worker reads and
//! finishes them. Neither knows the attribute names: they live here only.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use kosha_contract::screening::{ScreenRequest, ScreenResponse};

use crate::attr::{self, Item, nv, sv};
use crate::{StateError, StateTable};

/// How long a screening item lives: 7 days (SPEC §4, §8), in seconds.
pub const SCREENING_TTL_S: i64 = 7 * 24 * 3600;

/// The `pk` of screening `id`: `screening#scr_…`.
pub fn screening_key(id: &str) -> String {
    format!("screening#{id}")
}

/// Where a screening stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ScreeningState {
    /// Recorded, waiting for the worker (`status: "pending"`).
    Pending,
    /// screening-sim answered (`status: "done"`, `result`).
    Done(ScreenResponse),
    /// screening-sim refused the request as invalid (`status: "failed"`, `failure_reason`);
    /// never an outage (SPEC §4).
    Failed {
        /// screening-sim's message, naming the field.
        reason: String,
    },
}

impl ScreeningState {
    /// The `status` attribute: `pending`, `done` or `failed`.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Done(_) => "done",
            Self::Failed { .. } => "failed",
        }
    }
}

/// One screening item.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreeningItem {
    /// `scr_` + a ULID (SPEC §3).
    pub id: String,
    /// The request as screening-sim takes it.
    pub request: ScreenRequest,
    /// Pending, done or failed.
    pub state: ScreeningState,
    /// When the gateway recorded it, epoch seconds.
    pub created_at: i64,
    /// When it expires, epoch seconds (`created_at` + [`SCREENING_TTL_S`]).
    pub expires_at: i64,
    /// The issuing client's `client_id` (SPEC §4); `None` on items written before issue #30,
    /// which no client may read.
    pub client_id: Option<String>,
    /// The issuing user's `sub` (SPEC §5 "The user"); `None` on items written before issue 44,
    /// read as the client's own (a machine client's user is its client), so a user of an app
    /// client never reads them.
    pub user: Option<String>,
}

impl ScreeningItem {
    /// A new item for `id` created at `now_s`, expiring 7 days later.
    pub fn new(id: String, request: ScreenRequest, state: ScreeningState, now_s: i64) -> Self {
        Self {
            id,
            request,
            state,
            created_at: now_s,
            expires_at: now_s.saturating_add(SCREENING_TTL_S),
            client_id: None,
            user: None,
        }
    }

    /// The same item, owned by `user` of `client_id` (SPEC §4, §5 "The user").
    #[must_use]
    pub fn owned_by(mut self, client_id: Option<&str>, user: Option<&str>) -> Self {
        self.client_id = client_id.map(str::to_owned);
        self.user = user.map(str::to_owned);
        self
    }

    /// Whether `user` of `client_id` may read this screening: only its issuing user of its
    /// issuing client. An item without a client (written before issue #30) is nobody's; one
    /// without a user (before issue 44) is its client's own, readable only by a caller whose
    /// user is that client (a machine client).
    pub fn readable_by(&self, client_id: Option<&str>, user: Option<&str>) -> bool {
        let Some(owner) = self.client_id.as_deref() else {
            return false;
        };
        let issuer = self.user.as_deref().unwrap_or(owner);
        client_id == Some(owner) && user == Some(issuer)
    }
}

/// What [`StateTable::finish_screening`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    /// The item was `pending` and now holds the outcome.
    Updated,
    /// The item was already `done` or `failed`: nothing changed (a redelivery).
    AlreadyFinal,
    /// No such item (never recorded, or deleted by TTL).
    Missing,
}

fn json<T: serde::Serialize>(value: &T) -> Result<String, StateError> {
    serde_json::to_string(value).map_err(|e| StateError::MalformedItem {
        kind: "screening",
        reason: format!("cannot serialise: {e}"),
    })
}

fn malformed(reason: &str) -> StateError {
    StateError::MalformedItem {
        kind: "screening",
        reason: reason.to_owned(),
    }
}

/// Parses an item, or says (without quoting values) why it is malformed.
fn parse(id: &str, item: &Item) -> Result<ScreeningItem, StateError> {
    let request = attr::s(item, "request").ok_or_else(|| malformed("request missing"))?;
    let request: ScreenRequest =
        serde_json::from_str(request).map_err(|_| malformed("request is not a request"))?;
    let state = match attr::s(item, "status") {
        Some("pending") => ScreeningState::Pending,
        Some("done") => {
            let result = attr::s(item, "result").ok_or_else(|| malformed("result missing"))?;
            ScreeningState::Done(
                serde_json::from_str(result).map_err(|_| malformed("result is not a result"))?,
            )
        }
        Some("failed") => ScreeningState::Failed {
            reason: attr::s(item, "failure_reason")
                .ok_or_else(|| malformed("failure_reason missing"))?
                .to_owned(),
        },
        _ => return Err(malformed("status is not pending, done or failed")),
    };
    Ok(ScreeningItem {
        id: id.to_owned(),
        request,
        state,
        created_at: attr::n_i64(item, "created_at").ok_or_else(|| malformed("created_at"))?,
        expires_at: attr::n_i64(item, "expires_at").ok_or_else(|| malformed("expires_at"))?,
        client_id: attr::s(item, "client_id").map(str::to_owned),
        user: attr::s(item, "user").map(str::to_owned),
    })
}

impl StateTable {
    /// Writes a new screening item; refuses to overwrite an existing one.
    ///
    /// # Errors
    /// [`StateError::Aws`] when the write fails (including an existing item with this id).
    pub async fn put_screening(&self, item: &ScreeningItem) -> Result<(), StateError> {
        let mut put = self
            .client()
            .put_item()
            .table_name(self.name())
            .item("pk", sv(screening_key(&item.id)))
            .item("status", sv(item.state.status()))
            .item("request", sv(json(&item.request)?))
            .item("created_at", nv(item.created_at))
            .item("expires_at", nv(item.expires_at))
            .condition_expression("attribute_not_exists(pk)");
        if let Some(client_id) = &item.client_id {
            put = put.item("client_id", sv(client_id.as_str()));
        }
        if let Some(user) = &item.user {
            put = put.item("user", sv(user.as_str()));
        }
        match &item.state {
            ScreeningState::Pending => {}
            ScreeningState::Done(result) => {
                put = put
                    .item("result", sv(json(result)?))
                    .item("completed_at", nv(item.created_at));
            }
            ScreeningState::Failed { reason } => {
                put = put
                    .item("failure_reason", sv(reason.as_str()))
                    .item("completed_at", nv(item.created_at));
            }
        }
        put.send()
            .await
            .map_err(|e| StateError::aws("PutItem", e))?;
        Ok(())
    }

    /// Reads screening `id` (consistently); `None` when absent or expired at `now_s`.
    ///
    /// # Errors
    /// [`StateError::Aws`] when the read fails, [`StateError::MalformedItem`] when the item
    /// is not one this module wrote.
    pub async fn get_screening(
        &self,
        id: &str,
        now_s: i64,
    ) -> Result<Option<ScreeningItem>, StateError> {
        let Some(item) = self.get_item(screening_key(id)).await? else {
            return Ok(None);
        };
        let parsed = parse(id, &item)?;
        Ok((parsed.expires_at > now_s).then_some(parsed))
    }

    /// Moves a `pending` screening to `outcome` (`Done` or `Failed`) at `now_s`; only from
    /// `pending`, so a second completion changes nothing. `outcome` `Pending` is refused.
    ///
    /// # Errors
    /// [`StateError::Aws`] when the update fails for another reason than its condition;
    /// [`StateError::InvalidSetting`] for a `Pending` outcome.
    pub async fn finish_screening(
        &self,
        id: &str,
        outcome: &ScreeningState,
        now_s: i64,
    ) -> Result<Finished, StateError> {
        let update = self
            .client()
            .update_item()
            .table_name(self.name())
            .key("pk", sv(screening_key(id)))
            .condition_expression("#status = :pending")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":pending", sv("pending"))
            .expression_attribute_values(":status", sv(outcome.status()))
            .expression_attribute_values(":now", nv(now_s))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let update = match outcome {
            ScreeningState::Pending => {
                return Err(StateError::InvalidSetting {
                    name: "outcome",
                    reason: "a screening is finished as done or failed, not pending".into(),
                });
            }
            ScreeningState::Done(result) => update
                .update_expression("SET #status = :status, #result = :v, completed_at = :now")
                .expression_attribute_names("#result", "result")
                .expression_attribute_values(":v", sv(json(result)?)),
            ScreeningState::Failed { reason } => update
                .update_expression(
                    "SET #status = :status, failure_reason = :v, completed_at = :now",
                )
                .expression_attribute_values(":v", sv(reason.as_str())),
        };
        match update.send().await {
            Ok(_) => Ok(Finished::Updated),
            // With ALL_OLD the old item comes back: present means already final.
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(c)) => {
                    Ok(if c.item().is_some_and(|i| !i.is_empty()) {
                        Finished::AlreadyFinal
                    } else {
                        Finished::Missing
                    })
                }
                _ => Err(StateError::aws("UpdateItem", e)),
            },
        }
    }

    /// Deletes screening `id` (no error when absent).
    ///
    /// # Errors
    /// [`StateError::Aws`] when the delete fails.
    pub async fn delete_screening(&self, id: &str) -> Result<(), StateError> {
        self.delete_item(screening_key(id)).await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn item(pairs: &[(&str, &str)], numbers: &[(&str, i64)]) -> Item {
        let mut m: Item = HashMap::new();
        for (k, v) in pairs {
            m.insert((*k).to_owned(), sv(*v));
        }
        for (k, v) in numbers {
            m.insert((*k).to_owned(), nv(*v));
        }
        m
    }

    #[test]
    fn items_parse_by_status_and_malformed_ones_are_refused() {
        let times = [("created_at", 10), ("expires_at", 20)];
        let pending = item(
            &[("status", "pending"), ("request", r#"{"name":"A B"}"#)],
            &times,
        );
        let parsed = parse("scr_x", &pending).unwrap();
        assert_eq!(parsed.state, ScreeningState::Pending);
        assert_eq!(parsed.request.name, "A B");
        let done = item(
            &[
                ("status", "done"),
                ("request", r#"{"name":"A B"}"#),
                ("result", r#"{"status":"clear","matches":[]}"#),
            ],
            &times,
        );
        assert!(matches!(
            parse("scr_x", &done).unwrap().state,
            ScreeningState::Done(_)
        ));
        for bad in [
            item(
                &[("status", "done"), ("request", r#"{"name":"A"}"#)],
                &times,
            ),
            item(
                &[("status", "failed"), ("request", r#"{"name":"A"}"#)],
                &times,
            ),
            item(&[("status", "odd"), ("request", r#"{"name":"A"}"#)], &times),
            item(&[("status", "pending"), ("request", "not json")], &times),
            item(
                &[("status", "pending"), ("request", r#"{"name":"A"}"#)],
                &[],
            ),
        ] {
            assert!(
                matches!(parse("scr_x", &bad), Err(StateError::MalformedItem { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_new_item_lives_seven_days() {
        let i = ScreeningItem::new(
            "scr_x".into(),
            ScreenRequest {
                name: "A".into(),
                country: None,
                date_of_birth: None,
            },
            ScreeningState::Pending,
            1_000,
        );
        assert_eq!(i.expires_at - i.created_at, 604_800);
        assert_eq!(screening_key("scr_x"), "screening#scr_x");
        let (a, b) = (Some("client-a"), Some("client-b"));
        assert!(!i.readable_by(a, a), "no owner: nobody's");
        let owned = i.clone().owned_by(a, a);
        assert!(owned.readable_by(a, a));
        assert!(!owned.readable_by(b, b));
        assert!(!owned.readable_by(None, None));
    }

    /// Issue 44: a screening is its issuing user's, within its client; one stored before
    /// users were recorded is its client's own.
    #[test]
    fn a_screening_is_read_by_its_user_of_its_client_only() {
        let request = ScreenRequest {
            name: "A".into(),
            country: None,
            date_of_birth: None,
        };
        let i = ScreeningItem::new("scr_x".into(), request, ScreeningState::Pending, 1_000);
        let (app, alice, bob) = (Some("app"), Some("sub-alice"), Some("sub-bob"));
        let mine = i.clone().owned_by(app, alice);
        assert!(mine.readable_by(app, alice));
        assert!(!mine.readable_by(app, bob));
        assert!(!mine.readable_by(Some("other"), alice));
        assert!(!mine.readable_by(app, None));
        let older = i.owned_by(app, None);
        assert!(
            older.readable_by(app, app),
            "the machine client reads its own"
        );
        assert!(
            !older.readable_by(app, alice),
            "a user of the client does not"
        );
    }
}
