//! `list_transactions`: an account's transactions, newest first, with cursor pagination
//! (SPEC §4; budget 5 s; core-api read).

use std::time::Duration;

use kosha_auth::Role;
use kosha_contract::core_api::{
    CURSOR_MAX_CHARS, LIST_LIMIT_MAX, ListTransactionsQuery, Transaction,
};
use kosha_contract::ids;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::call::Call;
use super::catalogue::{DEFAULT_MIN_BUDGET, Hints, Need, READ_ERRORS, Spec, Tool};
use super::error::ToolError;
use crate::backends::Backend;
use kosha_contract::echo::clip;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The account id, such as `acc_0001`.
    #[schemars(extend("pattern" = ids::ACCOUNT.pattern()))]
    pub account_id: String,
    /// Page size (default 20).
    #[schemars(range(min = 1, max = LIST_LIMIT_MAX))]
    pub limit: Option<u32>,
    /// `next_cursor` from the previous page.
    #[schemars(length(min = 1, max = CURSOR_MAX_CHARS))]
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

/// The tool.
#[derive(Debug)]
pub struct ListTransactions;

impl Tool for ListTransactions {
    type Args = Args;
    type Output = Output;
    const SPEC: Spec = Spec {
        name: "list_transactions",
        title: "List transactions",
        description: "List an account's transactions (acc_0001), newest first. Use it to \
                      find a payment when the customer does not know its id. Page with \
                      `cursor` (the last `next_cursor`).",
        errors: READ_ERRORS,
        hints: Hints::READ,
        roles: &[Role::Agent],
        budget: Duration::from_secs(5),
        min_budget: DEFAULT_MIN_BUDGET,
        needs: &[Need {
            backend: Backend::CoreApiRead,
            degraded_answer: false,
        }],
    };

    /// # Errors
    /// `invalid_argument` when `from` is after `to` (the schema checked the rest),
    /// `not_found` for an unknown account, or the core-api errors of [`Call::core_api_read`].
    async fn run(call: &Call<'_>, args: Args) -> Result<Output, ToolError> {
        // A rule the schema cannot state: the window must not be inverted.
        if let (Some(from), Some(to)) = (&args.from, &args.to)
            && timestamp("from", from)? > timestamp("to", to)?
        {
            return Err(ToolError::invalid("from", "must not be after `to`"));
        }
        if !ids::ACCOUNT.may_exist(&args.account_id) {
            let id = clip(&args.account_id);
            return Err(ToolError::NotFound(format!("account {id} not found")));
        }
        let query = ListTransactionsQuery {
            limit: args.limit,
            cursor: args.cursor,
            from: args.from,
            to: args.to,
        };
        let page = call
            .core_api_read(|meta| {
                (call.deps.core_api).list_transactions(meta, &args.account_id, &query)
            })
            .await?;
        Ok(Output {
            transactions: page.transactions,
            next_cursor: page.next_cursor,
        })
    }
}

/// `value` (already a `date-time` by the schema) as an instant, to compare `from` and `to`.
fn timestamp(field: &str, value: &str) -> Result<OffsetDateTime, ToolError> {
    OffsetDateTime::parse(value, &Rfc3339).map_err(|_| {
        ToolError::invalid(
            field,
            "must be an RFC 3339 timestamp such as 2026-03-01T00:00:00Z",
        )
    })
}
