//! `list_transactions`: an account's transactions, newest first, with cursor pagination
//! (SPEC §4; budget 5 s; core-api read).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::types::Transaction;
use super::{Call, ToolError, ToolSpec, args};
use crate::backends::core_api::ListQuery;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The account id, `acc_` and four digits.
    #[schemars(regex(pattern = r"^acc_[0-9]{4}$"))]
    pub account_id: String,
    /// Page size, 1–100 (default 20).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<i64>,
    /// `next_cursor` from the previous page.
    #[schemars(length(min = 1, max = 512))]
    pub cursor: Option<String>,
    /// Only transactions booked at or after this RFC 3339 time.
    #[schemars(extend("format" = "date-time"))]
    pub from: Option<String>,
    /// Only transactions booked at or before this RFC 3339 time.
    #[schemars(extend("format" = "date-time"))]
    pub to: Option<String>,
}

/// `structuredContent`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// Newest first.
    pub transactions: Vec<Transaction>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// The tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec::read::<Args, Output>(
        "list_transactions",
        "List transactions",
        "List an account's transactions (acc_0001 form), newest first. Page with `cursor` \
         (the previous page's `next_cursor`); filter by booking time with `from`/`to` (RFC 3339).",
        5_000,
    )
}

/// Runs the tool.
///
/// # Errors
/// `invalid_argument` for a bad id, limit, cursor or time (or `from` after `to`), `not_found`
/// for an unknown account, or the core-api errors of [`Call`].
pub async fn call(call: &Call<'_>, args: Args) -> Result<Output, ToolError> {
    args::check_id("account_id", &args.account_id, "acc_", 4)?;
    let limit = args.limit.unwrap_or(20);
    args::check_range("limit", limit, 1, 100)?;
    if let Some(c) = &args.cursor {
        args::check_chars("cursor", c, 1, 512)?;
    }
    let from = args
        .from
        .as_deref()
        .map(|v| args::check_timestamp("from", v))
        .transpose()?;
    let to = args
        .to
        .as_deref()
        .map(|v| args::check_timestamp("to", v))
        .transpose()?;
    if let (Some(f), Some(t)) = (from, to)
        && f > t
    {
        return Err(ToolError::invalid("from", "must not be after `to`"));
    }
    let query = ListQuery {
        limit: u32::try_from(limit).map_err(|_| ToolError::invalid("limit", "out of range"))?,
        cursor: args.cursor.as_deref(),
        from: args.from.as_deref(),
        to: args.to.as_deref(),
    };
    let page = call
        .core_api_read(|meta| {
            let query = query.clone();
            let account_id = args.account_id.as_str();
            async move {
                call.gateway
                    .core_api
                    .list_transactions(&meta, account_id, &query)
                    .await
            }
        })
        .await?;
    Ok(Output {
        transactions: page.transactions,
        next_cursor: page.next_cursor,
    })
}
