//! `GET /v1/transactions/{id}` and `GET /v1/accounts/{id}/transactions` (SPEC §4).
//!
//! Listing is newest first (`booked_at desc, transaction_id desc`) with keyset pagination:
//! `limit` 1–100 (default 20), `cursor` from the previous page's `next_cursor`, and optional
//! inclusive `from`/`to` bounds in RFC 3339. Empty `cursor`, `from` and `to` values count as absent;
//! a `cursor` longer than [`CURSOR_MAX_CHARS`] is refused before it is decoded, and one issued
//! for another account, `from` or `to` is refused naming `cursor` ([`crate::cursor`]).

use axum::Json;
use axum::extract::State;
use kosha_contract::core_api::{
    CURSOR_MAX_CHARS, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, ListTransactionsQuery, TransactionPage,
    TransactionResponse,
};
use kosha_contract::error::ErrorBody;
use kosha_contract::ids::{ACCOUNT, TRANSACTION};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::AppState;
use super::extract::{ApiPath, ApiQuery};
use super::openapi::{AccountIdPath, Common, PostgresFailures, TransactionIdPath};
use crate::cursor;
use crate::db::queries::{self, Keyset, ListQuery};
use crate::deadline::Budget;
use crate::error::ApiError;
use crate::ids;

/// Validates the query for `account_id`, asking for one row more than the page.
///
/// # Errors
/// [`ApiError::InvalidArgument`] naming `limit`, `cursor`, `from` or `to`.
pub fn list_query(
    params: ListTransactionsQuery,
    account_id: String,
) -> Result<(ListQuery, i64), ApiError> {
    let limit = match params.limit {
        None => LIST_LIMIT_DEFAULT,
        Some(n) if (1..=LIST_LIMIT_MAX).contains(&n) => n,
        Some(_) => {
            return Err(ApiError::invalid(format!(
                "limit must be an integer from 1 to {LIST_LIMIT_MAX}"
            )));
        }
    };
    let from = present(params.from)
        .map(|s| timestamp("from", &s))
        .transpose()?;
    let to = present(params.to)
        .map(|s| timestamp("to", &s))
        .transpose()?;
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        return Err(ApiError::invalid("from must not be later than to"));
    }
    let limit = i64::from(limit);
    let mut query = ListQuery {
        account_id,
        from,
        to,
        after: None,
        limit: limit + 1,
    };
    query.after = present(params.cursor)
        .map(|c| {
            // No issued cursor is this long (SPEC §4: opaque, at most 512 characters).
            if c.chars().count() > CURSOR_MAX_CHARS {
                return Err(ApiError::invalid(format!(
                    "cursor must be at most {CURSOR_MAX_CHARS} characters; pass next_cursor unchanged"
                )));
            }
            // Bound to the account, `from` and `to` just read (SPEC §4).
            cursor::decode(&query, &c)
        })
        .transpose()?;
    Ok((query, limit))
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
#[utoipa::path(
    get,
    path = "/v1/transactions/{id}",
    tag = "transactions",
    operation_id = "get_transaction",
    params(TransactionIdPath, Common),
    responses(
        (status = 200, description = "The transaction.", body = TransactionResponse),
        (status = 400, description = "invalid_argument: malformed id or header.", body = ErrorBody),
        (status = 404, description = "not_found: no such transaction.", body = ErrorBody),
        PostgresFailures,
    )
)]
pub async fn get_transaction(
    State(state): State<AppState>,
    budget: Budget,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<TransactionResponse>, ApiError> {
    ids::check("transaction_id", &id, &TRANSACTION)?;
    if !TRANSACTION.may_exist(&id) {
        return Err(ApiError::NotFound("transaction not found".to_owned()));
    }
    let transaction = queries::get_transaction(&state.pool, &budget, &id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("transaction {id} not found")))?;
    Ok(Json(TransactionResponse { transaction }))
}

/// One page of an account's transactions.
///
/// # Errors
/// 400 for a malformed id or parameter, 404 for an unknown account, 503/504 from PostgreSQL.
#[utoipa::path(
    get,
    path = "/v1/accounts/{id}/transactions",
    tag = "transactions",
    operation_id = "list_transactions",
    params(AccountIdPath, ListTransactionsQuery, Common),
    responses(
        (status = 200, description = "One page, newest first.", body = TransactionPage),
        (status = 400, description = "invalid_argument: malformed id, limit, cursor, from, to \
            (or from after to), an unknown query parameter, or a malformed header.", body = ErrorBody),
        (status = 404, description = "not_found: no such account.", body = ErrorBody),
        PostgresFailures,
    )
)]
pub async fn list_transactions(
    State(state): State<AppState>,
    budget: Budget,
    ApiPath(account_id): ApiPath<String>,
    ApiQuery(params): ApiQuery<ListTransactionsQuery>,
) -> Result<Json<TransactionPage>, ApiError> {
    ids::check("account_id", &account_id, &ACCOUNT)?;
    if !ACCOUNT.may_exist(&account_id) {
        return Err(ApiError::NotFound("account not found".to_owned()));
    }
    let (query, limit) = list_query(params, account_id)?;
    let mut rows = queries::list_transactions(&state.pool, &budget, &query)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("account {} not found", query.account_id)))?;
    let page_len = usize::try_from(limit).unwrap_or(usize::MAX);
    let next_cursor = if rows.len() > page_len {
        rows.truncate(page_len);
        match rows.last() {
            Some(last) => {
                let keyset = Keyset {
                    booked_at: queries::booked_at(last)?,
                    transaction_id: last.transaction_id.clone(),
                };
                Some(cursor::encode(&query, &keyset))
            }
            None => None,
        }
    } else {
        None
    };
    Ok(Json(TransactionPage {
        transactions: rows,
        next_cursor,
    }))
}
