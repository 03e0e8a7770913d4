//! Full-text search over the knowledge base, and the passage vectors read in the same
//! transaction (SPEC §4 `search_knowledge_base`; the hybrid ranking is [`crate::search`]'s).
//!
//! - **What it reads:** in one read-only transaction, the articles matching all the query's
//!   terms (`websearch_to_tsquery`, at most `depth`), and when that finds nothing, any of them
//!   (the `&`s of `plainto_tsquery` turned into `|`s, at most `top_k`); ranked by
//!   `ts_rank_cd`, ties by article id, with a `ts_headline` snippet. With a [`VectorRead`],
//!   also `kb.embedding_state.version` and, when it differs from the cached one, the passages
//!   of the configured model ([`super::vectors::load`]).
//! - **How:** the query is a bind parameter, never spliced into SQL.
//! - **What it returns:** a [`FullText`], whose [`FullText::ranking`] is the degraded answer
//!   on its own; [`DbError`] from the pool or PostgreSQL (full text is the floor of a search,
//!   so that is the request's error).
//! - **Neighbours:** runs in `tx::with_client` and a read-only `tx::begin` (deadline,
//!   statement timeout, chaos faults); [`crate::search`] fuses it with the vectors.

use kosha_contract::core_api::ArticleHit;
use tokio_postgres::Row;

use super::tx::{Access, begin, with_client};
use super::{DbError, PgPool};
use crate::deadline::Budget;
use crate::search::index::PassageRow;

/// What the vector side of a search needs read in the full-text transaction: the configured
/// model and length, and the version of the cached vectors (`None`: nothing cached).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorRead<'a> {
    /// `KOSHA_EMBEDDINGS_MODEL`.
    pub model: &'a str,
    /// `KOSHA_EMBEDDINGS_DIMENSIONS`.
    pub dimensions: i32,
    /// `kb.embedding_state.version` of the cached index.
    pub cached_version: Option<i64>,
}

/// What one search transaction read.
#[derive(Debug, Clone, PartialEq)]
pub struct FullText {
    /// Articles matching all terms (`websearch_to_tsquery`), best first, at most `depth`.
    pub all_terms: Vec<ArticleHit>,
    /// When `all_terms` is empty: articles matching any term, at most `top_k`.
    pub any_term: Vec<ArticleHit>,
    /// The vectors at the current version, when they were not cached at it (`VectorRead`).
    pub vectors: Option<(i64, Vec<PassageRow>)>,
}

impl FullText {
    /// The full-text ranking on its own (a degraded answer): the all-terms list, or when it
    /// matched nothing the any-term list; at most `top_k`.
    pub fn ranking(mut self, top_k: usize) -> Vec<ArticleHit> {
        let mut hits = if self.all_terms.is_empty() {
            self.any_term
        } else {
            std::mem::take(&mut self.all_terms)
        };
        hits.truncate(top_k);
        hits
    }
}

/// Full-text search over the knowledge base, in one read-only transaction:
/// `websearch_to_tsquery` (all terms must match, at most `depth` articles), and when that
/// finds nothing, any of the terms (the `&`s of `plainto_tsquery` turned into `|`s, at most
/// `top_k`). Ranked by `ts_rank_cd`, ties by article id. With `vectors`, it also reads
/// `kb.embedding_state.version` and, when it differs from the cached one, the passages of the
/// configured model ([`super::vectors::load`]).
///
/// # Errors
/// [`DbError`] from the pool or PostgreSQL.
pub async fn search_articles(
    pool: &PgPool,
    budget: &Budget,
    query: &str,
    depth: i64,
    top_k: i64,
    vectors: Option<VectorRead<'_>>,
) -> Result<FullText, DbError> {
    with_client(pool, budget, "search_articles", async |client| {
        let tx = begin(client, budget, Access::ReadOnly).await?;
        let strict = tx
            .prepare_cached(&search_sql("websearch_to_tsquery('english', $1)"))
            .await?;
        let all_terms = hits(&tx.query(&strict, &[&query, &depth]).await?)?;
        let any_term = if all_terms.is_empty() {
            let loose = tx
                .prepare_cached(&search_sql(
                    "NULLIF(regexp_replace(plainto_tsquery('english', $1)::text, \
                     ' (&|<->|<[0-9]+>) ', ' | ', 'g'), '')::tsquery",
                ))
                .await?;
            hits(&tx.query(&loose, &[&query, &top_k]).await?)?
        } else {
            Vec::new()
        };
        let vectors = match vectors {
            None => None,
            Some(read) => {
                let version = super::vectors::version(&tx).await?;
                if read.cached_version == Some(version) {
                    None
                } else {
                    let rows = super::vectors::load(&tx, read.model, read.dimensions).await?;
                    Some((version, rows))
                }
            }
        };
        tx.commit().await?;
        Ok(FullText {
            all_terms,
            any_term,
            vectors,
        })
    })
    .await
}

fn hits(rows: &[Row]) -> Result<Vec<ArticleHit>, DbError> {
    rows.iter()
        .map(|row| {
            Ok(ArticleHit {
                article_id: row.try_get(0)?,
                title: row.try_get(1)?,
                snippet: row.try_get(2)?,
                score: row.try_get(3)?,
            })
        })
        .collect()
}

fn search_sql(tsquery: &str) -> String {
    format!(
        "WITH q AS (SELECT {tsquery} AS tsq)
         SELECT a.article_id, a.title,
                regexp_replace(
                    ts_headline('english', a.body, q.tsq,
                        'StartSel=\"\", StopSel=\"\", MaxWords=35, MinWords=15, MaxFragments=1'),
                    '\\s+', ' ', 'g'),
                ts_rank_cd(a.search, q.tsq, 32)::float8 AS score
         FROM kb.articles a, q
         WHERE a.search @@ q.tsq
         ORDER BY score DESC, a.article_id ASC
         LIMIT $2"
    )
}
