//! Hedged reads: when an attempt of an idempotent read has not answered after the
//! dependency's recent latency percentile, send one duplicate; the first good answer wins
//! (seed 002 "Request hedging": speculative duplicates on slowness; issue #33).
//!
//! - **What it counts:** the latency of recent attempts in a [`LatencyHistogram`] per
//!   dependency and instance (p95 by default; no hedge before `min_samples`), and a hedge
//!   budget in integer milli-tokens ([`EarnedTokens`]): each hedgeable logical call deposits
//!   `budget_pct` × 10 milli-tokens (50 = 0.05 token at 5 %), each hedge withdraws one token,
//!   so over time hedges stay at or below `budget_pct` % of calls; the balance is capped at
//!   `cap_tokens` and starts empty, with no floor (a hedge is never needed to make progress).
//! - **When it fires** ([`crate::policy`]'s attempt, `policy/hedged.rs`): only for
//!   [`crate::retry::Idempotency::Idempotent`] calls of a policy built with hedging (the
//!   gateway: core-api reads, never writes, never screening); when the attempt is still
//!   pending at `start + delay`; and only if all hold, checked in this order: the breaker is
//!   closed and the call is not a half-open probe (a hedge never passes an open breaker); the
//!   deadline leaves a worthwhile attempt (at least the retry's `min_attempt` after the
//!   margin: a hedge never starts past the deadline); the bulkhead has a free slot now (no
//!   waiting: a full bulkhead means more load is the wrong answer); the hedge budget grants a
//!   token (last, so tokens are spent only on hedges sent).
//! - **What it returns:** the first `Ok` of the two; when one fails the other is awaited;
//!   when both fail, the last answered error (or the timeout) goes to the retry rules as the
//!   attempt's result. The loser is dropped, which cancels its request and releases its
//!   bulkhead slot (pitfall 12). The breaker sees one outcome per logical call: the policy
//!   records it once, after retries, as before.
//! - **Hedges are not retries (pitfall 27):** a hedge has the attempt's number (flagged
//!   [`crate::policy::Attempt::hedge`]), does not advance the attempt count, spends the hedge
//!   budget and never the retry budget; the two share nothing but the deadline.
//! - **Metrics (SPEC §12):** `hedges{dependency, outcome}`: `won` (the hedge's answer was
//!   used), `lost` (the primary answered first, or both failed), `budget_exhausted` (due but
//!   the budget was empty), `refused` (due but the breaker, deadline or bulkhead said no).
//!
//! ## Environment overrides
//!
//! With the policy's prefix (`KOSHA_POLICY_CORE_API_READ`, …): `_HEDGE_PERCENTILE` (per
//! mille, 500–999, default 950; 0 turns hedging off), `_HEDGE_MIN_SAMPLES` (default 50),
//! `_HEDGE_WINDOW` (samples before the histogram halves, default 1000),
//! `_HEDGE_BUDGET_PCT` (1–50, default 5), `_HEDGE_CAP_TOKENS` (1–1000, default 10).

use std::time::Duration;

use metrics::Counter;

use crate::budget::EarnedTokens;
use crate::config::Env;
use crate::error::ConfigError;
use crate::latency::LatencyHistogram;

/// Hedge settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HedgeConfig {
    /// The latency percentile after which a hedge is sent, per mille (950 = p95), 500..=999.
    pub percentile: u32,
    /// Samples needed before any hedge, ≥ 1.
    pub min_samples: u32,
    /// Samples held before the histogram halves, 10..=100 000.
    pub window: u32,
    /// Hedges as a share of hedgeable calls, percent, 1..=50.
    pub budget_pct: u32,
    /// Most whole tokens the hedge budget holds, 1..=1000.
    pub cap_tokens: u32,
}

impl HedgeConfig {
    /// p95, 50 samples, a 1000-sample window, 5 %, 10 tokens (issue #33).
    pub const DEFAULT: Self = Self {
        percentile: 950,
        min_samples: 50,
        window: 1_000,
        budget_pct: 5,
        cap_tokens: 10,
    };

    /// Checks the settings.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the setting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(500..=999).contains(&self.percentile) {
            return Err(ConfigError::invalid(
                "hedge.percentile",
                "must be in 500..=999 (per mille)",
            ));
        }
        if self.min_samples == 0 {
            return Err(ConfigError::invalid(
                "hedge.min_samples",
                "must be at least 1",
            ));
        }
        if !(10..=100_000).contains(&self.window) {
            return Err(ConfigError::invalid(
                "hedge.window",
                "must be in 10..=100000",
            ));
        }
        if !(1..=50).contains(&self.budget_pct) {
            return Err(ConfigError::invalid(
                "hedge.budget_pct",
                "must be in 1..=50",
            ));
        }
        if !(1..=1_000).contains(&self.cap_tokens) {
            return Err(ConfigError::invalid(
                "hedge.cap_tokens",
                "must be in 1..=1000",
            ));
        }
        Ok(())
    }

    /// [`HedgeConfig::DEFAULT`] with `<prefix>_HEDGE_*` overrides read through `lookup`;
    /// `Ok(None)` when `<prefix>_HEDGE_PERCENTILE` is 0 (hedging off).
    ///
    /// # Errors
    /// [`ConfigError::Parse`] for a non-integer, [`ConfigError::Env`] for a value out of
    /// range.
    pub fn from_lookup(
        prefix: &'static str,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, ConfigError> {
        let env = Env {
            prefix,
            lookup: &lookup,
        };
        let mut c = Self::DEFAULT;
        env.int("HEDGE_PERCENTILE", &mut c.percentile)?;
        if c.percentile == 0 {
            return Ok(None);
        }
        env.int("HEDGE_MIN_SAMPLES", &mut c.min_samples)?;
        env.int("HEDGE_WINDOW", &mut c.window)?;
        env.int("HEDGE_BUDGET_PCT", &mut c.budget_pct)?;
        env.int("HEDGE_CAP_TOKENS", &mut c.cap_tokens)?;
        c.validate().map_err(|e| env.wrap(e))?;
        Ok(Some(c))
    }
}

/// How a due hedge ended, for `hedges{outcome}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HedgeOutcome {
    /// The hedge's answer was used.
    Won,
    /// The primary answered first, or both failed.
    Lost,
    /// Due, but the hedge budget was empty.
    BudgetExhausted,
    /// Due, but the breaker, the deadline or the bulkhead refused it.
    Refused,
}

/// One dependency's hedging state: latency histogram, budget and counters.
#[derive(Debug)]
pub struct Hedger {
    config: HedgeConfig,
    latency: LatencyHistogram,
    budget: EarnedTokens,
    won: Counter,
    lost: Counter,
    budget_exhausted: Counter,
    refused: Counter,
}

impl Hedger {
    /// Hedging for `dependency` (the metric dimension). Metric handles are registered here.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] when `config` does not validate.
    pub fn try_new(dependency: &str, config: HedgeConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let counter = |outcome: &'static str| metrics::counter!("hedges", "dependency" => dependency.to_owned(), "outcome" => outcome);
        Ok(Self {
            latency: LatencyHistogram::new(config.window),
            budget: EarnedTokens::new(
                u64::from(config.cap_tokens) * 1_000,
                u64::from(config.budget_pct) * 10,
            ),
            won: counter("won"),
            lost: counter("lost"),
            budget_exhausted: counter("budget_exhausted"),
            refused: counter("refused"),
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &HedgeConfig {
        &self.config
    }

    /// Records a hedgeable logical call (earns the budget its share).
    pub fn on_call(&self) {
        self.budget.deposit();
    }

    /// Records how long an attempt took (or had run when it was cancelled).
    pub fn record(&self, latency: Duration) {
        self.latency.record(latency);
    }

    /// How long after its start an attempt is hedged: the configured percentile of recent
    /// latencies; `None` before `min_samples`.
    pub fn delay(&self) -> Option<Duration> {
        self.latency
            .percentile(self.config.percentile, self.config.min_samples)
    }

    /// Takes a token for one hedge; `false` (counted `budget_exhausted`) when empty.
    pub fn try_spend(&self) -> bool {
        if self.budget.try_withdraw() {
            return true;
        }
        self.count(HedgeOutcome::BudgetExhausted);
        false
    }

    /// The budget's balance, milli-tokens.
    pub fn budget_milli(&self) -> u64 {
        self.budget.milli()
    }

    /// Counts one `hedges{outcome}`.
    pub fn count(&self, outcome: HedgeOutcome) {
        match outcome {
            HedgeOutcome::Won => self.won.increment(1),
            HedgeOutcome::Lost => self.lost.increment(1),
            HedgeOutcome::BudgetExhausted => self.budget_exhausted.increment(1),
            HedgeOutcome::Refused => self.refused.increment(1),
        }
    }
}

#[cfg(test)]
mod tests;
