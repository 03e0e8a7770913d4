//! The DynamoDB token bucket `rl#<client_id>` (seed 004 §6, SPEC §6, §8).
//!
//! **One round trip per admitted call in steady state.** The limiter keeps, per client, the
//! last item it saw (its own last write, or the item DynamoDB returned on a failed condition)
//! and writes the next state with `PutItem` conditional on that item's `updated_at`
//! (`attribute_not_exists(pk)` when it has seen none). No read precedes the write:
//! - write succeeds → admitted, cache = what was written;
//! - `ConditionalCheckFailedException` → the current item comes back on the error
//!   (`ReturnValuesOnConditionCheckFailure = ALL_OLD`), the cache takes it and the take is
//!   recomputed; at most 3 tries, then the call is admitted (SPEC §6) — and its token is
//!   still charged, by one atomic `tokens = tokens − 1, updated_at = updated_at + 1` update
//!   conditional on `tokens >= 1` (no refill, no compare-and-set, never below zero). If that
//!   condition fails, the returned item proves the bucket empty and the call is
//!   [`RateDecision::Limited`]; if the item's refill shows a token after all, it is admitted
//!   uncharged. Without the charge, two instances racing one client's burst admit several
//!   uncharged calls (measured on the emulator: 26 admitted where the bucket allows 22);
//!   with it, a lost race costs a fourth round trip and admissions stay within capacity +
//!   rate × elapsed;
//! - any other error, or no answer within the call timeout (100 ms, SDK retries off) →
//!   [`RateDecision::FailOpen`].
//!
//! **Denials cost no write.** Every write by any instance sets `tokens = refilled − 1`, so the
//! true bucket can only hold *fewer* tokens than the cached item refilled to now. When that
//! refill is below one token the call is refused from the cache alone, without a DynamoDB
//! call; a flood of refused calls costs DynamoDB nothing. (The one exception, an operator
//! deleting the item by hand, errs on the strict side until the cache sees a newer item.) A
//! cold instance has no cache: its first call is a conditional create, which fails on an
//! existing item and returns it, so the first call may take two round trips.
//!
//! **Within one instance** the calls of one client take turns (an async lock per client), so
//! concurrent requests from one client in one process do not race each other's
//! compare-and-set; they share the cache instead. Lambda runs one request per instance, so
//! this only matters in local mode. A call whose cached item already proves the bucket empty
//! is refused before it queues. The wait for the turn is bounded by twice the call timeout
//! (200 ms); a call still waiting then is decided without DynamoDB:
//! - the cache proves the bucket empty → [`RateDecision::Limited`] with that `retry_after_s`;
//! - the last DynamoDB call made for this client failed or timed out → [`RateDecision::FailOpen`]
//!   (DynamoDB unreachable, SPEC §6). Twice the call timeout is long enough that the call in
//!   progress when the wait began has ended (each is bounded by the call timeout), so a
//!   store that went down is known by then;
//! - otherwise → [`RateDecision::Limited`] with `retry_after_s` 1: the client sends more calls
//!   at once than one instance can put through DynamoDB in time. Admitting here would let a
//!   burst past the bucket (60 parallel calls on a bucket of 20 were all admitted when this
//!   case failed open); waiting without a bound would hang requests behind a queue. Refusing
//!   keeps admissions within capacity + rate × elapsed and every call within 200 ms plus its
//!   own DynamoDB calls; the refusal is counted as `limited`, so `fail_open` in the metric
//!   still means DynamoDB trouble only.
//!
//! An item whose `expires_at` has passed is a fresh, full bucket (TTL deletion is lazy); the
//! write is still conditional on its `updated_at`. An item with a malformed `updated_at` is
//! overwritten unconditionally once (logged). Every decision is counted in metric
//! `rate_limit{decision}` (SPEC §12); the fail-open WARNs are logged at most once per reason
//! per 60 s, with the number suppressed ([`warn`]).

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use kosha_resilience::rate_limit::{
    BoxFuture, BucketState, RateDecision, RateLimiter, Take, bucket_expires_at,
};
use parking_lot::Mutex;

use crate::attr::{self, Item, nv, sv};
use crate::{Clock, StateError, StateTable};

mod settings;
mod warn;
pub use settings::RateLimitSettings;
use warn::WarnThrottle;

/// Most clients cached per instance; past it the cache starts over (each client then pays
/// one extra round trip once).
const MAX_CACHED_CLIENTS: usize = 10_000;

/// The compare-and-set version of the item last seen.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Version {
    Absent,
    At(i64),
    Corrupt,
}

/// The last item seen for one client.
#[derive(Debug, Clone, Copy)]
struct Seen {
    version: Version,
    state: Option<BucketState>,
    expires_at_s: Option<i64>,
}

impl Seen {
    const UNKNOWN: Self = Self {
        version: Version::Absent,
        state: None,
        expires_at_s: None,
    };

    /// The bucket state to refill from at `now_ms`: `None` (a full bucket) when expired.
    fn live_state(&self, now_ms: i64) -> Option<BucketState> {
        match self.expires_at_s {
            Some(exp) if exp <= now_ms.div_euclid(1000) => None,
            _ => self.state,
        }
    }

    fn from_item(item: &Item) -> Self {
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

/// One client's turn lock and what its turns learned.
#[derive(Default)]
struct Slot {
    /// Held for a whole take: one client's calls take turns.
    turn: tokio::sync::Mutex<()>,
    /// Written only by the turn's holder; read by anyone, including a call whose wait for the
    /// turn timed out.
    learned: Mutex<Learned>,
}

/// What one client's turns learned from DynamoDB.
#[derive(Debug, Clone, Copy, Default)]
struct Learned {
    /// The last item seen; `None` before the first answer.
    seen: Option<Seen>,
    /// Whether the last DynamoDB call for this client failed or timed out.
    store_failing: bool,
}

impl Slot {
    fn learned(&self) -> Learned {
        *self.learned.lock()
    }

    fn set_seen(&self, seen: Option<Seen>) {
        let mut learned = self.learned.lock();
        learned.seen = seen;
        learned.store_failing = false;
    }

    fn set_store_failing(&self) {
        self.learned.lock().store_failing = true;
    }
}

/// The token bucket in the state table. Share one per process (`Arc`); it implements
/// [`RateLimiter`] so the gateway can hold an `Arc<dyn RateLimiter>`.
pub struct DynamoRateLimiter {
    /// The table through a single-attempt client (built on first use).
    table: StateTable,
    settings: RateLimitSettings,
    clock: Arc<dyn Clock>,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    warns: WarnThrottle,
}

/// The result of the fallback charge after lost races.
enum Charge {
    /// One token taken; the new item.
    Taken(Option<Item>),
    /// Less than one stored token (or no item); the current item, if any.
    Short(Option<Item>),
}

enum WriteOutcome {
    Written,
    Conflict(Option<Item>),
}

impl DynamoRateLimiter {
    /// A limiter on `table` with SDK retries turned off (one attempt per call,
    /// [`StateTable::single_attempt`]): the table's own client when it already makes one
    /// attempt, else a copy configured so.
    pub fn new(table: &StateTable, settings: RateLimitSettings, clock: Arc<dyn Clock>) -> Self {
        Self {
            table: table.single_attempt(),
            settings,
            clock,
            slots: Mutex::new(HashMap::new()),
            warns: WarnThrottle::default(),
        }
    }

    /// Logs WARN `event` for `reason` unless one was logged in the last 60 s ([`warn`]).
    fn warn(&self, event: &'static str, reason: &'static str, error: &dyn std::fmt::Display) {
        if let Some(suppressed) = self.warns.admit(reason, self.clock.now_ms()) {
            tracing::warn!(event, reason, error = %error, suppressed);
        }
    }

    /// Takes one token from `client_id`'s bucket and records the decision in the metric.
    pub async fn decide(&self, client_id: &str) -> RateDecision {
        let decision = self.take(client_id).await;
        decision.record();
        decision
    }

    fn slot(&self, client_id: &str) -> Arc<Slot> {
        let mut slots = self.slots.lock();
        if let Some(slot) = slots.get(client_id) {
            return Arc::clone(slot);
        }
        if slots.len() >= MAX_CACHED_CLIENTS {
            slots.clear();
        }
        let slot = Arc::new(Slot::default());
        slots.insert(client_id.to_owned(), Arc::clone(&slot));
        slot
    }

    /// The refusal the cached item alone proves at `now_ms` (the true bucket never holds more).
    fn refused_by_cache(&self, seen: Option<&Seen>, now_ms: i64) -> Option<RateDecision> {
        let seen = seen?;
        match self
            .settings
            .bucket
            .take(seen.live_state(now_ms).as_ref(), now_ms)
        {
            Take::Denied { retry_after_s } => Some(RateDecision::Limited { retry_after_s }),
            Take::Granted { .. } => None,
        }
    }

    async fn take(&self, client_id: &str) -> RateDecision {
        let slot = self.slot(client_id);
        if let Some(refused) =
            self.refused_by_cache(slot.learned().seen.as_ref(), self.clock.now_ms())
        {
            return refused;
        }
        let turn_wait = self.settings.call_timeout.saturating_mul(2);
        let Ok(_turn) = tokio::time::timeout(turn_wait, slot.turn.lock()).await else {
            return self.turn_timed_out(&slot);
        };
        self.take_turn(client_id, &slot).await
    }

    /// The decision for a call whose wait for its turn timed out (module doc).
    fn turn_timed_out(&self, slot: &Slot) -> RateDecision {
        let learned = slot.learned();
        if let Some(refused) = self.refused_by_cache(learned.seen.as_ref(), self.clock.now_ms()) {
            return refused;
        }
        if learned.store_failing {
            self.warn(
                "rate_limit_fail_open",
                "turn_timeout",
                &"DynamoDB call failed",
            );
            return RateDecision::FailOpen;
        }
        tracing::debug!(event = "rate_limit_turn_timeout");
        RateDecision::Limited { retry_after_s: 1 }
    }

    /// One take while holding the client's turn.
    async fn take_turn(&self, client_id: &str, slot: &Slot) -> RateDecision {
        let mut seen = slot.learned().seen.unwrap_or(Seen::UNKNOWN);
        for _ in 0..self.settings.max_tries {
            let now_ms = self.clock.now_ms();
            let next = match self
                .settings
                .bucket
                .take(seen.live_state(now_ms).as_ref(), now_ms)
            {
                Take::Denied { retry_after_s } => return RateDecision::Limited { retry_after_s },
                Take::Granted { next } => next,
            };
            let expires_at_s = bucket_expires_at(next.updated_at_ms);
            let write = self.write(client_id, &seen, &next, expires_at_s);
            match tokio::time::timeout(self.settings.call_timeout, write).await {
                Ok(Ok(WriteOutcome::Written)) => {
                    slot.set_seen(Some(Seen {
                        version: Version::At(next.updated_at_ms),
                        state: Some(next),
                        expires_at_s: Some(expires_at_s),
                    }));
                    return RateDecision::Allowed;
                }
                Ok(Ok(WriteOutcome::Conflict(item))) => {
                    seen = item.as_ref().map_or(Seen::UNKNOWN, Seen::from_item);
                    slot.set_seen(Some(seen));
                }
                Ok(Err(err)) => {
                    slot.set_store_failing();
                    self.warn("rate_limit_fail_open", "write_error", &err);
                    return RateDecision::FailOpen;
                }
                Err(_) => {
                    slot.set_store_failing();
                    self.warn("rate_limit_fail_open", "write_timeout", &"timeout");
                    return RateDecision::FailOpen;
                }
            }
        }
        // ## Exhausted => Allowed (charged) | Limited (the charge proves the bucket empty)
        tracing::debug!(
            event = "rate_limit_cas_exhausted",
            tries = self.settings.max_tries
        );
        let charge = self.charge(client_id, bucket_expires_at(self.clock.now_ms()));
        match tokio::time::timeout(self.settings.call_timeout, charge).await {
            Ok(Ok(Charge::Taken(item))) => {
                slot.set_seen(item.as_ref().map(Seen::from_item));
                RateDecision::Allowed
            }
            Ok(Ok(Charge::Short(item))) => {
                let seen = item.as_ref().map_or(Seen::UNKNOWN, Seen::from_item);
                slot.set_seen(item.is_some().then_some(seen));
                let now_ms = self.clock.now_ms();
                match self
                    .settings
                    .bucket
                    .take(seen.live_state(now_ms).as_ref(), now_ms)
                {
                    Take::Denied { retry_after_s } => RateDecision::Limited { retry_after_s },
                    // Stored < 1 but refilled >= 1: a token exists that an atomic decrement
                    // cannot express; SPEC §6 "then allow".
                    Take::Granted { .. } => RateDecision::Allowed,
                }
            }
            Ok(Err(err)) => {
                slot.set_store_failing();
                self.warn("rate_limit_charge_failed", "charge_error", &err);
                RateDecision::Allowed
            }
            Err(_) => {
                slot.set_store_failing();
                self.warn("rate_limit_charge_failed", "charge_timeout", &"timeout");
                RateDecision::Allowed
            }
        }
    }

    /// Takes one whole stored token with an atomic decrement (no refill, no compare-and-set),
    /// moving `updated_at` on by 1 ms so every cached version goes stale. Never takes the
    /// bucket below zero: with less than one stored token it answers [`Charge::Short`] and
    /// the current item.
    async fn charge(&self, client_id: &str, expires_at_s: i64) -> Result<Charge, StateError> {
        let result = self
            .table
            .client()
            .update_item()
            .table_name(self.table.name())
            .key("pk", sv(format!("rl#{client_id}")))
            .update_expression(
                "SET tokens = tokens - :one, updated_at = updated_at + :one, expires_at = :exp",
            )
            .condition_expression("tokens >= :one AND attribute_exists(updated_at)")
            .expression_attribute_values(":one", nv(1))
            .expression_attribute_values(":exp", nv(expires_at_s))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => Ok(Charge::Taken(out.attributes)),
            Err(err) => match err.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(ccf) => {
                    Ok(Charge::Short(ccf.item().cloned()))
                }
                other => Err(StateError::aws("UpdateItem", other)),
            },
        }
    }

    async fn write(
        &self,
        client_id: &str,
        seen: &Seen,
        next: &BucketState,
        expires_at_s: i64,
    ) -> Result<WriteOutcome, StateError> {
        // Micro-token precision, rounded down: DynamoDB numbers stay short and exact.
        let tokens = (next.tokens * 1e6).floor() / 1e6;
        let mut put = self
            .table
            .client()
            .put_item()
            .table_name(self.table.name())
            .item("pk", sv(format!("rl#{client_id}")))
            .item("tokens", nv(format!("{tokens:.6}")))
            .item("updated_at", nv(next.updated_at_ms))
            .item("expires_at", nv(expires_at_s))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        put = match seen.version {
            Version::Absent => put.condition_expression("attribute_not_exists(pk)"),
            Version::At(seen_ms) => put
                .condition_expression("updated_at = :seen")
                .expression_attribute_values(":seen", nv(seen_ms)),
            Version::Corrupt => put,
        };
        match put.send().await {
            Ok(_) => Ok(WriteOutcome::Written),
            Err(err) => match err.into_service_error() {
                PutItemError::ConditionalCheckFailedException(ccf) => {
                    Ok(WriteOutcome::Conflict(ccf.item().cloned()))
                }
                other => Err(StateError::aws("PutItem", other)),
            },
        }
    }
}

impl RateLimiter for DynamoRateLimiter {
    fn check<'a>(&'a self, client_id: &'a str) -> BoxFuture<'a, RateDecision> {
        Box::pin(self.decide(client_id))
    }
}
