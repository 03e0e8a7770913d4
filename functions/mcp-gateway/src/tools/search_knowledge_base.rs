//! `search_knowledge_base`: ranked help-centre articles (SPEC §4; budget 8 s; core-api →
//! OpenAI embeddings + PostgreSQL). When embeddings are unavailable core-api ranks by full text
//! only and the result says `degraded: true, degraded_reason: "embeddings_unavailable"`
//! (SPEC §10); the dispatch counts it (`degraded{tool, reason}`, [`super::observe`]).

use std::time::Duration;

use kosha_auth::Role;
use kosha_contract::core_api::{ArticleHit, QUERY_MAX_CHARS, SearchRequest, TOP_K_MAX};
use kosha_contract::error::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::NOT_BLANK;
use super::call::Call;
use super::catalogue::{DEFAULT_MIN_BUDGET, Hints, Need, Spec, Tool};
use super::error::ToolError;
use crate::backends::Backend;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to look for, in natural language.
    #[schemars(length(min = 1, max = QUERY_MAX_CHARS), extend("pattern" = NOT_BLANK))]
    pub query: String,
    /// How many articles (default 5).
    #[schemars(range(min = 1, max = TOP_K_MAX))]
    pub top_k: Option<u32>,
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

/// The tool.
#[derive(Debug)]
pub struct SearchKnowledgeBase;

impl Tool for SearchKnowledgeBase {
    type Args = Args;
    type Output = Output;
    const SPEC: Spec = Spec {
        name: "search_knowledge_base",
        title: "Search knowledge base",
        description: "Search the help-centre articles on disputes, chargebacks, card \
                      fraud, refunds, sanctions screening, account limits and fees. Use it \
                      for policy or how-to questions. Returns the best articles \
                      (id, title, snippet, relevance 0-1), best first.",
        errors: &[
            ErrorCode::InvalidArgument,
            ErrorCode::DeadlineExceeded,
            ErrorCode::DependencyUnavailable,
            ErrorCode::Overloaded,
            ErrorCode::RateLimited,
            ErrorCode::Internal,
        ],
        hints: Hints::READ,
        roles: &[Role::Agent],
        budget: Duration::from_secs(8),
        min_budget: DEFAULT_MIN_BUDGET,
        needs: &[Need {
            backend: Backend::CoreApiRead,
            degraded_answer: false,
        }],
    };

    /// # Errors
    /// The core-api errors of [`Call::core_api_read`].
    async fn run(call: &Call<'_>, args: Args) -> Result<Output, ToolError> {
        let request = SearchRequest {
            query: args.query,
            top_k: args.top_k,
        };
        let answer = call
            .core_api_read(|meta| call.deps.core_api.search(meta, &request))
            .await?;
        Ok(Output {
            results: answer.results,
            degraded: answer.degraded,
            degraded_reason: answer.degraded_reason,
        })
    }
}
