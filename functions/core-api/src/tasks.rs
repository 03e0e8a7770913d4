//! Maintenance tasks the deployed core-api runs when invoked with a task event
//! (`{"task": "migrate"}` or `{"task": "embed"}`; `kosha_runtime::serve_with_tasks`): the
//! database sits in a private VPC, so `scripts/deploy` runs them through `aws lambda invoke`
//! with the same binary rather than from the operator's machine (issue 13). Locally the
//! subcommands `core-api migrate` and `core-api embed` run the same code.
//!
//! Each answers `{"task", "result"}` (the one-line report the subcommand prints) or fails
//! the invocation with the error's message (which never holds a secret).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::backfill;
use crate::db::{PoolSettings, migrate};
use crate::embeddings::Embedder;

/// What a task needs: the database URL (from Secrets Manager when deployed), the pool's
/// settings (their TLS CA bundle: deployed URLs say `sslmode=verify-full`) and the embedder.
#[derive(Clone)]
pub struct TaskContext {
    /// PostgreSQL URL; never logged.
    pub database_url: Arc<str>,
    /// The pool's settings; tasks connect with the same TLS as the pool.
    pub pool: PoolSettings,
    /// The embedder, when configured (`embed` needs it).
    pub embedder: Option<Arc<Embedder>>,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("database_url", &"<redacted>")
            .field("pool", &self.pool)
            .field("embedder", &self.embedder)
            .finish()
    }
}

/// The task names, in the order a deploy runs them.
pub const TASKS: [&str; 2] = ["migrate", "embed"];

/// Runs task `name`.
///
/// # Errors
/// A one-line message: unknown task, no embedder for `embed`, or the task's failure.
pub async fn run(context: TaskContext, name: String) -> Result<Value, String> {
    let result = match name.as_str() {
        "migrate" => migrate(&context).await?,
        "embed" => embed(&context).await?,
        _ => {
            let shown: String = name.chars().take(64).collect();
            return Err(format!("unknown task {shown:?}; expected one of {TASKS:?}"));
        }
    };
    tracing::info!(task = %name, result = %result, "task done");
    Ok(json!({"task": name, "result": result}))
}

/// `core-api migrate`: migrations, then the seed.
///
/// # Errors
/// The migration's error as text.
pub async fn migrate(context: &TaskContext) -> Result<String, String> {
    let mut client = migrate::connect_with(&context.database_url, &context.pool)
        .await
        .map_err(|e| e.to_string())?;
    let report = migrate::migrate_and_seed(&mut client)
        .await
        .map_err(|e| e.to_string())?;
    Ok(report.to_string())
}

/// `core-api embed`: the passages that are missing or made with another model.
///
/// # Errors
/// No embedder configured, or the backfill's error as text.
pub async fn embed(context: &TaskContext) -> Result<String, String> {
    let Some(embedder) = context.embedder.as_deref() else {
        return Err("KOSHA_EMBEDDINGS_URL is not set: nothing to embed with".to_owned());
    };
    let mut client = migrate::connect_with(&context.database_url, &context.pool)
        .await
        .map_err(|e| e.to_string())?;
    let report = backfill::run(&mut client, embedder)
        .await
        .map_err(|e| e.to_string())?;
    Ok(format!(
        "{report} (model {}, {} dimensions)",
        embedder.model(),
        embedder.dimensions()
    ))
}
