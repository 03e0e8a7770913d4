//! The per-client cache: what one instance knows about each client's bucket (the item last
//! seen, the lease, the recent demand, whether the store is failing or contended) and the
//! turn lock its DynamoDB calls take in order.
//!
//! The states of the module doc are read off [`Learned`]: Cold (`seen` is `None`), Idle (an
//! item, no lease tokens left), Leased (`lease` holds tokens); Contended and Failing are
//! `other_wrote_at` and `store_failing`. Each method here is one recorded answer; the
//! transition it makes is written at it. Every method holds the `learned` lock for a few
//! steps and never across an await.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use kosha_resilience::rate_limit::BucketState;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::lease::{self, Demand, Lease};
use super::seen::Seen;
use super::settings::RateLimitSettings;
use crate::attr::Item;

/// Most clients cached per instance; past it the cache starts over (each client then pays
/// one extra round trip once, cold).
const MAX_CACHED_CLIENTS: usize = 10_000;

/// The two clocks a decision reads: the wall clock (item timestamps, lease ends) and tokio's
/// (lease ends, the demand's decay).
#[derive(Debug, Clone, Copy)]
pub(super) struct Now {
    /// Epoch ms, from the limiter's [`crate::Clock`].
    pub(super) ms: i64,
    pub(super) instant: Instant,
}

/// The slots of the clients this instance has seen, at most [`MAX_CACHED_CLIENTS`].
#[derive(Default)]
pub(super) struct Slots(Mutex<HashMap<String, Arc<Slot>>>);

impl Slots {
    /// The slot of the bucket whose `pk` is `key`, made (Cold) on its first call or after the
    /// cache started over.
    pub(super) fn get(&self, key: &str) -> Arc<Slot> {
        let mut slots = self.0.lock();
        if let Some(slot) = slots.get(key) {
            return Arc::clone(slot);
        }
        if slots.len() >= MAX_CACHED_CLIENTS {
            slots.clear();
        }
        let slot = Arc::new(Slot::default());
        slots.insert(key.to_owned(), Arc::clone(&slot));
        slot
    }
}

/// One client's turn lock and what its turns learned.
#[derive(Default)]
pub(super) struct Slot {
    /// Held for a whole take, or a renewal: one client's writes take turns.
    pub(super) turn: Arc<tokio::sync::Mutex<()>>,
    /// Tokens the calls waiting for the turn need ([`Queued`]): the turn's write leases them
    /// too, so a burst is put through in one write rather than one write per call.
    pub(super) queued: AtomicU32,
    /// Written only by the turn's holder; read by anyone, including a call whose wait for the
    /// turn timed out.
    pub(super) learned: Mutex<Learned>,
}

/// What one client's turns learned from DynamoDB, and the tokens this instance holds.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Learned {
    /// The last item seen; `None` before the first answer (Cold).
    pub(super) seen: Option<Seen>,
    /// Whether the last DynamoDB call for this client failed or timed out (Failing).
    pub(super) store_failing: bool,
    /// When this instance last saw another instance's write to the client's item (a write
    /// over the cached item lost its compare-and-set, or a read found a newer item), on
    /// tokio's clock (a wall clock set back does not prolong it): Contended for
    /// [`super::read_first::CONTENDED`] after it.
    pub(super) other_wrote_at: Option<Instant>,
    /// Tokens already debited from the item, to spend here (Leased).
    pub(super) lease: Option<Lease>,
    /// The client's recent spending on this instance.
    pub(super) demand: Demand,
}

/// A call's place among those waiting for its client's turn: adds the call's cost to
/// [`Slot::queued`] and takes it off again when dropped (the turn acquired, the wait timed
/// out, or the call cancelled).
pub(super) struct Queued<'a> {
    queued: &'a AtomicU32,
    cost: u32,
}

impl<'a> Queued<'a> {
    /// Joins the queue of `slot` with a call of `cost`.
    pub(super) fn join(slot: &'a Slot, cost: u32) -> Self {
        slot.queued.fetch_add(cost, Ordering::AcqRel);
        Self {
            queued: &slot.queued,
            cost,
        }
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.queued.fetch_sub(self.cost, Ordering::AcqRel);
    }
}

impl Slot {
    /// A copy of what was learned.
    pub(super) fn learned(&self) -> Learned {
        *self.learned.lock()
    }

    /// Caches the item an answer showed (`None`: proved nothing). An answer to a write clears
    /// `store_failing`; a read's does not (reads may work while writes fail, and only a write
    /// shows the store takes them). `other_wrote`: the answer showed another instance's
    /// write, now.
    pub(super) fn learn(&self, seen: Option<Seen>, write: bool, other_wrote: bool) {
        let mut learned = self.learned.lock();
        learned.seen = seen;
        learned.store_failing &= !write;
        if other_wrote {
            // ## (any) => Contended
            learned.other_wrote_at = Some(Instant::now());
        }
    }

    /// Caches the item in the answer to a read, or to a write that failed its condition
    /// (`write`), sent over `over` (the item cached then), and returns it; the item differing
    /// from `over` shows another instance's write.
    pub(super) fn observed(&self, over: Option<&Seen>, item: Option<&Item>, write: bool) -> Seen {
        let current = Seen::answered(item);
        let other_wrote = over.is_some_and(|o| o.overwritten_by(&current));
        self.learn(Some(current), write, other_wrote);
        current
    }

    /// Records a failed or timed-out DynamoDB call.
    pub(super) fn set_store_failing(&self) {
        // ## (any) => Failing, until a write is answered
        self.learned.lock().store_failing = true;
    }

    /// Takes out of the lease what it holds toward a call of `cost` (less than the cost: the
    /// lease did not cover it), so calls admitted from the lease meanwhile cannot spend it
    /// too. Returns what was learned, the tokens taken and the lease they came from.
    pub(super) fn reserve(&self, cost: u32, now: Now) -> (Learned, u32, Option<Lease>) {
        let mut learned = self.learned.lock();
        let before = learned.lease;
        let held = lease::left(before.as_ref(), now.ms, now.instant).min(cost - 1);
        learned.lease = if held > 0 {
            before.and_then(|l| l.spent(held))
        } else {
            None
        };
        (*learned, held, before)
    }

    /// Puts `held` tokens reserved from `from` back (the call was not admitted by a write).
    pub(super) fn restore(&self, from: Option<Lease>, held: u32) {
        let Some(from) = from.filter(|_| held > 0) else {
            return;
        };
        let mut learned = self.learned.lock();
        let current = learned.lease.map_or(0, |l| l.tokens());
        learned.lease = from.with_tokens(current.saturating_add(held));
    }

    /// Records an admission of `cost` that took `granted` new tokens from the item on top of
    /// `held` from the old lease (`held + granted ≥ cost`); the rest becomes the lease.
    pub(super) fn admitted(
        &self,
        seen: Option<Seen>,
        held: u32,
        granted: u32,
        cost: u32,
        now: Now,
        s: &RateLimitSettings,
    ) {
        let mut learned = self.learned.lock();
        learned.seen = seen;
        learned.store_failing = false;
        let rest = held.saturating_add(granted).saturating_sub(cost);
        // ## Cold | Idle | Leased => Leased (the grant's rest, for one lease duration) | Idle
        learned.lease = Lease::new(rest, now.ms, now.instant, s.lease);
        learned.demand.record(cost, now.ms, s.lease);
    }

    /// Records a renewal sent at `sent` that wrote `written` and took `granted` tokens,
    /// answered at `now`: the lease holds them and what it still held, and ends one lease
    /// duration after `sent`.
    pub(super) fn renewed(
        &self,
        written: BucketState,
        granted: u32,
        sent: Now,
        now: Now,
        s: &RateLimitSettings,
    ) {
        let mut learned = self.learned.lock();
        learned.seen = Some(Seen::written(written));
        learned.store_failing = false;
        let left = lease::left(learned.lease.as_ref(), now.ms, now.instant);
        // ## Renewing => Leased (topped up; ends one lease duration after `sent`)
        learned.lease = Lease::new(left.saturating_add(granted), sent.ms, sent.instant, s.lease);
    }
}
