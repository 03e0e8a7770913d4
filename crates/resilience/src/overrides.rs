//! Fleet-wide forced-open overrides (seed 004 §4, SPEC §8).
//!
//! An operator sets item `breaker#<dependency>` in the state table; every instance's breaker for
//! that dependency then reports `ForcedOpen` and rejects calls until the item is cleared or
//! its `expires_at` passes. The breaker only asks an [`OverrideSource`] for the current value;
//! the source owns caching and refresh (the DynamoDB source reads at most every 5 s per
//! instance and keeps the last value for 60 s when reads fail; only
//! [`OverrideSource::ensure_fresh`] waits on I/O, bounded).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::rate_limit::BoxFuture;

/// An operator's forced-open override for one dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForcedOpen {
    /// Free text from the operator (`--reason`).
    pub reason: String,
    /// Who set it (`--operator`, default the local user).
    pub set_by: String,
    /// When it was set, epoch seconds.
    pub set_at: i64,
    /// When it stops applying, epoch seconds; `None` = until cleared.
    pub expires_at: Option<i64>,
}

/// Where breakers read forced-open overrides from.
///
/// `current` is called on the request path of every protected call, so it must be cheap and
/// must never wait on I/O: implementations serve from a cache and refresh it lazily.
pub trait OverrideSource: Send + Sync + 'static {
    /// The override in force for `dependency` now, if any.
    fn current(&self, dependency: &str) -> Option<ForcedOpen>;

    /// Waits, when needed, until [`OverrideSource::current`] answers from a read recent enough
    /// to admit a protected call on (SPEC §8: an instance whose last read is older than 5 s —
    /// busy, idle, new or thawed — reads before it admits a protected call; callers run this
    /// beside the call's rate-limit write so it adds no round trip). Bounded: at most 100 ms
    /// while a value less than 60 s old is held, at most 1 s when none is. Returns at once
    /// when a fresh read is cached or a read was just tried and failed. In-memory sources
    /// have nothing to wait for.
    fn ensure_fresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// No overrides ever: the default when no state table is configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoOverrides;

impl OverrideSource for NoOverrides {
    fn current(&self, _dependency: &str) -> Option<ForcedOpen> {
        None
    }
}

/// An in-memory source, set and cleared directly: for tests and local tools.
#[derive(Debug, Default, Clone)]
pub struct StaticOverrides {
    inner: Arc<RwLock<HashMap<String, ForcedOpen>>>,
}

impl StaticOverrides {
    /// Forces `dependency` open until [`StaticOverrides::clear`].
    pub fn force_open(&self, dependency: &str, forced: ForcedOpen) {
        self.inner.write().insert(dependency.to_owned(), forced);
    }

    /// Removes any override on `dependency`.
    pub fn clear(&self, dependency: &str) {
        self.inner.write().remove(dependency);
    }
}

impl OverrideSource for StaticOverrides {
    fn current(&self, dependency: &str) -> Option<ForcedOpen> {
        self.inner.read().get(dependency).cloned()
    }
}
