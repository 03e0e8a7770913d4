//! `core-api embed`: fills `kb.passages` for hybrid search (issue 13, docs/embeddings.md).
//!
//! Chunks every article into passages ([`crate::search::passages`]), keeps a stored passage
//! whose `(content_sha, model, dimensions)` already match, embeds the rest in batches of at
//! most [`BATCH`] inputs (the whole seed in one request took 0.56–1.7 s on a loaded machine,
//! too close to the 2 s attempt cap) and deletes ordinals an article no longer has. Each batch
//! is saved in its own transaction with a version bump, so an interrupted run keeps what it
//! finished and the next resumes; a second run with nothing to do makes no call and writes
//! nothing. Runs locally after the seed (`scripts/dev up`) and in AWS as the `embed` task.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use kosha_resilience::deadline::Deadline;
use kosha_resilience::policy::PolicyError;
use tokio_postgres::Client;

use crate::db::DbError;
use crate::db::vectors::{self, EmbeddedPassage};
use crate::embeddings::{EmbedError, Embedder};
use crate::search::passages::{Passage, passages};

/// Inputs per embeddings request.
pub const BATCH: usize = 32;

/// The deadline of one batch's call (two attempts of at most 2 s, and the backoff).
pub const BATCH_BUDGET: Duration = Duration::from_secs(10);

/// Why `embed` stopped.
#[derive(Debug, thiserror::Error)]
pub enum BackfillError {
    /// PostgreSQL failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The embeddings API failed a batch (the batches before it are saved).
    #[error("embedding a batch failed after {saved} passages were saved: {source}")]
    Embed {
        /// Passages saved before the failure.
        saved: usize,
        /// The policy's error.
        source: PolicyError<EmbedError>,
    },
}

/// What a run found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BackfillReport {
    /// Articles read.
    pub articles: usize,
    /// Passages they make.
    pub passages: usize,
    /// Passages embedded by this run.
    pub embedded: usize,
    /// Passages already stored with this model and content.
    pub kept: usize,
    /// Stored passages deleted (their paragraph is gone).
    pub removed: u64,
}

impl std::fmt::Display for BackfillReport {
    /// `40 articles, 164 passages: embedded 164, kept 0, removed 0`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} articles, {} passages: embedded {}, kept {}, removed {}",
            self.articles, self.passages, self.embedded, self.kept, self.removed
        )
    }
}

/// Embeds what is missing or was made with another model or content.
///
/// # Errors
/// [`BackfillError`]; batches saved before it stay saved.
pub async fn run(
    client: &mut Client,
    embedder: &Embedder,
) -> Result<BackfillReport, BackfillError> {
    let articles = vectors::articles(client).await?;
    let stored = vectors::stored(client).await?;
    let model = embedder.model();
    let dimensions = i32::try_from(embedder.dimensions()).unwrap_or(i32::MAX);
    let current: HashMap<(&str, i32), &vectors::StoredPassage> = stored
        .iter()
        .map(|s| ((s.article_id.as_str(), s.ordinal), s))
        .collect();
    let chunked: Vec<(&str, Vec<Passage>)> = articles
        .iter()
        .map(|a| (a.article_id.as_str(), passages(&a.title, &a.body)))
        .collect();
    let mut report = BackfillReport {
        articles: articles.len(),
        ..BackfillReport::default()
    };
    let mut wanted: HashSet<(&str, i32)> = HashSet::new();
    let mut todo: Vec<(&str, &Passage)> = Vec::new();
    for (article_id, list) in &chunked {
        for passage in list {
            report.passages += 1;
            wanted.insert((article_id, passage.ordinal));
            let up_to_date = current
                .get(&(*article_id, passage.ordinal))
                .is_some_and(|s| {
                    s.content_sha == passage.sha && s.model == model && s.dimensions == dimensions
                });
            if up_to_date {
                report.kept += 1;
            } else {
                todo.push((article_id, passage));
            }
        }
    }
    let gone: Vec<(String, i32)> = stored
        .iter()
        .filter(|s| !wanted.contains(&(s.article_id.as_str(), s.ordinal)))
        .map(|s| (s.article_id.clone(), s.ordinal))
        .collect();
    report.removed = vectors::delete(client, &gone).await?;
    for batch in todo.chunks(BATCH) {
        let inputs: Vec<String> = batch.iter().map(|(_, p)| p.content.clone()).collect();
        let deadline = Deadline::after(BATCH_BUDGET);
        let vectors_out = embedder
            .embed(&deadline, &inputs, None)
            .await
            .map_err(|source| BackfillError::Embed {
                saved: report.embedded,
                source,
            })?;
        let rows: Vec<EmbeddedPassage<'_>> = batch
            .iter()
            .zip(vectors_out)
            .map(|((article_id, passage), embedding)| EmbeddedPassage {
                article_id,
                passage,
                embedding,
            })
            .collect();
        vectors::save_batch(client, model, dimensions, &rows).await?;
        report.embedded += rows.len();
    }
    Ok(report)
}
