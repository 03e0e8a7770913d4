//! The turn: a call the lease and the cache cannot decide waits for its client's turn (an
//! async lock per client per instance), then writes the item.
//!
//! - **Queue:** within one instance the calls of one client that need a write take turns, so
//!   they do not race each other's compare-and-set; they share the cache and the lease
//!   instead (a call that got the turn looks at the lease again: the turn before it may have
//!   leased enough). The calls waiting are demand already present, so a turn's write leases
//!   their tokens as well (within the lease bounds): a cold burst goes through in one or two
//!   writes rather than one each, which would leave most of it refused at the turn wait.
//!   Lambda runs one request per instance, so there a call only waits for a renewal in flight.
//! - **Turn wait bound:** twice the call timeout (200 ms by default). Long enough that the
//!   call in progress when the wait began has ended (each is bounded by the call timeout), so
//!   a store that went down is known by then. A call still waiting is decided without
//!   DynamoDB: the cache proves the bucket short → [`RateDecision::Limited`] with that
//!   `retry_after_s`; Failing → [`RateDecision::FailOpen`] (SPEC §6); otherwise →
//!   [`RateDecision::Limited`] with `retry_after_s` 1: the client sends more calls at once than
//!   one instance can put through DynamoDB in time. Admitting would let a burst past the
//!   bucket, and waiting without a bound would hang requests behind a queue; refusing keeps
//!   admissions within capacity + rate × elapsed and every call within 200 ms plus its own
//!   DynamoDB calls. It counts as `limited`, so `fail_open` still means DynamoDB trouble only.
//! - **Write:** read first when due ([`super::read_first`]), then grant and write
//!   ([`super::store`]): written → Allowed, the grant's rest leased; a lost compare-and-set →
//!   the item returned is cached and the grant recomputed, at most `max_tries` (3, SPEC §6),
//!   then the charge ([`super::charge`]); the cache refusing → Limited; an error or timeout →
//!   [`RateDecision::FailOpen`] (Failing, the lease kept).

use std::sync::atomic::Ordering;

use kosha_resilience::rate_limit::{RateDecision, Take};

use super::DynamoRateLimiter;
use super::key::BucketKey;
use super::seen::Seen;
use super::slot::{Learned, Queued, Slot};
use super::store::{StoreFailure, WriteOutcome};

impl DynamoRateLimiter {
    /// Waits for `slot`'s turn (at most twice the call timeout) and takes `cost` in it.
    pub(super) async fn queue_for_turn(
        &self,
        key: &BucketKey,
        slot: &Slot,
        cost: u32,
    ) -> RateDecision {
        let turn_wait = self.settings.call_timeout.saturating_mul(2);
        // ## Idle | Leased (short of the cost) => Queued
        let queued = Queued::join(slot, cost);
        let Ok(_turn) = tokio::time::timeout(turn_wait, slot.turn.lock()).await else {
            drop(queued);
            return self.turn_timed_out(slot, cost);
        };
        drop(queued);
        // ## Queued => Leased (the turn before this one leased what this call needs; this
        // call holds the turn, so no renewal could start)
        if let Some((decided, _)) = self.decided_locally(slot, cost) {
            return decided;
        }
        // ## Queued => Turn
        self.take_turn(key, slot, cost).await
    }

    /// The decision for a call whose wait for its turn timed out (module doc).
    fn turn_timed_out(&self, slot: &Slot, cost: u32) -> RateDecision {
        // ## Queued => Limited (the cache proves the bucket short; a turn is under way, so no
        // renewal could start)
        if let Some((decided, _)) = self.decided_locally(slot, cost) {
            return decided;
        }
        if slot.learned().store_failing {
            // ## Queued => FailOpen (Failing)
            self.warn(
                "rate_limit_fail_open",
                "turn_timeout",
                &"DynamoDB call failed",
            );
            return RateDecision::FailOpen;
        }
        // ## Queued => Limited (retry after 1 s: more calls at once than one instance puts
        // through in time)
        tracing::debug!(event = "rate_limit_turn_timeout");
        RateDecision::Limited { retry_after_s: 1 }
    }

    /// One take of `cost` while holding the client's turn, the lease lacking it: what the
    /// lease holds is reserved toward the call and put back unless a write admits it.
    async fn take_turn(&self, key: &BucketKey, slot: &Slot, cost: u32) -> RateDecision {
        let start = self.now();
        let (learned, held, from) = slot.reserve(cost, start);
        let decision = self.write_turn(key, slot, cost, learned, held).await;
        if !matches!(decision, RateDecision::Allowed) {
            slot.restore(from, held);
        }
        decision
    }

    /// [`Self::take_turn`] after the reservation of `held` lease tokens.
    async fn write_turn(
        &self,
        key: &BucketKey,
        slot: &Slot,
        cost: u32,
        learned: Learned,
        held: u32,
    ) -> RateDecision {
        let mut seen = match self.read_first(key, slot, &learned).await {
            Ok(read) => read.or(learned.seen).unwrap_or(Seen::UNKNOWN),
            Err(failure) => return self.failed_open(slot, &failure),
        };
        let want = self.turn_want(slot, &learned, cost, held);
        let need = cost - held;
        for _ in 0..self.settings.max_tries {
            let now = self.now();
            let live = seen.live_state(now.ms);
            let (next, granted) =
                match self
                    .settings
                    .bucket
                    .grant(live.as_ref(), now.ms, need, want)
                {
                    // ## Turn => Limited (the refilled item cannot cover the need: no write)
                    Take::Denied { retry_after_s } => {
                        return RateDecision::Limited { retry_after_s };
                    }
                    Take::Granted { next, granted } => (next, granted),
                };
            match self.put_next(key, &seen, live.as_ref(), now.ms, next).await {
                Ok(WriteOutcome::Written) => {
                    // ## Turn => Leased | Idle (Allowed; the grant less the need is leased)
                    let written = Some(Seen::written(next));
                    slot.admitted(written, held, granted, cost, self.now(), &self.settings);
                    return RateDecision::Allowed;
                }
                Ok(WriteOutcome::Conflict(item)) => {
                    // ## Turn => Turn, Contended (lost the race: retry over the item returned)
                    seen = slot.observed(Some(&seen), item.as_ref(), true);
                }
                // ## Turn => FailOpen, Failing
                Err(failure) => return self.failed_open(slot, &failure),
            }
        }
        // ## Turn => Exhausted
        tracing::debug!(
            event = "rate_limit_cas_exhausted",
            tries = self.settings.max_tries
        );
        self.charged(key, slot, cost, held).await
    }

    /// What a turn's write asks the item for, from `held` lease tokens toward a call of
    /// `cost`: the client's demand over one lease duration, or the calls queued behind this
    /// turn when they ask for more (demand already here: leasing their tokens now answers
    /// them from the lease instead of one write and one turn each), less what is held, from
    /// the need to max(need, `lease_max_tokens`).
    fn turn_want(&self, slot: &Slot, learned: &Learned, cost: u32, held: u32) -> u32 {
        let need = cost - held;
        let waiting = slot.queued.load(Ordering::Acquire);
        learned
            .demand
            .want(cost, self.now().ms, self.settings.lease)
            .max(cost.saturating_add(waiting))
            .saturating_sub(held)
            .clamp(need, need.max(self.settings.lease_max_tokens))
    }

    /// Records a turn's failed read or write as the client's last DynamoDB call failing, and
    /// fails the call open (SPEC §6), with the throttled WARN.
    fn failed_open(&self, slot: &Slot, failure: &StoreFailure) -> RateDecision {
        slot.set_store_failing();
        self.warn("rate_limit_fail_open", failure.reason(), failure);
        RateDecision::FailOpen
    }
}
