//! Reciprocal rank fusion (Cormack, Clarke & Büttcher 2009) of the full-text and vector
//! rankings, `k` = 60 (issue 13, docs/embeddings.md):
//!
//! `score(a) = Σ 1 / (60 + rank_L(a))` over the lists `L` that contain article `a` (ranks
//! from 1). First in both lists scores 2/61 ≈ 0.0328, first in one only 1/61 ≈ 0.0164. Ties
//! by article id. The score says nothing on its own; it orders one answer.

use std::collections::HashMap;

/// The `k` of RRF.
pub const RRF_K: f64 = 60.0;

/// One article's fused score.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused<'a> {
    /// The article.
    pub article_id: &'a str,
    /// Σ 1 / (60 + rank).
    pub score: f64,
}

/// Fuses `lists` (each a ranking of article ids, best first; an id at most once per list),
/// best first, at most `limit`.
pub fn rrf<'a>(lists: &[&[&'a str]], limit: usize) -> Vec<Fused<'a>> {
    let mut scores: HashMap<&'a str, f64> = HashMap::new();
    for list in lists {
        for (rank, id) in (1_u32..).zip(list.iter()) {
            *scores.entry(id).or_default() += 1.0 / (RRF_K + f64::from(rank));
        }
    }
    let mut fused: Vec<Fused<'a>> = scores
        .into_iter()
        .map(|(article_id, score)| Fused { article_id, score })
        .collect();
    fused.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.article_id.cmp(b.article_id))
    });
    fused.truncate(limit);
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_reciprocal_ranks_and_breaks_ties_by_id() {
        let fused = rrf(&[&["a", "b", "c"], &["c", "b", "d"]], 10);
        let ids: Vec<&str> = fused.iter().map(|f| f.article_id).collect();
        // b: 1/62 + 1/62; c: 1/63 + 1/61; a: 1/61; d: 1/63.
        assert_eq!(ids, ["c", "b", "a", "d"]);
        assert!((fused[1].score - 2.0 / 62.0).abs() < 1e-12);
        assert!((fused[2].score - 1.0 / 61.0).abs() < 1e-12);
        assert_eq!(rrf(&[&["b"], &["a"]], 10)[0].article_id, "a");
        assert_eq!(rrf(&[&["a", "b", "c"]], 2).len(), 2);
        assert!(rrf(&[&[], &[]], 5).is_empty());
    }
}
