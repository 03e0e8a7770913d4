//! The passage vectors of the configured model, cached per process (docs/embeddings.md "Cosine
//! in SQL or over a cached matrix": a scan of 164 × 256 floats here costs microseconds, the
//! same cosine in SQL 21 ms p50).
//!
//! - [`VectorIndex`]: one row-major `f32` matrix (passages × dimensions, every row
//!   L2-normalised by `core-api embed`, so cosine is a dot product) with each row's article,
//!   title and snippet, and each article's centroid (its passages' mean, normalised);
//!   [`VectorIndex::best_articles`] ranks articles by their best passage and gives each its
//!   centroid's similarity too, the meaning evidence of the score ([`super::relevance`]).
//! - [`IndexCache`]: the current index and the `kb.embedding_state.version` it was loaded at.
//!   Each search reads the version in its full-text transaction and reloads the rows only when
//!   it moved (or the cache is empty), so a warm instance follows `core-api embed` at no extra
//!   round trip.
//!
//! Memory: `passages × dimensions × 4` bytes (168 KB for the seed at 256 dimensions; 60 MB for
//! 10,000 passages at 1,536) — past that, pgvector with HNSW (docs/embeddings.md).

use std::sync::{Arc, PoisonError, RwLock};

/// One stored passage as loaded from `kb.passages` (see [`crate::db::vectors`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PassageRow {
    /// Its article.
    pub article_id: String,
    /// The article's title.
    pub title: String,
    /// What was embedded (title + paragraph).
    pub content: String,
    /// The stored vector.
    pub embedding: Vec<f32>,
}

/// One row's identity in the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its article.
    pub article_id: String,
    /// The article's title.
    pub title: String,
    /// The passage's snippet ([`super::passages::snippet`]).
    pub snippet: String,
    /// Its article's row in the centroid matrix.
    pub article: usize,
}

/// An article's best passage for a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VectorHit<'a> {
    /// The passage.
    pub entry: &'a Entry,
    /// Cosine similarity of the query and the passage, −1 to 1.
    pub similarity: f32,
    /// Cosine similarity of the query and the article's centroid, −1 to 1.
    pub article_similarity: f32,
}

/// The matrix of one model's passages at one version.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorIndex {
    /// `kb.embedding_state.version` it was loaded at.
    pub version: i64,
    dimensions: usize,
    entries: Vec<Entry>,
    matrix: Vec<f32>,
    /// Articles × dimensions: each article's passages summed and normalised.
    centroids: Vec<f32>,
}

impl VectorIndex {
    /// An index over `rows`; rows whose vector is not `dimensions` long are skipped.
    pub fn new(version: i64, dimensions: usize, rows: Vec<PassageRow>) -> Self {
        let mut entries: Vec<Entry> = Vec::with_capacity(rows.len());
        let mut matrix = Vec::with_capacity(rows.len() * dimensions);
        let mut centroids: Vec<f32> = Vec::new();
        for row in rows {
            if row.embedding.len() != dimensions {
                continue;
            }
            // Rows come by article, so a new article starts a new centroid.
            let article = match entries.last() {
                Some(last) if last.article_id == row.article_id => last.article,
                _ => {
                    centroids.resize(centroids.len() + dimensions, 0.0);
                    centroids.len() / dimensions - 1
                }
            };
            let start = article * dimensions;
            for (sum, x) in centroids[start..].iter_mut().zip(&row.embedding) {
                *sum += x;
            }
            matrix.extend_from_slice(&row.embedding);
            entries.push(Entry {
                article_id: row.article_id,
                title: row.title,
                snippet: super::passages::snippet(&row.content),
                article,
            });
        }
        if dimensions > 0 {
            for centroid in centroids.chunks_exact_mut(dimensions) {
                let norm = dot(centroid, centroid).sqrt();
                if norm > 0.0 {
                    centroid.iter_mut().for_each(|x| *x /= norm);
                }
            }
        }
        Self {
            version,
            dimensions,
            entries,
            matrix,
            centroids,
        }
    }

    /// Passages held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no passage is held (nothing embedded with the configured model yet).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Articles by their best passage's similarity to `query` (normalised, `dimensions`
    /// long), best first, ties by article id; at most `limit`. Empty for a query of another
    /// length.
    pub fn best_articles(&self, query: &[f32], limit: usize) -> Vec<VectorHit<'_>> {
        if query.len() != self.dimensions || self.dimensions == 0 {
            return Vec::new();
        }
        let mut best: Vec<VectorHit<'_>> = Vec::new();
        for (entry, row) in self
            .entries
            .iter()
            .zip(self.matrix.chunks_exact(self.dimensions))
        {
            let similarity = dot(row, query);
            // Rows are stored by article, so an article's passages are adjacent.
            match best.last_mut() {
                Some(last) if last.entry.article_id == entry.article_id => {
                    if similarity > last.similarity {
                        last.entry = entry;
                        last.similarity = similarity;
                    }
                }
                _ => {
                    let start = entry.article * self.dimensions;
                    let centroid = self.centroids.get(start..start + self.dimensions);
                    best.push(VectorHit {
                        entry,
                        similarity,
                        article_similarity: centroid.map_or(0.0, |c| dot(c, query)),
                    });
                }
            }
        }
        best.sort_by(|a, b| {
            b.similarity
                .total_cmp(&a.similarity)
                .then_with(|| a.entry.article_id.cmp(&b.entry.article_id))
        });
        best.truncate(limit);
        best
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The process's current index, shared by every request.
#[derive(Debug, Default)]
pub struct IndexCache {
    current: RwLock<Option<Arc<VectorIndex>>>,
}

impl IndexCache {
    /// The cached index, if any.
    pub fn get(&self) -> Option<Arc<VectorIndex>> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The version of the cached index, if any.
    pub fn version(&self) -> Option<i64> {
        self.get().map(|index| index.version)
    }

    /// Replaces the cached index (a newer version loaded by a search).
    pub fn put(&self, index: Arc<VectorIndex>) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(article: &str, content: &str, v: &[f32]) -> PassageRow {
        PassageRow {
            article_id: article.to_owned(),
            title: format!("title {article}"),
            content: content.to_owned(),
            embedding: v.to_vec(),
        }
    }

    #[test]
    fn ranks_articles_by_their_best_passage() {
        let index = VectorIndex::new(
            3,
            2,
            vec![
                row("kb_001", "T\n\na", &[1.0, 0.0]),
                row("kb_001", "T\n\nb", &[0.0, 1.0]),
                row("kb_002", "T\n\nc", &[0.6, 0.8]),
                row("kb_003", "T\n\nd", &[1.0, 0.0, 0.0]),
            ],
        );
        assert_eq!(index.len(), 3, "the 3-d row is skipped");
        let hits = index.best_articles(&[0.0, 1.0], 10);
        let ids: Vec<(&str, &str)> = hits
            .iter()
            .map(|h| (h.entry.article_id.as_str(), h.entry.snippet.as_str()))
            .collect();
        assert_eq!(ids, [("kb_001", "b"), ("kb_002", "c")]);
        assert!((hits[0].similarity - 1.0).abs() < 1e-6);
        // kb_001's centroid is (1, 1)/√2; kb_002 has one passage, its centroid.
        assert!((hits[0].article_similarity - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!((hits[1].article_similarity - 0.8).abs() < 1e-6);
        assert_eq!(index.best_articles(&[0.0, 1.0], 1).len(), 1);
        assert!(index.best_articles(&[1.0], 10).is_empty());
    }

    #[test]
    fn the_cache_keeps_the_last_index() {
        let cache = IndexCache::default();
        assert_eq!(cache.version(), None);
        cache.put(Arc::new(VectorIndex::new(7, 2, Vec::new())));
        assert_eq!(cache.version(), Some(7));
        assert!(cache.get().is_some_and(|i| i.is_empty()));
    }
}
