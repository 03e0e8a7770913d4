//! The charge: how a call whose turn lost every compare-and-set is still paid for.
//!
//! - **When:** a turn's write lost its race `max_tries` times (default 3). SPEC §6 admits the
//!   call then ("at most 3 tries, then allow and charge").
//! - **What it does:** one atomic `UpdateItem`, `tokens = tokens − need, updated_at =
//!   updated_at + 1`, conditional on `tokens >= need`: no refill, no compare-and-set, never
//!   below zero, no lease. Moving `updated_at` on by 1 ms makes every cached version stale.
//!   Without it, two instances racing one client's burst admit several uncharged calls; with
//!   it, a lost race costs a fourth round trip and admissions stay within capacity + rate ×
//!   elapsed.
//! - **Returns:** [`RateDecision::Allowed`] when the need was taken; when the condition fails,
//!   the item DynamoDB returns decides: its refill short of the need proves the bucket short,
//!   [`RateDecision::Limited`]; its refill covering the need (stored < need but refilled ≥
//!   need, tokens an atomic decrement cannot express) admits the call uncharged. A charge that
//!   fails or times out admits it too (Failing, WARN `rate_limit_charge_failed`).

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use kosha_resilience::rate_limit::{RateDecision, Take, bucket_expires_at};

use super::DynamoRateLimiter;
use super::key::BucketKey;
use super::seen::Seen;
use super::slot::Slot;
use super::store::Request;
use crate::StateError;
use crate::attr::{Item, nv, sv};

/// The answer to the charge.
enum Charge {
    /// The need taken; the new item.
    Taken(Option<Item>),
    /// Fewer stored tokens than the need (or no item); the current item, if any.
    Short(Option<Item>),
}

impl DynamoRateLimiter {
    /// The decision for a call of `cost` whose turn lost every try, charging the `need` tokens
    /// its `held` lease tokens did not cover (module doc).
    pub(super) async fn charged(
        &self,
        key: &BucketKey,
        slot: &Slot,
        cost: u32,
        held: u32,
    ) -> RateDecision {
        let need = cost - held;
        let charge = self.charge(key, need, bucket_expires_at(self.clock.now_ms()));
        match self.bounded(Request::Charge, charge).await {
            Ok(Charge::Taken(item)) => {
                // ## Exhausted => Allowed (charged; the old lease's rest kept)
                let seen = item.as_ref().map(Seen::from_item);
                slot.admitted(seen, held, need, cost, self.now(), &self.settings);
                RateDecision::Allowed
            }
            Ok(Charge::Short(item)) => {
                let seen = Seen::answered(item.as_ref());
                let now = self.now();
                let live = seen.live_state(now.ms);
                match self
                    .settings
                    .bucket
                    .grant(live.as_ref(), now.ms, need, need)
                {
                    Take::Denied { retry_after_s } => {
                        // ## Exhausted => Limited (the item proves the bucket short)
                        slot.learn(item.is_some().then_some(seen), true, false);
                        RateDecision::Limited { retry_after_s }
                    }
                    Take::Granted { .. } => {
                        // ## Exhausted => Allowed (uncharged: the refill covers the need;
                        // SPEC §6 "then allow")
                        let seen = item.is_some().then_some(seen);
                        slot.admitted(seen, held, need, cost, now, &self.settings);
                        RateDecision::Allowed
                    }
                }
            }
            Err(failure) => {
                // ## Exhausted => Allowed, Failing
                slot.set_store_failing();
                self.warn("rate_limit_charge_failed", failure.reason(), &failure);
                RateDecision::Allowed
            }
        }
    }

    /// Takes `need` whole stored tokens with an atomic decrement (no refill, no
    /// compare-and-set), moving `updated_at` on by 1 ms so every cached version goes stale.
    /// Never takes the bucket below zero: with fewer than `need` stored tokens it answers
    /// [`Charge::Short`] and the current item.
    async fn charge(
        &self,
        key: &BucketKey,
        need: u32,
        expires_at_s: i64,
    ) -> Result<Charge, StateError> {
        let result = self
            .table
            .client()
            .update_item()
            .table_name(self.table.name())
            .key("pk", sv(key.clone()))
            .update_expression(
                "SET tokens = tokens - :need, updated_at = updated_at + :one, expires_at = :exp",
            )
            .condition_expression("tokens >= :need AND attribute_exists(updated_at)")
            .expression_attribute_values(":need", nv(need))
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
}
