//! `search_knowledge_base`: ranked help-centre articles (SPEC §4; budget 8 s; core-api →
//! OpenAI embeddings + PostgreSQL). When embeddings are unavailable core-api ranks by full text
//! only and the result says `degraded: true, degraded_reason: "embeddings_unavailable"`
//! (SPEC §10).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::types::ArticleHit;
use super::{Call, ToolError, ToolSpec, args};

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to look for, 1–512 characters of natural language.
    #[schemars(length(min = 1, max = 512))]
    pub query: String,
    /// How many articles, 1–20 (default 5).
    #[schemars(range(min = 1, max = 20))]
    pub top_k: Option<i64>,
}

/// `structuredContent`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// Best first.
    pub results: Vec<ArticleHit>,
    /// True when the ranking is full-text only because embeddings were unavailable.
    pub degraded: bool,
    /// Why the answer is degraded: `embeddings_unavailable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded_reason: Option<String>,
}

/// The tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec::read::<Args, Output>(
        "search_knowledge_base",
        "Search knowledge base",
        "Search the help-centre knowledge base (disputes, chargebacks, card fraud, refunds, \
         sanctions screening, account limits, fees). Returns the best articles with a snippet.",
        8_000,
    )
}

/// Runs the tool.
///
/// # Errors
/// `invalid_argument` for an empty or overlong query or a `top_k` outside 1–20, or the
/// core-api errors of [`Call`].
pub async fn call(call: &Call<'_>, args: Args) -> Result<Output, ToolError> {
    args::check_chars("query", &args.query, 1, 512)?;
    if args.query.trim().is_empty() {
        return Err(ToolError::invalid("query", "must contain a word"));
    }
    let top_k = args.top_k.unwrap_or(5);
    args::check_range("top_k", top_k, 1, 20)?;
    let top_k = u32::try_from(top_k).map_err(|_| ToolError::invalid("top_k", "out of range"))?;
    let answer = call
        .core_api_read(|meta| {
            let query = args.query.as_str();
            async move { call.gateway.core_api.search(&meta, query, top_k).await }
        })
        .await?;
    if answer.degraded {
        let reason = answer
            .degraded_reason
            .clone()
            .unwrap_or_else(|| "unknown".to_owned());
        metrics::counter!("degraded", "tool" => "search_knowledge_base", "reason" => reason)
            .increment(1);
    }
    Ok(Output {
        results: answer.results,
        degraded: answer.degraded,
        degraded_reason: answer.degraded_reason,
    })
}
