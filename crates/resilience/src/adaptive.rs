//! Adaptive concurrency: a bulkhead limit that finds itself from the dependency's latency
//! (Netflix concurrency-limits' `Gradient2Limit`, Envoy's adaptive concurrency filter;
//! issue #33). Opt-in (`KOSHA_ADAPTIVE_CONCURRENCY=true`), off by default everywhere: on
//! Lambda an instance serves one request at a time and gains nothing from it.
//!
//! - **What it counts:** two moving averages of attempt latency: a short one (about the last
//!   10 samples) and a long one, the baseline, which stands for the latency the dependency
//!   has when it is not queueing. The baseline never stands above the short average (it
//!   falls with it) and rises over about `long_window` samples (default 500) from samples
//!   within the tolerance, ten times slower from samples past it, so a spell of queueing does
//!   not become the new normal: a symmetric average let 100 queued samples at 5 × the
//!   baseline raise it by 70 %, and the limit then oscillated between 6 and 28 on a
//!   dependency whose best size was 8 (`scripts/bench-adaptive`). The minimum round trip of
//!   TCP Vegas and Envoy's adaptive concurrency plays the same part.
//! - **How the limit moves** (on every sample, in floats; it is a control signal, not an
//!   account):
//!   `gradient = clamp(tolerance × long / short, 0.5, 1)` (tolerance 1.5: latency may grow
//!   by half before the limit shrinks), `new = limit × gradient + √limit` (the square root
//!   is the headroom that lets it grow back), `limit = 0.8 × limit + 0.2 × new`, clamped to
//!   `[floor, max]`. So when latency triples under load the limit falls towards half its
//!   value per round of samples, and when latency is flat it grows by about √limit / 5 per
//!   sample up to the configured maximum. While fewer than half the limit's calls are in
//!   flight the limit is not raised (the dependency was not the bottleneck). When the long
//!   average is more than twice the short one (a load spike ended), it decays towards the
//!   short one so the limit can recover.
//! - **A timed-out attempt** (the dependency's own fault, not a deadline that shrank it) cuts
//!   the limit by a tenth at once ([`AdaptiveLimit::dropped`]; the backoff of Netflix's
//!   `AIMDLimit` on a drop). Latency samples only arrive as calls end, and a dependency that
//!   queues into timeouts answers few: without this the limit falls too slowly to keep the
//!   breaker from opening on the timeouts (measured: `scripts/bench-adaptive`).
//! - **What it returns:** [`AdaptiveLimit::limit`], read by [`crate::bulkhead::Bulkhead`]
//!   on every admission: a call that would make more than `limit` calls in flight is refused
//!   at once (`overloaded`), never queued, so excess load is shed fast instead of waiting
//!   into timeouts. The limit starts at `max`, so until latency rises it admits exactly what
//!   the fixed bulkhead would.
//! - **Metrics (SPEC §12):** `bulkhead_limit{dependency}` gauge, set on every change.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use metrics::Gauge;
use parking_lot::Mutex;

use crate::error::ConfigError;

/// Adaptive limit settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveConfig {
    /// Lowest limit, 1..=`max`.
    pub floor: usize,
    /// Highest limit: the bulkhead's configured capacity.
    pub max: usize,
    /// Latency growth tolerated before the limit shrinks, ≥ 1 (default 1.5).
    pub tolerance: f64,
    /// Samples the long average spans, 10..=10 000 (default 500).
    pub long_window: u32,
}

impl AdaptiveConfig {
    /// The defaults for a bulkhead of `max`: floor `max / 8` (at least 1), tolerance 1.5,
    /// a 500-sample long window.
    pub fn for_capacity(max: usize) -> Self {
        Self {
            floor: (max / 8).max(1),
            max,
            tolerance: 1.5,
            long_window: 500,
        }
    }

    /// Checks the settings.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the setting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.floor == 0 || self.floor > self.max {
            return Err(ConfigError::invalid("adaptive.floor", "must be in 1..=max"));
        }
        if !(self.tolerance >= 1.0 && self.tolerance <= 10.0) {
            return Err(ConfigError::invalid(
                "adaptive.tolerance",
                "must be in 1..=10",
            ));
        }
        if !(10..=10_000).contains(&self.long_window) {
            return Err(ConfigError::invalid(
                "adaptive.long_window",
                "must be in 10..=10000",
            ));
        }
        Ok(())
    }
}

/// Samples the short average spans.
const SHORT_WINDOW: f64 = 10.0;
/// Weight of the newly computed limit (Gradient2's smoothing).
const SMOOTHING: f64 = 0.2;
/// What a timed-out attempt leaves of the limit (Netflix `AIMDLimit`'s default backoff).
const DROP_BACKOFF: f64 = 0.9;

#[derive(Debug)]
struct Estimate {
    limit: f64,
    short_ms: f64,
    long_ms: f64,
    samples: u64,
}

/// A latency-driven concurrency limit for one dependency.
#[derive(Debug)]
pub struct AdaptiveLimit {
    config: AdaptiveConfig,
    limit: AtomicUsize,
    estimate: Mutex<Estimate>,
    gauge: Gauge,
}

impl AdaptiveLimit {
    /// A limit for `dependency` (the gauge's dimension), starting at `config.max`.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] when `config` does not validate.
    pub fn try_new(dependency: &str, config: AdaptiveConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let gauge = metrics::gauge!("bulkhead_limit", "dependency" => dependency.to_owned());
        gauge.set(config.max as f64);
        Ok(Self {
            config,
            limit: AtomicUsize::new(config.max),
            estimate: Mutex::new(Estimate {
                limit: config.max as f64,
                short_ms: 0.0,
                long_ms: 0.0,
                samples: 0,
            }),
            gauge,
        })
    }

    /// The limit now: calls in flight allowed, in `floor..=max`.
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Acquire)
    }

    /// The settings.
    pub fn config(&self) -> &AdaptiveConfig {
        &self.config
    }

    /// Feeds one attempt's latency, with `in_flight` calls in flight when it ended.
    pub fn sample(&self, latency: Duration, in_flight: usize) {
        let rtt = latency.as_secs_f64() * 1_000.0;
        let mut e = self.estimate.lock();
        e.samples += 1;
        if e.samples == 1 {
            e.short_ms = rtt;
            e.long_ms = rtt;
        } else {
            e.short_ms += (rtt - e.short_ms) / SHORT_WINDOW;
            if rtt > e.long_ms {
                // A sample within the tolerance is the dependency's normal latency; one past
                // it is queueing, learnt ten times slower (a real, lasting slow-down still
                // becomes the baseline, over ten long windows).
                let window = f64::from(self.config.long_window);
                let window = if rtt <= self.config.tolerance * e.long_ms {
                    window
                } else {
                    window * 10.0
                };
                e.long_ms += (rtt - e.long_ms) / window;
            }
            e.long_ms = e.long_ms.min(e.short_ms);
        }
        if e.short_ms <= 0.0 || e.samples < SHORT_WINDOW as u64 {
            return;
        }
        // A load spike has ended: let the baseline follow down, so the limit can recover.
        if e.long_ms > 2.0 * e.short_ms {
            e.long_ms *= 0.95;
        }
        let gradient = (self.config.tolerance * e.long_ms / e.short_ms).clamp(0.5, 1.0);
        // Not the bottleneck: do not grow a limit the traffic does not use.
        if gradient >= 1.0 && (in_flight as f64) < e.limit / 2.0 {
            return;
        }
        let new = e.limit * gradient + e.limit.sqrt();
        let (floor, max) = (self.config.floor as f64, self.config.max as f64);
        e.limit = (e.limit * (1.0 - SMOOTHING) + new * SMOOTHING).clamp(floor, max);
        self.publish(&e);
    }

    /// An attempt timed out at its own cap: the limit loses a tenth at once, down to the floor.
    pub fn dropped(&self) {
        let mut e = self.estimate.lock();
        e.limit = (e.limit * DROP_BACKOFF).max(self.config.floor as f64);
        self.publish(&e);
    }

    fn publish(&self, e: &Estimate) {
        let whole = e.limit.floor() as usize;
        if self.limit.swap(whole, Ordering::AcqRel) != whole {
            self.gauge.set(whole as f64);
        }
    }
}

#[cfg(test)]
mod tests;
