//! A small decaying latency histogram per dependency and instance: how long recent attempts
//! took, for the hedge delay ([`crate::hedge`]; issue #33).
//!
//! - **What it counts:** attempt durations in [`BUCKETS`] log-linear buckets of whole
//!   microseconds (exact below 8 µs, then four buckets per doubling, so a bucket is at most
//!   25 % wide; the last bucket holds everything from about 29 s up). Counts are integers.
//! - **Decay:** when the histogram holds `window` samples, every count is halved (rounding
//!   down), so the older half of the history weighs half as much; an idle dependency keeps its
//!   last picture (decay is by samples, not by time, so a frozen Lambda instance loses
//!   nothing).
//! - **What it returns:** [`LatencyHistogram::percentile`] gives the *upper* bound of the
//!   bucket holding the q-th sample (so a hedge fires a little late rather than early), or
//!   `None` while fewer than `min_samples` are held.
//! - **Concurrency:** one `parking_lot::Mutex` over a fixed array, held for one increment or
//!   one scan of the array, never across an await; nothing allocates after construction.

use std::time::Duration;

use parking_lot::Mutex;

/// Buckets in the histogram; the last upper bound is 2²⁵ µs ≈ 33.5 s.
pub const BUCKETS: usize = 96;

/// The bucket of a duration of `micros` µs.
fn bucket(micros: u64) -> usize {
    if micros < 4 {
        // Exact: 0, 1, 2, 3 µs.
        return usize::try_from(micros).unwrap_or(0);
    }
    let e = 63 - u64::from(micros.leading_zeros()); // floor(log2), ≥ 2
    let sub = (micros >> (e - 2)) & 3;
    let index = 4 * (e - 1) + sub;
    usize::try_from(index).map_or(BUCKETS - 1, |i| i.min(BUCKETS - 1))
}

/// Exclusive upper bound of bucket `index`, µs.
fn upper_micros(index: usize) -> u64 {
    if index < 4 {
        return index as u64 + 1;
    }
    let (e, sub) = (index as u64 / 4 + 1, index as u64 % 4);
    (5 + sub) << (e - 2)
}

#[derive(Debug)]
struct Counts {
    buckets: [u32; BUCKETS],
    total: u32,
}

/// The recent latencies of one dependency.
#[derive(Debug)]
pub struct LatencyHistogram {
    counts: Mutex<Counts>,
    window: u32,
}

impl LatencyHistogram {
    /// An empty histogram that halves itself every `window` samples (≥ 2; smaller values
    /// are raised to 2).
    pub fn new(window: u32) -> Self {
        Self {
            counts: Mutex::new(Counts {
                buckets: [0; BUCKETS],
                total: 0,
            }),
            window: window.max(2),
        }
    }

    /// Records one attempt that took `d`.
    pub fn record(&self, d: Duration) {
        let index = bucket(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        let mut c = self.counts.lock();
        if let Some(slot) = c.buckets.get_mut(index) {
            *slot = slot.saturating_add(1);
        }
        c.total = c.total.saturating_add(1);
        if c.total >= self.window {
            let mut total = 0u32;
            for slot in &mut c.buckets {
                *slot /= 2;
                total = total.saturating_add(*slot);
            }
            c.total = total;
        }
    }

    /// Samples held now (after decay).
    pub fn samples(&self) -> u32 {
        self.counts.lock().total
    }

    /// The `per_mille`-th percentile (950 = p95, 1..=1000), as the upper bound of its
    /// bucket; `None` while fewer than `min_samples` (at least 1) samples are held.
    pub fn percentile(&self, per_mille: u32, min_samples: u32) -> Option<Duration> {
        let c = self.counts.lock();
        if c.total < min_samples.max(1) {
            return None;
        }
        // The rank of the sample wanted, 1-based: ceil(total × q).
        let rank = (u64::from(c.total) * u64::from(per_mille.clamp(1, 1000))).div_ceil(1000);
        let mut seen = 0u64;
        for (index, count) in c.buckets.iter().enumerate() {
            seen += u64::from(*count);
            if seen >= rank {
                return Some(Duration::from_micros(upper_micros(index)));
            }
        }
        Some(Duration::from_micros(upper_micros(BUCKETS - 1)))
    }
}

#[cfg(test)]
mod tests;
