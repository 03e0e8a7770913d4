//! Read first: a turn (or a renewal) reads the client's item before writing when its cache
//! cannot be trusted, because a write over a stale item fails and a failed conditional write
//! is billed as a write.
//!
//! - **When:** the instance is Cold for the client (a Lambda instance's first call for it, or
//!   any after the cache of clients started over): a conditional create would fail on every
//!   client whose item exists, costing a failed write where a read costs a read request unit.
//!   Where no item exists (a new client, or one idle past the item's TTL deletion) the read
//!   was not needed and the call takes two round trips instead of one. Or the client is
//!   Contended: within [`CONTENDED`] (tokio's clock) this instance saw another instance's
//!   write (a write over its cached item lost, or a read found a newer item). A client whose
//!   calls spread over instances keeps their caches stale; reading first, its turns lose a
//!   race only to a write landing between the read and the write.
//! - **Otherwise** the cache is trusted: a client alone on an instance reads once, cold, and
//!   again only after its own write was seen to lose (a write that timed out but landed loses
//!   the next compare-and-set, which reads as contention).
//! - **Returns** the item read, cached in the slot, or `None` when no read was due; a read
//!   that fails or times out is a [`StoreFailure`], failed open as a write's is. A read's
//!   answer does not clear Failing (reads may work while writes fail); only a write's does.
//! - **Cost:** one more round trip in a turn. A contended turn takes two, as a lost race did,
//!   even when the full-bucket condition ([`super::store`]) would have let the write hold
//!   alone.

use std::time::Duration;

use super::DynamoRateLimiter;
use super::key::BucketKey;
use super::seen::Seen;
use super::slot::{Learned, Slot};
use super::store::StoreFailure;

/// How long after an instance last saw another instance's write to a client's item its turns
/// for that client read the item before writing: six default lease durations, so a client
/// whose calls spread over instances stays contended between its turns, and one whose calls
/// moved to one instance stops paying the read soon after.
pub(super) const CONTENDED: Duration = Duration::from_secs(30);

impl DynamoRateLimiter {
    /// Reads the client's item (consistently, bounded by the call timeout) when the turn
    /// must: Cold or Contended (module doc). Records what it found in `slot` and returns it;
    /// `Ok(None)` when no read was due.
    pub(super) async fn read_first(
        &self,
        key: &BucketKey,
        slot: &Slot,
        learned: &Learned,
    ) -> Result<Option<Seen>, StoreFailure> {
        let contended = learned
            .other_wrote_at
            .is_some_and(|at| at.elapsed() < CONTENDED);
        if learned.seen.is_some() && !contended {
            return Ok(None);
        }
        // ## Cold | Contended => Read (the item read is cached; a newer one is contention)
        let item = self.read(key).await?;
        Ok(Some(slot.observed(
            learned.seen.as_ref(),
            item.as_ref(),
            false,
        )))
    }
}
