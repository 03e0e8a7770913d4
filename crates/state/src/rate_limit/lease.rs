//! Leases (SPEC §6): tokens one write took from a client's bucket item ahead of use, spent
//! locally one call at a time, and how many to ask for next.
//!
//! - A [`Lease`] holds whole tokens already debited from the item. It ends at the first of
//!   two deadlines: the wall clock's (epoch ms: an instance frozen past it, a Lambda thawed
//!   later, finds it over on its first call) and tokio's monotonic clock's (a wall clock set
//!   back does not make it last longer). What is left at the end is dropped, never handed
//!   back: the item already holds `refilled − granted`, so the loss is under-admission only.
//! - [`Demand`] is the client's recent spending on this instance, an exponentially weighted
//!   rate with the lease duration as its time constant, on the wall clock (a clock set back
//!   decays nothing; one jumping ahead only makes the next lease smaller). The average
//!   starts from zero, so while a run of spending is younger than a few windows it is scaled
//!   up by the share of a steady rate it can have reached (observed over at least 1 s): a
//!   client whose calls arrive at a fresh instance (a Lambda cold start, or calls moving
//!   between instances) gets leases sized to its rate after a second, not after five. The
//!   next grant asks for what that rate spends over one lease duration, this call included
//!   ([`Demand::want`]): a client that calls rarely asks for its call's cost alone (g = 1 for
//!   a cost of 1), one calling once a second with 5 s leases asks for 5.

use std::time::Duration;

use tokio::time::Instant;

/// Tokens held for one client, already debited from its bucket item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lease {
    tokens: u32,
    /// Wall-clock end, epoch ms.
    until_ms: i64,
    /// Monotonic end.
    until: Instant,
}

impl Lease {
    /// A lease of `tokens` from `now_ms` (wall clock) and `now` (tokio's clock) for
    /// `duration`; `None` for no tokens.
    pub fn new(tokens: u32, now_ms: i64, now: Instant, duration: Duration) -> Option<Self> {
        let ms = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        (tokens > 0).then(|| Self {
            tokens,
            until_ms: now_ms.saturating_add(ms),
            until: now + duration,
        })
    }

    /// Tokens left at `now_ms` and `now`: none once either deadline has passed.
    pub fn left(&self, now_ms: i64, now: Instant) -> u32 {
        if now_ms >= self.until_ms || now >= self.until {
            0
        } else {
            self.tokens
        }
    }

    /// Tokens held, whatever the clocks say.
    pub fn tokens(&self) -> u32 {
        self.tokens
    }

    /// The same lease holding `tokens` (`None` for none).
    pub fn with_tokens(self, tokens: u32) -> Option<Self> {
        (tokens > 0).then_some(Self { tokens, ..self })
    }

    /// The lease after spending `cost` tokens (`None` when none are left).
    pub fn spent(self, cost: u32) -> Option<Self> {
        let tokens = self.tokens.saturating_sub(cost);
        (tokens > 0).then_some(Self { tokens, ..self })
    }
}

/// Tokens left in `lease` at `now_ms` and `now` (0 without one).
pub fn left(lease: Option<&Lease>, now_ms: i64, now: Instant) -> u32 {
    lease.map_or(0, |l| l.left(now_ms, now))
}

/// The least span of spending [`Demand`] scales its estimate up from, ms: a run's first calls
/// 100 ms apart read as one a second each, not ten.
const MIN_OBSERVED_MS: i64 = 1_000;

/// Spends a run needs before [`Demand`] scales its estimate up. Fewer say little about the
/// rate: a client whose calls are spread over many instances (random routing over 16 in
/// the fleet simulator's `rate` scenario, each instance seeing one call every 4 s) would
/// have every instance lease for a scaled-up guess, and under-admission rose from 2.3 % to
/// 8.7 % of its allowed calls when runs of 2 were scaled.
const MIN_SPENDS: u32 = 4;

/// Windows without a spend after which the next spend starts a new run (the rate has decayed
/// to e⁻³, 5 %, of what it was).
const IDLE_WINDOWS: i64 = 3;

/// One client's recent spending on this instance, in tokens per second.
#[derive(Debug, Clone, Copy, Default)]
pub struct Demand {
    rate: f64,
    /// The last spend, epoch ms.
    at_ms: Option<i64>,
    /// The first spend of the current run (spends with less than [`IDLE_WINDOWS`] windows
    /// between them), epoch ms.
    since_ms: Option<i64>,
    /// Spends in the current run.
    spends: u32,
}

impl Demand {
    /// The rate at `now_ms`: the average decayed with time constant `window` since the last
    /// spend, scaled up by the share of a steady rate it can have reached since the run began
    /// (`1 − e^(−t/window)` after t, at least [`MIN_OBSERVED_MS`]), once the run has
    /// [`MIN_SPENDS`]. The average starts from 0, so without this a client calling 10 times
    /// a second through a fresh instance reads as 1.8 a second after 1 s, and its first
    /// leases are a fifth of its demand.
    fn rate_at(&self, now_ms: i64, window: Duration) -> f64 {
        let average = self.average_at(now_ms, window);
        let (Some(at), Some(since)) = (self.at_ms, self.since_ms) else {
            return average;
        };
        if self.spends < MIN_SPENDS {
            return average;
        }
        // From the run's start to now, or to the last spend when the wall clock was set back.
        let observed = now_ms.max(at).saturating_sub(since).max(MIN_OBSERVED_MS) as f64 / 1000.0;
        average / (1.0 - (-observed / window.as_secs_f64().max(1e-3)).exp())
    }

    /// The average alone, decayed to `now_ms` (what [`Self::record`] adds to).
    fn average_at(&self, now_ms: i64, window: Duration) -> f64 {
        match self.at_ms {
            None => 0.0,
            Some(at) => {
                let elapsed = now_ms.saturating_sub(at).max(0) as f64 / 1000.0;
                self.rate * (-elapsed / window.as_secs_f64().max(1e-3)).exp()
            }
        }
    }

    /// Whole tokens this client is expected to spend over the next `window`, a call of
    /// `cost` at `now_ms` included: `floor(rate · window + cost)`, at least `cost`.
    pub fn want(&self, cost: u32, now_ms: i64, window: Duration) -> u32 {
        let expected = self.rate_at(now_ms, window) * window.as_secs_f64() + f64::from(cost);
        // The epsilon keeps an exact product (5 calls of 1 at 1/s) from rounding down to 4.
        let whole = (expected + 1e-9).floor().min(f64::from(u32::MAX));
        (whole as u32).max(cost)
    }

    /// Records a spend of `cost` tokens at `now_ms`.
    pub fn record(&mut self, cost: u32, now_ms: i64, window: Duration) {
        let tau = window.as_secs_f64().max(1e-3);
        let idle_ms = i64::try_from(window.as_millis())
            .unwrap_or(i64::MAX)
            .saturating_mul(IDLE_WINDOWS);
        let new_run = self
            .at_ms
            .is_none_or(|at| now_ms.saturating_sub(at) >= idle_ms);
        if new_run {
            self.since_ms = Some(now_ms);
            self.spends = 0;
        }
        self.spends = self.spends.saturating_add(1);
        self.rate = self.average_at(now_ms, window) + f64::from(cost) / tau;
        self.at_ms = Some(self.at_ms.map_or(now_ms, |at| at.max(now_ms)));
    }
}

#[cfg(test)]
mod tests;
