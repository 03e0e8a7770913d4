//! The `score` of a search hit: an absolute relevance in [0, 1], the same number for the same
//! article and query whatever else the answer holds, so a model can compare it across queries
//! and read a low best score as "the knowledge base does not answer this" (issue 45, SPEC §3).
//! The RRF score of [`super::fusion`] orders an answer but is not one: its top hit scores
//! 1/61 + 1/62 for every query (measured 2026-12-05).
//!
//! Two pieces of evidence, each mapped to [0, 1] by a fixed rule, never by the query's own
//! results:
//!
//! - **meaning**, [`vector`]: the cosine similarity of the query and the article's centroid
//!   (its passages' vectors summed and normalised, [`super::index`]), linear from
//!   [`COSINE_FLOOR`] (0) to [`COSINE_CEILING`] (1), clamped. The whole article rather than its
//!   best passage: on the seeded corpus with the local model (2026-12-05, the 98 queries of
//!   `benches/relevance`) the best passage of an off-topic query reached 0.212 ("how do I
//!   reverse a linked list in python") while that of an on-topic paraphrase fell to 0.193
//!   ("my parcel never showed up"); by centroid the off-topic queries reach 0.138 and the
//!   on-topic ones stay at or above 0.156. The floor is what an unrelated text scores (0.10,
//!   below every off-topic query's best article), the ceiling what a query restating an
//!   article scores (0.80, "dispute a transaction"). Another model needs its own two
//!   bounds, measured the same way (docs/embeddings.md).
//! - **words**, [`text`]: PostgreSQL's `ts_rank_cd` with normalisation 32, `rank / (rank + 1)`,
//!   already in [0, 1): how densely the query's terms cover the article; 0 when the article
//!   does not hold every term.
//!
//! [`hybrid`] joins them as independent evidence, `1 − (1 − meaning)(1 − words)`: either alone
//! counts, both count more, and the result stays in [0, 1]. A degraded (full-text) answer has
//! only the words: its score is [`text`] alone, or [`any_term`] (at most 0.5) from the any-term
//! fallback, so it reads lower than a hybrid answer's for the same article (docs/spec.md §4).

/// A query–centroid cosine at or below this is no evidence of relevance (score 0).
pub const COSINE_FLOOR: f32 = 0.10;

/// A query–centroid cosine at or above this is full evidence (score 1).
pub const COSINE_CEILING: f32 = 0.80;

/// The meaning evidence of a query–centroid cosine `similarity` (−1 to 1): 0 at or below
/// [`COSINE_FLOOR`], 1 at or above [`COSINE_CEILING`], linear between.
pub fn vector(similarity: f32) -> f64 {
    let span = f64::from(COSINE_CEILING - COSINE_FLOOR);
    ((f64::from(similarity) - f64::from(COSINE_FLOOR)) / span).clamp(0.0, 1.0)
}

/// The words evidence of a `ts_rank_cd(…, 32)` value: itself, clamped to [0, 1] (a NaN is 0).
pub fn text(rank: f64) -> f64 {
    if rank.is_nan() {
        return 0.0;
    }
    rank.clamp(0.0, 1.0)
}

/// The words evidence of an any-term answer's `ts_rank_cd(…, 32)` (a degraded answer when no
/// article holds every term): half of [`text`], at most 0.5, since some of the query's words
/// are missing from every article.
pub fn any_term(rank: f64) -> f64 {
    text(rank) * ANY_TERM_WEIGHT
}

/// The weight of an any-term match against an all-terms one.
pub const ANY_TERM_WEIGHT: f64 = 0.5;

/// The relevance of an article with query–centroid cosine `similarity` (`None`: not among the
/// vector ranking) and all-terms `rank` (`None`: it does not hold every term).
pub fn hybrid(similarity: Option<f32>, rank: Option<f64>) -> f64 {
    let meaning = similarity.map_or(0.0, vector);
    let words = rank.map_or(0.0, text);
    1.0 - (1.0 - meaning) * (1.0 - words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_maps_linearly_between_the_bounds() {
        assert_eq!(vector(-1.0), 0.0);
        assert_eq!(vector(COSINE_FLOOR), 0.0);
        assert_eq!(vector(COSINE_CEILING), 1.0);
        assert_eq!(vector(1.0), 1.0);
        let mid = vector(f32::midpoint(COSINE_FLOOR, COSINE_CEILING));
        assert!((mid - 0.5).abs() < 1e-6, "{mid}");
    }

    #[test]
    fn text_rank_is_kept_in_range() {
        assert_eq!(text(0.25), 0.25);
        assert_eq!(text(-0.1), 0.0);
        assert_eq!(text(1.5), 1.0);
        assert_eq!(text(f64::NAN), 0.0);
        assert_eq!(any_term(0.8), 0.4);
        assert_eq!(any_term(2.0), 0.5);
    }

    #[test]
    fn evidence_adds_up_and_stays_in_range() {
        assert_eq!(hybrid(None, None), 0.0);
        assert_eq!(hybrid(Some(COSINE_CEILING), None), 1.0);
        assert!((hybrid(None, Some(0.2)) - 0.2).abs() < 1e-12);
        let both = hybrid(Some(f32::midpoint(COSINE_FLOOR, COSINE_CEILING)), Some(0.2));
        assert!((both - 0.6).abs() < 1e-6, "{both}");
        assert_eq!(hybrid(Some(1.0), Some(1.0)), 1.0);
    }
}
