//! Renew-ahead: a busy client's lease is topped up in the background before it runs out, so
//! its lease's last call does not wait for the next write.
//!
//! - **When:** a call admitted from the lease leaves it holding between 1 and
//!   [`DynamoRateLimiter::renew_at`] tokens (a quarter of `lease_max_tokens`, at least 1; at
//!   most the call's cost when that is more, so a cost cannot step over the threshold), the
//!   client's recent demand over one lease duration exceeds `lease_max_tokens` (its leases run
//!   out before they end), the client is not Failing (the next call's own write finds out
//!   whether the store is back), and no turn is under way. A client whose leases last their
//!   duration renews as before, when a call finds the lease empty or ended: renewing ahead
//!   there would cost more writes per call.
//! - **What it does:** one write in the client's turn, reading first when due
//!   ([`super::read_first`]), that grants what the demand asks for beyond the tokens held (1
//!   to `lease_max_tokens`). A call spending from the lease does not wait for it; a call that
//!   finds the lease empty meanwhile waits for the turn, as for any turn, and is then answered
//!   from the renewed lease.
//! - **Returns** nothing to a call; it leaves the slot Leased: topped up, ending one lease
//!   duration after the write was sent and keeping what the old lease held (at most the
//!   threshold, whose end moves by at most one lease duration: an instance holds at most the
//!   bound plus the threshold); as it was, when the cache refuses or the compare-and-set is
//!   lost (the item returned is cached, and the call that finds the lease empty takes a turn
//!   of its own); or Failing, when its read or write fails.
//! - **Lambda:** a renewal still in flight when the instance is frozen ends after the thaw
//!   (the next invocation waits for it, at most the call timeout for each of its read and
//!   write, which the freeze has usually used up); one answered after its lease's end leaves
//!   tokens debited and never spent (under-admission, as any lease's leftovers).

use std::sync::Arc;

use kosha_resilience::rate_limit::Take;

use super::DynamoRateLimiter;
use super::key::BucketKey;
use super::lease;
use super::slot::{Learned, Slot};
use super::store::{StoreFailure, WriteOutcome};

impl DynamoRateLimiter {
    /// Tokens left in a lease at or under which a spend renews it ahead: a quarter of the
    /// lease bound, at least 1.
    fn renew_at(&self) -> u32 {
        (self.settings.lease_max_tokens / 4).max(1)
    }

    /// Whether a spend of `cost` from the lease that left it holding `left` tokens at
    /// `now_ms` is due to renew it (module doc, "When").
    pub(super) fn renewal_due(&self, learned: &Learned, left: u32, cost: u32, now_ms: i64) -> bool {
        (1..=self.renew_at().max(cost)).contains(&left)
            && !learned.store_failing
            && learned.demand.want(0, now_ms, self.settings.lease) > self.settings.lease_max_tokens
    }

    /// Starts [`Self::renew`] in the background, unless a turn (a write or another renewal)
    /// is under way for the client.
    pub(super) fn renew_ahead(&self, key: &BucketKey, slot: &Arc<Slot>) {
        let Ok(turn) = Arc::clone(&slot.turn).try_lock_owned() else {
            return;
        };
        // ## Leased => Renewing (the renewal holds the turn until it is answered)
        let this = self.clone();
        let slot = Arc::clone(slot);
        let key = key.clone();
        tokio::spawn(async move {
            this.renew(&key, &slot).await;
            drop(turn);
        });
    }

    /// One write that adds to `slot`'s lease what the client's demand over one lease
    /// duration asks for beyond what it holds, while holding the client's turn (module doc).
    async fn renew(&self, key: &BucketKey, slot: &Slot) {
        let learned = slot.learned();
        let begun = self.now();
        let left = lease::left(learned.lease.as_ref(), begun.ms, begun.instant);
        // ## Renewing => Idle (the lease ran out or ended before the renewal began: the next
        // call takes a turn of its own)
        let Some(cached) = learned.seen.filter(|_| left > 0) else {
            return;
        };
        let seen = match self.read_first(key, slot, &learned).await {
            Ok(read) => read.unwrap_or(cached),
            Err(failure) => return renewal_failed(slot, &failure),
        };
        let sent = self.now();
        let want = learned
            .demand
            .want(1, sent.ms, self.settings.lease)
            .saturating_sub(left)
            .clamp(1, self.settings.lease_max_tokens);
        let live = seen.live_state(sent.ms);
        // ## Renewing => Leased, as it was (the cache refuses even one token)
        let Take::Granted { next, granted } =
            self.settings.bucket.grant(live.as_ref(), sent.ms, 1, want)
        else {
            return;
        };
        match self
            .put_next(key, &seen, live.as_ref(), sent.ms, next)
            .await
        {
            Ok(WriteOutcome::Written) => {
                slot.renewed(next, granted, sent, self.now(), &self.settings);
            }
            Ok(WriteOutcome::Conflict(item)) => {
                // ## Renewing => Leased, as it was; Contended (the item returned is cached)
                slot.observed(Some(&seen), item.as_ref(), true);
            }
            // ## Renewing => Leased, as it was; Failing
            Err(failure) => renewal_failed(slot, &failure),
        }
    }
}

/// Records a renewal's failed read or write as the client's last DynamoDB call failing.
fn renewal_failed(slot: &Slot, failure: &StoreFailure) {
    slot.set_store_failing();
    tracing::debug!(
        event = "rate_limit_renewal_failed",
        reason = failure.reason(),
        error = %failure
    );
}
