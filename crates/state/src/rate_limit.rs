//! The DynamoDB token bucket `rl#<client_id>` (seed 004 §6, SPEC §6, §8).
//!
//! **Leases: at most one round trip per lease.** A call spends its tool's cost (whole tokens,
//! default 1). The limiter keeps, per client, a [`lease::Lease`] of tokens already debited
//! from the item; a call the lease covers is admitted with no DynamoDB call. Otherwise one
//! conditional write refills the item, grants g tokens and subtracts them in the same write
//! (the grant and the debit are one write, so no instance leases from a stale view):
//! g ≥ the call's need (its cost less what the lease still holds), g ≤ max(need,
//! `lease_max_tokens`), never more than the item holds, sized by the client's recent spending
//! on this instance over one lease duration ([`lease::Demand`]; a rare caller gets g = its
//! cost, exactly one token per call). The call takes its need, the lease keeps the rest for
//! [`RateLimitSettings::lease`] on the wall clock (and tokio's, whichever ends first); a lease
//! is never handed back, and one found expired (an instance thawed late) is dropped.
//!
//! **Renewed ahead.** A client whose recent demand over one lease duration exceeds
//! `lease_max_tokens` spends its leases before they end, and each lease's last call would
//! wait for the next write. So a call admitted from the lease that leaves it holding
//! between 1 and a quarter of `lease_max_tokens` tokens (at least 1; at most the call's
//! cost when that is more, so a cost cannot step over the threshold), for such a client,
//! starts one write in the background, in the client's turn, that grants what the demand
//! asks for beyond the tokens held (1 to `lease_max_tokens`). A call spending from the
//! lease does not wait for it, and the lease is topped up before it runs out (the fleet
//! simulator's `latency` scenario, docs/benchmarks.md); a call that finds the lease empty
//! while the write is in flight waits for it, as for any turn, and is then answered from
//! the renewed lease. The renewed lease ends one lease duration after the write was sent
//! and keeps what the old one held (at most that threshold, whose end moves by at most one
//! lease duration): an instance holds at most the bound plus the threshold.
//!
//! A client whose leases last their duration (g below the bound, a rare caller's g = its
//! cost) renews as before, when a call finds the lease empty or ended: renewing ahead there
//! would cost more writes per call (renewing every lease ahead, a caller at one call a
//! second with the defaults made 34 writes in 120 calls, over the 30 that
//! `a_caller_at_one_call_a_second_writes_at_most_once_per_four_calls` allows). A renewal
//! refused by the cache or losing its compare-and-set (the item it returns is cached) leaves
//! the lease as it was, and the call that finds it empty takes a turn of its own (a renewal
//! reads first when the client is contended, as a turn does: "Read first" below); one whose
//! read or write fails counts as the client's last DynamoDB call failing (the turn timeout
//! below), and no renewal starts until a call's own write succeeds. In Lambda a renewal
//! still in flight when the instance is frozen ends after the thaw (the next invocation
//! waits for it, at most the call timeout for each of its read and write, which the freeze
//! has usually used up); one answered after its lease's end leaves tokens debited and never
//! spent (under-admission, as any lease's leftovers).
//!
//! **The write.** The limiter keeps, per client, the last item it saw (its own last write, the
//! item DynamoDB returned on a failed condition, or one it read) and writes the next state
//! with `PutItem` conditional on that item's `updated_at` (`attribute_not_exists(pk)` when
//! there was none):
//! - write succeeds → admitted, cache = what was written, lease = what the grant left;
//! - when the cached item refills to capacity by now, the condition is widened to
//!   `… OR (tokens >= :full AND updated_at <= :quiet)`: `:full` is capacity −
//!   `lease_max_tokens` (what a grant from a full bucket leaves) and `:quiet` is now less the
//!   time the rest takes to refill, so any item meeting it is full by now and the write (the
//!   full bucket less the grant) is exact whatever another instance wrote before. A client
//!   within its limits calling through many instances, whose caches go stale on each
//!   other's writes, then pays one write per lease instead of two (the fleet simulator's
//!   `latency` among other agents). Only over an item already seen (a cold instance's
//!   conditional create is not widened);
//! - `ConditionalCheckFailedException` → the current item comes back on the error
//!   (`ReturnValuesOnConditionCheckFailure = ALL_OLD`), the cache takes it and the grant is
//!   recomputed; at most 3 tries, then the call is admitted (SPEC §6) — and its need is
//!   still charged, by one atomic `tokens = tokens − need, updated_at = updated_at + 1`
//!   update conditional on `tokens >= need` (no refill, no compare-and-set, never below zero,
//!   no lease). If that condition fails, the returned item proves the bucket short and the
//!   call is [`RateDecision::Limited`]; if the item's refill shows the need after all, it is
//!   admitted uncharged. Without the charge, two instances racing one client's burst admit
//!   several uncharged calls (measured on the emulator: 26 admitted where the bucket allows
//!   22); with it, a lost race costs a fourth round trip and admissions stay within
//!   capacity + rate × elapsed;
//! - any other error, or no answer within the call timeout (100 ms, SDK retries off) →
//!   [`RateDecision::FailOpen`] (the lease, if any, is kept).
//!
//! **Read first.** A write over a stale cached item fails, and a failed conditional write is
//! billed as a write. So a turn reads the item first (`GetItem`, consistent, bounded by the
//! call timeout like a write; failing or timing out fails open as a write does) when its cache
//! cannot be trusted:
//! - the instance has no item cached for the client (cold: a Lambda instance's first call
//!   for the client, or any after the cache of [`MAX_CACHED_CLIENTS`] started over). A
//!   conditional create would fail on every client whose item exists, costing a failed write
//!   where a read costs a read request unit (a fifth of a write's price on demand); both take
//!   two round trips. Where no item exists (a new client, or one idle past the item's TTL
//!   deletion) the read was not needed, and the call takes two round trips instead of one;
//! - the client is contended: within [`CONTENDED`] (tokio's clock) this instance saw another
//!   instance's write (a write over its cached item lost, or a read found a newer item). A
//!   client whose calls spread over instances keeps their caches stale; reading first, its
//!   turns lose a race only to a write landing between the read and the write (the fleet
//!   simulator's `latency` among other agents, docs/benchmarks.md).
//!
//! A client alone on an instance reads once, cold, and again only after its own write was
//! seen to lose (a write that timed out but landed loses the next compare-and-set, which
//! reads as contention). The read is one more round trip in a turn: a contended turn takes
//! two, as a lost race did, even when the full-bucket condition would have let the write
//! hold alone. A read's answer does not clear `store_failing` (reads may work while writes
//! fail); only a write's does.
//!
//! **Denials cost no write.** Every write by any instance sets `tokens = refilled − granted`
//! (granted ≥ 1), so the true bucket can only hold *fewer* tokens than the cached item refilled
//! to now. When that refill is below the call's need the call is refused from the cache alone,
//! without a DynamoDB call; a flood of refused calls costs DynamoDB nothing. Leases keep this
//! sound: leased tokens left the item in the write that granted them. (The one exception, an
//! operator deleting the item by hand, errs on the strict side until the cache sees a newer
//! item.) A cold instance has no cache: its first call reads the item, then writes (two
//! round trips), as above.
//!
//! **Within one instance** the calls of one client that need a write take turns (an async
//! lock per client), so concurrent requests from one client in one process do not race each
//! other's compare-and-set; they share the cache and the lease instead (a call that waited
//! looks at the lease again: the turn before it may have leased enough). The calls waiting
//! for the turn are demand already present, so a turn's write leases their tokens as well
//! (within the lease bounds): a cold burst of 40 calls goes through in one or two writes
//! instead of one write each, which would leave most of them refused at the turn wait.
//! Lambda runs one request per instance, so there a call only waits for a renewal still in
//! flight. A call whose lease covers it, or whose cached item already proves the bucket
//! short, is decided before it queues. The wait
//! for the turn is bounded by twice the call timeout (200 ms); a call still waiting then is
//! decided without DynamoDB:
//! - the cache proves the bucket short → [`RateDecision::Limited`] with that `retry_after_s`;
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
use std::sync::atomic::{AtomicU32, Ordering};

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use kosha_resilience::rate_limit::{
    BoxFuture, BucketState, RateDecision, RateLimiter, Take, bucket_expires_at,
};
use parking_lot::Mutex;

use crate::attr::{self, Item, nv, sv};
use crate::{Clock, StateError, StateTable};

mod lease;
mod settings;
mod warn;
use lease::{Demand, Lease};
pub use settings::RateLimitSettings;
use warn::WarnThrottle;

/// Most clients cached per instance; past it the cache starts over (each client then pays
/// one extra round trip once).
const MAX_CACHED_CLIENTS: usize = 10_000;

/// How long after an instance last saw another instance's write to a client's item its turns
/// for that client read the item before writing (module doc, "Read first"): six default
/// lease durations, so a client whose calls spread over instances stays contended between its
/// turns, and one whose calls moved to one instance stops paying the read soon after.
const CONTENDED: std::time::Duration = std::time::Duration::from_secs(30);

/// The compare-and-set version of the item last seen.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Version {
    Absent,
    At(i64),
    Corrupt,
}

/// A call's place among those waiting for its client's turn: adds the call's cost to
/// [`Slot::queued`] and takes it off again when dropped (the turn acquired, the wait timed
/// out, or the call cancelled).
struct Queued<'a> {
    queued: &'a AtomicU32,
    cost: u32,
}

impl<'a> Queued<'a> {
    fn join(queued: &'a AtomicU32, cost: u32) -> Self {
        queued.fetch_add(cost, Ordering::AcqRel);
        Self { queued, cost }
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.queued.fetch_sub(self.cost, Ordering::AcqRel);
    }
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

    /// The item in an answer (`None`: there is none).
    fn answered(item: Option<&Item>) -> Self {
        item.map_or(Self::UNKNOWN, Self::from_item)
    }

    /// Whether an answer showing `current` over this cached item shows another instance's
    /// write: the item was seen before and has changed since (always so for a write over it
    /// that failed its condition).
    fn overwritten_by(&self, current: &Seen) -> bool {
        matches!(self.version, Version::At(_)) && self.version != current.version
    }

    /// The item this limiter just wrote as `state`.
    fn written(state: BucketState) -> Self {
        Self {
            version: Version::At(state.updated_at_ms),
            state: Some(state),
            expires_at_s: Some(bucket_expires_at(state.updated_at_ms)),
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
    /// Held for a whole take, or a renewal: one client's writes take turns.
    turn: Arc<tokio::sync::Mutex<()>>,
    /// Tokens the calls waiting for the turn need ([`Queued`]): the turn's write leases them
    /// too, so a burst is put through in one write rather than one write per call.
    queued: AtomicU32,
    /// Written only by the turn's holder; read by anyone, including a call whose wait for the
    /// turn timed out.
    learned: Mutex<Learned>,
}

/// What one client's turns learned from DynamoDB, and the tokens this instance holds.
#[derive(Debug, Clone, Copy, Default)]
struct Learned {
    /// The last item seen; `None` before the first answer.
    seen: Option<Seen>,
    /// Whether the last DynamoDB call for this client failed or timed out.
    store_failing: bool,
    /// When this instance last saw another instance's write to the client's item (a write
    /// over the cached item lost its compare-and-set, or a read found a newer item), on
    /// tokio's clock (a wall clock set back does not prolong it). For [`CONTENDED`] after it,
    /// turns read the item first (module doc, "Read first").
    other_wrote_at: Option<tokio::time::Instant>,
    /// Tokens already debited from the item, to spend here.
    lease: Option<Lease>,
    /// The client's recent spending on this instance.
    demand: Demand,
}

/// The two clocks a decision reads: the wall clock (item timestamps, lease ends) and tokio's
/// (lease ends, the demand's decay).
#[derive(Debug, Clone, Copy)]
struct Now {
    ms: i64,
    instant: tokio::time::Instant,
}

impl Slot {
    fn learned(&self) -> Learned {
        *self.learned.lock()
    }

    /// Caches the item an answer showed (`None`: proved nothing). An answer to a write clears
    /// `store_failing`; a read's does not (reads may work while writes fail, and only a write
    /// shows the store takes them). `other_wrote`: the answer showed another instance's
    /// write, now.
    fn learn(&self, seen: Option<Seen>, write: bool, other_wrote: bool) {
        let mut learned = self.learned.lock();
        learned.seen = seen;
        learned.store_failing &= !write;
        if other_wrote {
            learned.other_wrote_at = Some(tokio::time::Instant::now());
        }
    }

    /// Caches the item in the answer to a read, or to a write that failed its condition
    /// (`write`), sent over `over` (the item cached then), and returns it; the item differing
    /// from `over` shows another instance's write.
    fn observed(&self, over: Option<&Seen>, item: Option<&Item>, write: bool) -> Seen {
        let current = Seen::answered(item);
        let other_wrote = over.is_some_and(|o| o.overwritten_by(&current));
        self.learn(Some(current), write, other_wrote);
        current
    }

    fn set_store_failing(&self) {
        self.learned.lock().store_failing = true;
    }

    /// Takes out of the lease what it holds toward a call of `cost` (less than the cost: the
    /// lease did not cover it), so calls admitted from the lease meanwhile cannot spend it
    /// too. Returns what was learned, the tokens taken and the lease they came from.
    fn reserve(&self, cost: u32, now: Now) -> (Learned, u32, Option<Lease>) {
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
    fn restore(&self, from: Option<Lease>, held: u32) {
        let Some(from) = from.filter(|_| held > 0) else {
            return;
        };
        let mut learned = self.learned.lock();
        let current = learned.lease.map_or(0, |l| l.tokens());
        learned.lease = from.with_tokens(current.saturating_add(held));
    }

    /// Records an admission of `cost` that took `granted` new tokens from the item on top of
    /// `held` from the old lease (`held + granted ≥ cost`); the rest becomes the lease.
    fn admitted(
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
        learned.lease = Lease::new(rest, now.ms, now.instant, s.lease);
        learned.demand.record(cost, now.ms, s.lease);
    }

    /// Records a renewal sent at `sent` that wrote `written` and took `granted` tokens,
    /// answered at `now`: the lease holds them and what it still held, and ends one lease
    /// duration after `sent`.
    fn renewed(
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
        learned.lease = Lease::new(left.saturating_add(granted), sent.ms, sent.instant, s.lease);
    }
}

/// The token bucket in the state table. Share one per process (`Arc`); it implements
/// [`RateLimiter`] so the gateway can hold an `Arc<dyn RateLimiter>`. A clone shares
/// everything (the background renewal holds one).
#[derive(Clone)]
pub struct DynamoRateLimiter {
    /// The table through a single-attempt client (built on first use).
    table: StateTable,
    settings: RateLimitSettings,
    clock: Arc<dyn Clock>,
    slots: Arc<Mutex<HashMap<String, Arc<Slot>>>>,
    warns: Arc<WarnThrottle>,
}

/// A condition that holds only on an item whose bucket has refilled to capacity: stored
/// `tokens ≥ :full` and `updated_at ≤ :quiet` give `full + (now − quiet) · rate ≥ capacity`
/// whatever was written in between ([`DynamoRateLimiter::full_guard`]).
const FULL_CONDITION: &str = "(tokens >= :full AND updated_at <= :quiet)";

/// The values of [`FULL_CONDITION`].
#[derive(Debug, Clone, Copy)]
struct FullGuard {
    /// `:full`, tokens.
    tokens: f64,
    /// `:quiet`, epoch ms.
    updated_at_ms: i64,
}

/// The result of the fallback charge after lost races.
enum Charge {
    /// The need taken; the new item.
    Taken(Option<Item>),
    /// Fewer stored tokens than the need (or no item); the current item, if any.
    Short(Option<Item>),
}

enum WriteOutcome {
    Written,
    Conflict(Option<Item>),
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

/// Which request to the bucket item failed.
#[derive(Debug, Clone, Copy)]
enum Request {
    Read,
    Write,
    /// The atomic charge after lost races.
    Charge,
}

/// A bucket request that got no answer: an error, or none within the call timeout
/// (`error` `None`).
struct StoreFailure {
    request: Request,
    error: Option<StateError>,
}

impl StoreFailure {
    /// The `reason` of the fail-open WARN.
    fn reason(&self) -> &'static str {
        match (self.request, self.error.is_some()) {
            (Request::Read, true) => "read_error",
            (Request::Read, false) => "read_timeout",
            (Request::Write, true) => "write_error",
            (Request::Write, false) => "write_timeout",
            (Request::Charge, true) => "charge_error",
            (Request::Charge, false) => "charge_timeout",
        }
    }
}

impl std::fmt::Display for StoreFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.error {
            Some(err) => err.fmt(f),
            None => f.write_str("timeout"),
        }
    }
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
            slots: Arc::new(Mutex::new(HashMap::new())),
            warns: Arc::new(WarnThrottle::default()),
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
        self.decide_cost(client_id, 1).await
    }

    /// Spends `cost` tokens (0 counts as 1) from `client_id`'s bucket, from this instance's
    /// lease when it holds them, and records the decision in the metric (SPEC §6, §12).
    pub async fn decide_cost(&self, client_id: &str, cost: u32) -> RateDecision {
        let decision = self.take(client_id, cost.max(1)).await;
        decision.record();
        decision
    }

    fn now(&self) -> Now {
        Now {
            ms: self.clock.now_ms(),
            instant: tokio::time::Instant::now(),
        }
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

    /// The refusal the cached item alone proves at `now_ms` for a call needing `need` tokens
    /// from the item (the true bucket never holds more).
    fn refused_by_cache(
        &self,
        seen: Option<&Seen>,
        now_ms: i64,
        need: u32,
    ) -> Option<RateDecision> {
        let seen = seen?;
        match self
            .settings
            .bucket
            .grant(seen.live_state(now_ms).as_ref(), now_ms, need, need)
        {
            Take::Denied { retry_after_s } => Some(RateDecision::Limited { retry_after_s }),
            Take::Granted { .. } => None,
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
            learned.lease = learned.lease.and_then(|l| l.spent(cost));
            learned.demand.record(cost, now.ms, self.settings.lease);
            let renew = self.renewal_due(&learned, held - cost, cost, now.ms);
            return Some((RateDecision::Allowed, renew));
        }
        if held == 0 {
            learned.lease = None;
        }
        self.refused_by_cache(learned.seen.as_ref(), now.ms, cost - held)
            .map(|refused| (refused, false))
    }

    async fn take(&self, client_id: &str, cost: u32) -> RateDecision {
        let slot = self.slot(client_id);
        if let Some((decided, renew)) = self.decided_locally(&slot, cost) {
            if renew {
                self.renew_ahead(client_id, &slot);
            }
            return decided;
        }
        let turn_wait = self.settings.call_timeout.saturating_mul(2);
        let queued = Queued::join(&slot.queued, cost);
        let Ok(_turn) = tokio::time::timeout(turn_wait, slot.turn.lock()).await else {
            drop(queued);
            return self.turn_timed_out(&slot, cost);
        };
        drop(queued);
        // The turn before this one may have leased what this call needs (this call holds
        // the turn, so no renewal could start).
        if let Some((decided, _)) = self.decided_locally(&slot, cost) {
            return decided;
        }
        self.take_turn(client_id, &slot, cost).await
    }

    /// Tokens left in a lease at or under which a spend renews it ahead: a quarter of the
    /// lease bound, at least 1 (module doc, "Renewed ahead").
    fn renew_at(&self) -> u32 {
        (self.settings.lease_max_tokens / 4).max(1)
    }

    /// Whether a spend of `cost` from the lease that left it holding `left` tokens at
    /// `now_ms` is due to renew it: `left` between 1 and max([`Self::renew_at`], `cost`)
    /// (a cost above the threshold could step over it), the client's recent demand over one
    /// lease duration above the lease bound (its leases run out before they end), and the
    /// client's last DynamoDB call not failed (the next call's own write finds out whether
    /// the store is back).
    fn renewal_due(&self, learned: &Learned, left: u32, cost: u32, now_ms: i64) -> bool {
        (1..=self.renew_at().max(cost)).contains(&left)
            && !learned.store_failing
            && learned.demand.want(0, now_ms, self.settings.lease) > self.settings.lease_max_tokens
    }

    /// Starts [`Self::renew`] in the background, unless a turn (a write or another renewal)
    /// is under way for the client.
    fn renew_ahead(&self, client_id: &str, slot: &Arc<Slot>) {
        let Ok(turn) = Arc::clone(&slot.turn).try_lock_owned() else {
            return;
        };
        let this = self.clone();
        let slot = Arc::clone(slot);
        let client_id = client_id.to_owned();
        tokio::spawn(async move {
            this.renew(&client_id, &slot).await;
            drop(turn);
        });
    }

    /// One write that adds to `slot`'s lease what the client's demand over one lease
    /// duration asks for beyond what it holds (1 to `lease_max_tokens` tokens), while holding
    /// the client's turn: a call that finds the lease empty meanwhile waits for it, as for
    /// any turn. A refusal from the cache or a lost compare-and-set (the item it returns is
    /// cached) leaves the lease as it is; a failure is recorded as the client's last
    /// DynamoDB call failing, as a call's own would be.
    async fn renew(&self, client_id: &str, slot: &Slot) {
        let learned = slot.learned();
        let begun = self.now();
        let left = lease::left(learned.lease.as_ref(), begun.ms, begun.instant);
        let Some(cached) = learned.seen.filter(|_| left > 0) else {
            return;
        };
        let seen = match self.read_first(client_id, slot, &learned).await {
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
        let Take::Granted { next, granted } =
            self.settings.bucket.grant(live.as_ref(), sent.ms, 1, want)
        else {
            return;
        };
        match self
            .put_next(client_id, &seen, live.as_ref(), sent.ms, next)
            .await
        {
            Ok(WriteOutcome::Written) => {
                slot.renewed(next, granted, sent, self.now(), &self.settings);
            }
            Ok(WriteOutcome::Conflict(item)) => {
                slot.observed(Some(&seen), item.as_ref(), true);
            }
            Err(failure) => renewal_failed(slot, &failure),
        }
    }

    /// Records a turn's failed read or write as the client's last DynamoDB call failing, and
    /// fails the call open (SPEC §6), with the throttled WARN.
    fn failed_open(&self, slot: &Slot, failure: &StoreFailure) -> RateDecision {
        slot.set_store_failing();
        self.warn("rate_limit_fail_open", failure.reason(), failure);
        RateDecision::FailOpen
    }

    /// The decision for a call whose wait for its turn timed out (module doc).
    fn turn_timed_out(&self, slot: &Slot, cost: u32) -> RateDecision {
        // A turn is under way, so no renewal could start.
        if let Some((decided, _)) = self.decided_locally(slot, cost) {
            return decided;
        }
        if slot.learned().store_failing {
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

    /// One take of `cost` while holding the client's turn, the lease lacking it: what the
    /// lease holds is reserved toward the call and put back unless a write admits it.
    async fn take_turn(&self, client_id: &str, slot: &Slot, cost: u32) -> RateDecision {
        let start = self.now();
        let (learned, held, from) = slot.reserve(cost, start);
        let decision = self.write_turn(client_id, slot, cost, learned, held).await;
        if !matches!(decision, RateDecision::Allowed) {
            slot.restore(from, held);
        }
        decision
    }

    /// [`Self::take_turn`] after the reservation of `held` lease tokens.
    async fn write_turn(
        &self,
        client_id: &str,
        slot: &Slot,
        cost: u32,
        learned: Learned,
        held: u32,
    ) -> RateDecision {
        let mut seen = match self.read_first(client_id, slot, &learned).await {
            Ok(read) => read.or(learned.seen).unwrap_or(Seen::UNKNOWN),
            Err(failure) => return self.failed_open(slot, &failure),
        };
        let start = self.now();
        let need = cost - held;
        // The calls queued behind this turn are demand already here: leasing their tokens
        // now answers them from the lease instead of one write (and one turn) each.
        let waiting = slot.queued.load(Ordering::Acquire);
        let want = learned
            .demand
            .want(cost, start.ms, self.settings.lease)
            .max(cost.saturating_add(waiting))
            .saturating_sub(held)
            .clamp(need, need.max(self.settings.lease_max_tokens));
        for _ in 0..self.settings.max_tries {
            let now = self.now();
            let live = seen.live_state(now.ms);
            let (next, granted) =
                match self
                    .settings
                    .bucket
                    .grant(live.as_ref(), now.ms, need, want)
                {
                    Take::Denied { retry_after_s } => {
                        return RateDecision::Limited { retry_after_s };
                    }
                    Take::Granted { next, granted } => (next, granted),
                };
            match self
                .put_next(client_id, &seen, live.as_ref(), now.ms, next)
                .await
            {
                Ok(WriteOutcome::Written) => {
                    slot.admitted(
                        Some(Seen::written(next)),
                        held,
                        granted,
                        cost,
                        self.now(),
                        &self.settings,
                    );
                    return RateDecision::Allowed;
                }
                Ok(WriteOutcome::Conflict(item)) => {
                    seen = slot.observed(Some(&seen), item.as_ref(), true);
                }
                Err(failure) => return self.failed_open(slot, &failure),
            }
        }
        // ## Exhausted => Allowed (charged) | Limited (the charge proves the bucket short)
        tracing::debug!(
            event = "rate_limit_cas_exhausted",
            tries = self.settings.max_tries
        );
        let charge = self.charge(client_id, need, bucket_expires_at(self.clock.now_ms()));
        match self.bounded(Request::Charge, charge).await {
            Ok(Charge::Taken(item)) => {
                let seen = item.as_ref().map(Seen::from_item);
                slot.admitted(seen, held, need, cost, self.now(), &self.settings);
                RateDecision::Allowed
            }
            Ok(Charge::Short(item)) => {
                let seen = Seen::answered(item.as_ref());
                let now = self.now();
                match self.settings.bucket.grant(
                    seen.live_state(now.ms).as_ref(),
                    now.ms,
                    need,
                    need,
                ) {
                    Take::Denied { retry_after_s } => {
                        slot.learn(item.is_some().then_some(seen), true, false);
                        RateDecision::Limited { retry_after_s }
                    }
                    // Stored < need but refilled >= need: tokens exist that an atomic
                    // decrement cannot express; SPEC §6 "then allow".
                    Take::Granted { .. } => {
                        slot.admitted(
                            item.is_some().then_some(seen),
                            held,
                            need,
                            cost,
                            now,
                            &self.settings,
                        );
                        RateDecision::Allowed
                    }
                }
            }
            Err(failure) => {
                slot.set_store_failing();
                self.warn("rate_limit_charge_failed", failure.reason(), &failure);
                RateDecision::Allowed
            }
        }
    }

    /// Writes `next` over `seen` (the cached item, refilled to `live` at `now_ms`), bounded
    /// by the call timeout. When `live` shows the bucket full, the write also holds on any
    /// item that is provably full by now, so a cache another instance made stale costs no
    /// retry; only over a well-formed item seen before (the emulator refuses to compare a
    /// malformed item's attributes where DynamoDB finds the condition false).
    async fn put_next(
        &self,
        client_id: &str,
        seen: &Seen,
        live: Option<&BucketState>,
        now_ms: i64,
        next: BucketState,
    ) -> Result<WriteOutcome, StoreFailure> {
        let bucket = &self.settings.bucket;
        let full = (matches!(seen.version, Version::At(_))
            && seen.state.is_some()
            && bucket.refilled(live, now_ms) >= bucket.capacity())
        .then(|| self.full_guard(now_ms));
        let expires_at_s = bucket_expires_at(next.updated_at_ms);
        let write = self.write(client_id, seen, &next, expires_at_s, full);
        self.bounded(Request::Write, write).await
    }

    /// `request` bounded by the call timeout.
    async fn bounded<T>(
        &self,
        request: Request,
        call: impl Future<Output = Result<T, StateError>>,
    ) -> Result<T, StoreFailure> {
        match tokio::time::timeout(self.settings.call_timeout, call).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err(StoreFailure {
                request,
                error: Some(error),
            }),
            Err(_) => Err(StoreFailure {
                request,
                error: None,
            }),
        }
    }

    /// Reads the client's item (consistently, bounded by the call timeout) when the turn
    /// must ("Read first" in the module doc): the cache is empty (a cold instance) or the
    /// client is contended. Records what it found in `slot` and returns it; `Ok(None)` when
    /// no read was due.
    async fn read_first(
        &self,
        client_id: &str,
        slot: &Slot,
        learned: &Learned,
    ) -> Result<Option<Seen>, StoreFailure> {
        let contended = learned
            .other_wrote_at
            .is_some_and(|at| at.elapsed() < CONTENDED);
        if learned.seen.is_some() && !contended {
            return Ok(None);
        }
        let read = self.table.get_item(format!("rl#{client_id}"));
        let item = self.bounded(Request::Read, read).await?;
        Ok(Some(slot.observed(
            learned.seen.as_ref(),
            item.as_ref(),
            false,
        )))
    }

    /// Takes `need` whole stored tokens with an atomic decrement (no refill, no
    /// compare-and-set), moving `updated_at` on by 1 ms so every cached version goes stale.
    /// Never takes the bucket below zero: with fewer than `need` stored tokens it answers
    /// [`Charge::Short`] and the current item.
    async fn charge(
        &self,
        client_id: &str,
        need: u32,
        expires_at_s: i64,
    ) -> Result<Charge, StateError> {
        let result = self
            .table
            .client()
            .update_item()
            .table_name(self.table.name())
            .key("pk", sv(format!("rl#{client_id}")))
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

    /// The [`FullGuard`] at `now_ms`: stored tokens of at least capacity − `lease_max_tokens`
    /// (what a grant from a full bucket leaves) and an `updated_at` old enough for the rest to
    /// have refilled (plus 1 ms against rounding).
    fn full_guard(&self, now_ms: i64) -> FullGuard {
        let bucket = &self.settings.bucket;
        let tokens = (bucket.capacity() - f64::from(self.settings.lease_max_tokens)).max(0.0);
        let refill_ms = ((bucket.capacity() - tokens) * 1000.0 / bucket.per_sec()).ceil();
        // A float past i64's range saturates: no item is that old, so the guard never holds.
        let refill_ms = refill_ms as i64;
        FullGuard {
            tokens,
            updated_at_ms: now_ms.saturating_sub(refill_ms).saturating_sub(1),
        }
    }

    async fn write(
        &self,
        client_id: &str,
        seen: &Seen,
        next: &BucketState,
        expires_at_s: i64,
        full: Option<FullGuard>,
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
        let exact = match seen.version {
            Version::Absent => Some("attribute_not_exists(pk)"),
            Version::At(seen_ms) => {
                put = put.expression_attribute_values(":seen", nv(seen_ms));
                Some("updated_at = :seen")
            }
            Version::Corrupt => None,
        };
        put = match (exact, full) {
            (None, _) => put,
            (Some(exact), None) => put.condition_expression(exact),
            (Some(exact), Some(guard)) => put
                .condition_expression(format!("{exact} OR {FULL_CONDITION}"))
                // Rounded up: a guard rounded down could hold on a bucket a hair short.
                .expression_attribute_values(
                    ":full",
                    nv(format!("{:.6}", (guard.tokens * 1e6).ceil() / 1e6)),
                )
                .expression_attribute_values(":quiet", nv(guard.updated_at_ms)),
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
    fn check<'a>(&'a self, client_id: &'a str, cost: u32) -> BoxFuture<'a, RateDecision> {
        Box::pin(self.decide_cost(client_id, cost))
    }
}
