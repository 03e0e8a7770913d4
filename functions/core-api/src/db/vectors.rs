//! `kb.passages` and `kb.embedding_state` (migration V10): what `core-api embed` reads and
//! writes ([`crate::backfill`]) and what a search loads into its vector cache
//! ([`crate::search::index`]).
//!
//! Writes are per batch: each [`save_batch`] upserts its passages and bumps the version in one
//! transaction, so an interrupted backfill keeps what it finished and the next run resumes.

use deadpool_postgres::Transaction;
use tokio_postgres::Client;

use super::DbError;
use crate::search::index::PassageRow;
use crate::search::passages::Passage;

/// An article as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArticleText {
    /// `kb_001` …
    pub article_id: String,
    /// Title.
    pub title: String,
    /// Body (paragraphs separated by a blank line).
    pub body: String,
}

/// What is known about a stored passage without loading its vector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPassage {
    /// Its article.
    pub article_id: String,
    /// Its position.
    pub ordinal: i32,
    /// SHA-256 of the content it was embedded from.
    pub content_sha: Vec<u8>,
    /// The model that made it.
    pub model: String,
    /// Its length.
    pub dimensions: i32,
}

/// A passage with its new vector.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedPassage<'a> {
    /// Its article.
    pub article_id: &'a str,
    /// The passage.
    pub passage: &'a Passage,
    /// The vector (`dimensions` long).
    pub embedding: Vec<f32>,
}

/// Every article, by id.
///
/// # Errors
/// [`DbError`] from PostgreSQL.
pub async fn articles(client: &Client) -> Result<Vec<ArticleText>, DbError> {
    let rows = client
        .query(
            "SELECT article_id, title, body FROM kb.articles ORDER BY article_id",
            &[],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(ArticleText {
                article_id: r.try_get(0)?,
                title: r.try_get(1)?,
                body: r.try_get(2)?,
            })
        })
        .collect()
}

/// Every stored passage's key, hash, model and length.
///
/// # Errors
/// [`DbError`] from PostgreSQL.
pub async fn stored(client: &Client) -> Result<Vec<StoredPassage>, DbError> {
    let rows = client
        .query(
            "SELECT article_id, ordinal, content_sha, model, dimensions FROM kb.passages
             ORDER BY article_id, ordinal",
            &[],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(StoredPassage {
                article_id: r.try_get(0)?,
                ordinal: r.try_get(1)?,
                content_sha: r.try_get(2)?,
                model: r.try_get(3)?,
                dimensions: r.try_get(4)?,
            })
        })
        .collect()
}

/// Deletes the passages `(article_id, ordinal)` no article has any more, and bumps the
/// version when any went; returns how many.
///
/// # Errors
/// [`DbError`] from PostgreSQL (nothing is deleted then).
pub async fn delete(client: &mut Client, keys: &[(String, i32)]) -> Result<u64, DbError> {
    if keys.is_empty() {
        return Ok(0);
    }
    let ids: Vec<&str> = keys.iter().map(|(id, _)| id.as_str()).collect();
    let ordinals: Vec<i32> = keys.iter().map(|(_, o)| *o).collect();
    let tx = client.transaction().await?;
    let n = tx
        .execute(
            "DELETE FROM kb.passages p USING unnest($1::text[], $2::int[]) AS k(id, ord)
             WHERE p.article_id = k.id AND p.ordinal = k.ord",
            &[&ids, &ordinals],
        )
        .await?;
    bump(&tx).await?;
    tx.commit().await?;
    Ok(n)
}

/// Upserts `batch` made with `model` and bumps the version, in one transaction.
///
/// # Errors
/// [`DbError`] from PostgreSQL (nothing is written then).
pub async fn save_batch(
    client: &mut Client,
    model: &str,
    dimensions: i32,
    batch: &[EmbeddedPassage<'_>],
) -> Result<(), DbError> {
    let tx = client.transaction().await?;
    let statement = tx
        .prepare(
            "INSERT INTO kb.passages
                 (article_id, ordinal, content, content_sha, model, dimensions, embedding)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (article_id, ordinal) DO UPDATE SET
                 content = EXCLUDED.content, content_sha = EXCLUDED.content_sha,
                 model = EXCLUDED.model, dimensions = EXCLUDED.dimensions,
                 embedding = EXCLUDED.embedding, embedded_at = now()",
        )
        .await?;
    for item in batch {
        let sha: &[u8] = &item.passage.sha;
        tx.execute(
            &statement,
            &[
                &item.article_id,
                &item.passage.ordinal,
                &item.passage.content,
                &sha,
                &model,
                &dimensions,
                &item.embedding,
            ],
        )
        .await?;
    }
    bump(&tx).await?;
    tx.commit().await?;
    Ok(())
}

async fn bump(client: &tokio_postgres::Transaction<'_>) -> Result<(), DbError> {
    client
        .execute("UPDATE kb.embedding_state SET version = version + 1", &[])
        .await?;
    Ok(())
}

/// The current `kb.embedding_state.version`.
///
/// # Errors
/// [`DbError`] from PostgreSQL.
pub async fn version(client: &Transaction<'_>) -> Result<i64, DbError> {
    let statement = client
        .prepare_cached("SELECT version FROM kb.embedding_state")
        .await?;
    Ok(client.query_one(&statement, &[]).await?.try_get(0)?)
}

/// The passages made with `model` at `dimensions`, by article and ordinal, with their
/// article's title.
///
/// # Errors
/// [`DbError`] from PostgreSQL.
pub async fn load(
    client: &Transaction<'_>,
    model: &str,
    dimensions: i32,
) -> Result<Vec<PassageRow>, DbError> {
    let statement = client
        .prepare_cached(
            "SELECT p.article_id, a.title, p.content, p.embedding
             FROM kb.passages p JOIN kb.articles a USING (article_id)
             WHERE p.model = $1 AND p.dimensions = $2
             ORDER BY p.article_id, p.ordinal",
        )
        .await?;
    let rows = client.query(&statement, &[&model, &dimensions]).await?;
    rows.iter()
        .map(|r| {
            Ok(PassageRow {
                article_id: r.try_get(0)?,
                title: r.try_get(1)?,
                content: r.try_get(2)?,
                embedding: r.try_get(3)?,
            })
        })
        .collect()
}
