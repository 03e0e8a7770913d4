//! The token bucket in the state table, per app client (`rl#<client_id>`) or, with
//! `KOSHA_RATE_KEY=user`, per user (`rl#u#<sub>`), taken in leases (seed 004 §6, SPEC §6, §8).
//!
//! - **What it counts:** whole tokens per bucket: a call spends its tool's cost (default 1;
//!   0 counts as 1) from its caller's bucket item, the truth every instance shares (capacity
//!   and refill in [`RateLimitSettings`], the same for both kinds; the maths in
//!   [`kosha_resilience::rate_limit`]). Which bucket is the gateway's choice, a
//!   [`kosha_resilience::rate_limit::Bucket`]; below, "client" means the bucket's owner,
//!   an app client or a user. An instance takes tokens in **leases**: one conditional write
//!   refills the item, grants g tokens and subtracts them in the same write, so no instance
//!   leases from a stale view. g covers the call's need (its cost less what the lease still
//!   holds), is at most max(need, `lease_max_tokens`) and what the item holds, and is sized by
//!   the client's recent spending on this instance ([`lease::Demand`]: a rare caller's g is
//!   its cost). The lease is spent here until it runs out or ends ([`lease::Lease`]); it is
//!   never handed back.
//! - **States,** per client on one instance ([`slot`]): **Cold** (no item cached) →
//!   **Idle** (an item cached, no lease tokens) ⇄ **Leased** (tokens held) → **Renewing**
//!   (Leased, and a background write topping the lease up: [`renew`]). **Contended**
//!   (another instance's write seen in the last 30 s: turns read first, [`read_first`]) and
//!   **Failing** (the client's last DynamoDB call failed or timed out) qualify any of them.
//! - **When a call is decided:**
//!   1. *Locally*, with no DynamoDB call ([`DynamoRateLimiter::decided_locally`]): Leased
//!      with the cost → admitted from the lease (starting a renewal when due); the cached
//!      item, refilled to now, short of the need → refused. Every write by any instance sets
//!      `tokens = refilled − granted`, so the true bucket never holds more than the cache
//!      shows, and a flood of refused calls costs DynamoDB nothing. (An operator deleting the
//!      item by hand errs on the strict side until the cache sees a newer item.)
//!   2. Else *in a turn* ([`turn`]): queued behind the client's other calls on this instance
//!      for at most twice the call timeout, it reads first when Cold or Contended, then makes
//!      one conditional write ([`store`]), retried over the item a lost compare-and-set
//!      returns, at most `max_tries` (3) times.
//!   3. Else *charged* ([`charge`]): an atomic decrement of the need, never below zero.
//!
//!   A call's phases, in the transition comments: **Queued** (waiting for the turn),
//!   **Turn** (holding it; **Read** when it reads first), **Exhausted** (every try lost).
//! - **What it returns:** [`RateDecision::Allowed`]; [`RateDecision::Limited`] with
//!   `retry_after_s` when the cache, a write's refill or the charge shows the bucket short,
//!   or with 1 when the turn wait ran out on a healthy store; [`RateDecision::FailOpen`] when
//!   a read or write errs or takes longer than the call timeout (100 ms, SDK retries off), or
//!   the turn wait ran out while Failing (SPEC §6: DynamoDB unreachable → allow). A failure
//!   keeps the lease. Over the long run the fleet admits at most capacity + rate × elapsed.
//! - **The item** ([`seen`]): `tokens`, `updated_at` (epoch ms, the compare-and-set
//!   version) and `expires_at` (last use + 3600 s). One whose `expires_at` has passed is a
//!   fresh, full bucket (TTL deletion is lazy), still written conditionally on its
//!   `updated_at`; one with a malformed `updated_at` is overwritten unconditionally once
//!   (logged).
//! - **The key** ([`key`], [`BucketKey`]): `rl#<client_id>` or `rl#u#<sub>`, the id
//!   escaped so that no client id names a user's bucket (`u#alice` is `rl#u%23alice`).
//! - **Neighbours:** the gateway's `tools/call` holds it as an `Arc<dyn RateLimiter>` and
//!   checks it before the tool runs, after authentication; `rate_limited` is its tool error
//!   (SPEC §6). It calls the state table through a single-attempt client
//!   ([`StateTable::single_attempt`]). The in-memory per-principal limit (SPEC §6) is another
//!   limiter, in front of the body parse.
//! - **Concurrency:** per client, one `parking_lot::Mutex` over what was learned, held for a
//!   few steps and never across an await, and one tokio mutex, the turn, held across a take's
//!   DynamoDB calls or a renewal. A clone shares everything (a renewal holds one).
//! - **Observability:** every decision is counted in `rate_limit{decision, bucket}` (SPEC
//!   §12; `bucket` is `client` or `user`); the
//!   WARNs `rate_limit_fail_open` and `rate_limit_charge_failed` are logged at most once per
//!   reason per 60 s, with the number suppressed ([`warn`]); WARN `rate_limit_item_malformed`;
//!   debug events `rate_limit_cas_exhausted`, `rate_limit_turn_timeout`,
//!   `rate_limit_renewal_failed`.
//! - **Source:** seed 004 §6; SPEC §6 (leases, three tries then allow and charge, fail open),
//!   §8 (the item), §12 (the metric); issues 4, 28 and 44 (a bucket per user).
//!
//! The transitions are written next to the code that makes them, as `// ## From => To`: from
//! a state or phase to the next one, or to the call's decision (Allowed, Limited, FailOpen).

use std::sync::Arc;

use kosha_resilience::rate_limit::{BoxFuture, Bucket, RateDecision, RateLimiter, Take};

use crate::{Clock, StateTable};

mod charge;
mod key;
mod lease;
mod read_first;
mod renew;
mod seen;
mod settings;
mod slot;
mod store;
mod turn;
mod warn;

pub use key::BucketKey;
pub use settings::RateLimitSettings;
use slot::{Now, Slot, Slots};
use warn::WarnThrottle;

/// The token bucket in the state table. Share one per process (`Arc`); it implements
/// [`RateLimiter`] so the gateway can hold an `Arc<dyn RateLimiter>`. A clone shares
/// everything (the background renewal holds one).
#[derive(Clone)]
pub struct DynamoRateLimiter {
    /// The table through a single-attempt client (built on first use).
    table: StateTable,
    settings: RateLimitSettings,
    clock: Arc<dyn Clock>,
    slots: Arc<Slots>,
    warns: Arc<WarnThrottle>,
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
            slots: Arc::new(Slots::default()),
            warns: Arc::new(WarnThrottle::default()),
        }
    }

    /// Takes one token from `client_id`'s bucket and records the decision in the metric.
    pub async fn decide(&self, client_id: &str) -> RateDecision {
        self.decide_cost(client_id, 1).await
    }

    /// Spends `cost` tokens (0 counts as 1) from `client_id`'s bucket ([`Self::spend`]).
    pub async fn decide_cost(&self, client_id: &str, cost: u32) -> RateDecision {
        self.spend(Bucket::client(client_id), cost).await
    }

    /// Spends `cost` tokens (0 counts as 1) from `bucket`, from this instance's lease when it
    /// holds them, and records the decision in the metric (SPEC §6, §12).
    pub async fn spend(&self, bucket: Bucket<'_>, cost: u32) -> RateDecision {
        let decision = self.take(&BucketKey::of(bucket), cost.max(1)).await;
        decision.record(bucket.kind);
        decision
    }

    async fn take(&self, key: &BucketKey, cost: u32) -> RateDecision {
        match self.take_locally(key, cost) {
            Ok(decided) => decided,
            Err(slot) => self.queue_for_turn(key, &slot, cost).await,
        }
    }

    /// [`Self::take`] when no DynamoDB call is needed ([`Self::decided_locally`], renewing
    /// the lease ahead when due); else the bucket's slot, to queue on for a turn.
    fn take_locally(&self, key: &BucketKey, cost: u32) -> Result<RateDecision, Arc<Slot>> {
        let slot = self.slots.get(key.as_str());
        match self.decided_locally(&slot, cost) {
            Some((decided, renew)) => {
                if renew {
                    self.renew_ahead(key, &slot);
                }
                Ok(decided)
            }
            None => Err(slot),
        }
    }

    /// The decision that needs no DynamoDB call: admitted from the lease when it holds `cost`
    /// (spent here), or refused when the cached item cannot cover what the lease lacks; with
    /// whether the spend is due to renew the lease ahead ([`Self::renewal_due`]).
    fn decided_locally(&self, slot: &Slot, cost: u32) -> Option<(RateDecision, bool)> {
        let now = self.now();
        let mut learned = slot.learned.lock();
        let held = lease::left(learned.lease.as_ref(), now.ms, now.instant);
        if held >= cost {
            // ## Leased => Leased | Idle (spent from the lease)
            learned.lease = learned.lease.and_then(|l| l.spent(cost));
            learned.demand.record(cost, now.ms, self.settings.lease);
            let renew = self.renewal_due(&learned, held - cost, cost, now.ms);
            return Some((RateDecision::Allowed, renew));
        }
        if held == 0 {
            // ## Leased => Idle (the lease ran out or ended; its leftovers are dropped)
            learned.lease = None;
        }
        // ## Idle => Limited (the cached item, refilled to now, is short of the need)
        self.refused_by_cache(learned.seen.as_ref(), now.ms, cost - held)
            .map(|refused| (refused, false))
    }

    /// The refusal the cached item alone proves at `now_ms` for a call needing `need` tokens
    /// from the item (the true bucket never holds more).
    fn refused_by_cache(
        &self,
        seen: Option<&seen::Seen>,
        now_ms: i64,
        need: u32,
    ) -> Option<RateDecision> {
        let live = seen?.live_state(now_ms);
        match self
            .settings
            .bucket
            .grant(live.as_ref(), now_ms, need, need)
        {
            Take::Denied { retry_after_s } => Some(RateDecision::Limited { retry_after_s }),
            Take::Granted { .. } => None,
        }
    }

    /// Both clocks now.
    fn now(&self) -> Now {
        Now {
            ms: self.clock.now_ms(),
            instant: tokio::time::Instant::now(),
        }
    }

    /// Logs WARN `event` for `reason` unless one was logged in the last 60 s ([`warn`]).
    fn warn(&self, event: &'static str, reason: &'static str, error: &dyn std::fmt::Display) {
        if let Some(suppressed) = self.warns.admit(reason, self.clock.now_ms()) {
            tracing::warn!(event, reason, error = %error, suppressed);
        }
    }
}

impl RateLimiter for DynamoRateLimiter {
    /// [`DynamoRateLimiter::spend`]. A call its lease (or cached item) decides is answered
    /// without building the DynamoDB path's future: that future holds the SDK's, several KB,
    /// and boxing it would copy all of it on every call (callgrind, docs/benchmarks.md
    /// "Policy decisions").
    fn check<'a>(&'a self, bucket: Bucket<'a>, cost: u32) -> BoxFuture<'a, RateDecision> {
        let key = BucketKey::of(bucket);
        let cost = cost.max(1);
        match self.take_locally(&key, cost) {
            Ok(decided) => {
                decided.record(bucket.kind);
                Box::pin(std::future::ready(decided))
            }
            Err(slot) => Box::pin(async move {
                let decided = self.queue_for_turn(&key, &slot, cost).await;
                decided.record(bucket.kind);
                decided
            }),
        }
    }
}
