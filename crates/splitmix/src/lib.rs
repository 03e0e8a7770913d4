//! kosha-splitmix: SplitMix64 (Steele, Lea & Flood 2014; the seeding generator of
//! `java.util.SplittableRandom` and of xoshiro), the one generator of Kosha's bundled data:
//! core-api's seed corpus and screening-sim's watchlist. A 64-bit state, one add and three
//! xor-shift-multiplies per draw, fully determined by its seed, so the same seed gives the
//! same data on every machine and build and ids stay stable. Not for anything secret.
//!
//! The two data sets were defined with different ways of turning 64 bits into an index
//! ([`Index`]); each keeps its own, so neither data set changes.
//!
//! ```
//! use kosha_splitmix::SplitMix64;
//!
//! let mut rng = SplitMix64::new(1234567);
//! assert_eq!(rng.next_u64(), 6457827717110365317); // the published C code's first value
//! assert!(rng.below(13) < 13);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// How a draw becomes an index in `0..n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// Lemire's multiply-shift (`(x · n) >> 64`); bias below 2^-50 for the small `n` used
    /// (screening-sim's watchlist).
    MultiplyShift,
    /// `x mod n`; the bias is irrelevant at these sizes (core-api's seed corpus).
    Modulo,
}

/// A seeded SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
    index: Index,
}

impl SplitMix64 {
    /// A generator starting from `seed`, drawing indices by [`Index::MultiplyShift`].
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self::with_index(seed, Index::MultiplyShift)
    }

    /// A generator starting from `seed`, drawing indices by `index`.
    #[must_use]
    pub fn with_index(seed: u64, index: Index) -> Self {
        SplitMix64 { state: seed, index }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in `0..n` (`0` when `n == 0`).
    fn below_u64(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let x = self.next_u64();
        match self.index {
            Index::MultiplyShift => {
                u64::try_from((u128::from(x) * u128::from(n)) >> 64).unwrap_or(0)
            }
            Index::Modulo => x % n,
        }
    }

    /// A uniform index in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        usize::try_from(self.below_u64(n)).unwrap_or(0)
    }

    /// A number in `lo..=hi` (`lo` when `hi <= lo`).
    pub fn between(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = hi.abs_diff(lo).saturating_add(1);
        lo.saturating_add_unsigned(self.below_u64(span))
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    /// A float in `[0, 1)` from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniformly chosen element of `items` (`None` if empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        items.get(self.below(items.len()))
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_known_first_values() {
        let mut a = SplitMix64::new(1234567);
        let mut b = SplitMix64::with_index(1234567, Index::Modulo);
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        // Reference values of the published C code for seeds 1234567 and 0.
        assert_eq!(xs[0], 6457827717110365317);
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn draws_stay_in_range_in_both_index_modes() {
        for index in [Index::MultiplyShift, Index::Modulo] {
            let mut r = SplitMix64::with_index(7, index);
            assert!((0..10_000).all(|_| r.below(13) < 13));
            assert_eq!(r.below(0), 0);
            assert!((0..1_000).all(|_| (-3..=3).contains(&r.between(-3, 3))));
            assert_eq!(r.between(5, 5), 5);
            assert!((0..1_000).all(|_| (0.0..1.0).contains(&r.unit())));
            assert_eq!(r.pick::<u8>(&[]), None);
        }
    }

    #[test]
    fn the_index_modes_draw_differently_from_the_same_bits() {
        // x = the first draw of seed 1234567; Modulo gives x % 1000, MultiplyShift the top.
        let x: u64 = 6457827717110365317;
        assert_eq!(
            SplitMix64::with_index(1234567, Index::Modulo).below(1000),
            usize::try_from(x % 1000).unwrap()
        );
        assert_eq!(
            SplitMix64::new(1234567).below(1000),
            usize::try_from((u128::from(x) * 1000) >> 64).unwrap()
        );
    }
}
