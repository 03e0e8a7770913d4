//! Hybrid knowledge search (issue 13; SPEC §4 `search_knowledge_base`, §10) and its
//! degradation to full text.
//!
//! One search runs two things at once: the full-text transaction
//! ([`crate::db::fulltext::search_articles`]: the all-terms list, the any-term fallback, and
//! the passage vectors when the cached ones are out of date) and the query's embedding
//! ([`Embedder::embed`] under the `openai` policy). Then:
//!
//! - **hybrid** (`degraded: false`): the all-terms full-text list (top [`FUSION_DEPTH`]) and
//!   the vector list (articles by their best passage's cosine, top [`FUSION_DEPTH`]) fused by
//!   reciprocal rank ([`fusion`], k = 60), which picks the `top_k` articles; they are then
//!   ordered by `score`, the article's relevance ([`relevance::hybrid`]: its centroid's cosine
//!   and its all-terms `ts_rank_cd`, each by a fixed map), comparable across queries (ties
//!   keep the fused order). Measured on benches/relevance (2026-12-05): the same recall@5
//!   (0.769, the same articles), nDCG@5 0.686 → 0.697 and MRR 0.571 → 0.603 against the
//!   fused order. An
//!   article the vector side found shows its best passage as the snippet; one only full text
//!   found shows its `ts_headline`. The any-term fallback is not fused: for a paraphrase it
//!   ranks by incidental shared words (docs/embeddings.md, measured).
//! - **degraded** (`degraded: true`, `degraded_reason: "embeddings_unavailable"`): the
//!   full-text ranking alone (all terms, else any term), `score` = [`relevance::text`] of
//!   `ts_rank_cd`, halved for an any-term answer ([`relevance::any_term`]), when the
//!   embedder is not configured, its call failed (error, malformed answer, timeout), its
//!   breaker is open or forced open (`breaker#openai`, SPEC §8), the deadline left too little
//!   time for it, or nothing is embedded with the configured model yet. Logged as
//!   `search_degraded` with the cause; the gateway's dispatch counts the `degraded` metric
//!   (`tool`, `reason`) once per degraded tool answer.
//!
//! A PostgreSQL failure is the request's error (503/504): full text is the floor.
//!
//! Modules: [`passages`] (articles into passages, snippets), [`index`] (the cached matrix),
//! [`fusion`] (RRF, the order), [`relevance`] (the score).

pub mod fusion;
pub mod index;
pub mod passages;
pub mod relevance;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kosha_contract::core_api::{ArticleHit, EMBEDDINGS_UNAVAILABLE, SearchResponse};
use kosha_resilience::deadline::Deadline;
use kosha_resilience::policy::PolicyError;

use crate::db::fulltext::{self, VectorRead};
use crate::db::{DbError, PgPool};
use crate::deadline::Budget;
use crate::embeddings::client::FaultPlan;
use crate::embeddings::{EmbedError, Embedder};
use index::{IndexCache, VectorIndex};

/// How deep each ranking goes into the fusion (the seeded corpus has 40 articles: all of
/// them; cutting the full-text side to 5 lowered recall@5 from 0.769 to 0.675).
pub const FUSION_DEPTH: usize = 50;

/// The embedding call's budget when the request has no `X-Request-Deadline`: the tool's
/// budget (SPEC §4, 8 s).
pub const UNBOUNDED_EMBED_BUDGET: Duration = Duration::from_secs(8);

/// The embedder (if configured) and the process's cached passage vectors.
#[derive(Debug, Default)]
pub struct Searcher {
    embedder: Option<Arc<Embedder>>,
    cache: IndexCache,
}

/// Why an answer fell back to full text; logged, never sent (the wire says
/// `embeddings_unavailable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    NotConfigured,
    NotEmbedded,
    CircuitOpen,
    ForcedOpen,
    Deadline,
    Timeout,
    Bulkhead,
    /// The embeddings API answered 429 with `Retry-After` and its time has not come.
    NotBefore,
    Failed,
}

impl Cause {
    fn of(e: &PolicyError<EmbedError>) -> Self {
        match e {
            PolicyError::DeadlineExceeded => Self::Deadline,
            PolicyError::BulkheadFull => Self::Bulkhead,
            PolicyError::CircuitOpen { .. } => Self::CircuitOpen,
            PolicyError::ForcedOpen { .. } => Self::ForcedOpen,
            PolicyError::AttemptTimeout => Self::Timeout,
            PolicyError::NotBefore { .. } => Self::NotBefore,
            PolicyError::Inner(_) => Self::Failed,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::NotConfigured => "not_configured",
            Self::NotEmbedded => "not_embedded",
            Self::CircuitOpen => "circuit_open",
            Self::ForcedOpen => "forced_open",
            Self::Deadline => "deadline",
            Self::Timeout => "timeout",
            Self::Bulkhead => "bulkhead_full",
            Self::NotBefore => "retry_after",
            Self::Failed => "failed",
        }
    }
}

impl Searcher {
    /// A searcher over `embedder`; `None` ranks by full text only.
    pub fn new(embedder: Option<Arc<Embedder>>) -> Self {
        Self {
            embedder,
            cache: IndexCache::default(),
        }
    }

    /// The embedder, if configured.
    pub fn embedder(&self) -> Option<&Embedder> {
        self.embedder.as_deref()
    }

    /// Searches for `query` (validated), at most `top_k` results. `faults` is the chaos plan
    /// for the `openai` target (SPEC §9), `None` without one.
    ///
    /// # Errors
    /// [`DbError`] when the full-text transaction fails; an embeddings failure never is one.
    pub async fn search(
        &self,
        pool: &PgPool,
        budget: &Budget,
        query: &str,
        top_k: u32,
        faults: Option<&mut FaultPlan>,
    ) -> Result<SearchResponse, DbError> {
        let top = usize::try_from(top_k).unwrap_or(usize::MAX);
        let embedder = self.embedder.as_deref();
        let read = embedder.map(|e| VectorRead {
            model: e.model(),
            dimensions: i32::try_from(e.dimensions()).unwrap_or(i32::MAX),
            cached_version: self.cache.version(),
        });
        let deadline = budget
            .deadline
            .unwrap_or_else(|| Deadline::after(UNBOUNDED_EMBED_BUDGET));
        let input = [query.to_owned()];
        let embed = async {
            match embedder {
                Some(e) => Some(e.embed(&deadline, &input, faults).await),
                None => None,
            }
        };
        let depth = i64::try_from(FUSION_DEPTH).unwrap_or(i64::MAX);
        let (full_text, embedded) = tokio::join!(
            fulltext::search_articles(pool, budget, query, depth, i64::from(top_k), read),
            embed
        );
        let mut full_text = full_text?;
        if let (Some((version, rows)), Some(e)) = (full_text.vectors.take(), embedder) {
            let dims = usize::try_from(e.dimensions()).unwrap_or(0);
            self.cache
                .put(Arc::new(VectorIndex::new(version, dims, rows)));
        }
        let vector = match embedded {
            None => Err(Cause::NotConfigured),
            Some(Err(e)) => Err(Cause::of(&e)),
            Some(Ok(mut vectors)) => match (vectors.pop(), self.cache.get()) {
                (Some(v), Some(index)) if !index.is_empty() => Ok((v, index)),
                _ => Err(Cause::NotEmbedded),
            },
        };
        match vector {
            Ok((query_vector, index)) => {
                let vector_hits = index.best_articles(&query_vector, FUSION_DEPTH);
                Ok(SearchResponse {
                    results: fuse(&full_text.all_terms, &vector_hits, top),
                    degraded: false,
                    degraded_reason: None,
                })
            }
            Err(cause) => {
                tracing::warn!(
                    event = "search_degraded",
                    cause = cause.as_str(),
                    "full text only"
                );
                let any_term = full_text.all_terms.is_empty();
                let mut results = full_text.ranking(top);
                for hit in &mut results {
                    hit.score = if any_term {
                        relevance::any_term(hit.score)
                    } else {
                        relevance::text(hit.score)
                    };
                }
                Ok(SearchResponse {
                    results,
                    degraded: true,
                    degraded_reason: Some(EMBEDDINGS_UNAVAILABLE.to_owned()),
                })
            }
        }
    }
}

/// The `top` articles of the RRF of `full_text` and `vector`, ordered by their
/// [`relevance::hybrid`] score (ties in fused order), each with its article's title and the
/// best passage as snippet when the vector side has one.
fn fuse(full_text: &[ArticleHit], vector: &[index::VectorHit<'_>], top: usize) -> Vec<ArticleHit> {
    let text_ids: Vec<&str> = full_text.iter().map(|h| h.article_id.as_str()).collect();
    let vector_ids: Vec<&str> = vector.iter().map(|h| h.entry.article_id.as_str()).collect();
    let by_text: HashMap<&str, &ArticleHit> = full_text
        .iter()
        .map(|h| (h.article_id.as_str(), h))
        .collect();
    let by_vector: HashMap<&str, &index::VectorHit<'_>> = vector
        .iter()
        .map(|h| (h.entry.article_id.as_str(), h))
        .collect();
    let mut hits: Vec<ArticleHit> = fusion::rrf(&[&text_ids, &vector_ids], top)
        .into_iter()
        .filter_map(|f| {
            let (vector_hit, text_hit) = (by_vector.get(f.article_id), by_text.get(f.article_id));
            let (title, snippet) = match (vector_hit, text_hit) {
                (Some(v), _) => (v.entry.title.clone(), v.entry.snippet.clone()),
                (None, Some(hit)) => (hit.title.clone(), hit.snippet.clone()),
                (None, None) => return None,
            };
            Some(ArticleHit {
                article_id: f.article_id.to_owned(),
                title,
                snippet,
                score: relevance::hybrid(
                    vector_hit.map(|v| v.article_similarity),
                    text_hit.map(|t| t.score),
                ),
            })
        })
        .collect();
    // Stable: equal scores keep the fused order.
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use index::{Entry, VectorHit};

    fn text_hit(id: &str) -> ArticleHit {
        ArticleHit {
            article_id: id.to_owned(),
            title: format!("title {id}"),
            snippet: format!("headline {id}"),
            score: 0.5,
        }
    }

    fn entry(id: &str) -> Entry {
        Entry {
            article_id: id.to_owned(),
            title: format!("title {id}"),
            snippet: format!("passage {id}"),
            article: 0,
        }
    }

    #[test]
    fn fuses_with_the_best_passage_as_snippet() {
        let text = [text_hit("kb_001"), text_hit("kb_002"), text_hit("kb_004")];
        let (e2, e3) = (entry("kb_002"), entry("kb_003"));
        let vector = [
            VectorHit {
                entry: &e2,
                similarity: 0.9,
                article_similarity: relevance::COSINE_CEILING,
            },
            VectorHit {
                entry: &e3,
                similarity: 0.8,
                article_similarity: 0.75 * relevance::COSINE_CEILING
                    + 0.25 * relevance::COSINE_FLOOR,
            },
        ];
        let fused = fuse(&text, &vector, 3);
        let got: Vec<(&str, &str)> = fused
            .iter()
            .map(|h| (h.article_id.as_str(), h.snippet.as_str()))
            .collect();
        // RRF picks the set: kb_002 (1/62 + 1/61), kb_001 (1/61), kb_003 (1/62) ahead of
        // kb_004 (1/63). Scores order it: kb_002 has full meaning evidence and its words
        // (1), kb_003 three quarters of the meaning span (0.75), kb_001 its words (0.5).
        assert_eq!(
            got,
            [
                ("kb_002", "passage kb_002"),
                ("kb_003", "passage kb_003"),
                ("kb_001", "headline kb_001"),
            ]
        );
        let scores: Vec<f64> = fused.iter().map(|h| h.score).collect();
        assert!((scores[0] - 1.0).abs() < 1e-9, "{scores:?}");
        assert!((scores[1] - 0.75).abs() < 1e-6, "{scores:?}");
        assert!((scores[2] - 0.5).abs() < 1e-9, "{scores:?}");
        let first: Vec<String> = fuse(&text, &vector, 1)
            .into_iter()
            .map(|h| h.article_id)
            .collect();
        assert_eq!(first, ["kb_002"]);
    }
}
