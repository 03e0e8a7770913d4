//! Result shapes shared by several tools (SPEC §4). They serialize to the tools'
//! `structuredContent` and generate their `outputSchema`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One card or account transaction. Amounts are integers in minor units (cents).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Transaction {
    /// `txn_000001` …
    pub transaction_id: String,
    /// `acc_0001` …
    pub account_id: String,
    /// Amount in minor units (cents).
    pub amount_minor: i64,
    /// ISO 4217 code, e.g. `EUR`.
    pub currency: String,
    /// Merchant name as booked.
    pub merchant: String,
    /// Spending category, e.g. `groceries`.
    pub category: String,
    /// `booked`, `pending` or `reversed`.
    pub status: String,
    /// Booking time, RFC 3339 UTC.
    pub booked_at: String,
}

/// One knowledge-base search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArticleHit {
    /// `kb_001` …
    pub article_id: String,
    /// Article title.
    pub title: String,
    /// A short excerpt around the matched terms.
    pub snippet: String,
    /// Relevance, higher is better (not normalised across queries).
    pub score: f64,
}
