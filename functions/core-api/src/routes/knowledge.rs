//! `POST /v1/knowledge/search` (SPEC §4 `search_knowledge_base`): hybrid ranking (full text
//! and passage vectors fused by RRF), or full text alone with `degraded: true,
//! degraded_reason: "embeddings_unavailable"` when the embeddings API is unavailable
//! (SPEC §10); the ranking itself is [`crate::search`].
//!
//! The body is validated by hand so each error names its field: `query` a string of 1–512
//! characters that is not blank and holds no control characters other than tab, CR and LF
//! ([`crate::text::plain`]), `top_k` an integer 1–20 (default 5; `3.0` counts as 3, JSON
//! Schema's integer, [`kosha_contract::integer`]), nothing else.

use axum::Json;
use axum::extract::State;
use kosha_contract::core_api::{
    QUERY_MAX_CHARS, SearchRequest, SearchResponse, TOP_K_DEFAULT, TOP_K_MAX,
};
use kosha_contract::error::ErrorBody;
use kosha_resilience::chaos::Target;
use serde_json::{Map, Value};

use super::AppState;
use super::extract::ApiJson;
use super::openapi::{Common, PostgresFailures};
use crate::deadline::Budget;
use crate::error::ApiError;
use crate::text;

/// The validated body: `query` 1–[`QUERY_MAX_CHARS`] characters and not blank, `top_k`
/// 1–[`TOP_K_MAX`] (absent → [`TOP_K_DEFAULT`], always filled in), nothing else.
///
/// # Errors
/// [`ApiError::InvalidArgument`] naming the field.
pub fn parse_request(body: Value) -> Result<SearchRequest, ApiError> {
    let Value::Object(mut fields) = body else {
        return Err(ApiError::invalid("request body must be a JSON object"));
    };
    let query = query(fields.remove("query"))?;
    let top_k = top_k(fields.remove("top_k"))?;
    reject_unknown(&fields)?;
    Ok(SearchRequest {
        query,
        top_k: Some(top_k),
    })
}

fn query(value: Option<Value>) -> Result<String, ApiError> {
    let Some(Value::String(query)) = value else {
        return Err(ApiError::invalid("query is required and must be a string"));
    };
    let chars = query.chars().count();
    if chars == 0 || chars > QUERY_MAX_CHARS || query.trim().is_empty() {
        return Err(ApiError::invalid(format!(
            "query must be 1 to {QUERY_MAX_CHARS} characters and not blank"
        )));
    }
    text::plain("query", &query)?;
    Ok(query)
}

fn top_k(value: Option<Value>) -> Result<u32, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(TOP_K_DEFAULT),
        // A whole number written as a float (`3.0`) is the integer JSON Schema says it is.
        Some(Value::Number(n)) => kosha_contract::integer::integral(&n)
            .and_then(|k| u32::try_from(k).ok())
            .filter(|k| (1..=TOP_K_MAX).contains(k))
            .ok_or_else(top_k_error),
        Some(_) => Err(top_k_error()),
    }
}

fn top_k_error() -> ApiError {
    ApiError::invalid(format!("top_k must be an integer from 1 to {TOP_K_MAX}"))
}

fn reject_unknown(rest: &Map<String, Value>) -> Result<(), ApiError> {
    match rest.keys().next() {
        None => Ok(()),
        Some(name) => {
            let shown: String = name.chars().take(64).collect();
            Err(ApiError::invalid(format!(
                "unknown field {shown:?}; expected query and top_k"
            )))
        }
    }
}

/// Ranks knowledge-base articles for the query: hybrid, or full text with `degraded: true`
/// when the embeddings are unavailable ([`crate::search`]).
///
/// # Errors
/// 400 for a bad body, 503/504 from PostgreSQL; never one for the embeddings API.
#[utoipa::path(
    post,
    path = "/v1/knowledge/search",
    tag = "knowledge",
    operation_id = "search_knowledge_base",
    params(Common),
    request_body = SearchRequest,
    responses(
        (status = 200, description = "Best first; degraded: true when ranked by full text \
            alone (embeddings unavailable, SPEC §10).", body = SearchResponse),
        (status = 400, description = "invalid_argument: the body (not JSON, duplicate key, \
            wrong shape, bad query or top_k, unknown field) or a header.", body = ErrorBody),
        PostgresFailures,
    )
)]
pub async fn search(
    State(state): State<AppState>,
    budget: Budget,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<SearchResponse>, ApiError> {
    let request = parse_request(body)?;
    let top_k = request.top_k.unwrap_or(TOP_K_DEFAULT);
    // A verified chaos header's faults for the `openai` target (SPEC §9), drawn per attempt
    // inside the embeddings policy; `postgres` faults ride in the budget to the transaction.
    let mut faults = budget.chaos.faults(Target::OpenAi);
    let answer = state
        .search
        .search(&state.pool, &budget, &request.query, top_k, faults.as_mut())
        .await?;
    Ok(Json(answer))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{SearchRequest, parse_request};

    fn parse(body: serde_json::Value) -> Result<SearchRequest, String> {
        parse_request(body).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_top_k_to_five() {
        let r = parse(json!({"query": "chargeback"})).unwrap();
        assert_eq!(r.top_k, Some(5));
    }

    #[test]
    fn names_the_bad_field() {
        let cases = [
            (json!({}), "query"),
            (json!({"query": 5}), "query"),
            (json!({"query": ""}), "query"),
            (json!({"query": "   "}), "query"),
            (json!({"query": "x".repeat(513)}), "query"),
            (json!({"query": "fees\u{0}"}), "query"),
            (json!({"query": "x", "top_k": 0}), "top_k"),
            (json!({"query": "x", "top_k": 21}), "top_k"),
            (json!({"query": "x", "top_k": 10000}), "top_k"),
            (json!({"query": "x", "top_k": 2.5}), "top_k"),
            (json!({"query": "x", "top_k": "3"}), "top_k"),
            (json!({"query": "x", "extra": 1}), "extra"),
            (json!(["query"]), "object"),
        ];
        for (body, field) in cases {
            let message = parse(body.clone()).unwrap_err();
            assert!(message.contains(field), "{body} -> {message}");
        }
    }

    #[test]
    fn counts_characters_not_bytes() {
        assert!(parse(json!({"query": "é".repeat(512)})).is_ok());
    }
}
