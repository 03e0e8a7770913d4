//! `GET /v1/transactions/{id}` and `GET /v1/accounts/{id}/transactions` (SPEC §4).
//!
//! Listing is newest first (`booked_at desc, transaction_id desc`) with keyset pagination:
//! `limit` 1–100 (default 20), `cursor` from the previous page's `next_cursor`, and optional
//! inclusive `from`/`to` bounds in RFC 3339. Empty query values count as absent.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::AppState;
use super::extract::{ApiPath, ApiQuery};
use crate::cursor;
use crate::db::queries::{self, Keyset, ListQuery, TransactionRecord};
use crate::deadline::Budget;
use crate::error::ApiError;
use crate::ids;

/// Default page size.
pub const DEFAULT_LIMIT: i64 = 20;
/// Largest page size.
pub const MAX_LIMIT: i64 = 100;

/// Body of `GET /v1/transactions/{id}`.
#[derive(Debug, Serialize)]
pub struct TransactionResponse {
    /// The transaction.
    pub transaction: TransactionRecord,
}

/// Body of `GET /v1/accounts/{id}/transactions`.
#[derive(Debug, Serialize)]
pub struct TransactionPage {
    /// This page, newest first.
    pub transactions: Vec<TransactionRecord>,
    /// Cursor of the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// Raw query parameters; validated by [`ListParams::into_query`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Page size, 1–100.
    pub limit: Option<String>,
    /// Opaque cursor.
    pub cursor: Option<String>,
    /// Inclusive lower bound, RFC 3339.
    pub from: Option<String>,
    /// Inclusive upper bound, RFC 3339.
    pub to: Option<String>,
}

impl ListParams {
    /// Validates the parameters for `account_id`, asking for one row more than the page.
    ///
    /// # Errors
    /// [`ApiError::InvalidArgument`] naming `limit`, `cursor`, `from` or `to`.
    pub fn into_query(self, account_id: String) -> Result<(ListQuery, i64), ApiError> {
        let limit = match present(self.limit) {
            None => DEFAULT_LIMIT,
            Some(raw) => raw
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    ApiError::invalid(format!("limit must be an integer from 1 to {MAX_LIMIT}"))
                })?,
        };
        let from = present(self.from)
            .map(|s| timestamp("from", &s))
            .transpose()?;
        let to = present(self.to).map(|s| timestamp("to", &s)).transpose()?;
        if let (Some(from), Some(to)) = (from, to)
            && from > to
        {
            return Err(ApiError::invalid("from must not be later than to"));
        }
        let after: Option<Keyset> = present(self.cursor)
            .map(|c| cursor::decode(&account_id, &c))
            .transpose()?;
        let query = ListQuery {
            account_id,
            from,
            to,
            after,
            limit: limit + 1,
        };
        Ok((query, limit))
    }
}

fn present(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

fn timestamp(field: &str, raw: &str) -> Result<OffsetDateTime, ApiError> {
    OffsetDateTime::parse(raw, &Rfc3339).map_err(|_| {
        ApiError::invalid(format!(
            "{field} must be an RFC 3339 date-time such as 2026-03-04T10:15:00Z"
        ))
    })
}

/// One transaction by id.
///
/// # Errors
/// 400 for a malformed id, 404 when absent, 503/504 from PostgreSQL.
pub async fn get_transaction(
    State(state): State<AppState>,
    budget: Budget,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<TransactionResponse>, ApiError> {
    ids::transaction_id("transaction_id", &id)?;
    let transaction = queries::get_transaction(&state.pool, &budget, &id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("transaction {id} not found")))?;
    Ok(Json(TransactionResponse { transaction }))
}

/// One page of an account's transactions.
///
/// # Errors
/// 400 for a malformed id or parameter, 404 for an unknown account, 503/504 from PostgreSQL.
pub async fn list_transactions(
    State(state): State<AppState>,
    budget: Budget,
    ApiPath(account_id): ApiPath<String>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<TransactionPage>, ApiError> {
    ids::account_id("account_id", &account_id)?;
    let (query, limit) = params.into_query(account_id)?;
    let mut rows = queries::list_transactions(&state.pool, &budget, &query)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("account {} not found", query.account_id)))?;
    let page_len = usize::try_from(limit).unwrap_or(usize::MAX);
    let next_cursor = if rows.len() > page_len {
        rows.truncate(page_len);
        rows.last().map(|last| {
            let keyset = Keyset {
                booked_at: last.booked_at,
                transaction_id: last.transaction_id.clone(),
            };
            cursor::encode(&query.account_id, &keyset)
        })
    } else {
        None
    };
    Ok(Json(TransactionPage {
        transactions: rows,
        next_cursor,
    }))
}
