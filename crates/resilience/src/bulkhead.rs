//! Bulkhead: a cap on concurrent calls to one dependency (seed 004 §1 and §5).
//!
//! - **What it counts:** calls in flight to the dependency, with a tokio [`Semaphore`] of
//!   `capacity` permits (32 for core-api reads, 16 for writes, 8 for screening-sim and OpenAI).
//! - **When it trips:** when every permit is taken and none frees up within the configured wait
//!   (0–50 ms). It never queues beyond that wait: a full bulkhead fails fast.
//! - **What it returns:** a [`BulkheadPermit`], an owned guard that returns its permit when
//!   dropped, so a finished, cancelled or panicking call always gives it back (pitfall 12);
//!   or [`BulkheadFull`], which the gateway maps to the tool error `overloaded`.
//! - **Neighbours:** it sits after the deadline check and before the breaker
//!   ([`crate::policy`]). A rejection here never reaches the breaker (it is not a dependency
//!   failure) and never reaches retry (it is not retried and spends no budget) — pitfall 5.
//! - **Adaptive (opt-in, issue #33):** with [`Bulkhead::with_adaptive`] the semaphore keeps
//!   `capacity` permits but a call that would put more than the [`AdaptiveLimit`]'s current
//!   limit in flight is refused at once, without waiting; the policy feeds the limit each
//!   attempt's latency through [`Bulkhead::observe`]. [`Bulkhead::capacity`] then reports
//!   the current limit.
//! - **Metrics (SPEC §12):** `bulkhead_in_flight` gauge and `bulkhead_rejected` counter, both
//!   with dimension `dependency`; `bulkhead_limit` when adaptive ([`crate::adaptive`]).
//!
//! Clones share the same semaphore: clone a bulkhead to hand it to several owners of one
//! dependency.

use std::sync::Arc;
use std::time::Duration;

use metrics::{Counter, Gauge};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::adaptive::AdaptiveLimit;
use crate::error::ConfigError;

/// Longest a caller may wait for a permit (seed 004 §5: "acquire with a timeout of 0–50 ms").
pub const MAX_WAIT: Duration = Duration::from_millis(50);

/// Bulkhead settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkheadConfig {
    /// Concurrent calls allowed, ≥ 1.
    pub capacity: usize,
    /// How long an acquire may wait for a permit, 0–50 ms.
    pub wait: Duration,
}

impl BulkheadConfig {
    /// Checks the settings: capacity in 1..=[`Semaphore::MAX_PERMITS`], wait ≤ [`MAX_WAIT`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.capacity == 0 || self.capacity > Semaphore::MAX_PERMITS {
            return Err(ConfigError::invalid(
                "bulkhead.capacity",
                "must be at least 1",
            ));
        }
        if self.wait > MAX_WAIT {
            return Err(ConfigError::invalid(
                "bulkhead.wait",
                "must be at most 50 ms",
            ));
        }
        Ok(())
    }
}

/// The bulkhead was full and no permit freed up within the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("bulkhead full")]
pub struct BulkheadFull;

/// A per-dependency concurrency cap.
#[derive(Debug, Clone)]
pub struct Bulkhead {
    semaphore: Arc<Semaphore>,
    config: BulkheadConfig,
    in_flight: Gauge,
    rejected: Counter,
    adaptive: Option<Arc<AdaptiveLimit>>,
}

impl Bulkhead {
    /// A bulkhead for `dependency` (the metrics dimension). Metric handles are registered here,
    /// so install the metrics recorder before building policies.
    pub fn try_new(dependency: &str, config: BulkheadConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let dependency = dependency.to_owned();
        Ok(Self {
            semaphore: Arc::new(Semaphore::new(config.capacity)),
            config,
            in_flight: metrics::gauge!("bulkhead_in_flight", "dependency" => dependency.clone()),
            rejected: metrics::counter!("bulkhead_rejected", "dependency" => dependency),
            adaptive: None,
        })
    }

    /// The same bulkhead, admitting at most `limit`'s current limit (≤ capacity).
    #[must_use]
    pub fn with_adaptive(mut self, limit: AdaptiveLimit) -> Self {
        self.adaptive = Some(Arc::new(limit));
        self
    }

    /// The adaptive limit, when there is one.
    pub fn adaptive(&self) -> Option<&AdaptiveLimit> {
        self.adaptive.as_deref()
    }

    /// Feeds an attempt's latency to the adaptive limit (nothing when fixed).
    pub fn observe(&self, latency: Duration) {
        if let Some(limit) = &self.adaptive {
            limit.sample(latency, self.in_flight());
        }
    }

    /// Tells the adaptive limit that an attempt timed out at its own cap (nothing when fixed).
    pub fn dropped(&self) {
        if let Some(limit) = &self.adaptive {
            limit.dropped();
        }
    }

    /// Whether the permit just taken put more calls in flight than the adaptive limit.
    fn over_limit(&self) -> bool {
        self.adaptive
            .as_ref()
            .is_some_and(|limit| self.in_flight() > limit.limit())
    }

    /// Takes a permit if one is free right now, without waiting and without counting a
    /// rejection (the policy's fast path; it falls back to [`Bulkhead::acquire`]).
    pub fn try_acquire_now(&self) -> Option<BulkheadPermit> {
        let permit = Arc::clone(&self.semaphore).try_acquire_owned().ok()?;
        if self.over_limit() {
            return None;
        }
        self.in_flight.increment(1.0);
        Some(BulkheadPermit {
            _permit: permit,
            in_flight: self.in_flight.clone(),
        })
    }

    /// Takes a permit, waiting at most the configured wait. Cancel-safe: dropping the future
    /// while it waits takes nothing.
    pub async fn acquire(&self) -> Result<BulkheadPermit, BulkheadFull> {
        let permit = match Arc::clone(&self.semaphore).try_acquire_owned() {
            Ok(permit) => Ok(permit),
            Err(TryAcquireError::Closed) => Err(BulkheadFull),
            Err(TryAcquireError::NoPermits) if self.config.wait.is_zero() => Err(BulkheadFull),
            Err(TryAcquireError::NoPermits) => {
                let waiting = Arc::clone(&self.semaphore).acquire_owned();
                match tokio::time::timeout(self.config.wait, waiting).await {
                    Ok(Ok(permit)) => Ok(permit),
                    Ok(Err(_)) | Err(_) => Err(BulkheadFull),
                }
            }
        };
        match permit {
            Ok(_) if self.over_limit() => {
                self.rejected.increment(1);
                Err(BulkheadFull)
            }
            Ok(permit) => {
                self.in_flight.increment(1.0);
                Ok(BulkheadPermit {
                    _permit: permit,
                    in_flight: self.in_flight.clone(),
                })
            }
            Err(full) => {
                self.rejected.increment(1);
                Err(full)
            }
        }
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.config
            .capacity
            .saturating_sub(self.semaphore.available_permits())
    }

    /// The configured capacity, or the adaptive limit now when there is one.
    pub fn capacity(&self) -> usize {
        self.adaptive
            .as_ref()
            .map_or(self.config.capacity, |limit| limit.limit())
    }
}

/// One bulkhead slot, returned to the bulkhead when dropped.
#[derive(Debug)]
#[must_use = "the permit is released as soon as it is dropped"]
pub struct BulkheadPermit {
    _permit: OwnedSemaphorePermit,
    in_flight: Gauge,
}

impl Drop for BulkheadPermit {
    fn drop(&mut self) {
        self.in_flight.decrement(1.0);
    }
}

#[cfg(test)]
mod tests;
