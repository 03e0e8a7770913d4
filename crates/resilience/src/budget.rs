//! Retry budget: a token bucket per dependency that caps retries at about 10 % of successful
//! traffic (seed 004 §3; the design of Finagle's `RetryBudget` and tower's `TpsBudget`).
//!
//! Why a budget rather than max-attempts alone: max-attempts bounds the retries of one call,
//! but when a dependency is failing *every* call retries, and three attempts per call triple
//! the load on the dependency exactly when it can least bear it. A budget bounds retries as a
//! share of the whole traffic: when most calls fail, the bucket empties and retries stop.
//!
//! - **What it counts:** tokens in integer milli-tokens, never floats (pitfall 9). Each
//!   successful logical call deposits [`DEPOSIT_MILLI`] (0.1 token); each retry withdraws
//!   [`WITHDRAW_MILLI`] (1 token). The earned balance is capped at `cap_tokens` (default 10).
//!   A separate *floor* bucket refills with time at `min_retries_per_sec` (default 1) and holds
//!   at most one second's worth, so a quiet dependency still gets a retry now and then and
//!   recovers after idle (pitfall 10). The earned bucket starts empty; the floor starts full.
//! - **When it trips:** [`RetryBudget::try_withdraw`] returns `false` when neither bucket holds
//!   a whole token; the caller then returns its last error instead of retrying. Under 100 %
//!   failures nothing is deposited, so the earned bucket empties and only the floor rate
//!   remains (pitfall 8); one success in ten refills a retry.
//! - **What it returns:** booleans; the `retry_budget_exhausted` counter (dimension
//!   `dependency`, SPEC §12) counts refusals.
//! - **Neighbours:** only [`crate::retry`] touches it, after a call failed with a retryable
//!   error. Bulkhead and breaker rejections happen before retry and never withdraw (pitfall 5).

use std::sync::atomic::{AtomicU64, Ordering};

use metrics::Counter;
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::error::ConfigError;

/// Milli-tokens deposited by one successful call (0.1 token).
pub const DEPOSIT_MILLI: u64 = 100;
/// Milli-tokens withdrawn by one retry (1 token).
pub const WITHDRAW_MILLI: u64 = 1_000;

/// Retry budget settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetConfig {
    /// Most whole tokens the earned bucket holds, 1..=1,000,000 (default 10).
    pub cap_tokens: u32,
    /// Retries per second always allowed regardless of traffic (default 1; 0 disables).
    pub min_retries_per_sec: u32,
}

impl BudgetConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.cap_tokens == 0 || self.cap_tokens > 1_000_000 {
            return Err(ConfigError::invalid(
                "budget.cap_tokens",
                "must be in 1..=1000000",
            ));
        }
        if self.min_retries_per_sec > 1_000_000 {
            return Err(ConfigError::invalid(
                "budget.min_retries_per_sec",
                "must be at most 1000000",
            ));
        }
        Ok(())
    }
}

#[derive(Debug)]
struct Floor {
    milli: u64,
    refilled_at: Instant,
}

/// Milli-tokens earned by calls and spent by extra requests: the part of a budget that
/// scales with traffic, shared by the retry budget here and the hedge budget of
/// [`crate::hedge`] (each policy has its own of each: they share nothing, pitfall 27).
#[derive(Debug)]
pub struct EarnedTokens {
    milli: AtomicU64,
    cap_milli: u64,
    deposit_milli: u64,
}

impl EarnedTokens {
    /// An empty bucket holding at most `cap_milli`, earning `deposit_milli` per deposit.
    pub fn new(cap_milli: u64, deposit_milli: u64) -> Self {
        Self {
            milli: AtomicU64::new(0),
            cap_milli,
            deposit_milli,
        }
    }

    /// Adds one deposit, up to the cap.
    pub fn deposit(&self) {
        let cap = self.cap_milli;
        if self.milli.load(Ordering::Relaxed) >= cap {
            return;
        }
        let deposit = self.deposit_milli;
        let _ = self
            .milli
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |v| {
                Some(v.saturating_add(deposit).min(cap))
            });
    }

    /// Takes one whole token ([`WITHDRAW_MILLI`]) if the bucket holds one.
    pub fn try_withdraw(&self) -> bool {
        self.milli
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |v| {
                v.checked_sub(WITHDRAW_MILLI)
            })
            .is_ok()
    }

    /// The balance, milli-tokens.
    pub fn milli(&self) -> u64 {
        self.milli.load(Ordering::Acquire)
    }
}

/// A per-dependency retry budget. Shared by reference (`&self` everywhere).
#[derive(Debug)]
pub struct RetryBudget {
    earned: EarnedTokens,
    floor: Mutex<Floor>,
    /// Floor refill rate in milli-tokens per second (= retries per second × 1000).
    floor_rate: u64,
    exhausted: Counter,
}

impl RetryBudget {
    /// A budget for `dependency` (metrics dimension).
    pub fn try_new(dependency: &str, config: BudgetConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let floor_rate = u64::from(config.min_retries_per_sec) * WITHDRAW_MILLI;
        Ok(Self {
            earned: EarnedTokens::new(u64::from(config.cap_tokens) * 1_000, DEPOSIT_MILLI),
            floor: Mutex::new(Floor {
                milli: floor_rate,
                refilled_at: Instant::now(),
            }),
            floor_rate,
            exhausted: metrics::counter!("retry_budget_exhausted", "dependency" => dependency.to_owned()),
        })
    }

    /// Records one successful logical call: +0.1 token, up to the cap.
    pub fn deposit(&self) {
        self.earned.deposit();
    }

    /// Takes one token for a retry, from the earned bucket first, then the floor. `false`
    /// means no retry is allowed now (and counts `retry_budget_exhausted`).
    pub fn try_withdraw(&self) -> bool {
        if self.earned.try_withdraw() || self.withdraw_floor() {
            return true;
        }
        self.exhausted.increment(1);
        false
    }

    fn withdraw_floor(&self) -> bool {
        if self.floor_rate == 0 {
            return false;
        }
        let now = Instant::now();
        let mut floor = self.floor.lock();
        let elapsed_ns = now.saturating_duration_since(floor.refilled_at).as_nanos();
        // milli gained = elapsed_s × rate = elapsed_ns × rate / 1e9, kept exact in integers.
        let gained = elapsed_ns.saturating_mul(u128::from(self.floor_rate)) / 1_000_000_000;
        let gained = u64::try_from(gained).unwrap_or(u64::MAX);
        let filled = floor.milli.saturating_add(gained);
        if filled >= self.floor_rate {
            floor.milli = self.floor_rate;
            floor.refilled_at = now;
        } else if gained > 0 {
            // Advance the refill mark only by the time actually converted into milli-tokens,
            // so sub-milli remainders are not lost between calls.
            let used_ns = u128::from(gained) * 1_000_000_000 / u128::from(self.floor_rate);
            let used = std::time::Duration::from_nanos(u64::try_from(used_ns).unwrap_or(u64::MAX));
            floor.refilled_at += used;
            floor.milli = filled;
        }
        if floor.milli >= WITHDRAW_MILLI {
            floor.milli -= WITHDRAW_MILLI;
            true
        } else {
            false
        }
    }

    /// The earned balance in milli-tokens (excluding the floor).
    pub fn earned_milli(&self) -> u64 {
        self.earned.milli()
    }
}

#[cfg(test)]
mod tests;
